// blocktune sweep (remote with a progress bar, --local in-process, --from-misses) and blocktune
// sweeps list|show|wait|cancel|measurements; see service_commands.h.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "client/cli.h"
#include "client/service_commands.h"
#include "server/service.h"
#include "server/timing_flags.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::client {
namespace {

using server::api::Op;

std::string Duration(double seconds) {
  if (seconds < 0) return "?";
  const long s = static_cast<long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", s);
  }
  return buf;
}

// One progress line: a bar, counts, the server's ETA and the outcomes so far. On a terminal it
// redraws in place; otherwise one line per change.
void DrawProgress(const server::wire::SweepStatusView& st, bool tty, std::string& last) {
  constexpr int kWidth = 30;
  const double frac = st.total > 0 ? static_cast<double>(st.done) / static_cast<double>(st.total) : 0;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string outcomes;
  for (const auto& [o, n] : st.by_outcome) outcomes += " " + o + "=" + std::to_string(n);
  char line[512];
  // A stalled sweep says why instead of its outcomes: nothing advances until the database can be
  // written again.
  const std::string tail = st.stalled.empty() ? outcomes : " STALLED " + st.stalled;
  std::snprintf(line, sizeof line, "sweep %lld %-9s [%s] %3d%% %lld/%lld eta %s%s", static_cast<long long>(st.id),
                st.status.c_str(), bar.c_str(), static_cast<int>(frac * 100), static_cast<long long>(st.done),
                static_cast<long long>(st.total), Duration(st.eta_seconds).c_str(), tail.c_str());
  if (line == last) return;
  last = line;
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
}

int Finish(const Common& c, const Json& body, const server::wire::SweepStatusView& st, bool tty) {
  if (!c.json && tty) std::fprintf(stderr, "\n");
  if (c.json) {
    std::printf("%s\n", server::wire::Dump(body).c_str());
  } else {
    std::printf("sweep %lld %s: %lld measurements\n", static_cast<long long>(st.id), st.status.c_str(),
                static_cast<long long>(st.done));
    if (st.breakdown) PrintBreakdownLine(*st.breakdown);
  }
  if (st.status != "done") {
    return Fail(kExitFailed,
                "sweep " + std::to_string(st.id) + " " + st.status + (st.error.empty() ? "" : ": " + st.error));
  }
  return 0;
}

int WaitRemote(const Common& c, int64_t id, double poll_seconds) {
  const bool tty = isatty(fileno(stderr)) != 0;
  std::string last;
  while (true) {
    auto got = Call(c, To(Op::kGetSweep, {std::to_string(id)}));
    if (!got) return got.error();
    auto st = server::wire::DecodeSweepStatus(got->body);
    if (!st) return Fail(kExitServerError, "malformed sweep status: " + st.error().ToString());
    if (!c.json) DrawProgress(*st, tty, last);
    if (SweepFinished(st->status)) return Finish(c, got->body, *st, tty);
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds));
  }
}

struct SweepArgs {
  std::string kernel;
  std::string dtype = "f32";
  std::vector<std::string> shapes;
  int threads = 1;
  std::string strategy;  // empty: the daemon's default (exhaustive; auto for external kernels)
  int64_t budget = 0;
  double budget_seconds = 0;
  int64_t seed = 1;
  bool no_wait = false;
  double poll_seconds = 0.5;
  std::string idempotency_key;
  bool local = false;
  bool in_process = false;
  std::string isa;  // empty: the CPU's own level (or BLOCKTUNE_ISA)
  std::string worker;
  std::string db = "var/blocktune.db";
  server::TimingFlags timing;  // --local only
  bool from_misses = false;
  int64_t top = 10;
  std::string shard;  // "I/N" (0 <= I < N), --local only
};

// "I/N" -> (I, N) with 0 <= I < N <= 100000.
Result<std::pair<int, int>> ParseShard(const std::string& text) {
  const size_t slash = text.find('/');
  const auto bad = [&] { return InvalidArgument("--shard wants I/N with 0 <= I < N, got '" + text + "'", "--shard"); };
  if (slash == std::string::npos || slash == 0 || slash + 1 == text.size() || slash > 6 || text.size() - slash > 7) {
    return bad();
  }
  int v[2] = {0, 0};
  for (int part = 0; part < 2; ++part) {
    const std::string digits = part == 0 ? text.substr(0, slash) : text.substr(slash + 1);
    for (char ch : digits) {
      if (ch < '0' || ch > '9') return bad();
      v[part] = v[part] * 10 + (ch - '0');
    }
  }
  if (v[1] < 1 || v[1] > 100000 || v[0] >= v[1]) return bad();
  return std::pair<int, int>(v[0], v[1]);
}

