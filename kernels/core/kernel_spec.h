// KernelSpec: everything the generic machinery needs to know about one kernel. The tuner,
// store, server, CLI and table generator see kernels only through this interface, so adding
// a kernel touches its own folder and one line of registry.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/config.h"
#include "kernels/core/hardware.h"
#include "kernels/core/result.h"

namespace blocktune {

// One tunable parameter and the candidate values a sweep draws from.
struct ParamSpec {
  std::string name;
  std::vector<int64_t> candidates;
  std::string doc;
  // Unordered values (a 0/1 flag, an enumerated variant): search strategies treat every other
  // value as a neighbour and do not model the parameter on a log scale. External specs set it.
  bool categorical = false;
};

// How an external kernel (declared in a spec file, kernels/external) is measured: a program
// blocktune starts and talks to over the runner protocol (docs/external-kernels.md). Built-in
// kernels have none.
struct RunnerSpec {
  std::vector<std::string> command;  // argv; argv[0] is searched in PATH; no shell
  std::string working_dir;           // the spec file's directory
  bool persistent = true;            // one process for many configs (else one per config)
  double timeout_s = 0;              // per config; 0 = the evaluator's default
};

// One problem dimension: its bucket rounding and the range a request may ask for.
struct DimSpec {
  tables::BucketDim bucket;
  int64_t max_value;  // largest value accepted in a request
  std::string doc;
};

// Outputs compared with the reference. `ok` needs no NaN/Inf and every element within
// atol + rtol * |ref|; the numbers say how far off the worst element was.
struct VerifyReport {
  bool ok = false;
  int64_t elements = 0;
  int64_t mismatches = 0;
  int64_t non_finite = 0;
  double max_abs_err = 0;
  double max_rel_err = 0;  // |out - ref| / (atol + rtol * |ref|) at the worst element; ok iff <= 1
};

// Tolerances are by input dtype; matmul-like kernels scale atol with the reduction length.
struct Tolerance {
  double atol;
  double rtol;
};

// Compares `out` against `ref` element by element.
VerifyReport Compare(const float* out, const float* ref, int64_t n, Tolerance tol);

// Memory the verifier watches around one run besides comparing outputs (tuner/verify): every
// input is checksummed before and after (a kernel must not write its inputs), and every output
// guard (slack bytes allocated right after an output) is filled with a canary before and must
// be intact after, which catches writes past the end that do not fault.
struct WatchedMemory {
  std::vector<std::span<const std::byte>> inputs;
  std::vector<std::span<std::byte>> output_guards;
};

// A problem with allocated, initialised inputs and outputs, ready to run many configs.
class KernelInstance {
 public:
  virtual ~KernelInstance() = default;
  // Runs the tuned kernel into the outputs. An invalid config is an error, never a crash.
  virtual Status Run(const Config& config, int threads) = 0;
  // Computes the reference outputs (kept separately from the kernel's outputs).
  virtual void RunReference() = 0;
  // Fills the kernel's outputs with NaN so a kernel that skips elements cannot pass.
  virtual void PoisonOutputs() = 0;
  // Kernel outputs vs reference outputs (RunReference must have run).
  virtual VerifyReport Verify() const = 0;
  // Optional: inputs and output guards for the verifier's extra checks; none by default.
  virtual WatchedMemory Watched() { return {}; }
};

class KernelSpec {
 public:
  virtual ~KernelSpec() = default;

  virtual std::string_view name() const = 0;
  virtual std::string_view description() const = 0;
  virtual const std::vector<ParamSpec>& params() const = 0;
  virtual const std::vector<DimSpec>& dims() const = 0;
  virtual std::vector<DType> dtypes() const = 0;
  // Bumped when the bucket function changes, so rows from an older bucketing are not mixed in.
  virtual int bucket_version() const { return 1; }
  // External kernels: the runner that measures them (the evaluator sends it configs instead of
  // calling MakeInstance) and the file they were declared in. nullptr / empty for built-ins.
  virtual const RunnerSpec* runner() const { return nullptr; }
  virtual std::string_view source_file() const { return {}; }
  // External kernels: the spec's restrictions as written (ValidateConfig enforces them).
  virtual std::vector<std::string> restriction_texts() const { return {}; }

  virtual Config DefaultConfig() const = 0;
  // Why a config cannot run on this problem and hardware; ok if it can.
  virtual Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const = 0;
  // A small problem that exercises `config`'s blocking (full blocks and remainders) quickly
  // enough to check every config against the reference.
  virtual Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const = 0;
  virtual std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const = 0;
  virtual double Flops(const Problem& problem) const = 0;
  // Minimum bytes moved to and from memory (inputs read once, outputs written once).
  virtual double Bytes(const Problem& problem) const = 0;

  // --- Derived from the declarations above; not overridden. ---

  // Every dim present, positive and within range; dtype supported; no unknown dims.
  Status ValidateProblem(const Problem& problem) const;
  // The canonical bucket id and the bucket's representative problem.
  std::pair<std::string, Problem> Bucket(const Problem& problem) const;
  // Parses a bucket id back into its representative problem.
  Result<Problem> ProblemFromBucket(DType dtype, std::string_view bucket_id) const;
  // Cartesian product of the candidates, in parameter order (not yet validated).
  std::vector<Config> ConfigSpace() const;
  // Fills unspecified parameters from the default config and rejects unknown names.
  Result<Config> CompleteConfig(const Config& partial) const;
};

// The one list of kernels: the built-in ones, then any registered with RegisterKernel. A copy
// of the list as it is now (the daemon registers kernels while it serves, see ReplaceKernel).
std::vector<const KernelSpec*> AllKernels();
// The kernels compiled in, in AllKernels' order: defined above core/ and the kernel folders, in
// kernels/builtin/builtin.cc (the one list of them), and read once by the registry.
std::vector<const KernelSpec*> BuiltinKernels();
const KernelSpec* FindKernel(std::string_view name);

// Adds a kernel (an external spec loaded from a file) to AllKernels for the rest of the
// process; an error if the name is taken. Safe while other threads read the list.
Status RegisterKernel(std::unique_ptr<const KernelSpec> spec);
// Puts `spec` in the place of the registered kernel of the same name, which must be one that
// was registered (a built-in kernel cannot be replaced). The old spec stays alive for the rest
// of the process: a sweep or a request that holds it finishes with it; only later FindKernel
// calls see the new one.
Status ReplaceKernel(std::unique_ptr<const KernelSpec> spec);

}  // namespace blocktune
