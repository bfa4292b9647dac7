// blocktune simulate and blocktune sweeps compare: the logic is tuner/search/simulate.h and
// tuner/search/agreement.h; here only loading stored measurements and printing; see
// local_commands.h.
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
#include "tuner/search/agreement.h"
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
// `simulate` and `sweeps compare`: the logic is tuner/search/simulate.h and agreement.h; here
// only loading stored measurements and printing.

Result<std::vector<tuner::search::StoredBucket>> LoadSweepBuckets(store::Store& db, const store::SweepRecord& sweep) {
  const KernelSpec* spec = FindKernel(sweep.request.kernel);
  if (spec == nullptr)
    return InvalidArgument("sweep " + std::to_string(sweep.id) + " has unknown kernel " + sweep.request.kernel);
  std::vector<tuner::Measurement> all;
  std::set<std::string> seen;
  for (const auto& shape : sweep.request.shapes) {
    const std::string bucket = spec->Bucket(Problem{sweep.request.dtype, shape}).first;
    if (!seen.insert(bucket).second) continue;
    auto ms = db.measurements().ListBucket(sweep.id, bucket);
    if (!ms) return std::unexpected(ms.error());
    for (auto& m : *ms) all.push_back(std::move(m));
  }
  return tuner::search::GroupMeasurements(sweep.request.kernel, sweep.hardware_key, sweep.request.dtype, all);
}

// Every bucket of every finished exhaustive sweep of `kernel` (all kernels if empty); a bucket
// measured by several sweeps gets each config's lowest median over them (tuner::search::CombineSweeps).
Result<std::vector<tuner::search::StoredBucket>> LoadExhaustive(const std::vector<std::string>& paths,
                                                                const std::string& kernel) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<tuner::search::StoredBucket>>
      runs;
  for (const std::string& path : paths) {
    if (access(path.c_str(), R_OK) != 0) return NotFound("cannot read database " + path);
    auto db = store::Store::Open(path);
    if (!db) return std::unexpected(db.error());
    auto sweeps = (*db)->sweeps().List(store::SweepStatus::kDone, int64_t{1} << 40);
    if (!sweeps) return std::unexpected(sweeps.error());
    for (const auto& sw : *sweeps) {
      if (sw.request.strategy != tuner::Strategy::kExhaustive) continue;
      if (!kernel.empty() && sw.request.kernel != kernel) continue;
      auto buckets = LoadSweepBuckets(**db, sw);
      if (!buckets) return std::unexpected(buckets.error());
      for (auto& b : *buckets) {
        runs[{b.kernel, b.hardware_key, std::string(DTypeName(b.dtype)), b.bucket}].push_back(std::move(b));
      }
    }
  }
  std::vector<tuner::search::StoredBucket> out;
  for (auto& [_, r] : runs) out.push_back(tuner::search::CombineSweeps(r));
  return out;
}

struct SimulateArgs {
  std::vector<std::string> db;
  std::string data;
  std::string kernel;
  std::string strategy = "auto";
  double budget_fraction = 0.1;
  int64_t budget = 0;
  std::vector<std::string> prior;
  int seeds = 20;
  int64_t first_seed = 1;
  double threshold = 0.98;
  std::string export_path;
  bool curves = false;
  bool sequential_prior = false;
};

