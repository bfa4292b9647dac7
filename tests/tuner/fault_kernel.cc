// The fault kernel and the fault injector; see fault_kernel.h.
#include "tests/tuner/fault_kernel.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace blocktune::testing {
namespace {

constexpr std::array<std::string_view, kFaultCount> kFaultNames = {
    "none", "segfault",    "abort",          "sigill",        "spin",         "allocate",
    "nan",  "half_output", "write_past_end", "modify_inputs", "flood_stdout", "exit_without_result",
};

// 16 floats of slack after the output, watched by the verifier's canary check.
constexpr int64_t kGuardFloats = 16;
// Per call, the flood writes 256 KiB (four times a pipe's 64 KiB buffer, so a parent that did
// not drain it would block the worker).
constexpr size_t kFloodBytes = 256 << 10;

// Busy-waits: the cost must be CPU time, like a kernel's, not a sleep the scheduler may stretch.
void Spin(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

}  // namespace

std::string_view FaultName(Fault f) { return kFaultNames[static_cast<int>(f)]; }

std::optional<Fault> ParseFault(std::string_view name) {
  for (int i = 0; i < kFaultCount; ++i) {
    if (kFaultNames[i] == name) return static_cast<Fault>(i);
  }
  return std::nullopt;
}

void TriggerFault(Fault f) {
  switch (f) {
    case Fault::kSegfault: {
      // A volatile address the compiler cannot prove null; a literal null store would be
      // turned into ud2 (SIGILL) by GCC's erroneous-path isolation.
      volatile uintptr_t address = 8;
      *reinterpret_cast<volatile int*>(address) = 1;
      break;
    }
    case Fault::kAbort: std::abort();
    case Fault::kIllegalInstruction: __builtin_trap();  // ud2 on x86-64: SIGILL
    case Fault::kSpin: {
      volatile uint64_t spins = 0;
      while (true) spins = spins + 1;
    }
    case Fault::kAllocate: {
      // 64 MiB at a time, never freed, one byte written per 64 KiB: enough to make the memory
      // resident piecemeal, while touching every page would spend ~1 ms per MiB in page faults
      // and make reaching a limit a matter of time rather than of size.
      static std::vector<char*>* hoard = new std::vector<char*>();
      hoard->reserve(1 << 16);
      while (true) {
        char* block = new char[64 << 20];
        for (size_t i = 0; i < (64u << 20); i += 65536) block[i] = 1;
        hoard->push_back(block);
      }
    }
    case Fault::kFloodStdout: {
      static const std::string line(1023, 'x');
      for (size_t written = 0; written < kFloodBytes; written += 1024) std::printf("%s\n", line.c_str());
      std::fflush(stdout);
      break;
    }
    case Fault::kExitWithoutResult: _exit(0);
    default: break;
  }
}

namespace {

class FaultInstance final : public KernelInstance {
 public:
  FaultInstance(int64_t n, Fault fault, int64_t faulty)
      : n_(n), fault_(fault), faulty_(faulty), in_(n), out_(n + kGuardFloats), ref_(n) {
    for (int64_t i = 0; i < n; ++i) in_[i] = static_cast<float>(i % 13) - 6.0f;
  }

  Status Run(const Config& config, int /*threads*/) override {
    const int64_t id = config.Get("id").value_or(-1);
    if (id < 0 || id >= kFaultConfigs) return InvalidArgument("id must be in [0, 50)", "config.id");
    Spin(std::chrono::microseconds(20 * (id + 1)));
    const Fault f = id < faulty_ ? fault_ : Fault::kNone;
    const int64_t written = f == Fault::kHalfOutput ? n_ / 2 : n_;
    for (int64_t i = 0; i < written; ++i) out_[i] = 2.0f * in_[i] + 1.0f;
    switch (f) {
      case Fault::kNan: out_[n_ / 2] = std::nanf(""); break;
      case Fault::kWritePastEnd:
        out_[n_] = 1.0f;  // first float after the output: inside the guard, no fault
        out_[n_ + 1] = 2.0f;
        break;
      case Fault::kModifyInputs: in_[0] += 1.0f; break;
      default: TriggerFault(f);  // the process-level ones (and none)
    }
    return {};
  }
  void RunReference() override {
    for (int64_t i = 0; i < n_; ++i) ref_[i] = 2.0f * in_[i] + 1.0f;
  }
  void PoisonOutputs() override { std::fill(out_.begin(), out_.begin() + n_, std::nanf("")); }
  VerifyReport Verify() const override { return Compare(out_.data(), ref_.data(), n_, {1e-6, 1e-6}); }
  WatchedMemory Watched() override {
    WatchedMemory w;
    w.inputs.push_back(std::as_bytes(std::span<const float>(in_)));
    w.output_guards.push_back(std::as_writable_bytes(std::span<float>(out_).subspan(n_)));
    return w;
  }

