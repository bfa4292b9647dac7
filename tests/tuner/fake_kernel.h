// A fake kernel for tuner tests: its cost is a known function of the config, and chosen
// configs misbehave (NaN output, wrong output, invalid), so the engine's choices can be
// checked without depending on a real kernel's performance.
#pragma once

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "kernels/core/kernel_spec.h"

namespace blocktune::testing {

// The fake clock of a test that sets FakeSpec::cost_ns (TimingOptions::clock_ns = FakeNowNs):
// ns, advanced only by fake kernel calls.
inline double fake_clock_ns = 0;
inline double FakeNowNs() { return fake_clock_ns; }

// Config (a, b) costs (|a - 3| + |b - 2| + 1) * 150 us: the unique optimum is a=3, b=2.
// (1,1) writes NaN, (2,1) writes wrong values, and a*b == 12 is invalid.
class FakeSpec : public KernelSpec {
 public:
  FakeSpec() {
    params_ = {{"a", {1, 2, 3, 4}, "first knob"}, {"b", {1, 2, 3}, "second knob"}};
    dims_ = {{{"n", tables::Rounding::kPow2Ceil, 1, 1 << 20}, 1 << 20, "length"}};
  }
  std::string_view name() const override { return "fake"; }
  std::string_view description() const override { return "test kernel with a known cost model"; }
  const std::vector<ParamSpec>& params() const override { return params_; }
  const std::vector<DimSpec>& dims() const override { return dims_; }
  std::vector<DType> dtypes() const override { return {DType::kF32}; }
  Config DefaultConfig() const override { return NamedInts({{"a", 1}, {"b", 2}}); }
  Status ValidateConfig(const Config& c, const Problem&, const HardwareProfile&) const override {
    if (c.Get("a").value_or(0) * c.Get("b").value_or(0) == 12) return InvalidArgument("a*b must not be 12", "config.a");
    return {};
  }
  Problem VerificationProblem(const Config&, const Problem& p) const override {
    Problem small = p;
    small.dims.Set("n", std::min<int64_t>(p.Dim("n"), 64));
    return small;
  }
  std::unique_ptr<KernelInstance> MakeInstance(const Problem& p, uint64_t) const override;
  double Flops(const Problem& p) const override { return static_cast<double>(p.Dim("n")); }
  double Bytes(const Problem& p) const override { return 8.0 * static_cast<double>(p.Dim("n")); }

  // Runs per canonical config string, for resume tests.
  mutable std::mutex mu;
  mutable std::map<std::string, int> runs;
  // A test's cost model: when set, a call costs what it returns, in ns, on the fake clock
  // (fake_clock_ns) instead of being spun on the steady clock, so every timing is exact and a
  // test can inject noise and slow phases deterministically (paired_decision_test.cc).
  std::function<double(const Config&)> cost_ns;

 private:
  std::vector<ParamSpec> params_;
  std::vector<DimSpec> dims_;
};

class FakeInstance : public KernelInstance {
 public:
  FakeInstance(const FakeSpec& spec, int64_t n) : spec_(spec), in_(n), out_(n), ref_(n) {
    for (int64_t i = 0; i < n; ++i) in_[i] = static_cast<float>(i % 17) - 8.0f;
  }
  Status Run(const Config& c, int) override {
    const int64_t a = c.Get("a").value_or(0);
    const int64_t b = c.Get("b").value_or(0);
    {
      std::lock_guard lock(spec_.mu);
      ++spec_.runs[c.ToString()];
    }
    if (spec_.cost_ns) {
      fake_clock_ns += spec_.cost_ns(c);
    } else {
      const auto cost = std::chrono::microseconds(150 * (std::abs(a - 3) + std::abs(b - 2) + 1));
      const auto until = std::chrono::steady_clock::now() + cost;
      while (std::chrono::steady_clock::now() < until) {
      }
    }
    for (size_t i = 0; i < in_.size(); ++i) out_[i] = 2 * in_[i];
    if (a == 1 && b == 1) out_[0] = std::nanf("");
    if (a == 2 && b == 1) out_.back() += 1.0f;
    return {};
  }
  void RunReference() override {
    for (size_t i = 0; i < in_.size(); ++i) ref_[i] = 2 * in_[i];
  }
  void PoisonOutputs() override { std::fill(out_.begin(), out_.end(), std::nanf("")); }
  VerifyReport Verify() const override {
    return Compare(out_.data(), ref_.data(), static_cast<int64_t>(out_.size()), {1e-6, 1e-6});
  }

 private:
  const FakeSpec& spec_;
  std::vector<float> in_, out_, ref_;
};

inline std::unique_ptr<KernelInstance> FakeSpec::MakeInstance(const Problem& p, uint64_t) const {
  return std::make_unique<FakeInstance>(*this, p.Dim("n"));
}

}  // namespace blocktune::testing