int RunSimulate(const Common& c, const SimulateArgs& a) {
  if (a.db.empty() == a.data.empty()) return Fail(kExitUsage, "give exactly one of --db and --data");
  Result<std::vector<tuner::search::StoredBucket>> buckets;
  if (!a.db.empty()) {
    buckets = LoadExhaustive(a.db, a.kernel);
  } else {
    auto text = ReadText(a.data);
    if (!text) return Fail(kExitFailed, text.error().message);
    buckets = tuner::search::ParseStoredBuckets(*text);
    if (buckets && !a.kernel.empty()) {
      std::erase_if(*buckets, [&](const tuner::search::StoredBucket& b) { return b.kernel != a.kernel; });
    }
  }
  if (!buckets) return Fail(kExitFailed, buckets.error().ToString());
  // --prior: other devices' landscapes, each a database or a --data export like the input.
  std::vector<tuner::search::StoredBucket> prior;
  for (const std::string& path : a.prior) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Fail(kExitFailed, "cannot read --prior " + path);
    std::string head(16, '\0');
    in.read(head.data(), 16);
    Result<std::vector<tuner::search::StoredBucket>> more;
    if (head.rfind("SQLite format 3", 0) == 0) {
      more = LoadExhaustive({path}, a.kernel);
    } else {
      in.clear();
      in.seekg(0);
      std::ostringstream text;
      text << in.rdbuf();
      more = tuner::search::ParseStoredBuckets(text.str());
    }
    if (!more) return Fail(kExitFailed, "--prior " + path + ": " + more.error().ToString());
    for (auto& b : *more) prior.push_back(std::move(b));
  }
  if (buckets->empty())
    return Fail(kExitFailed, "no stored exhaustive measurements" + (a.kernel.empty() ? "" : " of " + a.kernel));
  if (!a.export_path.empty()) {
    std::ofstream out(a.export_path, std::ios::binary);
    out << tuner::search::FormatStoredBuckets(*buckets);
    if (!out) return Fail(kExitFailed, "cannot write " + a.export_path);
  }
  tuner::search::SimulateOptions opt;
  opt.strategy = *tuner::ParseStrategy(a.strategy);
  opt.budget_fraction = a.budget_fraction;
  opt.budget = a.budget;
  opt.prior = std::move(prior);
  opt.seeds = a.seeds;
  opt.first_seed = static_cast<uint64_t>(a.first_seed);
  opt.threshold = a.threshold;
  opt.sequential_prior = a.sequential_prior;
  if (opt.sequential_prior && opt.strategy != tuner::Strategy::kTransfer && opt.strategy != tuner::Strategy::kAuto) {
    return Fail(kExitUsage, "--sequential-prior applies to --strategy transfer and auto only");
  }
  if (!opt.prior.empty() && opt.strategy != tuner::Strategy::kTransfer && opt.strategy != tuner::Strategy::kAuto) {
    return Fail(kExitUsage, "--prior applies to --strategy transfer and auto only");
  }
  auto report = tuner::search::Simulate(*buckets, opt);
  if (!report) return Fail(kExitUsage, report.error().ToString());
  if (c.json) {
    Json rows = Json::array();
    for (const auto& b : report->buckets) {
      const auto score = [&](const tuner::search::StrategyScore& s) {
        Json j{{"mean_ratio", s.mean_ratio},           {"min_ratio", s.min_ratio},
               {"hit_fraction", s.hit_fraction},       {"score", s.score},
               {"score_at_budget", s.score_at_budget}, {"best_ns", s.best_ns}};
        if (a.curves) j["curve"] = s.curve;
        return j;
      };
      rows.push_back({{"kernel", b.kernel},
                      {"hardware", b.hardware_key},
                      {"dtype", DTypeName(b.dtype)},
                      {"bucket", b.bucket},
                      {"space", b.space_size},
                      {"budget", b.budget},
                      {"optimum_ns", b.optimum_ns},
                      {"optimum", server::wire::EncodeConfig(b.optimum)},
                      {"random_expected_ns", b.random_expected_ns},
                      {a.strategy, score(b.strategy)},
                      {"random", score(b.random)}});
    }
    std::printf("%s\n", Json{{"strategy", a.strategy},
                             {"budget_fraction", a.budget_fraction},
                             {"budget", a.budget},
                             {"seeds", a.seeds},
                             {"strategy_score", report->strategy_score},
                             {"random_score", report->random_score},
                             {"threshold", a.threshold},
                             {"buckets", rows},
                             {"strategy_bucket_fraction", report->strategy_bucket_fraction},
                             {"random_bucket_fraction", report->random_bucket_fraction},
                             {"strategy_mean_ratio", report->strategy_mean_ratio},
                             {"random_mean_ratio", report->random_mean_ratio},
                             {"strategy_run_fraction", report->strategy_run_fraction},
                             {"random_run_fraction", report->random_run_fraction}}
                            .dump()
                            .c_str());
    return 0;
  }
  int width = 6;
  for (const auto& b : report->buckets) width = std::max(width, static_cast<int>(b.bucket.size()));
  std::printf("%-15s %-*s %5s %6s %10s %10s %7s %10s %10s %7s\n", "kernel", width, "bucket", "space", "budget",
              (a.strategy + " mean").c_str(), "min", "score", "random", "min", "score");
  for (const auto& b : report->buckets) {
    std::printf("%-15s %-*s %5lld %6lld %10.4f %10.4f %7.3f %10.4f %10.4f %7.3f\n", b.kernel.c_str(), width,
                b.bucket.c_str(), static_cast<long long>(b.space_size), static_cast<long long>(b.budget),
                b.strategy.mean_ratio, b.strategy.min_ratio, b.strategy.score, b.random.mean_ratio, b.random.min_ratio,
                b.random.score);
    if (a.curves) {
      std::printf("    best/optimum by evaluation (%s):", a.strategy.c_str());
      for (double v : b.strategy.curve) std::printf(" %.3f", v);
      std::printf("\n    best/optimum by evaluation (random):");
      for (double v : b.random.curve) std::printf(" %.3f", v);
      std::printf("\n");
    }
  }
  char budget[64];
  if (a.budget > 0) {
    std::snprintf(budget, sizeof budget, "%lld evaluations per bucket", static_cast<long long>(a.budget));
  } else {
    std::snprintf(budget, sizeof budget, "%.0f%% of each space", 100 * a.budget_fraction);
  }
  std::printf(
      "%s at %s, %d seeds: best-found >= %.2f of the optimum on %.1f%% of %zu buckets "
      "(random: %.1f%%); mean best/optimum %.4f (random %.4f); runs >= %.2f: %.1f%% (random %.1f%%); "
      "methodology score %.3f (random %.3f)\n",
      a.strategy.c_str(), budget, a.seeds, a.threshold, 100 * report->strategy_bucket_fraction, report->buckets.size(),
      100 * report->random_bucket_fraction, report->strategy_mean_ratio, report->random_mean_ratio, a.threshold,
      100 * report->strategy_run_fraction, 100 * report->random_run_fraction, report->strategy_score,
      report->random_score);
  return 0;
}

