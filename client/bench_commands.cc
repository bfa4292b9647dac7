// blocktune bench (one config verified and timed, or --compare: tuned against default per
// bucket) and blocktune regret (what each fallback level would serve, timed; tuner/regret.h):
// the commands that run kernels here; see local_commands.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "blocktune/version.h"
#include "client/cli.h"
#include "client/local_commands.h"
#include "codegen/codegen.h"
#include "external/runner.h"
#include "external/spec.h"
#include "kernels/core/fingerprint.h"
#include "kernels/core/kernel_spec.h"
#include "server/wire/wire.h"
#include "store/store.h"
#include "tuner/gate.h"
#include "tuner/isolation/worker_evaluator.h"
#include "tuner/lookup.h"
#include "tuner/regret.h"
#include "tuner/search/simulate.h"
#include "tuner/sweep.h"
#include "tuner/timing/timing.h"

namespace blocktune::client {
namespace {

using namespace blocktune;
using server::wire::Json;

using client::AddCommon;
using client::Common;
using client::Fail;
using client::kExitFailed;
using client::kExitUsage;
using client::ParseShape;

// ---------------------------------------------------------------------------------------------

struct BenchArgs {
  std::string kernel;
  std::string dtype = "f32";
  std::string shape;
  int threads = 1;
  std::string config = "tuned";
  double min_time_ms = 200;
  int repetitions = 5;
  bool compare = false;
  std::string isa;  // empty: the CPU's own level (or BLOCKTUNE_ISA)
};

// Times two configs on one problem with their repetitions interleaved (A B A B ...), so a
// drift in machine load hits both alike; returns the medians.
std::pair<double, double> TimeInterleaved(KernelInstance& inst, const Config& a, const Config& b, int threads,
                                          const tuner::timing::TimingOptions& opt) {
  tuner::timing::TimingOptions one = opt;
  one.repetitions = 1;
  std::vector<double> sa, sb;
  for (int r = 0; r < opt.repetitions; ++r) {
    if (auto t = tuner::timing::TimeRepeated([&] { return inst.Run(a, threads); }, one)) sa.push_back(t->median_ns);
    if (auto t = tuner::timing::TimeRepeated([&] { return inst.Run(b, threads); }, one)) sb.push_back(t->median_ns);
  }
  return {tuner::timing::Median(sa), tuner::timing::Median(sb)};
}

// `bench KERNEL --compare`: for every bucket the checked-in table has for this host at
// --threads, the tuned config against the default at the bucket's shape, and the geomean.
int RunBenchCompare(const Common& c, const KernelSpec& spec, const BenchArgs& a, DType dtype) {
  HardwareProfile hw = HardwareProfile::Detect(a.threads);
  auto rows = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  if (!rows) return Fail(kExitFailed, "checked-in table: " + rows.error().ToString());
  tuner::timing::TimingOptions opt;
  opt.min_repetition_ns = a.min_time_ms * 1e6;
  opt.repetitions = a.repetitions;
  Json out = Json::array();
  double log_sum = 0;
  int count = 0;
  const Config default_config = spec.DefaultConfig();
  std::vector<const tuner::TunedEntry*> mine;
  int bucket_width = 6;
  int config_width = 12;
  for (const auto& e : *rows) {
    if (e.kernel != spec.name() || e.hardware_key != hw.Key() || e.dtype != dtype) continue;
    mine.push_back(&e);
    bucket_width = std::max(bucket_width, static_cast<int>(e.bucket.size()));
    config_width = std::max(config_width, static_cast<int>(e.config.ToString().size()));
  }
  if (!c.json) {
    std::printf("%-*s  %-*s %12s %12s %8s\n", bucket_width, "bucket", config_width, "tuned config", "default ms",
                "tuned ms", "speedup");
  }
  for (const tuner::TunedEntry* row : mine) {
    const tuner::TunedEntry& e = *row;
    auto problem = spec.ProblemFromBucket(dtype, e.bucket);
    if (!problem) continue;
    auto inst = spec.MakeInstance(*problem, 1);
    inst->RunReference();
    bool ok = true;
    for (const Config* cfg : {&e.config, &default_config}) {
      inst->PoisonOutputs();
      ok = ok && inst->Run(*cfg, a.threads).has_value() && inst->Verify().ok;
    }
    if (!ok) return Fail(kExitFailed, "verification failed on bucket " + e.bucket);
    const auto [def_ns, tuned_ns] = TimeInterleaved(*inst, default_config, e.config, a.threads, opt);
    const double speedup = def_ns / tuned_ns;
    log_sum += std::log(speedup);
    ++count;
    if (c.json) {
      out.push_back({{"bucket", e.bucket},
                     {"tuned_config", server::wire::EncodeConfig(e.config)},
                     {"default_ns", def_ns},
                     {"tuned_ns", tuned_ns},
                     {"speedup", speedup}});
    } else {
      std::printf("%-*s  %-*s %12.3f %12.3f %7.2fx\n", bucket_width, e.bucket.c_str(), config_width,
                  e.config.ToString().c_str(), def_ns / 1e6, tuned_ns / 1e6, speedup);
    }
  }
  if (count == 0)
    return Fail(kExitFailed, "the checked-in table has no " + std::string(spec.name()) + " rows for " + hw.Key());
  const double geomean = std::exp(log_sum / count);
  if (c.json) {
    std::printf("%s\n", Json{{"kernel", spec.name()},
                             {"hardware", hw.Key()},
                             {"threads", a.threads},
                             {"default_config", server::wire::EncodeConfig(default_config)},
                             {"buckets", out},
                             {"geomean_speedup", geomean}}
                            .dump()
                            .c_str());
  } else {
    std::printf("geomean speedup of tuned over default (%s): %.3fx over %d buckets\n",
                default_config.ToString().c_str(), geomean, count);
  }
  return 0;
}

// What bench and regret both start from: the forced ISA level (if any), the kernel and the dtype;
// a bad one is a usage error, printed, and returned as the exit code.
struct LocalKernel {
  const KernelSpec* spec;
  DType dtype;
};
std::expected<LocalKernel, int> PrepareLocalKernel(const std::string& isa, const std::string& kernel,
                                                   const std::string& dtype_name) {
  if (!isa.empty()) {
    if (auto s = ForceIsa(isa); !s) return std::unexpected(Fail(kExitUsage, s.error().message));
  }
  const KernelSpec* spec = FindKernel(kernel);
  if (spec == nullptr) return std::unexpected(Fail(kExitUsage, "unknown kernel '" + kernel + "'"));
  auto dtype = ParseDType(dtype_name);
  if (!dtype) return std::unexpected(Fail(kExitUsage, "unknown dtype '" + dtype_name + "'"));
  return LocalKernel{spec, *dtype};
}

int RunBench(const Common& c, const BenchArgs& a) {
  auto k = PrepareLocalKernel(a.isa, a.kernel, a.dtype);
  if (!k) return k.error();
  const KernelSpec* spec = k->spec;
  const DType dtype = k->dtype;
  if (a.compare) return RunBenchCompare(c, *spec, a, dtype);
  if (a.shape.empty()) return Fail(kExitUsage, "--shape is required (or --compare)");
  auto dims = ParseShape(a.shape);
  if (!dims) return Fail(kExitUsage, dims.error().ToString());
  const Problem problem{dtype, *dims};
  if (auto s = spec->ValidateProblem(problem); !s) return Fail(kExitUsage, "--shape: " + s.error().ToString());
  HardwareProfile hw = HardwareProfile::Detect(a.threads);

  Config config;
  std::string source;
  if (a.config == "default") {
    config = spec->DefaultConfig();
    source = "default";
  } else if (a.config == "tuned") {
    auto rows = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
    if (!rows) return Fail(kExitFailed, "checked-in table: " + rows.error().ToString());
    auto ans = tuner::Lookup(*spec, *rows, tuner::LookupQuery{dtype, *dims, hw.Key(), std::nullopt});
    if (!ans) return Fail(kExitUsage, ans.error().ToString());
    config = ans->config;
    source = std::string(tables::SourceName(ans->source));
  } else {
    auto parsed = NamedInts::Parse(a.config);
    if (!parsed) return Fail(kExitUsage, "--config: " + parsed.error().ToString());
    auto full = spec->CompleteConfig(*parsed);
    if (!full) return Fail(kExitUsage, "--config: " + full.error().ToString());
    config = *full;
    source = "explicit";
  }
  if (auto s = spec->ValidateConfig(config, problem, hw); !s) {
    return Fail(kExitUsage, "config " + config.ToString() + " is invalid: " + s.error().ToString());
  }

  // Verify before timing, on the full problem: a fast wrong kernel is not a result.
  auto inst = spec->MakeInstance(problem, /*seed=*/1);
  inst->RunReference();
  inst->PoisonOutputs();
  if (auto s = inst->Run(config, a.threads); !s) return Fail(kExitFailed, s.error().ToString());
  const VerifyReport v = inst->Verify();
  tuner::timing::TimingOptions opt;
  opt.min_repetition_ns = a.min_time_ms * 1e6;
  opt.repetitions = a.repetitions;
  tuner::timing::TimingResult t;
  if (v.ok) {
    auto timed = tuner::timing::TimeRepeated([&] { return inst->Run(config, a.threads); }, opt);
    if (!timed) return Fail(kExitFailed, timed.error().ToString());
    t = std::move(*timed);
  }
  const double gflops = t.median_ns > 0 ? spec->Flops(problem) / t.median_ns : 0;
  if (c.json) {
    Json out{{"kernel", a.kernel},
             {"problem", server::wire::EncodeConfig(*dims)},
             {"dtype", a.dtype},
             {"threads", a.threads},
             {"config", server::wire::EncodeConfig(config)},
             {"source", source},
             {"verified", v.ok},
             {"max_abs_err", v.max_abs_err},
             {"median_ns", t.median_ns},
             {"cv", t.cv},
             {"gflops", gflops},
             {"samples_ns", t.samples_ns},
             {"hardware", hw.Key()}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("kernel    %s %s %s threads=%d\n", a.kernel.c_str(), a.dtype.c_str(), dims->ToString().c_str(),
                a.threads);
    std::printf("config    %s (%s)\n", config.ToString().c_str(), source.c_str());
    std::printf("verified  %s (max abs err %.3g over %lld elements)\n", v.ok ? "yes" : "NO", v.max_abs_err,
                static_cast<long long>(v.elements));
    if (v.ok) {
      std::printf("median    %.0f ns (cv %.2f%%, %zu reps x %lld iters)\n", t.median_ns, 100 * t.cv,
                  t.samples_ns.size(), static_cast<long long>(t.iterations));
      std::printf("rate      %.1f GFLOP/s\n", gflops);
    }
  }
  return v.ok ? 0 : Fail(kExitFailed, "verification against the reference failed; not timed");
}

// ---------------------------------------------------------------------------------------------
// `regret KERNEL`: what each fallback level would serve on this host, timed against the default
// and the best of them (tuner/regret.h); the evidence behind the chain in resolve.h.

struct RegretArgs {
  std::string kernel;
  std::string buckets = "checked-in";
  std::string table;  // empty: the checked-in table
  std::string dtype = "f32";
  int threads = 1;
  std::string isa;
  std::string hardware;  // empty: this host's key
  double min_time_ms = 20;
  int repetitions = 7;
};

int RunRegret(const Common& c, const RegretArgs& a) {
  auto k = PrepareLocalKernel(a.isa, a.kernel, a.dtype);
  if (!k) return k.error();
  const KernelSpec* spec = k->spec;
  const DType dtype = k->dtype;
  std::string table_text(codegen::CheckedInEntriesJsonl());
  if (!a.table.empty()) {
    auto t = ReadText(a.table);
    if (!t) return Fail(kExitFailed, "--table: " + t.error().ToString());
    table_text = std::move(*t);
  }
  auto rows = codegen::ParseJsonl(table_text);
  if (!rows)
    return Fail(kExitFailed, (a.table.empty() ? "checked-in table: " : a.table + ": ") + rows.error().ToString());
  std::vector<std::string> buckets;
  if (a.buckets != "checked-in") {
    auto t = ReadText(a.buckets);
    if (!t) return Fail(kExitUsage, "--buckets: " + t.error().ToString());
    buckets = tuner::ParseBucketList(*t);
    if (buckets.empty()) return Fail(kExitUsage, "--buckets: " + a.buckets + " lists no bucket");
  }
  HardwareProfile hw = HardwareProfile::Detect(a.threads);
  if (!a.hardware.empty() && a.hardware != hw.Key()) {
    // This machine times only what it runs: its own key, or a device its kernel's runner says it
    // measures on (each bucket is checked against the runner's answers, tuner/regret.cc).
    if (!tables::IsDeviceKey(a.hardware)) {
      return Fail(kExitUsage, "--hardware " + a.hardware + " is neither this host's key (" + hw.Key() +
                                  ") nor a device key (gpu.*, tpu.*)");
    }
    if (spec->runner() == nullptr) {
      return Fail(kExitUsage, "--hardware " + a.hardware + ": " + std::string(spec->name()) +
                                  " is not an external kernel, so no runner measures on that device");
    }
    hw.device_key = a.hardware;
  }
  // A device key's chain is the key alone: other models of its architecture are not on it.
  const bool device = tables::IsDeviceKey(hw.Key());
  const auto on_chain = [&](tuner::RegretLevel l) {
    return device ? l == tuner::RegretLevel::kExact : tuner::OnCurrentChain(l);
  };
  auto plan = tuner::PlanRegret(*spec, *rows, hw.Key(), dtype, buckets);
  if (!plan) return Fail(kExitUsage, "--buckets: " + plan.error().ToString());
  if (plan->empty()) {
    return Fail(kExitFailed, "the table has no " + std::string(spec->name()) + " " + a.dtype + " rows to judge");
  }
  tuner::timing::TimingOptions timing;
  timing.min_repetition_ns = a.min_time_ms * 1e6;
  timing.repetitions = a.repetitions;
  tuner::InProcessEvaluator evaluator;
  tuner::SweepOptions defaults;
  const tuner::RegretReport r = tuner::MeasureRegret(*spec, *plan, hw, evaluator, timing, defaults.min_noise_band);

  if (c.json) {
    Json buckets_json = Json::array();
    for (const auto& b : r.buckets) {
      Json rows_json = Json::array();
      for (const auto& row : b.rows) {
        Json j{{"level", std::string(tuner::RegretLevelName(row.candidate.level))},
               {"hardware", row.candidate.hardware},
               {"config", server::wire::EncodeConfig(row.candidate.config)},
               {"served", row.candidate.served},
               {"on_current_chain", on_chain(row.candidate.level)},
               {"outcome", std::string(tuner::OutcomeName(row.outcome))}};
        if (row.outcome == tuner::Outcome::kOk) {
          j["median_ns"] = row.median_ns;
          j["robust_cv"] = row.cv;
          j["speedup_vs_default"] = row.speedup_vs_default;
          j["regret_vs_best"] = row.regret_vs_best;
          j["paired_gain"] = row.paired_gain;
          j["noise_band"] = row.noise_band;
          j["beyond_noise"] = row.beyond_noise;
        } else {
          j["detail"] = row.detail;
        }
        rows_json.push_back(std::move(j));
      }
      buckets_json.push_back({{"bucket", b.bucket}, {"best_ns", b.best_ns}, {"rows", std::move(rows_json)}});
    }
    Json summary = Json::array();
    for (const auto& s : r.summary) {
      summary.push_back({{"level", std::string(tuner::RegretLevelName(s.level))},
                         {"on_current_chain", on_chain(s.level)},
                         {"buckets", s.buckets},
                         {"geomean_speedup", s.geomean_speedup},
                         {"worst_speedup", s.worst_speedup},
                         {"worst_bucket", s.worst_bucket},
                         {"mean_regret", s.mean_regret},
                         {"max_regret", s.max_regret},
                         {"slower_beyond_noise", s.slower_beyond_noise},
                         {"faster_beyond_noise", s.faster_beyond_noise},
                         {"refused", s.refused}});
    }
    std::printf("%s\n", Json{{"kernel", std::string(spec->name())},
                             {"dtype", a.dtype},
                             {"hardware", r.hardware},
                             {"threads", r.threads},
                             {"repetitions", a.repetitions},
                             {"min_time_ms", a.min_time_ms},
                             {"buckets", std::move(buckets_json)},
                             {"summary", std::move(summary)}}
                            .dump()
                            .c_str());
    return 0;
  }
  int bw = 6, kw = 8, cw = 6;
  for (const auto& b : r.buckets) {
    bw = std::max(bw, static_cast<int>(b.bucket.size()));
    for (const auto& row : b.rows) {
      kw = std::max(kw, static_cast<int>(row.candidate.hardware.size()));
      cw = std::max(cw, static_cast<int>(row.candidate.config.ToString().size()));
    }
  }
  std::printf("%s %s on %s (threads %d), %d interleaved repetitions of >= %.0f ms\n", spec->name().data(),
              a.dtype.c_str(), r.hardware.c_str(), r.threads, a.repetitions, a.min_time_ms);
  std::printf("%-*s  %-13s %-*s %-*s %11s %8s %8s\n", bw, "bucket", "level", kw, "hardware", cw, "config", "time ms",
              "vs dflt", "regret");
  for (const auto& b : r.buckets) {
    for (const auto& row : b.rows) {
      const std::string level =
          std::string(tuner::RegretLevelName(row.candidate.level)) + (row.candidate.served ? "" : "'");
      if (row.outcome != tuner::Outcome::kOk) {
        std::printf("%-*s  %-13s %-*s %-*s %s: %s\n", bw, b.bucket.c_str(), level.c_str(), kw,
                    row.candidate.hardware.c_str(), cw, row.candidate.config.ToString().c_str(),
                    std::string(tuner::OutcomeName(row.outcome)).c_str(), row.detail.c_str());
        continue;
      }
      std::printf("%-*s  %-13s %-*s %-*s %11.3f %7.3fx %7.1f%%%s\n", bw, b.bucket.c_str(), level.c_str(), kw,
                  row.candidate.hardware.empty() ? "-" : row.candidate.hardware.c_str(), cw,
                  row.candidate.config.ToString().c_str(), row.median_ns / 1e6, row.speedup_vs_default,
                  100 * row.regret_vs_best,
                  row.beyond_noise || row.candidate.level == tuner::RegretLevel::kDefault ? "" : "  ~");
    }
  }
  std::printf(
      "\n(' a row its level would not serve: a smaller key of the level comes first; ~ within the noise band "
      "of the default)\n");
  std::printf("%-13s %7s %9s %9s %-*s %8s %8s %7s %7s\n", "level", "buckets", "geomean", "worst", bw, "worst bucket",
              "mean reg", "max reg", "slower", "faster");
  for (const auto& s : r.summary) {
    std::printf("%-13s %7d %8.3fx %8.3fx %-*s %7.1f%% %7.1f%% %7d %7d%s%s\n", tuner::RegretLevelName(s.level).data(),
                s.buckets, s.geomean_speedup, s.worst_speedup, bw, s.worst_bucket.c_str(), 100 * s.mean_regret,
                100 * s.max_regret, s.slower_beyond_noise, s.faster_beyond_noise,
                on_chain(s.level) || s.level == tuner::RegretLevel::kDefault ? "" : "  (not on the chain)",
                s.refused ? (" " + std::to_string(s.refused) + " refused").c_str() : "");
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterBenchCommands(CLI::App& app, Common& common) {
  auto bench_ptr = std::make_shared<BenchArgs>();
  BenchArgs& bench = *bench_ptr;
  auto* bench_cmd = app.add_subcommand("bench", "verify a kernel config against the reference, then time it");
  AddCommon(bench_cmd, common, false);
  bench_cmd->add_option("kernel", bench.kernel, "kernel name")->required();
  bench_cmd->add_option("--shape", bench.shape, "problem dims, e.g. m=1024,n=1024,k=1024 (required unless --compare)");
  bench_cmd->add_flag("--compare", bench.compare,
                      "for every bucket of the checked-in table on this host at --threads: tuned vs default, "
                      "interleaved, and the geomean speedup");
  bench_cmd->add_option("--dtype", bench.dtype, "element type")->capture_default_str();
  bench_cmd->add_option("--threads", bench.threads, "threads")->capture_default_str()->check(CLI::Range(1, 256));
  bench_cmd
      ->add_option("--config", bench.config,
                   "tuned (checked-in table for this host), default, or name=value,... (unset names: default)")
      ->capture_default_str();
  bench_cmd->add_option("--min-time-ms", bench.min_time_ms, "minimum time per repetition")->capture_default_str();
  bench_cmd->add_option("--repetitions", bench.repetitions, "timed repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  bench_cmd
      ->add_option("--isa", bench.isa,
                   "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own); the tuned "
                   "config and hardware key are that level's")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));

  auto regret_ptr = std::make_shared<RegretArgs>();
  RegretArgs& regret = *regret_ptr;
  auto* regret_cmd = app.add_subcommand(
      "regret",
      "time what each fallback level of this host's key would serve (exact row, other thread count, other model, "
      "and the other-vendor / other-ISA rows the chain does not borrow) against the default and the best of them");
  AddCommon(regret_cmd, common, false);
  regret_cmd->add_option("kernel", regret.kernel, "kernel name")->required();
  regret_cmd
      ->add_option("--buckets", regret.buckets,
                   "checked-in (every bucket the table has for the kernel and dtype) or a file of bucket ids, "
                   "one per line")
      ->capture_default_str();
  regret_cmd->add_option("--table", regret.table,
                         "tuned rows to judge, in tuned_entries.jsonl form (default: the checked-in table)");
  regret_cmd->add_option("--dtype", regret.dtype, "element type")->capture_default_str();
  regret_cmd->add_option("--hardware", regret.hardware,
                         "judge the rows of this key instead of this host's: a device key (gpu.nvidia.sm90.h200) is "
                         "timed through the external kernel's runner, each bucket only where the runner answers "
                         "from that device (skipped with the reason otherwise); other_model is then another model "
                         "of its architecture, other_vendor another architecture, other_isa another vendor");
  regret_cmd->add_option("--threads", regret.threads, "threads the kernel runs with (part of the key)")
      ->required()
      ->check(CLI::Range(1, 256));
  regret_cmd
      ->add_option("--isa", regret.isa, "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own)")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  regret_cmd->add_option("--min-time-ms", regret.min_time_ms, "minimum time per repetition")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10000.0));
  regret_cmd->add_option("--repetitions", regret.repetitions, "interleaved repetitions per config")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));

  return [=, &common]() -> int {
    if (bench_cmd->parsed()) return RunBench(common, *bench_ptr);
    if (regret_cmd->parsed()) return RunRegret(common, *regret_ptr);
    return -1;
  };
}

}  // namespace blocktune::client