// The request body from the flags. Nothing here needs the kernel's spec: a remote sweep is
// validated by the daemon, against the kernels it loaded (its --kernel-dir, not this CLI's),
// and its error names the field.
Result<Json> SweepBody(const SweepArgs& a) {
  Json shapes = Json::array();
  for (const auto& s : a.shapes) {
    auto dims = ParseShape(s);
    if (!dims) return std::unexpected(dims.error());
    shapes.push_back(server::wire::EncodeConfig(*dims));
  }
  tuner::SweepRequest r;
  r.kernel = a.kernel;
  auto dtype = ParseDType(a.dtype);
  if (!dtype) return InvalidArgument("unknown dtype '" + a.dtype + "'", "--dtype");
  r.dtype = *dtype;
  r.threads = a.threads;
  r.strategy = tuner::ParseStrategy(a.strategy).value_or(tuner::Strategy::kExhaustive);  // CLI11 checked the name
  r.budget = a.budget;
  r.budget_seconds = a.budget_seconds;
  r.seed = static_cast<uint64_t>(a.seed);
  r.isa = a.isa == "portable" ? "base" : a.isa;
  Json body = server::wire::EncodeSweepRequest(r);
  body["shapes"] = shapes;
  if (a.strategy.empty()) body.erase("strategy");
  return body;
}

// The request for a sweep run here (--local): through the codec's decoder, so it is validated
// exactly as the server would, against this CLI's kernels (built in and --kernel-dir).
Result<server::wire::SweepSubmission> BuildSweep(const SweepArgs& a) {
  auto body = SweepBody(a);
  if (!body) return std::unexpected(body.error());
  return server::wire::DecodeSweepSubmission(*body, server::wire::Limits{});
}

int RunSweepLocal(const Common& c, const SweepArgs& a, const server::wire::SweepSubmission& submission) {
  auto store = OpenLocalStore(a.db);
  if (!store) return store.error();
  server::ServiceOptions options;
  a.timing.ApplyTo(options.sweep.timing);
  // One executor among any others on the file (a daemon, another --local): it runs the sweeps
  // it submits, and a daemon finishes them if this process dies (docs/scale.md).
  options.executor_kind = "local";
  options.own_sweeps_only = true;
  // Configs run in worker processes here too: a crashing config is a recorded outcome, not
  // the end of the CLI (--in-process for debugging).
  tuner::isolation::WorkerOptions worker_options;
  worker_options.worker_path = a.worker;
  worker_options.kernel_dirs = c.kernel_dirs;  // the worker loads the same external kernels
  std::optional<tuner::isolation::WorkerEvaluator> worker;
  if (!a.in_process) {
    auto path = tuner::isolation::LocateWorker(worker_options.worker_path);
    if (!path) return Fail(kExitUsage, path.error().message + " (or pass --in-process)");
    worker_options.worker_path = *path;
    worker.emplace(worker_options);
    options.sweep.evaluator = &*worker;
  }
  server::Service service(std::move(*store), a.db, options);
  if (auto s = service.Start(); !s) return Fail(kExitDatabase, s.error().ToString());
  // The shard is not part of the request's wire form, so the canonical text is the decoder's.
  auto created = service.SubmitSweep(*submission.spec, submission.request, a.idempotency_key, submission.canonical);
  if (!created) return Fail(kExitUsage, created.error().ToString());
  const bool tty = isatty(fileno(stderr)) != 0;
  std::string last;
  while (true) {
    auto v = service.GetSweep(created->id);
    if (!v) return Fail(kExitDatabase, v.error().ToString());
    const server::wire::SweepStall stall{v->stalled ? v->stalled->error : "", v->stalled ? v->stalled->since : ""};
    const Json body = server::wire::EncodeSweep(v->sweep, &v->progress, v->eta_seconds, v->stalled ? &stall : nullptr);
    auto st = server::wire::DecodeSweepStatus(body);
    if (!st) return Fail(kExitFailed, st.error().ToString());
    if (!c.json) DrawProgress(*st, tty, last);
    if (SweepFinished(st->status)) {
      service.Stop();
      return Finish(c, body, *st, tty);
    }
    service.WaitForTask(a.poll_seconds);
  }
}