struct CompareArgs {
  std::string db_a;
  int64_t sweep_a = 0;
  std::string db_b;
  int64_t sweep_b = 0;
  double tolerance = 0.03;
  bool remeasure = false;
  double min_time_ms = 20;
  int repetitions = 7;
};

// What a sweep chose per bucket: its recorded decision round, else its lowest passing median.
struct SweepChoices {
  std::vector<tuner::search::StoredBucket> buckets;
  std::vector<std::pair<std::string, Config>> chosen;
  store::SweepRecord sweep;
};

Result<SweepChoices> LoadChoices(const std::string& path, int64_t id) {
  if (access(path.c_str(), R_OK) != 0) return NotFound("cannot read database " + path);
  auto db = store::Store::Open(path);
  if (!db) return std::unexpected(db.error());
  auto sweep = (*db)->sweeps().Get(id);
  if (!sweep) return std::unexpected(sweep.error());
  auto buckets = LoadSweepBuckets(**db, *sweep);
  if (!buckets) return std::unexpected(buckets.error());
  std::vector<std::pair<std::string, Config>> chosen;
  for (const auto& b : *buckets) {
    if (auto round = (*db)->decisions().Get(id, b.bucket)) {
      chosen.emplace_back(b.bucket, round->chosen);
      continue;
    }
    std::vector<tuner::Measurement> ms;
    for (const auto& sc : b.configs) {
      tuner::Measurement m;
      m.config = sc.config;
      m.outcome = sc.outcome;
      m.median_ns = sc.median_ns;
      ms.push_back(std::move(m));
    }
    if (const tuner::Measurement* w = tuner::SelectWinner(ms)) chosen.emplace_back(b.bucket, w->config);
  }
  return SweepChoices{std::move(*buckets), std::move(chosen), std::move(*sweep)};
}

