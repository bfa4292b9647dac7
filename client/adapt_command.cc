// `blocktune adapt`: this host's own rows for every checked-in bucket of every kernel, dtype and
// thread count, within a time budget (tuner/adapt.h plans it). With --local the daemon's job
// runner runs the sweeps in this process on --db, in worker processes; without, they are jobs
// of blocktuned. Either way each sweep is created with an idempotency key derived from the plan,
// so running the same command again after a kill -9 finds the same sweeps and resumes them:
// nothing measured is lost or measured twice. A progress bar with an ETA covers the whole run;
// it ends in `tables generate --db` through the regression gate (with --local, or with --db
// naming the daemon's database on this machine).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "client/cli.h"
#include "codegen/codegen.h"
#include "server/service.h"
#include "server/timing_flags.h"
#include "tuner/adapt.h"
#include "tuner/gate.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::client {
namespace {

using server::api::Op;
using Clock = std::chrono::steady_clock;

struct AdaptArgs {
  std::vector<std::string> kernels;
  std::vector<std::string> dtypes;
  std::vector<int> threads = {1, 2};
  std::string isa;
  double budget_minutes = 15;
  int64_t budget = 0;
  int64_t seed = 1;
  std::string tables = "tables";
  bool local = false;
  std::string db;  // --local: the database (default var/blocktune.db); remote: the daemon's, to generate from
  std::string worker;
  bool no_generate = false;
  int gate_repetitions = 9;
  double gate_min_time_ms = 20;
  double poll_seconds = 0.5;
  server::TimingFlags timing;  // --local only
};

// One unit's state as the API reports it.
struct UnitState {
  int64_t id = 0;
  std::string status;
  int64_t done = 0, total = 0, tasks_done = 0, tasks_total = 0;
  std::optional<tuner::SweepBreakdown> breakdown;
};

Result<UnitState> ReadState(const Json& body) {
  auto st = server::wire::DecodeSweepStatus(body);
  if (!st) return std::unexpected(st.error());
  UnitState u;
  u.id = st->id;
  u.status = st->status;
  u.done = st->done;
  u.total = st->total;
  u.breakdown = st->breakdown;
  if (auto p = body.find("progress"); p != body.end() && p->is_object()) {
    u.tasks_done = p->value("tasks_done", int64_t{0});
    u.tasks_total = p->value("tasks_total", int64_t{0});
  }
  return u;
}

std::string Clock2(double seconds) {
  if (!(seconds >= 0)) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

// The whole run's bar: buckets finished over all units, measurements, elapsed, ETA and budget.
// The ETA is this run's pace over what is left (a resumed run's first finished bucket sets it);
// before any bucket of this run has finished, the plan's per-bucket share of the budget.
void DrawAdaptProgress(const std::vector<UnitState>& units, int64_t tasks_done_at_start, double elapsed_s,
                       double budget_s, double per_bucket_s, bool tty, std::string& last) {
  int64_t done = 0, total = 0, tasks_done = 0, tasks_total = 0, finished = 0;
  for (const auto& u : units) {
    done += u.done;
    total += u.total;
    tasks_done += u.tasks_done;
    tasks_total += u.tasks_total;
    finished += SweepFinished(u.status) ? 1 : 0;
  }
  constexpr int kWidth = 30;
  const double frac = tasks_total > 0 ? static_cast<double>(tasks_done) / static_cast<double>(tasks_total) : 0;
  std::string bar(static_cast<size_t>(frac * kWidth), '#');
  bar.resize(kWidth, '.');
  const int64_t this_run = tasks_done - tasks_done_at_start;
  const double left = static_cast<double>(tasks_total - tasks_done);
  const double eta = this_run > 0 ? elapsed_s / static_cast<double>(this_run) * left : per_bucket_s * left / 0.6;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "adapt [%s] %3d%% %lld/%lld buckets, %lld/%lld sweeps, %lld measurements; %s elapsed, eta %s, budget %s",
      bar.c_str(), static_cast<int>(frac * 100), static_cast<long long>(tasks_done),
      static_cast<long long>(tasks_total), static_cast<long long>(finished), static_cast<long long>(units.size()),
      static_cast<long long>(done), Clock2(elapsed_s).c_str(), Clock2(eta).c_str(), Clock2(budget_s).c_str());
  (void)total;
  if (line == last) return;
  last = line;
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
}

// `tables generate --db DB --out TABLES`: the database's rows merged over the checked-in ones
// through the regression gate (a host row that would replace a checked-in row of this host's
// profile with another config is re-timed side by side first), then every generated file.
int Generate(const Common& c, const AdaptArgs& a, const std::string& db) {
  const std::string jsonl = a.tables + "/tuned_entries.jsonl";
  auto base = ReadJsonlFile(jsonl);
  if (!base) return Fail(kExitFailed, base.error().ToString());
  auto store = store::Store::Open(db);
  if (!store) return Fail(kExitDatabase, "cannot open " + db + ": " + store.error().ToString());
  auto rows = (*store)->tuned().List();
  if (!rows) return Fail(kExitDatabase, rows.error().ToString());
  tuner::GateOptions gate;
  gate.timing.repetitions = a.gate_repetitions;
  gate.timing.min_repetition_ns = a.gate_min_time_ms * 1e6;
  tuner::isolation::WorkerOptions worker_options;
  auto path = tuner::isolation::LocateWorker(a.worker);
  if (!path) return Fail(kExitFailed, "regression gate: " + path.error().ToString() + " (--worker PATH)");
  worker_options.worker_path = *path;
  worker_options.kernel_dirs = c.kernel_dirs;
  tuner::isolation::WorkerEvaluator worker(worker_options);
  gate.evaluator = &worker;
  std::vector<tuner::GateEvent> events;
  auto merged = tuner::GatedMerge(std::move(*base), *rows, gate, &events);
  if (!merged) return Fail(kExitFailed, merged.error().ToString());
  int replaced = 0, kept = 0;
  for (const auto& ev : events) {
    replaced += ev.what == "replaced" ? 1 : 0;
    kept += ev.what == "kept" ? 1 : 0;
    if (c.json || ev.what == "same_config" || ev.what == "other_profile") continue;
    std::fprintf(stderr, "gate %-8s %s %s %s %s: %s\n", ev.what.c_str(), ev.kernel.c_str(), ev.hardware.c_str(),
                 ev.dtype.c_str(), ev.bucket.c_str(), ev.detail.c_str());
  }
  auto files = codegen::GenerateAll(*merged);
  if (!files) return Fail(kExitFailed, files.error().ToString());
  auto written = codegen::WriteFiles(a.tables, *files);
  if (!written) return Fail(kExitFailed, written.error().ToString());
  if (!c.json) {
    std::printf(
        "tables generate: %zu tuned rows, gate replaced %d and kept %d checked-in rows; %zu file(s) written in %s\n",
        merged->size(), replaced, kept, written->size(), a.tables.c_str());
  }
  return 0;
}

int RunAdapt(const Common& c, const AdaptArgs& a) {
  if (!a.isa.empty() && a.local) {
    // Before the service detects the host: its key and every worker it starts carry the level.
    if (auto s = ForceIsa(a.isa); !s) return Fail(kExitUsage, s.error().message);
  }
  auto checked_in = ReadJsonlFile(a.tables + "/tuned_entries.jsonl");
  if (!checked_in) return Fail(kExitUsage, checked_in.error().ToString());
  tuner::AdaptOptions options;
  options.kernels = a.kernels;
  for (const std::string& d : a.dtypes) {
    auto dt = ParseDType(d);
    if (!dt) return Fail(kExitUsage, "unknown dtype '" + d + "' (--dtype)");
    options.dtypes.push_back(*dt);
  }
  options.threads = a.threads;
  options.isa = a.isa == "portable" ? "base" : a.isa;
  options.budget_minutes = a.budget_minutes;
  options.budget = a.budget;
  options.seed = static_cast<uint64_t>(a.seed);
  auto plan = tuner::PlanAdapt(*checked_in, options);
  if (!plan) return Fail(kExitUsage, plan.error().ToString());
  if (!c.json) {
    std::printf("adapt: %zu sweeps, %lld buckets, %.1f s of search per bucket (budget %.1f min)\n", plan->units.size(),
                static_cast<long long>(plan->buckets), plan->seconds_per_bucket, a.budget_minutes);
  }

  // Local: the daemon's job runner in this process (as `sweep --local`), configs in workers.
  const std::string db = a.db.empty() && a.local ? std::string("var/blocktune.db") : a.db;
  std::optional<tuner::isolation::WorkerEvaluator> worker;
  std::unique_ptr<server::Service> service;
  if (a.local) {
    auto store = OpenLocalStore(db);
    if (!store) return store.error();
    server::ServiceOptions service_options;
    a.timing.ApplyTo(service_options.sweep.timing);
    service_options.executor_kind = "local";  // runs the plan's sweeps only (docs/scale.md)
    service_options.own_sweeps_only = true;
    // The same table that names the buckets serves the decision rounds and seeds the searches.
    auto table_text = ReadText(a.tables + "/tuned_entries.jsonl");
    if (!table_text) return Fail(kExitUsage, table_text.error().ToString());
    service_options.checked_in_jsonl = std::move(*table_text);
    // The creation rate limit guards a daemon against broken clients; here one plan creates
    // all its sweeps at once.
    service_options.sweep_burst =
        std::max<double>(service_options.sweep_burst, static_cast<double>(plan->units.size()));
    tuner::isolation::WorkerOptions worker_options;
    auto path = tuner::isolation::LocateWorker(a.worker);
    if (!path) return Fail(kExitUsage, path.error().message);
    worker_options.worker_path = *path;
    worker_options.kernel_dirs = c.kernel_dirs;
    worker.emplace(worker_options);
    service_options.sweep.evaluator = &*worker;
    service = std::make_unique<server::Service>(std::move(*store), db, service_options);
    if (auto s = service->Start(); !s) return Fail(kExitDatabase, s.error().ToString());
  }

  // Submit every unit (a re-run gets the same sweep back for each key, created = false).
  std::vector<int64_t> ids;
  int64_t resumed = 0;
  for (const tuner::AdaptUnit& unit : plan->units) {
    Json body = server::wire::EncodeSweepRequest(unit.request);
    Json shapes = Json::array();
    for (const auto& s : unit.request.shapes) shapes.push_back(server::wire::EncodeConfig(s));
    body["shapes"] = shapes;
    if (a.local) {
      auto submission = server::wire::DecodeSweepSubmission(body, server::wire::Limits{});
      if (!submission) return Fail(kExitUsage, submission.error().ToString());
      auto created =
          service->SubmitSweep(*submission->spec, submission->request, unit.idempotency_key, submission->canonical);
      if (!created) return Fail(kExitUsage, unit.idempotency_key + ": " + created.error().ToString());
      ids.push_back(created->id);
      resumed += created->created ? 0 : 1;
    } else {
      CallOptions o;
      o.body = server::wire::Dump(body);
      o.idempotency_key = unit.idempotency_key;
      // The daemon rate-limits creation (10 at once, then one every 2 s by default): a refused
      // create is retried for up to a minute before adapt gives up.
      auto created = Call(c, To(Op::kCreateSweep), o);
      for (int attempt = 0; !created && created.error() == kExitRefused && attempt < 30; ++attempt) {
        std::this_thread::sleep_for(std::chrono::seconds(2));
        created = Call(c, To(Op::kCreateSweep), o);
      }
      if (!created) return created.error();
      ids.push_back(created->body.value("id", int64_t{0}));
      resumed += created->body.value("created", true) ? 0 : 1;
    }
  }
  if (!c.json && resumed > 0)
    std::printf("adapt: resuming %lld sweep(s) of an earlier run of this plan\n", static_cast<long long>(resumed));

  const auto poll = [&]() -> Result<std::vector<UnitState>> {
    std::vector<UnitState> out;
    for (int64_t id : ids) {
      Json body;
      if (a.local) {
        auto v = service->GetSweep(id);
        if (!v) return std::unexpected(v.error());
        const server::wire::SweepStall stall{v->stalled ? v->stalled->error : "", v->stalled ? v->stalled->since : ""};
        body = server::wire::EncodeSweep(v->sweep, &v->progress, v->eta_seconds, v->stalled ? &stall : nullptr);
      } else {
        auto got = Call(c, To(Op::kGetSweep, {std::to_string(id)}));
        if (!got) return MakeError(ErrorCode::kUnavailable, "cannot read sweep " + std::to_string(id));
        body = got->body;
      }
      auto u = ReadState(body);
      if (!u) return std::unexpected(u.error());
      out.push_back(*u);
    }
    return out;
  };
  const bool tty = isatty(fileno(stderr)) != 0;
  const auto start = Clock::now();
  std::string last;
  int64_t tasks_done_at_start = -1;
  std::vector<UnitState> states;
  while (true) {
    auto got = poll();
    if (!got) return Fail(a.local ? kExitDatabase : kExitServerError, got.error().ToString());
    states = std::move(*got);
    if (tasks_done_at_start < 0) {
      tasks_done_at_start = 0;
      for (const auto& u : states) tasks_done_at_start += u.tasks_done;
    }
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (!c.json) {
      DrawAdaptProgress(states, tasks_done_at_start, elapsed, a.budget_minutes * 60, plan->seconds_per_bucket, tty,
                        last);
    }
    bool all = true;
    for (const auto& u : states) all = all && SweepFinished(u.status);
    if (all) break;
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_seconds));
  }
  if (service) service->Stop();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  if (!c.json && tty) std::fprintf(stderr, "\n");

  int failed = 0;
  tuner::SweepBreakdown total;
  Json units = Json::array();
  for (size_t i = 0; i < states.size(); ++i) {
    const UnitState& u = states[i];
    const tuner::AdaptUnit& unit = plan->units[i];
    failed += u.status == "done" ? 0 : 1;
    if (u.breakdown) total += *u.breakdown;
    Json j{{"sweep", u.id},
           {"kernel", unit.request.kernel},
           {"dtype", DTypeName(unit.request.dtype)},
           {"threads", unit.request.threads},
           {"buckets", unit.buckets.size()},
           {"status", u.status},
           {"measurements", u.done}};
    if (u.breakdown) j["breakdown"] = server::wire::EncodeBreakdown(*u.breakdown);
    units.push_back(std::move(j));
    if (!c.json) {
      std::printf("  sweep %-5lld %-24s %-4s t%-2d %2zu buckets  %-9s %5lld measurements  efficiency %s\n",
                  static_cast<long long>(u.id), unit.request.kernel.c_str(),
                  std::string(DTypeName(unit.request.dtype)).c_str(), unit.request.threads, unit.buckets.size(),
                  u.status.c_str(), static_cast<long long>(u.done),
                  u.breakdown ? std::to_string(u.breakdown->Efficiency()).substr(0, 4).c_str() : "-");
    }
  }
  if (c.json) {
    std::printf("%s\n", Json{{"wall_s", wall},
                             {"buckets", plan->buckets},
                             {"sweeps", units},
                             {"breakdown", server::wire::EncodeBreakdown(total)}}
                            .dump()
                            .c_str());
  } else {
    std::printf("adapt: %lld buckets in %.1f s this run (budget %.1f s)\n", static_cast<long long>(plan->buckets), wall,
                a.budget_minutes * 60);
    PrintBreakdownLine(total);
  }
  if (failed > 0)
    return Fail(kExitFailed, std::to_string(failed) + " sweep(s) did not finish; run the same command again to resume");
  if (a.no_generate) return 0;
  if (db.empty()) {
    std::printf(
        "adapt: the rows are in the daemon's database; generate the tables with: blocktune tables generate --db "
        "DAEMON_DB\n");
    return 0;
  }
  return Generate(c, a, db);
}

}  // namespace

