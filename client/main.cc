// blocktune: the command-line client. The service commands (sweep, sweeps, lookup, kernels,
// hardware, tuned, override, tables download, backup, health, metrics) are in
// service_commands.cc and talk to blocktuned over HTTP (`sweep --local` runs the service
// in-process); `tables generate` and `bench` here work locally on the libraries.
//
// `bench --compare` times the checked-in tuned configs against the default, bucket by bucket.
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
#include <fstream>
#include <sstream>
#include <thread>

#include "client/cli.h"
#include "kernels/core/kernel_spec.h"
#include "schema/store.h"
#include "server/codec.h"
#include "tables/codegen/codegen.h"
#include "tuner/lookup.h"
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
};

int RunTablesGenerate(const Common& c, const TablesArgs& a) {
  const std::string jsonl_path = a.out + "/tuned_entries.jsonl";
  std::vector<tuner::TunedEntry> entries;
  {
    std::ifstream in(jsonl_path, std::ios::binary);
    if (in) {
      std::ostringstream text;
      text << in.rdbuf();
      auto parsed = codegen::ParseJsonl(text.str());
      if (!parsed) return Fail(kExitFailed, jsonl_path + ": " + parsed.error().ToString());
      entries = std::move(*parsed);
    }
  }
  if (!a.db.empty()) {
    if (access(a.db.c_str(), R_OK) != 0) return Fail(kExitFailed, "cannot read database " + a.db);
    auto store = store::Store::Open(a.db);
    if (!store) return Fail(kExitFailed, store.error().ToString());
    auto rows = (*store)->ListTunedEntries();
    if (!rows) return Fail(kExitFailed, rows.error().ToString());
    entries = codegen::Merge(std::move(entries), *rows);
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
    std::printf("%s\n", Json{{"rows", entries.size()}, {"written", *written}}.dump().c_str());
  } else {
    std::printf("%zu tuned rows; %zu file(s) written, %zu unchanged, in %s\n", entries.size(), written->size(),
                files->size() - written->size(), a.out.c_str());
    for (const auto& w : *written) std::printf("  %s\n", w.c_str());
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

int RunBench(const Common& c, const BenchArgs& a) {
  const KernelSpec* spec = FindKernel(a.kernel);
  if (spec == nullptr) return Fail(kExitUsage, "unknown kernel '" + a.kernel + "'");
  auto dtype = ParseDType(a.dtype);
  if (!dtype) return Fail(kExitUsage, "unknown dtype '" + a.dtype + "'");
  if (a.compare) return RunBenchCompare(c, *spec, a, *dtype);
  if (a.shape.empty()) return Fail(kExitUsage, "--shape is required (or --compare)");
  auto dims = ParseShape(a.shape);
  if (!dims) return Fail(kExitUsage, dims.error().ToString());
  const Problem problem{*dtype, *dims};
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
    auto ans = tuner::Lookup(*spec, *rows, tuner::LookupQuery{*dtype, *dims, hw.Key()});
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

}  // namespace

int main(int argc, char** argv) {
  // The libraries log with spdlog; in the CLI that goes to stderr and only when it matters, so
  // stdout stays clean for --json (sweep --local runs the service in-process).
  spdlog::set_default_logger(spdlog::stderr_color_mt("blocktune"));
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"blocktune: sweep, look up, benchmark and publish tuned kernel block sizes"};
  app.require_subcommand(1);
  Common common;

  TablesArgs tables_args;
  auto* tables_cmd = app.add_subcommand("tables", "generated tuned-block-size tables");
  tables_cmd->require_subcommand(1);
  auto* generate_cmd = tables_cmd->add_subcommand(
      "generate", "merge DB rows into <out>/tuned_entries.jsonl and regenerate headers, Python and JSON tables");
  AddCommon(generate_cmd, common, false);
  generate_cmd->add_option("--out", tables_args.out, "tables directory")->capture_default_str();
  generate_cmd->add_option("--db", tables_args.db, "merge tuned entries from this SQLite database");
  generate_cmd->add_flag("--check", tables_args.check, "write nothing; exit 1 if any generated file is out of date");
  auto service_commands = client::RegisterServiceCommands(app, common, tables_cmd);

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (const int rc = service_commands(); rc >= 0) return rc;
  if (generate_cmd->parsed()) return RunTablesGenerate(common, tables_args);
  if (bench_cmd->parsed()) return RunBench(common, bench);
  return kExitUsage;
}