int RunSweepFromMisses(const Common& c, const SweepArgs& a);

int RunSweep(const Common& c, const SweepArgs& a) {
  if (a.from_misses) return RunSweepFromMisses(c, a);
  if (a.kernel.empty() || a.shapes.empty())
    return Fail(kExitUsage, "sweep needs KERNEL and --shape (or --from-misses)");
  if (!a.shard.empty() && !a.local) {
    return Fail(kExitUsage, "--shard runs a slice of the plan on this machine: add --local (and --db)");
  }
  if (a.local) {
    auto submission = BuildSweep(a);
    if (!submission) return Fail(kExitUsage, submission.error().ToString());
    if (!a.shard.empty()) {
      auto shard = ParseShard(a.shard);
      if (!shard) return Fail(kExitUsage, shard.error().message);
      submission->request.shard_index = shard->first;
      submission->request.shard_count = shard->second;
    }
    // Before the service detects the host: its hardware key and every worker it starts then
    // carry the forced level.
    if (!a.isa.empty()) {
      if (auto s = ForceIsa(a.isa); !s) return Fail(kExitUsage, s.error().message);
    }
    return RunSweepLocal(c, a, *submission);
  }

  auto body = SweepBody(a);
  if (!body) return Fail(kExitUsage, body.error().ToString());
  CallOptions o;
  o.body = server::wire::Dump(*body);
  o.idempotency_key = a.idempotency_key;
  auto created = Call(c, To(Op::kCreateSweep), o);
  if (!created) return created.error();
  const int64_t id = created->body.value("id", int64_t{0});
  if (a.no_wait) {
    if (c.json) {
      std::printf("%s\n", created->text.c_str());
    } else {
      std::printf("sweep %lld queued\n", static_cast<long long>(id));
    }
    return 0;
  }
  return WaitRemote(c, id, a.poll_seconds);
}

