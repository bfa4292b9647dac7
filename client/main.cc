// blocktune: the command-line client. The service commands (sweep, sweeps, lookup, kernels,
// hardware, tuned, misses, override, tables download, backup, health, metrics) are in
// service_commands.cc and talk to blocktuned over HTTP (`sweep --local` runs the service
// in-process); `tables generate` and `bench` here work locally on the libraries.
//
// `bench --compare` times the checked-in tuned configs against the default, bucket by bucket;
// `regret` times what each fallback level would serve (tuner/regret.h).
// `simulate` scores a search strategy against stored exhaustive sweeps without running a
// kernel, and `sweeps compare` measures how far two independent sweeps' choices are apart;
// both read SQLite files directly and print what tuner/search/simulate.h computes.
//
// Exit codes: see client/cli.h.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

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

#include "client/cli.h"
#include "blocktune/version.h"
#include "kernels/core/fingerprint.h"
#include "external/spec.h"
#include "kernels/core/kernel_spec.h"
#include "schema/store.h"
#include "server/codec.h"
#include "tables/codegen/codegen.h"
#include "tuner/gate.h"
#include "tuner/isolation/worker_evaluator.h"
#include "tuner/lookup.h"
#include "tuner/regret.h"
#include "tuner/search/simulate.h"
#include "tuner/sweep.h"
#include "tuner/timing/timing.h"

