// The kernel contract, checked once over every registered kernel (AllKernels()), so a new
// kernel gets every generic check by adding its registry line: sane declarations, a default
// config that validates on every ISA level this host runs, verification problems whose checks
// catch poisoned outputs and pass a real run, deterministic inputs, and every checked-in tuned
// row (tables/tuned_entries.jsonl) validated and verified against the reference. Kernel-specific
// behaviour (exact buckets, flops, shapes of the verification problem) stays in
// tests/kernels/<kernel>_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "codegen/codegen.h"
#include "kernels/core/kernel_spec.h"
#include "tests/common/kernels.h"
#include "tuner/evaluator.h"

namespace blocktune {
namespace {

using test::HwWithIsa;
using test::kIsaLevels;

std::string KernelName(const ::testing::TestParamInfo<const KernelSpec*>& info) {
  return std::string(info.param->name());
}

// Problems built from the declarations alone, so no kernel needs a hook for this test: every
// dim at its minimum, every dim at 64 (clamped into its range), and every dim at its maximum.
// The spec comments promise the default config is valid for every problem in range; these
// three are the corners and the middle of that promise.
std::vector<Problem> RepresentativeProblems(const KernelSpec& spec, DType dtype) {
  Problem smallest, typical, largest;
  for (Problem* p : {&smallest, &typical, &largest}) p->dtype = dtype;
  for (const DimSpec& d : spec.dims()) {
    smallest.dims.Set(d.bucket.name, d.bucket.min);
    typical.dims.Set(d.bucket.name, std::clamp<int64_t>(64, d.bucket.min, d.max_value));
    largest.dims.Set(d.bucket.name, d.max_value);
  }
  return {smallest, typical, largest};
}

Problem TypicalProblem(const KernelSpec& spec, DType dtype) { return RepresentativeProblems(spec, dtype)[1]; }

// The configs of the space that validate for `problem` on this host, in space order.
std::vector<Config> HostValidConfigs(const KernelSpec& spec, const Problem& problem) {
  std::vector<Config> out;
  for (const Config& c : spec.ConfigSpace()) {
    if (spec.ValidateConfig(c, problem, HostHardware())) out.push_back(c);
  }
  return out;
}

std::string Describe(const VerifyReport& r) {
  return "ok " + std::to_string(r.ok) + ", " + std::to_string(r.mismatches) + " of " + std::to_string(r.elements) +
         " mismatched, " + std::to_string(r.non_finite) + " non-finite, max abs err " + std::to_string(r.max_abs_err);
}

class KernelContract : public ::testing::TestWithParam<const KernelSpec*> {
 protected:
  const KernelSpec& spec() const { return *GetParam(); }
};

// --- Declarations -------------------------------------------------------------------------

TEST_P(KernelContract, NameIsUniqueAndFindable) {
  const std::string_view name = spec().name();
  ASSERT_FALSE(name.empty());
  // The name is a file name, a C++ identifier in generated headers and a URL segment.
  for (char c : name) EXPECT_TRUE(std::islower(static_cast<unsigned char>(c)) || std::isdigit(c) || c == '_') << name;
  EXPECT_EQ(FindKernel(name), GetParam());
  int same = 0;
  for (const KernelSpec* k : AllKernels()) same += k->name() == name;
  EXPECT_EQ(same, 1) << name << " is registered more than once";
  EXPECT_FALSE(spec().description().empty());
  EXPECT_GE(spec().bucket_version(), 1);
}

TEST_P(KernelContract, ParamsAreUniqueWithCandidates) {
  ASSERT_FALSE(spec().params().empty());
  std::set<std::string> names;
  size_t space = 1;
  for (const ParamSpec& p : spec().params()) {
    EXPECT_FALSE(p.name.empty());
    EXPECT_TRUE(names.insert(p.name).second) << "parameter " << p.name << " declared twice";
    EXPECT_FALSE(p.doc.empty()) << p.name;
    ASSERT_FALSE(p.candidates.empty()) << p.name << " has no candidates";
    EXPECT_EQ(std::set<int64_t>(p.candidates.begin(), p.candidates.end()).size(), p.candidates.size())
        << p.name << " repeats a candidate";
    for (int64_t v : p.candidates) EXPECT_GT(v, 0) << p.name;
    space *= p.candidates.size();
  }
  EXPECT_EQ(spec().ConfigSpace().size(), space);
}

TEST_P(KernelContract, DimsAndDtypesAreDeclared) {
  ASSERT_FALSE(spec().dims().empty());
  std::set<std::string> names;
  for (const ParamSpec& p : spec().params()) names.insert(p.name);
  for (const DimSpec& d : spec().dims()) {
    ASSERT_NE(d.bucket.name, nullptr);
    EXPECT_TRUE(names.insert(d.bucket.name).second) << d.bucket.name << " names a dim twice or a dim and a parameter";
    EXPECT_FALSE(d.doc.empty()) << d.bucket.name;
    EXPECT_LE(d.bucket.min, d.max_value) << d.bucket.name;
    EXPECT_GE(d.bucket.min, 0) << d.bucket.name;
  }
  const std::vector<DType> dtypes = spec().dtypes();
  ASSERT_FALSE(dtypes.empty());
  EXPECT_EQ(std::set<DType>(dtypes.begin(), dtypes.end()).size(), dtypes.size());
  // Every problem in range is accepted, and its bucket id parses back to the bucket's problem.
  for (DType dtype : dtypes) {
    for (const Problem& p : RepresentativeProblems(spec(), dtype)) {
      const Status valid = spec().ValidateProblem(p);
      EXPECT_TRUE(valid.has_value()) << p.ToString() << ": " << valid.error().ToString();
      const auto [id, rep] = spec().Bucket(p);
      const auto parsed = spec().ProblemFromBucket(dtype, id);
      ASSERT_TRUE(parsed.has_value()) << id << ": " << parsed.error().ToString();
      EXPECT_EQ(*parsed, rep) << id;
      EXPECT_GT(spec().Flops(p), 0) << p.ToString();
      EXPECT_GT(spec().Bytes(p), 0) << p.ToString();
    }
  }
}

TEST_P(KernelContract, DefaultConfigIsInTheDeclaredSpace) {
  const Config def = spec().DefaultConfig();
  const auto completed = spec().CompleteConfig(def);
  ASSERT_TRUE(completed.has_value()) << completed.error().ToString();
  EXPECT_EQ(*completed, def) << "the default names every parameter, in declaration order";
  const auto space = spec().ConfigSpace();
  EXPECT_NE(std::find(space.begin(), space.end(), def), space.end()) << def.ToString() << " is not a candidate";
}

// Unknown and non-positive parameters are rejected with the parameter's path, never a crash.
TEST_P(KernelContract, ValidateConfigNamesTheBadParameter) {
  const Problem p = TypicalProblem(spec(), spec().dtypes().front());
  Config unknown = spec().DefaultConfig();
  unknown.Set("no_such_param", 3);
  const Status s = spec().ValidateConfig(unknown, p, HostHardware());
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().path, "config.no_such_param");
  for (const ParamSpec& param : spec().params()) {
    Config zero = spec().DefaultConfig();
    zero.Set(param.name, 0);
    const Status z = spec().ValidateConfig(zero, p, HostHardware());
    ASSERT_FALSE(z.has_value()) << param.name << " = 0 accepted";
    EXPECT_EQ(z.error().path, "config." + param.name);
    EXPECT_FALSE(z.error().message.empty());
  }
}

TEST_P(KernelContract, DefaultValidatesOnEveryIsaTheHostRuns) {
  int levels = 0;
  for (std::string_view isa : kIsaLevels) {
    if (!HostCanRun(isa)) continue;
    ++levels;
    for (DType dtype : spec().dtypes()) {
      for (const Problem& p : RepresentativeProblems(spec(), dtype)) {
        const Status s = spec().ValidateConfig(spec().DefaultConfig(), p, HwWithIsa(isa));
        EXPECT_TRUE(s.has_value()) << isa << " " << p.ToString() << ": " << s.error().ToString();
      }
    }
  }
  EXPECT_GE(levels, 1) << "every host runs base";
  const Status host =
      spec().ValidateConfig(spec().DefaultConfig(), TypicalProblem(spec(), DType::kF32), HostHardware());
  EXPECT_TRUE(host.has_value()) << host.error().ToString();
}

// --- Verification ---------------------------------------------------------------------------

// Every config's verification problem is a valid problem of the bucket's dtype, and its check
// fails on NaN outputs: a kernel that skips elements can never pass.
TEST_P(KernelContract, EveryVerificationProblemCatchesPoison) {
  for (DType dtype : spec().dtypes()) {
    const Problem bucket = TypicalProblem(spec(), dtype);
    const auto configs = HostValidConfigs(spec(), bucket);
    ASSERT_FALSE(configs.empty()) << "no config of the space validates for " << bucket.ToString();
    for (const Config& c : configs) {
      const Problem p = spec().VerificationProblem(c, bucket);
      ASSERT_TRUE(spec().ValidateProblem(p).has_value()) << c.ToString() << " -> " << p.ToString();
      EXPECT_EQ(p.dtype, dtype);
      auto inst = spec().MakeInstance(p, 42);
      inst->PoisonOutputs();
      const VerifyReport r = inst->Verify();
      EXPECT_FALSE(r.ok) << c.ToString();
      EXPECT_GT(r.elements, 0) << c.ToString();
      EXPECT_EQ(r.non_finite, r.elements) << c.ToString() << ": PoisonOutputs must reach every output";
      if (HasFailure()) return;
    }
  }
}

// The first, default and last configs valid for each representative bucket (smallest dims
// take the other side of flags such as causal or backward) run and pass their verification
// problem on this host, after the outputs were poisoned; an invalid config is an error, not a
// crash.
TEST_P(KernelContract, VerificationPassesARealRun) {
  for (DType dtype : spec().dtypes()) {
    for (const Problem& bucket : RepresentativeProblems(spec(), dtype)) {
      const auto valid = HostValidConfigs(spec(), bucket);
      ASSERT_FALSE(valid.empty()) << bucket.ToString();
      for (const Config& c : {valid.front(), spec().DefaultConfig(), valid.back()}) {
        const Problem p = spec().VerificationProblem(c, bucket);
        auto inst = spec().MakeInstance(p, 42);
        inst->RunReference();
        inst->PoisonOutputs();
        const Status run = inst->Run(c, 2);
        ASSERT_TRUE(run.has_value()) << c.ToString() << " " << p.ToString() << ": " << run.error().ToString();
        const VerifyReport r = inst->Verify();
        EXPECT_TRUE(r.ok) << c.ToString() << " " << p.ToString() << ": " << Describe(r);
      }
    }
    const Problem bucket = TypicalProblem(spec(), dtype);
    Config zero = spec().DefaultConfig();
    zero.Set(spec().params().front().name, 0);
    auto inst = spec().MakeInstance(spec().VerificationProblem(spec().DefaultConfig(), bucket), 1);
    EXPECT_FALSE(inst->Run(zero, 1).has_value()) << zero.ToString();
  }
}

// Each instance declares the memory the verifier watches (its inputs, and a guard after every
// output), and configs spread over the space pass the tuner's own verifier with those checks
// on: no false positive from a real kernel's remainder tiles, f32 and bf16.
TEST_P(KernelContract, ConfigsPassTheVerifiersMemoryChecks) {
  constexpr size_t kConfigs = 12;  // evenly spread over the valid space: first and last included
  for (DType dtype : spec().dtypes()) {
    const Problem bucket = TypicalProblem(spec(), dtype);
    const WatchedMemory w =
        spec().MakeInstance(spec().VerificationProblem(spec().DefaultConfig(), bucket), 1)->Watched();
    EXPECT_FALSE(w.inputs.empty()) << "no inputs declared: the verifier cannot see a kernel write them";
    EXPECT_FALSE(w.output_guards.empty()) << "no output guards declared: writes past the end go unseen";
    const auto valid = HostValidConfigs(spec(), bucket);
    ASSERT_FALSE(valid.empty());
    const size_t n = std::min(kConfigs, valid.size());
    for (size_t i = 0; i < n; ++i) {
      const Config& c = valid[n == 1 ? 0 : i * (valid.size() - 1) / (n - 1)];
      tuner::Measurement m;
      EXPECT_TRUE(tuner::VerifyConfig(spec(), c, bucket, 1, m))
          << DTypeName(dtype) << " " << c.ToString() << ": " << m.detail;
    }
  }
}

// The same seed gives the same inputs (byte for byte where the instance exposes them) and the
// same verification numbers; another seed gives other inputs.
TEST_P(KernelContract, InputsAreDeterministicInTheSeed) {
  for (DType dtype : spec().dtypes()) {
    const Problem bucket = TypicalProblem(spec(), dtype);
    const Problem p = spec().VerificationProblem(spec().DefaultConfig(), bucket);
    auto x = spec().MakeInstance(p, 7);
    auto y = spec().MakeInstance(p, 7);
    auto other = spec().MakeInstance(p, 8);
    const WatchedMemory wx = x->Watched(), wy = y->Watched(), wo = other->Watched();
    ASSERT_EQ(wx.inputs.size(), wy.inputs.size());
    bool any_differs = false;
    ASSERT_EQ(wx.inputs.size(), wo.inputs.size());
    for (size_t i = 0; i < wx.inputs.size(); ++i) {
      ASSERT_EQ(wx.inputs[i].size(), wy.inputs[i].size());
      EXPECT_EQ(std::memcmp(wx.inputs[i].data(), wy.inputs[i].data(), wx.inputs[i].size()), 0) << "input " << i;
      any_differs |= wo.inputs[i].size() != wx.inputs[i].size() ||
                     std::memcmp(wo.inputs[i].data(), wx.inputs[i].data(), wx.inputs[i].size()) != 0;
    }
    if (!wx.inputs.empty()) {
      EXPECT_TRUE(any_differs) << "seed 8 gave the inputs of seed 7";
    }
    x->RunReference();
    y->RunReference();
    ASSERT_TRUE(x->Run(spec().DefaultConfig(), 1).has_value());
    ASSERT_TRUE(y->Run(spec().DefaultConfig(), 1).has_value());
    const VerifyReport rx = x->Verify(), ry = y->Verify();
    EXPECT_TRUE(rx.ok) << Describe(rx);
    EXPECT_EQ(rx.max_abs_err, ry.max_abs_err);
    EXPECT_EQ(rx.max_rel_err, ry.max_rel_err);
    EXPECT_EQ(rx.elements, ry.elements);
  }
}

INSTANTIATE_TEST_SUITE_P(AllKernels, KernelContract, ::testing::ValuesIn(AllKernels()), KernelName);

// --- Checked-in tuned rows --------------------------------------------------------------------

std::vector<tuner::TunedEntry> CheckedInRows() {
  auto rows = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  // A broken table must fail loudly, not instantiate zero tests.
  if (!rows) {
    ADD_FAILURE() << "tables/tuned_entries.jsonl: " << rows.error().ToString();
    return {};
  }
  return *rows;
}

std::string RowName(const ::testing::TestParamInfo<tuner::TunedEntry>& info) {
  const tuner::TunedEntry& e = info.param;
  std::string name = e.kernel + "_" + std::string(DTypeName(e.dtype)) + "_" + e.bucket + "_" + e.hardware_key;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

// "x86_64.avx512.intel.fam6_mod167.t2" -> arch x86_64, isa avx512, threads 2.
struct RowHardware {
  std::string arch, isa;
  int threads = 1;
};

RowHardware ParseHardwareKey(std::string_view key) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t dot; (dot = key.find('.', start)) != std::string_view::npos; start = dot + 1) {
    parts.emplace_back(key.substr(start, dot - start));
  }
  parts.emplace_back(key.substr(start));
  RowHardware hw;
  if (parts.size() >= 2) {
    hw.arch = parts[0];
    hw.isa = parts[1];
  }
  if (parts.back().size() > 1 && parts.back()[0] == 't') hw.threads = std::atoi(parts.back().c_str() + 1);
  return hw;
}