// `sweep --from-misses --top N`: the N most missed buckets of this daemon's host (any thread
// count) that a lookup still does not answer as tuned or override, swept in one sweep per
// (kernel, dtype, threads) with the other sweep options.
int RunSweepFromMisses(const Common& c, const SweepArgs& a) {
  if (a.local)
    return Fail(kExitUsage, "--from-misses needs the daemon (its lookups are what is counted); drop --local");
  if (!a.shapes.empty()) return Fail(kExitUsage, "--from-misses takes its shapes from the misses; drop --shape");
  auto host = Call(c, To(Op::kGetHostHardware, {}, {{"threads", "1"}}));
  if (!host) return host.error();
  std::string key = host->body.value("key", std::string());
  // The host's key without its thread count, at the requested ISA level if one was given:
  // x86_64.avx2.amd.fam25_mod1.t1 -> x86_64.avx2.amd.fam25_mod1.
  const size_t last = key.rfind('.');
  if (key.empty() || last == std::string::npos) return Fail(kExitServerError, "the server sent no hardware key");
  std::string prefix = key.substr(0, last);
  const std::string isa = a.isa == "portable" ? "base" : a.isa;
  if (!isa.empty()) {
    const size_t first = prefix.find('.');
    const size_t second = prefix.find('.', first + 1);
    if (first == std::string::npos || second == std::string::npos)
      return Fail(kExitServerError, "unexpected hardware key " + key);
    prefix = prefix.substr(0, first + 1) + isa + prefix.substr(second);
  }
  auto threads_of = [&](const std::string& k) -> int {
    // prefix + ".t<N>" and nothing else: a key for this machine at N threads.
    if (k.size() <= prefix.size() + 2 || k.compare(0, prefix.size(), prefix) != 0 || k[prefix.size()] != '.' ||
        k[prefix.size() + 1] != 't') {
      return 0;
    }
    int t = 0;
    for (size_t i = prefix.size() + 2; i < k.size(); ++i) {
      if (k[i] < '0' || k[i] > '9' || t > 256) return 0;
      t = t * 10 + (k[i] - '0');
    }
    return t >= 1 && t <= 256 ? t : 0;
  };
  // Misses of kernels the daemon still serves (its registry, not this CLI's).
  auto listed = Call(c, To(Op::kListKernels));
  if (!listed) return listed.error();
  std::set<std::string> served;
  if (listed->body.contains("kernels") && listed->body["kernels"].is_array()) {
    for (const auto& k : listed->body["kernels"]) {
      if (k.is_object() && k.contains("name") && k["name"].is_string()) served.insert(k["name"].get<std::string>());
    }
  }
  auto misses = FetchMisses(c, a.kernel, prefix, a.top, [&](const server::MissView& v) {
    return threads_of(v.miss.counts.hardware_key) > 0 && v.current != tables::Source::kTuned &&
           v.current != tables::Source::kOverride && served.count(v.miss.counts.kernel) > 0;
  });
  if (!misses) return misses.error();
  if (misses->empty()) {
    if (c.json) {
      std::printf("%s\n", Json{{"sweeps", Json::array()}}.dump().c_str());
    } else {
      std::printf("no missed buckets to sweep for %s\n", prefix.c_str());
    }
    return 0;
  }
  // One sweep per (kernel, dtype, threads), at most 256 shapes each (the API's limit), in the
  // order the groups first appear among the most missed.
  struct Group {
    std::string kernel;
    DType dtype;
    int threads;
    std::vector<NamedInts> shapes;
  };
  std::vector<Group> groups;
  for (const auto& v : *misses) {
    const store::MissCount& m = v.miss.counts;
    const int t = threads_of(m.hardware_key);
    Group* g = nullptr;
    for (auto& x : groups) {
      if (x.kernel == m.kernel && x.dtype == m.dtype && x.threads == t && x.shapes.size() < 256) g = &x;
    }
    if (g == nullptr) g = &groups.emplace_back(Group{m.kernel, m.dtype, t, {}});
    g->shapes.push_back(m.dims);
  }
  std::vector<int64_t> ids;
  Json created = Json::array();
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    SweepArgs one = a;
    one.kernel = g.kernel;
    one.dtype = std::string(DTypeName(g.dtype));
    one.threads = g.threads;
    one.shapes.clear();
    for (const auto& s : g.shapes) one.shapes.push_back(s.ToString());
    auto body = SweepBody(one);
    if (!body) return Fail(kExitUsage, body.error().ToString());
    CallOptions o;
    o.body = server::wire::Dump(*body);
    if (!a.idempotency_key.empty()) o.idempotency_key = a.idempotency_key + "-" + std::to_string(i + 1);
    auto got = Call(c, To(Op::kCreateSweep), o);
    if (!got) return got.error();
    const int64_t id = got->body.value("id", int64_t{0});
    ids.push_back(id);
    created.push_back(Json{
        {"id", id}, {"kernel", g.kernel}, {"dtype", one.dtype}, {"threads", g.threads}, {"buckets", g.shapes.size()}});
    if (!c.json) {
      std::printf("sweep %lld queued: %s %s threads=%d, %zu missed bucket(s)\n", static_cast<long long>(id),
                  g.kernel.c_str(), one.dtype.c_str(), g.threads, g.shapes.size());
    }
  }
  if (a.no_wait) {
    if (c.json) std::printf("%s\n", Json{{"sweeps", created}}.dump().c_str());
    return 0;
  }
  int rc = 0;
  for (int64_t id : ids) {
    const int r = WaitRemote(c, id, a.poll_seconds);
    if (r != 0 && rc == 0) rc = r;
  }
  return rc;
}

void PrintSweepTable(const std::vector<server::wire::SweepStatusView>& rows) {
  std::printf("%6s  %-22s %-10s %-11s %-24s  %s\n", "id", "kernel", "status", "progress", "created", "error");
  for (const auto& s : rows) {
    const std::string progress = std::to_string(s.done) + "/" + std::to_string(s.total);
    std::printf("%6lld  %-22s %-10s %-11s %-24s  %s\n", static_cast<long long>(s.id), s.kernel.c_str(),
                s.status.c_str(), progress.c_str(), s.created_at.c_str(), s.error.c_str());
  }
}