namespace {

using namespace blocktune;
using wire::Json;

using client::AddCommon;
using client::Common;
using client::Fail;
using client::kExitFailed;
using client::kExitUsage;
using client::ParseShape;

// ---------------------------------------------------------------------------------------------

struct TablesArgs {
  std::string out = "tables";
  std::string db;
  bool check = false;
  // The regression gate (tuner/gate.h): host rows that would replace a checked-in row with
  // another config are re-timed side by side first, unless --force.
  bool force = false;
  int gate_repetitions = 9;
  // The regression gate verifies and times in worker processes (tuner/isolation), so a config
  // that crashes or hangs is refused and generation goes on; empty: blocktune-worker next to
  // this program or in its build tree.
  std::string worker;
  double gate_min_time_ms = 20;
  std::string jsonl;  // tables check: this file instead of <out>/tuned_entries.jsonl
};

Result<std::vector<tuner::TunedEntry>> ReadJsonlFile(const std::string& path, bool missing_ok) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (missing_ok) return std::vector<tuner::TunedEntry>{};
    return NotFound("cannot read " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = codegen::ParseJsonl(text.str());
  if (!parsed) return std::unexpected(WithPathPrefix(parsed.error(), "jsonl"));
  return parsed;
}

Result<std::vector<tuner::TunedEntry>> ReadDbRows(const std::string& db) {
  if (access(db.c_str(), R_OK) != 0) return NotFound("cannot read database " + db);
  auto store = store::Store::Open(db);
  if (!store) return std::unexpected(store.error());
  return (*store)->tuned().List();
}

int RunTablesGenerate(const Common& c, const TablesArgs& a) {
  const std::string jsonl_path = a.out + "/tuned_entries.jsonl";
  auto read = ReadJsonlFile(jsonl_path, /*missing_ok=*/true);
  if (!read) return Fail(kExitFailed, jsonl_path + ": " + read.error().ToString());
  std::vector<tuner::TunedEntry> entries = std::move(*read);
  std::vector<tuner::GateEvent> events;
  if (!a.db.empty()) {
    auto rows = ReadDbRows(a.db);
    if (!rows) return Fail(kExitFailed, rows.error().ToString());
    if (a.check) {
      entries = codegen::Merge(std::move(entries), *rows);  // --check times nothing
    } else {
      tuner::GateOptions gate;
      gate.force = a.force;
      gate.timing.repetitions = a.gate_repetitions;
      gate.timing.min_repetition_ns = a.gate_min_time_ms * 1e6;
      std::optional<tuner::WorkerEvaluator> worker;
      if (!a.force) {  // --force times nothing
        tuner::WorkerOptions worker_options;
        auto path = tuner::LocateWorker(a.worker);
        if (!path) return Fail(kExitFailed, "regression gate: " + path.error().ToString() + " (--worker PATH)");
        worker_options.worker_path = *path;
        worker_options.kernel_dirs = c.kernel_dirs;  // the worker loads the same external kernels
        worker.emplace(worker_options);
        gate.evaluator = &*worker;
      }
      auto merged = tuner::GatedMerge(std::move(entries), *rows, gate, &events);
      if (!merged) return Fail(kExitFailed, merged.error().ToString());
      entries = std::move(*merged);
    }
  }
  for (const auto& ev : events) {
    if (c.json || ev.what == "same_config" || ev.what == "other_profile") continue;
    std::fprintf(stderr, "gate %-8s %s %s %s %s: %s\n", ev.what.c_str(), ev.kernel.c_str(), ev.hardware.c_str(),
                 ev.dtype.c_str(), ev.bucket.c_str(), ev.detail.c_str());
    if (ev.record && ev.record->old_ns > 0) {
      std::fprintf(stderr, "         old %s %.0f ns, new %s %.0f ns (%lld interleaved repetitions)\n",
                   ev.record->old_config.ToString().c_str(), ev.record->old_ns,
                   ev.record->new_config.ToString().c_str(), ev.record->new_ns,
                   static_cast<long long>(ev.record->repetitions));
    }
  }
  auto files = codegen::GenerateAll(entries);
  if (!files) return Fail(kExitFailed, files.error().ToString());
  if (a.check) {
    int stale = 0;
    for (const auto& [rel, contents] : *files) {
      std::ifstream in(a.out + "/" + rel, std::ios::binary);
      std::ostringstream cur;
      cur << in.rdbuf();
      if (!in || cur.str() != contents) {
        std::fprintf(stderr, "out of date: %s/%s\n", a.out.c_str(), rel.c_str());
        ++stale;
      }
    }
    if (stale) return Fail(kExitFailed, std::to_string(stale) + " generated file(s) differ; run: " + std::string(codegen::kRegenerateCommand));
    if (!c.json) std::printf("%zu generated files up to date in %s\n", files->size(), a.out.c_str());
    return 0;
  }
  auto written = codegen::WriteFiles(a.out, *files);
  if (!written) return Fail(kExitFailed, written.error().ToString());
  if (c.json) {
    Json gate = Json::array();
    for (const auto& ev : events) {
      Json e{{"kernel", ev.kernel}, {"hardware", ev.hardware}, {"dtype", ev.dtype}, {"bucket", ev.bucket},
             {"what", ev.what}, {"detail", ev.detail}};
      if (ev.record) {
        e["old_config"] = wire::EncodeConfig(ev.record->old_config);
        e["new_config"] = wire::EncodeConfig(ev.record->new_config);
        e["old_ns"] = ev.record->old_ns;
        e["new_ns"] = ev.record->new_ns;
        e["noise_band"] = ev.record->noise_band;
        e["repetitions"] = ev.record->repetitions;
      }
      gate.push_back(std::move(e));
    }
    std::printf("%s\n", Json{{"rows", entries.size()}, {"written", *written}, {"gate", gate}}.dump().c_str());
  } else {
    std::printf("%zu tuned rows; %zu file(s) written, %zu unchanged, in %s\n", entries.size(), written->size(),
                files->size() - written->size(), a.out.c_str());
    for (const auto& w : *written) std::printf("  %s\n", w.c_str());
  }
  return 0;
}

// `tables check`: every row's fingerprint against this build's. A stale row that a lookup
// would serve (a registered kernel's row of its current bucket version) fails the check.
int RunTablesCheck(const Common& c, const TablesArgs& a) {
  const std::string path = a.jsonl.empty() ? a.out + "/tuned_entries.jsonl" : a.jsonl;
  auto rows = ReadJsonlFile(path, /*missing_ok=*/false);
  if (!rows) return Fail(kExitFailed, path + ": " + rows.error().ToString());
  if (!a.db.empty()) {  // what blocktuned on this database serves: its rows over the table's
    auto db_rows = ReadDbRows(a.db);
    if (!db_rows) return Fail(kExitFailed, db_rows.error().ToString());
    *rows = codegen::Merge(std::move(*rows), *db_rows);
  }
  int fresh = 0, stale_served = 0;
  Json stale = Json::array(), unknown = Json::array(), ignored = Json::array();
  for (const auto& e : *rows) {
    const KernelSpec* spec = FindKernel(e.kernel);
    const bool served = spec != nullptr && e.bucket_version == spec->bucket_version();
    const Freshness f = FreshnessOf(e.kernel, e.fingerprint);
    if (f == Freshness::kFresh && served) {
      ++fresh;
      continue;
    }
    Json row{{"kernel", e.kernel},   {"hardware", e.hardware_key},
             {"dtype", DTypeName(e.dtype)}, {"bucket", e.bucket},
             {"fingerprint", e.fingerprint.empty() ? Json(nullptr) : Json(e.fingerprint)},
             {"build_fingerprint", KernelFingerprint(e.kernel)}};
    if (!served) {
      ignored.push_back(std::move(row));
    } else if (f == Freshness::kStale) {
      ++stale_served;
      stale.push_back(std::move(row));
    } else {
      unknown.push_back(std::move(row));
    }
  }
  if (c.json) {
    std::printf("%s\n", Json{{"rows", rows->size()}, {"fresh", fresh}, {"stale", stale}, {"unknown", unknown},
                              {"not_served", ignored}}.dump().c_str());
  } else {
    auto print = [](const char* what, const Json& list) {
      for (const auto& r : list) {
        std::printf("%-8s %s %s %s %s  fingerprint %s, this build %s\n", what, r["kernel"].get<std::string>().c_str(),
                    r["hardware"].get<std::string>().c_str(), r["dtype"].get<std::string>().c_str(),
                    r["bucket"].get<std::string>().c_str(),
                    r["fingerprint"].is_null() ? "unknown" : r["fingerprint"].get<std::string>().c_str(),
                    r["build_fingerprint"].get<std::string>().empty() ? "(no such kernel)"
                                                                      : r["build_fingerprint"].get<std::string>().c_str());
      }
    };
    print("stale", stale);
    print("unknown", unknown);
    print("ignored", ignored);
    std::printf("%zu rows in %s%s: %d fresh, %zu stale, %zu unknown (measured before fingerprints), %zu not served "
                "(unknown kernel or old bucket version)\n",
                rows->size(), path.c_str(), a.db.empty() ? "" : (" over " + a.db).c_str(), fresh, stale.size(),
                unknown.size(), ignored.size());
  }
  if (stale_served > 0) {
    return Fail(kExitFailed, std::to_string(stale_served) +
                                 " stale row(s) would be served: re-tune them on this build (deploy/retune-tables.sh) "
                                 "and regenerate with --db");
  }
  return 0;
}

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
                                          const tuner::TimingOptions& opt) {
  tuner::TimingOptions one = opt;
  one.repetitions = 1;
  std::vector<double> sa, sb;
  for (int r = 0; r < opt.repetitions; ++r) {
    if (auto t = tuner::TimeRepeated([&] { return inst.Run(a, threads); }, one)) sa.push_back(t->median_ns);
    if (auto t = tuner::TimeRepeated([&] { return inst.Run(b, threads); }, one)) sb.push_back(t->median_ns);
  }
  return {tuner::Median(sa), tuner::Median(sb)};
}