class TunedRow : public ::testing::TestWithParam<tuner::TunedEntry> {};

TEST(TunedRows, TheCheckedInTableHasRowsForRegisteredKernelsOnly) {
  const auto rows = CheckedInRows();
  EXPECT_FALSE(rows.empty());
  for (const auto& row : rows) EXPECT_NE(FindKernel(row.kernel), nullptr) << row.kernel;
}

// Each row's config validates for its bucket on the hardware it was tuned on (always checked:
// validation is pure), then runs and verifies against the reference on this host. A row whose
// ISA this host cannot run is still run on this host's own path when its config is valid here,
// and is reported as skipped for its own ISA, with the reason.
TEST_P(TunedRow, ValidatesAndVerifies) {
  const tuner::TunedEntry& row = GetParam();
  const KernelSpec* spec = FindKernel(row.kernel);
  ASSERT_NE(spec, nullptr) << "row for unregistered kernel " << row.kernel;
  EXPECT_EQ(row.bucket_version, spec->bucket_version()) << "row from an older bucketing";
  const auto bucket = spec->ProblemFromBucket(row.dtype, row.bucket);
  ASSERT_TRUE(bucket.has_value()) << row.bucket << ": " << bucket.error().ToString();
  ASSERT_TRUE(spec->ValidateProblem(*bucket).has_value()) << bucket->ToString();
  const RowHardware tuned_on = ParseHardwareKey(row.hardware_key);
  ASSERT_FALSE(tuned_on.isa.empty()) << "hardware key " << row.hardware_key;
  const Status on_own = spec->ValidateConfig(row.config, *bucket, HwWithIsa(tuned_on.isa, tuned_on.threads));
  ASSERT_TRUE(on_own.has_value()) << row.config.ToString() << " on " << row.hardware_key << ": "
                                  << on_own.error().ToString();

  const HardwareProfile& host = HostHardware();
  const bool host_runs_row_isa = tuned_on.arch == host.cpu.arch && HostCanRun(tuned_on.isa);
  const Status on_host = spec->ValidateConfig(row.config, *bucket, host);
  if (!on_host.has_value()) {
    if (!host_runs_row_isa) {
      GTEST_SKIP() << "not run: tuned for " << row.hardware_key << ", and its config is invalid on this host ("
                   << host.Key() << "): " << on_host.error().ToString();
    }
    FAIL() << row.config.ToString() << " is invalid on this host although it runs " << tuned_on.isa << ": "
           << on_host.error().ToString();
  }
  auto inst = spec->MakeInstance(spec->VerificationProblem(row.config, *bucket), 42);
  inst->RunReference();
  inst->PoisonOutputs();
  const Status run = inst->Run(row.config, tuned_on.threads);
  ASSERT_TRUE(run.has_value()) << run.error().ToString();
  const VerifyReport r = inst->Verify();
  ASSERT_TRUE(r.ok) << row.config.ToString() << ": " << Describe(r);
  if (!host_runs_row_isa) {
    GTEST_SKIP() << "verified on this host's " << host.cpu.isa << " path only: the row's " << tuned_on.isa << " path ("
                 << row.hardware_key << ") cannot run here";
  }
}

INSTANTIATE_TEST_SUITE_P(CheckedIn, TunedRow, ::testing::ValuesIn(CheckedInRows()), RowName);

}  // namespace
}  // namespace blocktune