int RunCompare(const Common& c, const CompareArgs& a) {
  auto ca = LoadChoices(a.db_a, a.sweep_a);
  if (!ca) return Fail(kExitFailed, "sweep A: " + ca.error().ToString());
  auto cb = LoadChoices(a.db_b, a.sweep_b);
  if (!cb) return Fail(kExitFailed, "sweep B: " + cb.error().ToString());
  tuner::search::AgreementReport r;
  if (a.remeasure) {
    const store::SweepRecord& sa = ca->sweep;
    const store::SweepRecord& sb = cb->sweep;
    if (sa.request.kernel != sb.request.kernel || sa.request.dtype != sb.request.dtype ||
        sa.request.threads != sb.request.threads) {
      return Fail(kExitUsage, "--remeasure needs two sweeps of one kernel, dtype and thread count");
    }
    const KernelSpec* spec = FindKernel(sa.request.kernel);
    if (spec == nullptr) return Fail(kExitFailed, "unknown kernel " + sa.request.kernel);
    tuner::timing::TimingOptions timing;
    timing.min_repetition_ns = a.min_time_ms * 1e6;
    timing.repetitions = a.repetitions;
    tuner::InProcessEvaluator evaluator;
    r = tuner::search::RemeasureChoices(*spec, sa.request.dtype, sa.request.threads, ca->chosen, cb->chosen, evaluator,
                                        timing, a.tolerance);
  } else {
    r = tuner::search::CompareChoices(ca->buckets, ca->chosen, cb->buckets, cb->chosen, a.tolerance);
  }
  if (c.json) {
    Json rows = Json::array();
    for (const auto& g : r.buckets) {
      rows.push_back({{"bucket", g.bucket},
                      {"chosen_a", server::wire::EncodeConfig(g.chosen_a)},
                      {"chosen_b", server::wire::EncodeConfig(g.chosen_b)},
                      {"slowdown", g.slowdown},
                      {"judged_by", std::string(1, g.judged_by)},
                      {"within", g.within}});
    }
    std::printf("%s\n", Json{{"tolerance", r.tolerance},
                             {"buckets", rows},
                             {"within_fraction", r.within_fraction},
                             {"unjudged", r.unjudged}}
                            .dump()
                            .c_str());
    return 0;
  }
  int width = 6;
  for (const auto& g : r.buckets) width = std::max(width, static_cast<int>(g.bucket.size()));
  for (const auto& g : r.buckets) {
    std::printf("%-*s  A %-40s B %-40s %+6.2f%% (by %c)%s\n", width, g.bucket.c_str(), g.chosen_a.ToString().c_str(),
                g.chosen_b.ToString().c_str(), 100 * g.slowdown, g.judged_by, g.within ? "" : "  OUTSIDE");
  }
  for (const auto& u : r.unjudged) {
    std::printf("%-*s  %s\n", width, u.c_str(),
                a.remeasure ? "could not be re-timed" : "neither sweep measured the other's choice");
  }
  std::printf("choices within %.0f%% of each other on %.1f%% of %zu buckets\n", 100 * r.tolerance,
              100 * r.within_fraction, r.buckets.size());
  return 0;
}

}  // namespace