 private:
  int64_t n_;
  Fault fault_;
  int64_t faulty_;
  std::vector<float> in_, out_, ref_;
};

class FaultSpecImpl final : public KernelSpec {
 public:
  FaultSpecImpl() {
    std::vector<int64_t> ids(kFaultConfigs);
    for (int64_t i = 0; i < kFaultConfigs; ++i) ids[i] = i;
    params_ = {{"id", ids, "config number; ids below `faulty` misbehave"}};
    dims_ = {
        {{"n", tables::Rounding::kPow2Ceil, 1, 1 << 16}, 1 << 16, "data length"},
        {{"fault", tables::Rounding::kExact, 0, kFaultCount - 1}, kFaultCount - 1, "which fault (Fault enum)"},
        {{"faulty", tables::Rounding::kExact, 0, kFaultConfigs}, kFaultConfigs, "configs with id < faulty misbehave"},
    };
  }
  std::string_view name() const override { return "fault"; }
  std::string_view description() const override { return "test kernel whose chosen configs misbehave"; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  const std::vector<DimSpec>& dims() const override { return dims_; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  Config DefaultConfig() const override { return NamedInts({{"id", kFaultConfigs - 1}}); }
  Status ValidateConfig(const Config& c, const Problem&, const HardwareProfile&) const override {
    const int64_t id = c.Get("id").value_or(-1);
    if (id < 0 || id >= kFaultConfigs) return InvalidArgument("id must be in [0, 50)", "config.id");
    return {};
  }
  Problem VerificationProblem(const Config&, const Problem& p) const override {
    Problem small = p;
    small.dims.Set("n", std::min<int64_t>(p.Dim("n"), 256));
    return small;
  }
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& p, uint64_t) const override {
    return std::make_unique<FaultInstance>(p.Dim("n"), static_cast<Fault>(p.Dim("fault")), p.Dim("faulty"));
  }
  double Flops(const Problem& p) const override { return 2.0 * static_cast<double>(p.Dim("n")); }
  double Bytes(const Problem& p) const override { return 8.0 * static_cast<double>(p.Dim("n")); }

 private:
  std::vector<ParamSpec> params_;
  std::vector<DimSpec> dims_;
};

// Busy-wait added to every call of a config under a "slow" rule: about 10x a 256^3 f32 matmul
// (~0.4 ms), so a gate or decision round ranks that config last whatever else the machine runs.
constexpr auto kSlowRuleDelay = std::chrono::milliseconds(5);

// A fault (or, with `slow`, a fixed extra cost) and the param values a config must all have to
// trigger it.
struct InjectRule {
  std::vector<std::pair<std::string, int64_t>> when;
  Fault fault = Fault::kNone;
  bool slow = false;
};

class InjectedInstance final : public KernelInstance {
 public:
  InjectedInstance(std::unique_ptr<KernelInstance> inner, const std::vector<InjectRule>& rules)
      : inner_(std::move(inner)), rules_(rules) {}
  Status Run(const Config& config, int threads) override {
    for (const InjectRule& r : rules_) {
      bool match = true;
      for (const auto& [param, value] : r.when) match = match && config.Get(param) == value;
      if (!match) continue;
      if (r.slow) {
        Spin(kSlowRuleDelay);
      } else {
        TriggerFault(r.fault);
      }
    }
    return inner_->Run(config, threads);
  }
  void RunReference() override { inner_->RunReference(); }
  void PoisonOutputs() override { inner_->PoisonOutputs(); }
  VerifyReport Verify() const override { return inner_->Verify(); }
  WatchedMemory Watched() override { return inner_->Watched(); }

 private:
  std::unique_ptr<KernelInstance> inner_;
  const std::vector<InjectRule>& rules_;
};

class InjectedSpec final : public KernelSpec {
 public:
  InjectedSpec(const KernelSpec& inner, std::vector<InjectRule> rules) : inner_(inner), rules_(std::move(rules)) {}
  std::string_view name() const override { return inner_.name(); }
  std::string_view description() const override { return inner_.description(); }
  const std::vector<ParamSpec>& params() const override { return inner_.params(); }
  const std::vector<DimSpec>& dims() const override { return inner_.dims(); }
  std::vector<DType> dtypes() const override { return inner_.dtypes(); }
  int bucket_version() const override { return inner_.bucket_version(); }
  Config DefaultConfig() const override { return inner_.DefaultConfig(); }
  Status ValidateConfig(const Config& c, const Problem& p, const HardwareProfile& hw) const override {
    return inner_.ValidateConfig(c, p, hw);
  }
  Problem VerificationProblem(const Config& c, const Problem& p) const override {
    return inner_.VerificationProblem(c, p);
  }
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& p, uint64_t seed) const override {
    return std::make_unique<InjectedInstance>(inner_.MakeInstance(p, seed), rules_);
  }
  double Flops(const Problem& p) const override { return inner_.Flops(p); }
  double Bytes(const Problem& p) const override { return inner_.Bytes(p); }

 private:
  const KernelSpec& inner_;
  std::vector<InjectRule> rules_;
};

}  // namespace

const KernelSpec& FaultSpec() {
  static const FaultSpecImpl kSpec;
  return kSpec;
}

const KernelSpec* FaultInjected(const KernelSpec& inner, std::string_view spec) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<InjectedSpec>> made;  // specs live for the process
  const std::string key = std::string(inner.name()) + "|" + std::string(spec);
  std::lock_guard lock(mu);
  if (auto it = made.find(key); it != made.end()) return it->second.get();
  std::vector<InjectRule> rules;
  std::string_view rest = spec;
  while (!rest.empty()) {
    const size_t semi = rest.find(';');
    const std::string_view item = rest.substr(0, semi);
    rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) return nullptr;
    const std::string_view what = item.substr(colon + 1);
    const bool slow = what == "slow";
    const auto fault = slow ? std::optional<Fault>(Fault::kNone) : ParseFault(what);
    auto when = NamedInts::Parse(item.substr(0, colon));
    if (!fault || !when || when->empty()) return nullptr;
    rules.push_back({when->values(), *fault, slow});
  }
  return (made[key] = std::make_unique<InjectedSpec>(inner, std::move(rules))).get();
}

}  // namespace blocktune::testing