struct SweepsArgs {
  std::string status;
  int64_t limit = 100;
  int64_t after = 0;
  int64_t id = 0;
  bool all = false;
  double poll_seconds = 0.5;
};

int RunSweepsList(const Common& c, const SweepsArgs& a) {
  std::vector<std::pair<std::string, std::string>> query = {{"limit", std::to_string(a.limit)},
                                                            {"after_id", std::to_string(a.after)}};
  if (!a.status.empty()) query.emplace_back("status", a.status);
  auto got = Call(c, To(Op::kListSweeps, {}, query));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = server::wire::DecodeSweepList(got->body);
  if (!rows) return Fail(kExitServerError, rows.error().ToString());
  PrintSweepTable(*rows);
  return 0;
}

int RunMeasurements(const Common& c, const SweepsArgs& a) {
  // With --json --all, each page is printed as it arrives, one JSON document per line.
  int64_t after = a.after;
  bool header = false;
  while (true) {
    auto got = Call(c, To(Op::kListMeasurements, {std::to_string(a.id)},
                          {{"limit", std::to_string(a.limit)}, {"after_id", std::to_string(after)}}));
    if (!got) return got.error();
    int64_t next = 0;
    auto page = server::wire::DecodeMeasurementPage(got->body, &next);
    if (!page) return Fail(kExitServerError, page.error().ToString());
    if (c.json) {
      std::printf("%s\n", got->text.c_str());
    } else {
      if (!header) {
        std::printf("%8s  %-20s %-40s %-13s %14s %7s\n", "id", "bucket", "config", "outcome", "median ns", "cv");
        header = true;
      }
      for (const auto& m : *page) {
        std::printf("%8lld  %-20s %-40s %-13s %14.0f %6.1f%%\n", static_cast<long long>(m.id), m.bucket.c_str(),
                    m.config.ToString().c_str(), std::string(tuner::OutcomeName(m.outcome)).c_str(), m.median_ns,
                    100 * m.cv);
      }
    }
    if (!a.all || next == 0) break;
    after = next;
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterSweepCommands(CLI::App& app, Common& common) {
  auto sweep = std::make_shared<SweepArgs>();
  auto* sweep_cmd =
      app.add_subcommand("sweep", "run a sweep (on blocktuned, or --local) and wait, with a progress bar and ETA");
  AddCommon(sweep_cmd, common, true);
  sweep_cmd->add_option("kernel", sweep->kernel, "kernel name, e.g. matmul (with --from-misses: only this kernel)");
  sweep_cmd->add_option("--shape", sweep->shapes,
                        "problem dims, e.g. m=1024,n=1024,k=1024 (repeatable; required unless --from-misses)");
  sweep_cmd->add_option("--dtype", sweep->dtype, "element type")->capture_default_str();
  sweep_cmd->add_option("--threads", sweep->threads, "threads the kernel runs with")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  sweep_cmd
      ->add_option("--strategy", sweep->strategy,
                   "exhaustive, random, anneal, surrogate, transfer or auto (docs/tuning.md, docs/search.md); "
                   "default exhaustive, auto for external kernels")
      ->check(CLI::IsMember({"exhaustive", "random", "anneal", "surrogate", "transfer", "auto"}));
  sweep_cmd
      ->add_option(
          "--budget", sweep->budget,
          "evaluations per bucket (0: random 32, anneal/surrogate/transfer a tenth of the valid space, at least 8)")
      ->capture_default_str();
  sweep_cmd->add_option("--budget-seconds", sweep->budget_seconds, "wall-clock limit of each bucket's search (0: none)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  sweep_cmd->add_option("--seed", sweep->seed, "seed for random sampling")->capture_default_str();
  sweep_cmd->add_flag("--no-wait", sweep->no_wait, "queue the sweep and return its id");
  sweep_cmd->add_option("--idempotency-key", sweep->idempotency_key,
                        "a retry with the same key returns the same sweep");
  sweep_cmd->add_flag("--local", sweep->local,
                      "no daemon: run the sweep in this process on the embedded database (--db; a daemon or other "
                      "--local processes may share the file, each running its own sweeps)");
  sweep_cmd->add_option("--db", sweep->db, "database for --local")->capture_default_str();
  server::AddTimingFlags(sweep_cmd, sweep->timing, "--local: ");
  sweep_cmd->add_option(
      "--worker", sweep->worker,
      "--local: worker executable (default: blocktune-worker next to this program or in its build tree)");
  sweep_cmd
      ->add_option("--isa", sweep->isa,
                   "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own); results are "
                   "filed under that level's hardware key")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  sweep_cmd->add_flag("--from-misses", sweep->from_misses,
                      "sweep the most missed buckets of the daemon's host instead of --shape (GET /v1/misses, skipping "
                      "buckets now tuned or pinned): one sweep per kernel, dtype and thread count");
  sweep_cmd->add_option("--top", sweep->top, "with --from-misses: this many buckets")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  sweep_cmd->add_option(
      "--shard", sweep->shard,
      "--local: run slice I of N (0 <= I < N) of the plan, e.g. $SLURM_ARRAY_TASK_ID/4: exhaustive and random "
      "cut by (bucket, config), model-guided strategies by bucket; merge the shards' databases with "
      "`blocktune db merge`, which chooses the winners (docs/scale.md)");
  sweep_cmd->add_flag("--in-process", sweep->in_process,
                      "--local: run configs in this process (debugging only: a crashing config ends the sweep)");

  auto sweeps = std::make_shared<SweepsArgs>();
  auto* sweeps_cmd = app.add_subcommand("sweeps", "list, show, wait for, cancel sweeps and page their measurements");
  sweeps_cmd->require_subcommand(1);
  auto* list_cmd = sweeps_cmd->add_subcommand("list", "sweeps, oldest first");
  AddCommon(list_cmd, common, true);
  list_cmd->add_option("--status", sweeps->status, "queued, running, done, failed or cancelled");
  list_cmd->add_option("--limit", sweeps->limit, "at most this many")->capture_default_str();
  list_cmd->add_option("--after", sweeps->after, "only ids greater than this")->capture_default_str();
  auto* show_cmd = sweeps_cmd->add_subcommand("show", "one sweep: progress, ETA, counts by outcome");
  AddCommon(show_cmd, common, true);
  show_cmd->add_option("id", sweeps->id, "sweep id")->required();
  auto* wait_cmd =
      sweeps_cmd->add_subcommand("wait", "wait for a sweep with a progress bar; exit 1 unless it ends done");
  AddCommon(wait_cmd, common, true);
  wait_cmd->add_option("id", sweeps->id, "sweep id")->required();
  auto* cancel_cmd = sweeps_cmd->add_subcommand("cancel", "cancel a queued or running sweep");
  AddCommon(cancel_cmd, common, true);
  cancel_cmd->add_option("id", sweeps->id, "sweep id")->required();
  auto* meas_cmd = sweeps_cmd->add_subcommand("measurements", "a sweep's measurements, one page or --all");
  AddCommon(meas_cmd, common, true);
  meas_cmd->add_option("id", sweeps->id, "sweep id")->required();
  meas_cmd->add_option("--limit", sweeps->limit, "page size (max 1000)")->capture_default_str();
  meas_cmd->add_option("--after", sweeps->after, "start after this measurement id")->capture_default_str();
  meas_cmd->add_flag("--all", sweeps->all, "follow pages to the end (with --json: one page per line)");

  return [=, &common]() -> int {
    if (sweep_cmd->parsed()) return RunSweep(common, *sweep);
    if (list_cmd->parsed()) return RunSweepsList(common, *sweeps);
    if (show_cmd->parsed()) return Show(common, To(Op::kGetSweep, {std::to_string(sweeps->id)}));
    if (wait_cmd->parsed()) return WaitRemote(common, sweeps->id, sweeps->poll_seconds);
    if (cancel_cmd->parsed()) {
      auto got = Call(common, To(Op::kCancelSweep, {std::to_string(sweeps->id)}));
      if (!got) return got.error();
      if (common.json) {
        std::printf("%s\n", got->text.c_str());
      } else {
        std::printf("sweep %lld cancelled\n", static_cast<long long>(sweeps->id));
      }
      return 0;
    }
    if (meas_cmd->parsed()) return RunMeasurements(common, *sweeps);
    return -1;
  };
}

}  // namespace blocktune::client