std::function<int()> RegisterSimulateCommands(CLI::App& app, Common& common) {
  auto simulate_ptr = std::make_shared<SimulateArgs>();
  SimulateArgs& simulate = *simulate_ptr;
  auto* simulate_cmd = app.add_subcommand(
      "simulate",
      "replay a search strategy against stored exhaustive measurements (no kernel runs): best-found over optimum "
      "per bucket at a budget, next to random search");
  AddCommon(simulate_cmd, common, false);
  simulate_cmd->add_option("--db", simulate.db,
                           "SQLite database with finished exhaustive sweeps (repeatable; a bucket swept several times "
                           "gets each config's lowest median)");
  simulate_cmd->add_option("--data", simulate.data, "tab-separated export (see --export) instead of --db");
  simulate_cmd->add_option("--kernel", simulate.kernel, "only this kernel (default: all)");
  simulate_cmd
      ->add_option("--strategy", simulate.strategy,
                   "strategy to score (transfer and auto: each bucket's prior is every other bucket of the same "
                   "kernel, hardware and dtype in the data, plus --prior; docs/search.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"random", "anneal", "surrogate", "transfer", "auto"}));
  simulate_cmd
      ->add_option("--budget-fraction", simulate.budget_fraction, "evaluations as a fraction of each bucket's space")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 1.0));
  simulate_cmd
      ->add_option("--budget", simulate.budget,
                   "evaluations per bucket (capped at its space), instead of --budget-fraction: distinct configs "
                   "measured, failed ones included")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  simulate_cmd
      ->add_option("--prior", simulate.prior,
                   "other landscapes of the same kernel (databases with exhaustive sweeps, or --export files), "
                   "e.g. the other devices': a prior for transfer and auto")
      ->expected(1, -1);
  simulate_cmd->add_option("--seeds", simulate.seeds, "runs per bucket (seeds 1..N)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  simulate_cmd->add_option("--first-seed", simulate.first_seed, "first seed")->capture_default_str();
  simulate_cmd->add_flag("--sequential-prior", simulate.sequential_prior,
                         "transfer: each bucket's prior is only the buckets before it in the data, as far as this "
                         "replay measured them (one sweep on a machine with nothing stored)");
  simulate_cmd->add_option("--threshold", simulate.threshold, "best/optimum counted as a hit")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  simulate_cmd->add_option("--export", simulate.export_path,
                           "also write the loaded measurements to this file (the --data format)");
  simulate_cmd->add_flag("--curves", simulate.curves, "print best/optimum after each evaluation");

  auto compare_ptr = std::make_shared<CompareArgs>();
  CompareArgs& compare = *compare_ptr;
  // `sweeps` (list, show, wait, cancel, measurements) is registered with the service commands;
  // `compare` joins it there.
  CLI::App* sweeps_cmd = nullptr;
  for (CLI::App* sub : app.get_subcommands([](const CLI::App* a) { return a->get_name() == "sweeps"; })) {
    sweeps_cmd = sub;
  }
  if (sweeps_cmd == nullptr) sweeps_cmd = app.add_subcommand("sweeps", "inspect stored sweeps");
  auto* compare_cmd = sweeps_cmd->add_subcommand(
      "compare", "two independent sweeps of the same buckets: how far apart their chosen configs are, per bucket");
  AddCommon(compare_cmd, common, false);
  compare_cmd->add_option("--db-a", compare.db_a, "database of sweep A")->required();
  compare_cmd->add_option("--sweep-a", compare.sweep_a, "id of sweep A")->required();
  compare_cmd->add_option("--db-b", compare.db_b, "database of sweep B (may equal --db-a)")->required();
  compare_cmd->add_option("--sweep-b", compare.sweep_b, "id of sweep B")->required();
  compare_cmd->add_option("--tolerance", compare.tolerance, "relative difference counted as agreement")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  compare_cmd->add_flag("--remeasure", compare.remeasure,
                        "judge by timing both choices again here, side by side with interleaved repetitions "
                        "(runs the kernels; the median of the per-cycle ratios), instead of by the sweeps' "
                        "stored medians");
  compare_cmd->add_option("--min-time-ms", compare.min_time_ms, "with --remeasure: minimum time per repetition")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10000.0));
  compare_cmd->add_option("--repetitions", compare.repetitions, "with --remeasure: interleaved repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));

  return [=, &common]() -> int {
    if (simulate_cmd->parsed()) return RunSimulate(common, *simulate_ptr);
    if (compare_cmd->parsed()) return RunCompare(common, *compare_ptr);
    return -1;
  };
}

}  // namespace blocktune::client
