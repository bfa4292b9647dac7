// External kernels: a kernel declared in a JSON spec file instead of compiled into blocktune
// (docs/external-kernels.md, schema in schema/kernel-spec.schema.json). The spec gives the
// parameters and their candidate values, restrictions over parameter and dim names (parsed by
// muparser, never by a shell or an interpreter), dims with their bucket rounding, dtypes, the
// default config and the runner that measures a config. Once registered (LoadKernelDir) an
// external kernel is a KernelSpec like the built-in ones: sweeps, lookups, overrides, tables.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"

namespace blocktune::external {

// The JSON Schema of a spec file (checked in as schema/kernel-spec.schema.json, compiled in,
// served by GET /v1/kernel-spec-schema).
std::string_view KernelSpecSchema();

class ExternalKernelSpec;

// Parses and checks one spec. `source` names the file in every error message ("spec.json:
// restriction 2 'block_m ** 2 <= 64': Unexpected operator ..."). Relative runner paths are
// resolved from `base_dir` (the file's folder).
Result<std::unique_ptr<ExternalKernelSpec>> ParseKernelSpec(std::string_view json_text, const std::string& source,
                                                            const std::string& base_dir);
// Reads and parses one file.
Result<std::unique_ptr<ExternalKernelSpec>> LoadKernelSpecFile(const std::string& path);
// The spec files of a --kernel-dir: every *.json in `dir`, then every *.json in each folder
// directly in it (a folder of kernel folders, one per kernel; folders whose name starts with
// '.' are skipped), sorted by path. not_found if `dir` is not a readable directory.
Result<std::vector<std::string>> KernelSpecFiles(const std::string& dir);
// Loads every spec file of `dir` (KernelSpecFiles) and registers each with RegisterKernel;
// stops at the first bad file (its path in the message). Returns the names registered. The
// program that links both this library and the tuner installs the runner factory the
// evaluators use for external kernels (tuner::SetRunnerMeasurerFactory(MakeRunnerMeasurer),
// external/runner.h), so the tuner never calls up into external/ on its own.
Result<std::vector<std::string>> LoadKernelDir(const std::string& dir);

// One external kernel as loaded: what the daemon logs and GET /v1/kernels reports.
struct LoadedKernel {
  std::string name;
  std::string spec_file;   // the *.json it came from
  std::string kernel_dir;  // the --kernel-dir that holds it
  std::string runner;      // the runner's command line, arguments joined by spaces
};
struct KernelDirsLoad {
  std::vector<LoadedKernel> kernels;
  std::vector<std::string> empty_dirs;  // directories that held no spec (worth a warning)
};
// LoadKernelDir for each directory in turn.
Result<KernelDirsLoad> LoadKernelDirs(const std::vector<std::string>& dirs);

// What a rescan of the kernel folders changed (the daemon's POST /v1/kernels/reload).
struct ReloadReport {
  std::vector<std::string> added;     // kernels of files new since the last load
  std::vector<std::string> replaced;  // kernels whose file now says something else
  int64_t unchanged = 0;
};
// Reads every *.json of `dirs` again. All or nothing: if any file does not parse, or names a
// built-in kernel, or a kernel another file of this scan or a file loaded before declares,
// the error names the file and nothing changes. Otherwise new kernels are registered and
// changed ones replaced (ReplaceKernel: a request already holding the old spec finishes with
// it). A file that was removed leaves its kernel registered until the process restarts: its
// measurements and tuned rows still name it.
Result<ReloadReport> ReloadKernelDirs(const std::vector<std::string>& dirs);

class ExternalKernelSpec final : public KernelSpec {
 public:
  ~ExternalKernelSpec() override;

  std::string_view name() const override { return name_; }
  std::string_view description() const override { return description_; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  const std::vector<DimSpec>& dims() const override { return dims_; }
  std::vector<DType> dtypes() const override { return dtypes_; }
  const RunnerSpec* runner() const override { return &runner_; }
  std::string_view source_file() const override { return source_; }

  Config DefaultConfig() const override { return default_; }
  // Every parameter present with one of its candidate values, and every restriction true for
  // this config and problem (dims bound to the problem's values).
  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override;
  // The runner checks correctness itself (it reports wrong_result); blocktune has no reference
  // for an external kernel, so verification is the runner's and this is the bucket problem.
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override;
  // External kernels run in their runner, never in this process: the instance's Run says so.
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override;
  // The spec's optional "flops" / "bytes" expressions over the dims; 0 when absent.
  double Flops(const Problem& problem) const override;
  double Bytes(const Problem& problem) const override;

  std::vector<std::string> restriction_texts() const override { return restriction_texts_; }
  // The spec file as loaded (canonical JSON), for GET /v1/kernels/{name}.
  const std::string& spec_json() const { return spec_json_; }
  // The --kernel-dir the spec was found in ('' for a file loaded on its own); set by the
  // loaders before the spec is registered.
  const std::string& kernel_dir() const { return kernel_dir_; }
  void set_kernel_dir(std::string dir) { kernel_dir_ = std::move(dir); }

 private:
  friend Result<std::unique_ptr<ExternalKernelSpec>> ParseKernelSpec(std::string_view, const std::string&,
                                                                     const std::string&);
  ExternalKernelSpec();
  struct Expressions;  // muparser state, behind a mutex (muparser's Eval is not thread-safe)

  std::string name_;
  std::string description_;
  std::string source_;
  std::string kernel_dir_;
  std::string spec_json_;
  std::vector<ParamSpec> params_;
  std::vector<std::string> dim_names_;  // owns the strings DimSpec::bucket.name points to
  std::vector<DimSpec> dims_;
  std::vector<DType> dtypes_;
  Config default_;
  RunnerSpec runner_;
  std::vector<std::string> restriction_texts_;
  std::unique_ptr<Expressions> expr_;
};

}  // namespace blocktune::external