std::function<int()> RegisterAdaptCommand(CLI::App& app, Common& common) {
  auto args = std::make_shared<AdaptArgs>();
  auto* cmd = app.add_subcommand(
      "adapt",
      "give this host exact rows for every checked-in bucket (every kernel, dtype and thread count) within a time "
      "budget, then regenerate the tables through the regression gate; resumable: run it again after an interruption");
  AddCommon(cmd, common, true);
  cmd->add_option("--budget-minutes", args->budget_minutes, "wall-clock budget for the whole run")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10000.0));
  cmd->add_option("--kernel", args->kernels,
                  "only these kernels (repeatable; default: every kernel with checked-in rows)");
  cmd->add_option("--dtype", args->dtypes, "only these dtypes (repeatable; default: every dtype with checked-in rows)");
  cmd->add_option("--threads", args->threads, "thread counts (repeatable)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--isa", args->isa, "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own)")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  cmd->add_option("--budget", args->budget, "evaluations per bucket; 0: the transfer strategy's default")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "search seed")->capture_default_str();
  cmd->add_option("--tables", args->tables,
                  "tables directory: its tuned_entries.jsonl names the buckets, and is regenerated")
      ->capture_default_str();
  cmd->add_flag("--local", args->local,
                "no daemon: run the sweeps in this process on --db (configs in worker processes)");
  cmd->add_option("--db", args->db,
                  "--local: the database (default var/blocktune.db); with a daemon: its database on this machine, to "
                  "generate the tables from at the end");
  cmd->add_option("--worker", args->worker, "worker executable (default: blocktune-worker next to this program)");
  cmd->add_flag("--no-generate", args->no_generate, "stop after the sweeps; do not regenerate the tables");
  cmd->add_option("--gate-repetitions", args->gate_repetitions, "regression gate: interleaved repetitions")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--gate-min-time-ms", args->gate_min_time_ms, "regression gate: minimum time per repetition")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10000.0));
  cmd->add_option("--poll-seconds", args->poll_seconds, "progress refresh interval")->capture_default_str();
  server::AddTimingFlags(cmd, args->timing, "--local: ");
  return [cmd, args, &common]() -> int {
    if (!cmd->parsed()) return -1;
    return RunAdapt(common, *args);
  };
}

}  // namespace blocktune::client