// `bench KERNEL --compare`: for every bucket the checked-in table has for this host at
// --threads, the tuned config against the default at the bucket's shape, and the geomean.
int RunBenchCompare(const Common& c, const KernelSpec& spec, const BenchArgs& a, DType dtype) {
  HardwareProfile hw = HardwareProfile::Detect(a.threads);
  auto rows = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  if (!rows) return Fail(kExitFailed, "checked-in table: " + rows.error().ToString());
  tuner::TimingOptions opt;
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
      out.push_back({{"bucket", e.bucket}, {"tuned_config", wire::EncodeConfig(e.config)}, {"default_ns", def_ns},
                     {"tuned_ns", tuned_ns}, {"speedup", speedup}});
    } else {
      std::printf("%-*s  %-*s %12.3f %12.3f %7.2fx\n", bucket_width, e.bucket.c_str(), config_width,
                  e.config.ToString().c_str(), def_ns / 1e6, tuned_ns / 1e6, speedup);
    }
  }
  if (count == 0) return Fail(kExitFailed, "the checked-in table has no " + std::string(spec.name()) + " rows for " + hw.Key());
  const double geomean = std::exp(log_sum / count);
  if (c.json) {
    std::printf("%s\n", Json{{"kernel", spec.name()}, {"hardware", hw.Key()}, {"threads", a.threads},
                              {"default_config", wire::EncodeConfig(default_config)}, {"buckets", out},
                              {"geomean_speedup", geomean}}.dump().c_str());
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
  tuner::TimingOptions opt;
  opt.min_repetition_ns = a.min_time_ms * 1e6;
  opt.repetitions = a.repetitions;
  tuner::TimingResult t;
  if (v.ok) {
    auto timed = tuner::TimeRepeated([&] { return inst->Run(config, a.threads); }, opt);
    if (!timed) return Fail(kExitFailed, timed.error().ToString());
    t = std::move(*timed);
  }
  const double gflops = t.median_ns > 0 ? spec->Flops(problem) / t.median_ns : 0;
  if (c.json) {
    Json out{{"kernel", a.kernel},   {"problem", wire::EncodeConfig(*dims)}, {"dtype", a.dtype},
             {"threads", a.threads}, {"config", wire::EncodeConfig(config)}, {"source", source},
             {"verified", v.ok},     {"max_abs_err", v.max_abs_err},         {"median_ns", t.median_ns},
             {"cv", t.cv},           {"gflops", gflops},                     {"samples_ns", t.samples_ns},
             {"hardware", hw.Key()}};
    std::printf("%s\n", out.dump().c_str());
  } else {
    std::printf("kernel    %s %s %s threads=%d\n", a.kernel.c_str(), a.dtype.c_str(), dims->ToString().c_str(), a.threads);
    std::printf("config    %s (%s)\n", config.ToString().c_str(), source.c_str());
    std::printf("verified  %s (max abs err %.3g over %lld elements)\n", v.ok ? "yes" : "NO", v.max_abs_err,
                static_cast<long long>(v.elements));
    if (v.ok) {
      std::printf("median    %.0f ns (cv %.2f%%, %zu reps x %lld iters)\n", t.median_ns, 100 * t.cv, t.samples_ns.size(),
                  static_cast<long long>(t.iterations));
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
  double min_time_ms = 20;
  int repetitions = 7;
};

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

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
  if (!rows) return Fail(kExitFailed, (a.table.empty() ? "checked-in table: " : a.table + ": ") + rows.error().ToString());
  std::vector<std::string> buckets;
  if (a.buckets != "checked-in") {
    auto t = ReadText(a.buckets);
    if (!t) return Fail(kExitUsage, "--buckets: " + t.error().ToString());
    buckets = tuner::ParseBucketList(*t);
    if (buckets.empty()) return Fail(kExitUsage, "--buckets: " + a.buckets + " lists no bucket");
  }
  const HardwareProfile hw = HardwareProfile::Detect(a.threads);
  auto plan = tuner::PlanRegret(*spec, *rows, hw.Key(), dtype, buckets);
  if (!plan) return Fail(kExitUsage, "--buckets: " + plan.error().ToString());
  if (plan->empty()) {
    return Fail(kExitFailed, "the table has no " + std::string(spec->name()) + " " + a.dtype + " rows to judge");
  }
  tuner::TimingOptions timing;
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
               {"config", wire::EncodeConfig(row.candidate.config)},
               {"served", row.candidate.served},
               {"on_current_chain", tuner::OnCurrentChain(row.candidate.level)},
               {"outcome", std::string(tuner::OutcomeName(row.outcome))}};
        if (row.outcome == tuner::Outcome::kOk) {
          j["median_ns"] = row.median_ns;
          j["robust_cv"] = row.cv;
          j["speedup_vs_default"] = row.speedup_vs_default;
          j["regret_vs_best"] = row.regret_vs_best;
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
      summary.push_back({{"level", std::string(tuner::RegretLevelName(s.level))}, {"on_current_chain", tuner::OnCurrentChain(s.level)},
                         {"buckets", s.buckets}, {"geomean_speedup", s.geomean_speedup},
                         {"worst_speedup", s.worst_speedup}, {"worst_bucket", s.worst_bucket},
                         {"mean_regret", s.mean_regret}, {"max_regret", s.max_regret},
                         {"slower_beyond_noise", s.slower_beyond_noise},
                         {"faster_beyond_noise", s.faster_beyond_noise}, {"refused", s.refused}});
    }
    std::printf("%s\n", Json{{"kernel", std::string(spec->name())}, {"dtype", a.dtype}, {"hardware", r.hardware},
                              {"threads", r.threads}, {"repetitions", a.repetitions},
                              {"min_time_ms", a.min_time_ms}, {"buckets", std::move(buckets_json)},
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
      const std::string level = std::string(tuner::RegretLevelName(row.candidate.level)) + (row.candidate.served ? "" : "'");
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
  std::printf("\n(' a row its level would not serve: a smaller key of the level comes first; ~ within the noise band "
              "of the default)\n");
  std::printf("%-13s %7s %9s %9s %-*s %8s %8s %7s %7s\n", "level", "buckets", "geomean", "worst", bw, "worst bucket",
              "mean reg", "max reg", "slower", "faster");
  for (const auto& s : r.summary) {
    std::printf("%-13s %7d %8.3fx %8.3fx %-*s %7.1f%% %7.1f%% %7d %7d%s%s\n", tuner::RegretLevelName(s.level).data(),
                s.buckets, s.geomean_speedup, s.worst_speedup, bw, s.worst_bucket.c_str(), 100 * s.mean_regret,
                100 * s.max_regret, s.slower_beyond_noise, s.faster_beyond_noise,
                tuner::OnCurrentChain(s.level) || s.level == tuner::RegretLevel::kDefault ? "" : "  (not on the chain)",
                s.refused ? (" " + std::to_string(s.refused) + " refused").c_str() : "");
  }
  return 0;
}

// ---------------------------------------------------------------------------------------------
// `simulate` and `sweeps compare`: the logic is tuner/search/simulate.h; here only loading
// stored measurements and printing.

Result<std::vector<tuner::StoredBucket>> LoadSweepBuckets(store::Store& db, const store::SweepRecord& sweep) {
  const KernelSpec* spec = FindKernel(sweep.request.kernel);
  if (spec == nullptr) return InvalidArgument("sweep " + std::to_string(sweep.id) + " has unknown kernel " + sweep.request.kernel);
  std::vector<tuner::Measurement> all;
  std::set<std::string> seen;
  for (const auto& shape : sweep.request.shapes) {
    const std::string bucket = spec->Bucket(Problem{sweep.request.dtype, shape}).first;
    if (!seen.insert(bucket).second) continue;
    auto ms = db.measurements().ListBucket(sweep.id, bucket);
    if (!ms) return std::unexpected(ms.error());
    for (auto& m : *ms) all.push_back(std::move(m));
  }
  return tuner::GroupMeasurements(sweep.request.kernel, sweep.hardware_key, sweep.request.dtype, all);
}

// Every bucket of every finished exhaustive sweep of `kernel` (all kernels if empty); a bucket
// measured by several sweeps gets each config's lowest median over them (tuner::CombineSweeps).
Result<std::vector<tuner::StoredBucket>> LoadExhaustive(const std::vector<std::string>& paths, const std::string& kernel) {
  std::map<std::tuple<std::string, std::string, std::string, std::string>, std::vector<tuner::StoredBucket>> runs;
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
  std::vector<tuner::StoredBucket> out;
  for (auto& [_, r] : runs) out.push_back(tuner::CombineSweeps(r));
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
  Result<std::vector<tuner::StoredBucket>> buckets;
  if (!a.db.empty()) {
    buckets = LoadExhaustive(a.db, a.kernel);
  } else {
    std::ifstream in(a.data, std::ios::binary);
    if (!in) return Fail(kExitFailed, "cannot read " + a.data);
    std::ostringstream text;
    text << in.rdbuf();
    buckets = tuner::ParseStoredBuckets(text.str());
    if (buckets && !a.kernel.empty()) {
      std::erase_if(*buckets, [&](const tuner::StoredBucket& b) { return b.kernel != a.kernel; });
    }
  }
  if (!buckets) return Fail(kExitFailed, buckets.error().ToString());
  // --prior: other devices' landscapes, each a database or a --data export like the input.
  std::vector<tuner::StoredBucket> prior;
  for (const std::string& path : a.prior) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Fail(kExitFailed, "cannot read --prior " + path);
    std::string head(16, '\0');
    in.read(head.data(), 16);
    Result<std::vector<tuner::StoredBucket>> more;
    if (head.rfind("SQLite format 3", 0) == 0) {
      more = LoadExhaustive({path}, a.kernel);
    } else {
      in.clear();
      in.seekg(0);
      std::ostringstream text;
      text << in.rdbuf();
      more = tuner::ParseStoredBuckets(text.str());
    }
    if (!more) return Fail(kExitFailed, "--prior " + path + ": " + more.error().ToString());
    for (auto& b : *more) prior.push_back(std::move(b));
  }
  if (buckets->empty()) return Fail(kExitFailed, "no stored exhaustive measurements" + (a.kernel.empty() ? "" : " of " + a.kernel));
  if (!a.export_path.empty()) {
    std::ofstream out(a.export_path, std::ios::binary);
    out << tuner::FormatStoredBuckets(*buckets);
    if (!out) return Fail(kExitFailed, "cannot write " + a.export_path);
  }
  tuner::SimulateOptions opt;
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
  auto report = tuner::Simulate(*buckets, opt);
  if (!report) return Fail(kExitUsage, report.error().ToString());
  if (c.json) {
    Json rows = Json::array();
    for (const auto& b : report->buckets) {
      const auto score = [&](const tuner::StrategyScore& s) {
        Json j{{"mean_ratio", s.mean_ratio}, {"min_ratio", s.min_ratio}, {"hit_fraction", s.hit_fraction},
               {"score", s.score}, {"score_at_budget", s.score_at_budget}, {"best_ns", s.best_ns}};
        if (a.curves) j["curve"] = s.curve;
        return j;
      };
      rows.push_back({{"kernel", b.kernel}, {"hardware", b.hardware_key}, {"dtype", DTypeName(b.dtype)},
                      {"bucket", b.bucket}, {"space", b.space_size}, {"budget", b.budget},
                      {"optimum_ns", b.optimum_ns}, {"optimum", wire::EncodeConfig(b.optimum)},
                      {"random_expected_ns", b.random_expected_ns},
                      {a.strategy, score(b.strategy)}, {"random", score(b.random)}});
    }
    std::printf("%s\n", Json{{"strategy", a.strategy}, {"budget_fraction", a.budget_fraction}, {"budget", a.budget},
                              {"seeds", a.seeds}, {"strategy_score", report->strategy_score},
                              {"random_score", report->random_score},
                              {"threshold", a.threshold}, {"buckets", rows},
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
      a.strategy.c_str(), budget, a.seeds, a.threshold, 100 * report->strategy_bucket_fraction,
      report->buckets.size(), 100 * report->random_bucket_fraction, report->strategy_mean_ratio,
      report->random_mean_ratio, a.threshold, 100 * report->strategy_run_fraction, 100 * report->random_run_fraction,
      report->strategy_score, report->random_score);
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
  std::vector<tuner::StoredBucket> buckets;
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
  tuner::AgreementReport r;
  if (a.remeasure) {
    const store::SweepRecord& sa = ca->sweep;
    const store::SweepRecord& sb = cb->sweep;
    if (sa.request.kernel != sb.request.kernel || sa.request.dtype != sb.request.dtype ||
        sa.request.threads != sb.request.threads) {
      return Fail(kExitUsage, "--remeasure needs two sweeps of one kernel, dtype and thread count");
    }
    const KernelSpec* spec = FindKernel(sa.request.kernel);
    if (spec == nullptr) return Fail(kExitFailed, "unknown kernel " + sa.request.kernel);
    tuner::TimingOptions timing;
    timing.min_repetition_ns = a.min_time_ms * 1e6;
    timing.repetitions = a.repetitions;
    tuner::InProcessEvaluator evaluator;
    r = tuner::RemeasureChoices(*spec, sa.request.dtype, sa.request.threads, ca->chosen, cb->chosen, evaluator,
                                timing, a.tolerance);
  } else {
    r = tuner::CompareChoices(ca->buckets, ca->chosen, cb->buckets, cb->chosen, a.tolerance);
  }
  if (c.json) {
    Json rows = Json::array();
    for (const auto& g : r.buckets) {
      rows.push_back({{"bucket", g.bucket}, {"chosen_a", wire::EncodeConfig(g.chosen_a)},
                      {"chosen_b", wire::EncodeConfig(g.chosen_b)}, {"slowdown", g.slowdown},
                      {"judged_by", std::string(1, g.judged_by)}, {"within", g.within}});
    }
    std::printf("%s\n", Json{{"tolerance", r.tolerance}, {"buckets", rows}, {"within_fraction", r.within_fraction},
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

int main(int argc, char** argv) {
  // The libraries log with spdlog; in the CLI that goes to stderr and only when it matters, so
  // stdout stays clean for --json (sweep --local runs the service in-process).
  spdlog::set_default_logger(spdlog::stderr_color_mt("blocktune"));
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"blocktune: sweep, look up, benchmark and publish tuned kernel block sizes"};
  app.require_subcommand(1);
  {
    std::string version = std::string(kToolVersion) + "\nkernel fingerprints (" + std::string(FingerprintToolchain()) + "):";
    for (const KernelSpec* k : AllKernels()) version += "\n  " + std::string(k->name()) + " " + std::string(KernelFingerprint(k->name()));
    app.set_version_flag("--version", version, "print the version and this build's kernel fingerprints");
  }
  Common common;
  // Global: external kernel specs for every command that works locally (tables generate,
  // simulate, sweep --local, import, export); accepted before or after the subcommand.
  app.add_option("--kernel-dir", common.kernel_dirs,
                 "folder of external kernel specs (*.json, docs/external-kernels.md) to load (repeatable)")
      ->envname("BLOCKTUNE_KERNEL_DIR")
      ->allow_extra_args(false);
  app.fallthrough();

  TablesArgs tables_args;
  auto* tables_cmd = app.add_subcommand("tables", "generated tuned-block-size tables");
  tables_cmd->require_subcommand(1);
  auto* generate_cmd = tables_cmd->add_subcommand(
      "generate",
      "merge DB rows into <out>/tuned_entries.jsonl and regenerate headers, Python and JSON tables; a DB row that "
      "would replace this machine's checked-in row with another config must beat it in a side-by-side re-timing "
      "beyond the noise band (regression gate), and a stale row never replaces a fresh one");
  AddCommon(generate_cmd, common, false);
  generate_cmd->add_option("--out", tables_args.out, "tables directory")->capture_default_str();
  generate_cmd->add_option("--db", tables_args.db, "merge tuned entries from this SQLite database");
  generate_cmd->add_flag("--check", tables_args.check, "write nothing; exit 1 if any generated file is out of date");
  generate_cmd->add_flag("--force", tables_args.force,
                         "skip the regression gate: take every --db row even where the re-timing would keep the "
                         "checked-in row (recorded as 'forced' in the row's gate provenance)");
  generate_cmd->add_option("--gate-repetitions", tables_args.gate_repetitions,
                           "regression gate: interleaved repetitions of the old and the new config")
      ->capture_default_str()->check(CLI::Range(3, 1000));
  generate_cmd->add_option("--gate-min-time-ms", tables_args.gate_min_time_ms,
                           "regression gate: minimum time per repetition")
      ->capture_default_str()->check(CLI::Range(0.1, 10000.0));
  generate_cmd->add_option("--worker", tables_args.worker,
                           "regression gate: worker executable that verifies and times the configs (default: "
                           "blocktune-worker next to this program or in its build tree)");
  auto* check_cmd = tables_cmd->add_subcommand(
      "check", "list tuned rows measured by another build of their kernel (stale) or of unknown fingerprint; exit 1 "
               "if any stale row would be served");
  AddCommon(check_cmd, common, false);
  check_cmd->add_option("--out", tables_args.out, "tables directory (reads its tuned_entries.jsonl)")->capture_default_str();
  check_cmd->add_option("--jsonl", tables_args.jsonl, "check this jsonl file instead");
  check_cmd->add_option("--db", tables_args.db, "also this database's tuned rows, merged over the table as blocktuned serves them");
  auto service_commands = client::RegisterServiceCommands(app, common, tables_cmd);
  auto results_commands = client::RegisterResultsCommands(app, common);
  auto import_commands = client::RegisterImportCommands(app, common);

  BenchArgs bench;
  auto* bench_cmd = app.add_subcommand("bench", "verify a kernel config against the reference, then time it");
  AddCommon(bench_cmd, common, false);
  bench_cmd->add_option("kernel", bench.kernel, "kernel name")->required();
  bench_cmd->add_option("--shape", bench.shape, "problem dims, e.g. m=1024,n=1024,k=1024 (required unless --compare)");
  bench_cmd->add_flag("--compare", bench.compare,
                      "for every bucket of the checked-in table on this host at --threads: tuned vs default, "
                      "interleaved, and the geomean speedup");
  bench_cmd->add_option("--dtype", bench.dtype, "element type")->capture_default_str();
  bench_cmd->add_option("--threads", bench.threads, "threads")->capture_default_str()->check(CLI::Range(1, 256));
  bench_cmd->add_option("--config", bench.config,
                        "tuned (checked-in table for this host), default, or name=value,... (unset names: default)")
      ->capture_default_str();
  bench_cmd->add_option("--min-time-ms", bench.min_time_ms, "minimum time per repetition")->capture_default_str();
  bench_cmd->add_option("--repetitions", bench.repetitions, "timed repetitions")->capture_default_str()->check(CLI::Range(1, 1000));
  bench_cmd->add_option("--isa", bench.isa,
                        "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own); the tuned "
                        "config and hardware key are that level's")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));

  RegretArgs regret;
  auto* regret_cmd = app.add_subcommand(
      "regret",
      "time what each fallback level of this host's key would serve (exact row, other thread count, other model, "
      "and the other-vendor / other-ISA rows the chain does not borrow) against the default and the best of them");
  AddCommon(regret_cmd, common, false);
  regret_cmd->add_option("kernel", regret.kernel, "kernel name")->required();
  regret_cmd->add_option("--buckets", regret.buckets,
                         "checked-in (every bucket the table has for the kernel and dtype) or a file of bucket ids, "
                         "one per line")
      ->capture_default_str();
  regret_cmd->add_option("--table", regret.table, "tuned rows to judge, in tuned_entries.jsonl form (default: the checked-in table)");
  regret_cmd->add_option("--dtype", regret.dtype, "element type")->capture_default_str();
  regret_cmd->add_option("--threads", regret.threads, "threads the kernel runs with (part of the key)")
      ->required()->check(CLI::Range(1, 256));
  regret_cmd->add_option("--isa", regret.isa, "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own)")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  regret_cmd->add_option("--min-time-ms", regret.min_time_ms, "minimum time per repetition")
      ->capture_default_str()->check(CLI::Range(0.01, 10000.0));
  regret_cmd->add_option("--repetitions", regret.repetitions, "interleaved repetitions per config")
      ->capture_default_str()->check(CLI::Range(1, 1000));

  SimulateArgs simulate;
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
  simulate_cmd->add_option("--strategy", simulate.strategy,
                           "strategy to score (transfer and auto: each bucket's prior is every other bucket of the same "
                           "kernel, hardware and dtype in the data, plus --prior; docs/search.md)")
      ->capture_default_str()->check(CLI::IsMember({"random", "anneal", "surrogate", "transfer", "auto"}));
  simulate_cmd->add_option("--budget-fraction", simulate.budget_fraction, "evaluations as a fraction of each bucket's space")
      ->capture_default_str()->check(CLI::Range(0.001, 1.0));
  simulate_cmd->add_option("--budget", simulate.budget,
                           "evaluations per bucket (capped at its space), instead of --budget-fraction: distinct configs "
                           "measured, failed ones included")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  simulate_cmd->add_option("--prior", simulate.prior,
                           "other landscapes of the same kernel (databases with exhaustive sweeps, or --export files), "
                           "e.g. the other devices': a prior for transfer and auto")
      ->expected(1, -1);
  simulate_cmd->add_option("--seeds", simulate.seeds, "runs per bucket (seeds 1..N)")->capture_default_str()->check(CLI::Range(1, 100000));
  simulate_cmd->add_option("--first-seed", simulate.first_seed, "first seed")->capture_default_str();
  simulate_cmd->add_flag("--sequential-prior", simulate.sequential_prior,
                        "transfer: each bucket's prior is only the buckets before it in the data, as far as this "
                        "replay measured them (one sweep on a machine with nothing stored)");
  simulate_cmd->add_option("--threshold", simulate.threshold, "best/optimum counted as a hit")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  simulate_cmd->add_option("--export", simulate.export_path, "also write the loaded measurements to this file (the --data format)");
  simulate_cmd->add_flag("--curves", simulate.curves, "print best/optimum after each evaluation");

  CompareArgs compare;
  // `sweeps` (list, show, wait, cancel, measurements) is registered with the service commands;
  // `compare` joins it there.
  CLI::App* sweeps_cmd = nullptr;
  for (CLI::App* sub : app.get_subcommands(
           [](const CLI::App* a) { return a->get_name() == "sweeps"; })) {
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
      ->capture_default_str()->check(CLI::Range(0.0, 1.0));
  compare_cmd->add_flag("--remeasure", compare.remeasure,
                        "judge by timing both choices again here, side by side with interleaved repetitions "
                        "(runs the kernels), instead of by the sweeps' stored medians");
  compare_cmd->add_option("--min-time-ms", compare.min_time_ms, "with --remeasure: minimum time per repetition")
      ->capture_default_str()->check(CLI::Range(0.1, 10000.0));
  compare_cmd->add_option("--repetitions", compare.repetitions, "with --remeasure: interleaved repetitions")
      ->capture_default_str()->check(CLI::Range(1, 1000));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (auto s = CheckIsaEnvironment(); !s) return Fail(kExitUsage, s.error().message);
  for (std::string& dir : common.kernel_dirs) {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(dir, ec);
    if (!ec) dir = abs.string();
  }
  if (auto names = external::LoadKernelDirs(common.kernel_dirs); !names) return Fail(kExitUsage, names.error().message);
  if (const int rc = service_commands(); rc >= 0) return rc;
  if (const int rc = results_commands(); rc >= 0) return rc;
  if (const int rc = import_commands(); rc >= 0) return rc;
  if (generate_cmd->parsed()) return RunTablesGenerate(common, tables_args);
  if (check_cmd->parsed()) return RunTablesCheck(common, tables_args);
  if (bench_cmd->parsed()) return RunBench(common, bench);
  if (regret_cmd->parsed()) return RunRegret(common, regret);
  if (simulate_cmd->parsed()) return RunSimulate(common, simulate);
  if (compare_cmd->parsed()) return RunCompare(common, compare);
  return kExitUsage;
}
