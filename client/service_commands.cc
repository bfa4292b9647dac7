// The blocktune subcommands that talk to blocktuned (and `sweep --local`, which runs the same
// service in-process on the embedded database): sweep (also --from-misses), sweeps, lookup,
// kernels, hardware, tuned, misses, override, tables download, backup, health, metrics. Requests are built and answers
// read through server/codec, so the CLI spells no JSON key.
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
#include "server/service.h"
#include "server/timing_flags.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::client {
namespace {

using api::Op;

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
void DrawProgress(const wire::SweepStatusView& st, bool tty, std::string& last) {
  constexpr int kWidth = 30;
  const double frac = st.total > 0 ? static_cast<double>(st.done) / static_cast<double>(st.total) : 0;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::string outcomes;
  for (const auto& [o, n] : st.by_outcome) outcomes += " " + o + "=" + std::to_string(n);
  char line[512];
  std::snprintf(line, sizeof line, "sweep %lld %-9s [%s] %3d%% %lld/%lld eta %s%s", static_cast<long long>(st.id),
                st.status.c_str(), bar.c_str(), static_cast<int>(frac * 100), static_cast<long long>(st.done),
                static_cast<long long>(st.total), Duration(st.eta_seconds).c_str(), outcomes.c_str());
  if (line == last) return;
  last = line;
  std::fprintf(stderr, tty ? "\r%s\033[K" : "%s\n", line);
}

int Finish(const Common& c, const Json& body, const wire::SweepStatusView& st, bool tty) {
  if (!c.json && tty) std::fprintf(stderr, "\n");
  if (c.json) {
    std::printf("%s\n", wire::Dump(body).c_str());
  } else {
    std::printf("sweep %lld %s: %lld measurements\n", static_cast<long long>(st.id), st.status.c_str(),
                static_cast<long long>(st.done));
  }
  if (st.status != "done") {
    return Fail(kExitFailed, "sweep " + std::to_string(st.id) + " " + st.status + (st.error.empty() ? "" : ": " + st.error));
  }
  return 0;
}

bool Final(const std::string& status) { return status == "done" || status == "failed" || status == "cancelled"; }

int WaitRemote(const Common& c, int64_t id, double poll_seconds) {
  const bool tty = isatty(fileno(stderr)) != 0;
  std::string last;
  while (true) {
    auto got = Call(c, To(Op::kGetSweep, {std::to_string(id)}));
    if (!got) return got.error();
    auto st = wire::DecodeSweepStatus(got->body);
    if (!st) return Fail(kExitServerError, "malformed sweep status: " + st.error().ToString());
    if (!c.json) DrawProgress(*st, tty, last);
    if (Final(st->status)) return Finish(c, got->body, *st, tty);
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
    shapes.push_back(wire::EncodeConfig(*dims));
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
  Json body = wire::EncodeSweepRequest(r);
  body["shapes"] = shapes;
  if (a.strategy.empty()) body.erase("strategy");
  return body;
}

// The request for a sweep run here (--local): through the codec's decoder, so it is validated
// exactly as the server would, against this CLI's kernels (built in and --kernel-dir).
Result<tuner::SweepRequest> BuildSweep(const SweepArgs& a) {
  auto body = SweepBody(a);
  if (!body) return std::unexpected(body.error());
  return wire::DecodeSweepRequest(*body, wire::Limits{});
}

int RunSweepLocal(const Common& c, const SweepArgs& a, const tuner::SweepRequest& request) {
  auto store = OpenLocalStore(a.db);
  if (!store) return store.error();
  server::ServiceOptions options;
  a.timing.ApplyTo(options.sweep.timing);
  // Configs run in worker processes here too: a crashing config is a recorded outcome, not
  // the end of the CLI (--in-process for debugging).
  tuner::WorkerOptions worker_options;
  worker_options.worker_path = a.worker;
  worker_options.kernel_dirs = c.kernel_dirs;  // the worker loads the same external kernels
  std::optional<tuner::WorkerEvaluator> worker;
  if (!a.in_process) {
    auto path = tuner::LocateWorker(worker_options.worker_path);
    if (!path) return Fail(kExitUsage, path.error().message + " (or pass --in-process)");
    worker_options.worker_path = *path;
    worker.emplace(worker_options);
    options.sweep.evaluator = &*worker;
  }
  server::Service service(std::move(*store), a.db, options);
  if (auto s = service.Start(); !s) return Fail(kExitDatabase, s.error().ToString());
  const std::string canonical = wire::Dump(wire::EncodeSweepRequest(request));
  auto created = service.SubmitSweep(request, a.idempotency_key, canonical);
  if (!created) return Fail(kExitUsage, created.error().ToString());
  const bool tty = isatty(fileno(stderr)) != 0;
  std::string last;
  while (true) {
    auto v = service.GetSweep(created->id);
    if (!v) return Fail(kExitDatabase, v.error().ToString());
    const Json body = wire::EncodeSweep(v->sweep, &v->progress, v->eta_seconds);
    auto st = wire::DecodeSweepStatus(body);
    if (!st) return Fail(kExitFailed, st.error().ToString());
    if (!c.json) DrawProgress(*st, tty, last);
    if (Final(st->status)) {
      service.Stop();
      return Finish(c, body, *st, tty);
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(a.poll_seconds));
  }
}

int RunSweepFromMisses(const Common& c, const SweepArgs& a);

int RunSweep(const Common& c, const SweepArgs& a) {
  if (a.from_misses) return RunSweepFromMisses(c, a);
  if (a.kernel.empty() || a.shapes.empty()) return Fail(kExitUsage, "sweep needs KERNEL and --shape (or --from-misses)");
  if (!a.shard.empty() && !a.local) {
    return Fail(kExitUsage, "--shard runs a slice of the plan on this machine: add --local (and --db)");
  }
  if (a.local) {
    auto request = BuildSweep(a);
    if (!request) return Fail(kExitUsage, request.error().ToString());
    if (!a.shard.empty()) {
      auto shard = ParseShard(a.shard);
      if (!shard) return Fail(kExitUsage, shard.error().message);
      request->shard_index = shard->first;
      request->shard_count = shard->second;
    }
    // Before the service detects the host: its hardware key and every worker it starts then
    // carry the forced level.
    if (!a.isa.empty()) {
      if (auto s = ForceIsa(a.isa); !s) return Fail(kExitUsage, s.error().message);
    }
    return RunSweepLocal(c, a, *request);
  }

  auto body = SweepBody(a);
  if (!body) return Fail(kExitUsage, body.error().ToString());
  CallOptions o;
  o.body = wire::Dump(*body);
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

// Every stored miss matching the filter, page by page, until `want` of them pass `keep`.
std::expected<std::vector<server::MissView>, int> FetchMisses(const Common& c, const std::string& kernel,
                                                              const std::string& hardware, int64_t want,
                                                              const std::function<bool(const server::MissView&)>& keep) {
  std::vector<server::MissView> out;
  int64_t offset = 0;
  while (static_cast<int64_t>(out.size()) < want) {
    std::vector<std::pair<std::string, std::string>> query = {{"offset", std::to_string(offset)},
                                                              {"limit", std::to_string(std::min<int64_t>(want, 1000))}};
    if (!kernel.empty()) query.emplace_back("kernel", kernel);
    if (!hardware.empty()) query.emplace_back("hardware", hardware);
    auto got = Call(c, To(Op::kListMisses, {}, query));
    if (!got) return std::unexpected(got.error());
    int64_t next = 0;
    auto page = wire::DecodeMissList(got->body, &next);
    if (!page) return std::unexpected(Fail(kExitServerError, "malformed misses: " + page.error().ToString()));
    for (auto& m : *page) {
      if (static_cast<int64_t>(out.size()) < want && keep(m)) out.push_back(std::move(m));
    }
    if (next == 0) break;
    offset = next;
  }
  return out;
}

struct MissesArgs {
  std::string kernel;
  std::string hardware;
  int64_t top = 20;
};

int RunMisses(const Common& c, const MissesArgs& a) {
  if (c.json) {
    // One page of the server's document, as received.
    std::vector<std::pair<std::string, std::string>> query = {{"limit", std::to_string(a.top)}};
    if (!a.kernel.empty()) query.emplace_back("kernel", a.kernel);
    if (!a.hardware.empty()) query.emplace_back("hardware", a.hardware);
    auto got = Call(c, To(Op::kListMisses, {}, query));
    if (!got) return got.error();
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = FetchMisses(c, a.kernel, a.hardware, a.top, [](const server::MissView&) { return true; });
  if (!rows) return rows.error();
  std::printf("%8s %8s %8s %8s  %-22s %-5s %-36s %-22s %-16s %s\n", "count", "fallback", "nearest", "default", "kernel",
              "dtype", "hardware", "bucket", "now", "last seen");
  for (const auto& v : *rows) {
    const store::MissCount& m = v.miss.counts;
    std::printf("%8lld %8lld %8lld %8lld  %-22s %-5s %-36s %-22s %-16s %s\n", static_cast<long long>(m.count()),
                static_cast<long long>(m.fallback), static_cast<long long>(m.nearest),
                static_cast<long long>(m.defaulted), m.kernel.c_str(), std::string(DTypeName(m.dtype)).c_str(),
                m.hardware_key.c_str(), m.bucket.c_str(), std::string(tables::SourceName(v.current)).c_str(),
                m.last_seen_at.c_str());
  }
  if (rows->empty()) std::printf("no lookup misses stored\n");
  return 0;
}

// `sweep --from-misses --top N`: the N most missed buckets of this daemon's host (any thread
// count) that a lookup still does not answer as tuned or override, swept in one sweep per
// (kernel, dtype, threads) with the other sweep options.
int RunSweepFromMisses(const Common& c, const SweepArgs& a) {
  if (a.local) return Fail(kExitUsage, "--from-misses needs the daemon (its lookups are what is counted); drop --local");
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
    if (first == std::string::npos || second == std::string::npos) return Fail(kExitServerError, "unexpected hardware key " + key);
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
    o.body = wire::Dump(*body);
    if (!a.idempotency_key.empty()) o.idempotency_key = a.idempotency_key + "-" + std::to_string(i + 1);
    auto got = Call(c, To(Op::kCreateSweep), o);
    if (!got) return got.error();
    const int64_t id = got->body.value("id", int64_t{0});
    ids.push_back(id);
    created.push_back(Json{{"id", id}, {"kernel", g.kernel}, {"dtype", one.dtype}, {"threads", g.threads},
                           {"buckets", g.shapes.size()}});
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

void PrintSweepTable(const std::vector<wire::SweepStatusView>& rows) {
  std::printf("%6s  %-22s %-10s %-11s %-24s  %s\n", "id", "kernel", "status", "progress", "created", "error");
  for (const auto& s : rows) {
    const std::string progress = std::to_string(s.done) + "/" + std::to_string(s.total);
    std::printf("%6lld  %-22s %-10s %-11s %-24s  %s\n", static_cast<long long>(s.id), s.kernel.c_str(),
                s.status.c_str(), progress.c_str(), s.created_at.c_str(), s.error.c_str());
  }
}

void PrintAnswer(const tuner::LookupAnswer& a) {
  std::printf("kernel    %s\nconfig    %s\nsource    %s\nhardware  %s\nbucket    %s%s\n", a.kernel.c_str(),
              a.config.ToString().c_str(), std::string(tables::SourceName(a.source)).c_str(), a.hardware.c_str(),
              a.bucket.c_str(), a.matched_bucket != a.bucket ? (" (from " + a.matched_bucket + ")").c_str() : "");
  if (!a.queried_hardware.empty()) {
    std::printf("queried   %s (fell back %d level%s)\n", a.queried_hardware.c_str(), a.fallback_levels,
                a.fallback_levels == 1 ? "" : "s");
  }
  if (a.source == tables::Source::kOverride) {
    std::printf("override  #%lld: %s (expires %s)\n", static_cast<long long>(a.override_id), a.reason.c_str(),
                a.expires_at.empty() ? "never" : a.expires_at.c_str());
  } else if (a.sweep_id != 0) {
    std::printf("median    %.0f ns (%lld samples, sweep %lld, measured %s)\n", a.median_ns,
                static_cast<long long>(a.samples), static_cast<long long>(a.sweep_id), a.measured_at.c_str());
  }
  if (a.source == tables::Source::kTuned || a.source == tables::Source::kTunedFallback ||
      a.source == tables::Source::kNearest) {
    std::printf("fingerprint %s%s\n", a.fingerprint.empty() ? "unknown" : a.fingerprint.c_str(),
                a.stale ? " (STALE: measured by another build of the kernel)" : "");
  }
}

struct LookupArgs {
  std::string kernel;
  std::string dtype = "f32";
  std::string shape;
  int threads = 1;
  std::string hardware;
  std::string config;
  std::string batch;
};

int RunLookup(const Common& c, const LookupArgs& a) {
  if (!a.batch.empty()) {
    std::ifstream in(a.batch);
    if (!in) return Fail(kExitUsage, "cannot read " + a.batch);
    std::ostringstream text;
    text << in.rdbuf();
    auto parsed = wire::ParseBody(text.str(), wire::Limits{});
    if (!parsed) return Fail(kExitUsage, a.batch + ": " + parsed.error().ToString());
    auto queries = wire::DecodeBatchLookup(*parsed, wire::Limits{});
    if (!queries) return Fail(kExitUsage, a.batch + ": " + queries.error().ToString());
    CallOptions o;
    o.body = wire::Dump(wire::EncodeBatchLookupRequest(*queries));
    auto got = Call(c, To(Op::kBatchLookup), o);
    if (!got) return got.error();
    return PrintReply(c, *got);
  }
  if (a.kernel.empty() || a.shape.empty()) return Fail(kExitUsage, "lookup needs KERNEL and --shape (or --batch FILE)");
  auto dims = ParseShape(a.shape);
  if (!dims) return Fail(kExitUsage, dims.error().ToString());
  std::vector<std::pair<std::string, std::string>> query = {
      {"kernel", a.kernel}, {"dtype", a.dtype}, {"threads", std::to_string(a.threads)}};
  for (const auto& [n, v] : dims->values()) query.emplace_back(n, std::to_string(v));
  if (!a.hardware.empty()) query.emplace_back("hardware", a.hardware);
  if (!a.config.empty()) query.emplace_back("config", a.config);
  auto got = Call(c, To(Op::kGetLookup, {}, query));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto ans = wire::DecodeLookup(got->body);
  if (!ans) return Fail(kExitServerError, "malformed lookup answer: " + ans.error().ToString());
  PrintAnswer(*ans);
  return 0;
}

// Call and print: JSON as received with --json, PrintHuman otherwise.
int Show(const Common& c, const Target& target) {
  auto got = Call(c, target);
  if (!got) return got.error();
  return PrintReply(c, *got);
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
  auto rows = wire::DecodeSweepList(got->body);
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
    auto page = wire::DecodeMeasurementPage(got->body, &next);
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

struct OverrideArgs {
  std::string kernel;
  std::string hardware = "*";
  std::string dtype = "f32";
  std::string bucket;
  std::string shape;
  std::string config;
  std::string reason;
  std::string expires_at;
  double ttl_hours = 0;
  int64_t id = 0;
};

int RunOverrideSet(const Common& c, const OverrideArgs& a) {
  const KernelSpec* spec = FindKernel(a.kernel);
  if (spec == nullptr) return Fail(kExitUsage, "unknown kernel '" + a.kernel + "'");
  store::OverrideRecord o;
  o.kernel = a.kernel;
  o.hardware_key = a.hardware;
  auto dtype = ParseDType(a.dtype);
  if (!dtype) return Fail(kExitUsage, "unknown dtype '" + a.dtype + "'");
  o.dtype = *dtype;
  if (!a.shape.empty()) {
    auto dims = ParseShape(a.shape);
    if (!dims) return Fail(kExitUsage, dims.error().ToString());
    o.bucket = spec->Bucket(Problem{*dtype, *dims}).first;
  } else {
    o.bucket = a.bucket;
  }
  if (o.bucket.empty()) return Fail(kExitUsage, "give --bucket or --shape");
  auto cfg = NamedInts::Parse(a.config);
  if (!cfg) return Fail(kExitUsage, "--config: " + cfg.error().ToString());
  o.config = *cfg;
  o.reason = a.reason;
  if (a.ttl_hours > 0) {
    const auto t = std::chrono::system_clock::now() + std::chrono::seconds(static_cast<int64_t>(a.ttl_hours * 3600));
    const std::time_t tt = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    gmtime_r(&tt, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    o.expires_at = buf;
  } else {
    o.expires_at = a.expires_at;
  }
  CallOptions opt;
  opt.body = wire::Dump(wire::EncodeOverrideRequest(o));
  auto got = Call(c, To(Op::kCreateOverride), opt);
  if (!got) return got.error();
  return PrintReply(c, *got);
}

int RunOverrideList(const Common& c) {
  auto got = Call(c, To(Op::kListOverrides));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = wire::DecodeOverrideList(got->body);
  if (!rows) return Fail(kExitServerError, rows.error().ToString());
  std::printf("%5s  %-18s %-28s %-5s %-20s %-36s %-24s %s\n", "id", "kernel", "hardware", "dtype", "bucket", "config",
              "expires", "reason");
  for (const auto& o : *rows) {
    std::printf("%5lld  %-18s %-28s %-5s %-20s %-36s %-24s %s\n", static_cast<long long>(o.id), o.kernel.c_str(),
                o.hardware_key.c_str(), std::string(DTypeName(o.dtype)).c_str(), o.bucket.c_str(),
                o.config.ToString().c_str(), o.expires_at.empty() ? "never" : o.expires_at.c_str(), o.reason.c_str());
  }
  return 0;
}

int RunTuned(const Common& c, const std::string& kernel, const std::string& hardware, const std::string& dtype) {
  auto got = Call(c, To(Op::kListTuned, {}, {{"kernel", kernel}, {"hardware", hardware}, {"dtype", dtype}}));
  if (!got) return got.error();
  if (c.json) {
    std::printf("%s\n", got->text.c_str());
    return 0;
  }
  auto rows = wire::DecodeTunedList(got->body);
  if (!rows) return Fail(kExitServerError, rows.error().ToString());
  std::printf("%-22s %-36s %-5s %-22s %-40s %14s %6s\n", "kernel", "hardware", "dtype", "bucket", "config", "median ns",
              "sweep");
  for (const auto& e : *rows) {
    std::printf("%-22s %-36s %-5s %-22s %-40s %14.0f %6lld\n", e.kernel.c_str(), e.hardware_key.c_str(),
                std::string(DTypeName(e.dtype)).c_str(), e.bucket.c_str(), e.config.ToString().c_str(), e.median_ns,
                static_cast<long long>(e.sweep_id));
  }
  return 0;
}

int RunTablesDownload(const Common& c, const std::string& kernel, const std::string& out) {
  CallOptions o;
  o.raw = true;
  auto got = Call(c, To(Op::kGetTable, {kernel}), o);
  if (!got) return got.error();
  if (out.empty() || out == "-") {
    std::fwrite(got->text.data(), 1, got->text.size(), stdout);
    return 0;
  }
  std::ofstream f(out, std::ios::binary);
  f << got->text;
  if (!f) return Fail(kExitFailed, "cannot write " + out);
  if (!c.json) std::printf("%zu bytes written to %s\n", got->text.size(), out.c_str());
  return 0;
}

int RunBackup(const Common& c, const std::string& db, const std::string& out) {
  if (db.empty()) {
    auto got = Call(c, To(Op::kCreateBackup));
    if (!got) return got.error();
    return PrintReply(c, *got);
  }
  if (out.empty()) return Fail(kExitUsage, "backup --db needs --out FILE");
  if (access(db.c_str(), R_OK) != 0) return Fail(kExitDatabase, "cannot read database " + db);
  auto store = store::Store::Open(db);
  if (!store) return Fail(kExitDatabase, store.error().ToString());
  if (auto s = (*store)->maintenance().BackupTo(out); !s) return Fail(kExitDatabase, s.error().ToString());
  if (c.json) {
    std::printf("%s\n", wire::Dump(wire::EncodeBackup(out, static_cast<int64_t>(std::filesystem::file_size(out)))).c_str());
  } else {
    std::printf("backup of %s written to %s\n", db.c_str(), out.c_str());
  }
  return 0;
}

int RunHealth(const Common& c) {
  auto live = Call(c, To(Op::kGetHealth));
  if (!live) return live.error();
  auto ready = Call(c, To(Op::kGetReady));
  if (!ready) return ready.error();
  if (c.json) {
    std::printf("%s\n", ready->text.c_str());
  } else {
    std::printf("%s: alive, ready\n", c.server.c_str());
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterServiceCommands(CLI::App& app, Common& common, CLI::App* tables_cmd) {
  auto sweep = std::make_shared<SweepArgs>();
  auto* sweep_cmd = app.add_subcommand("sweep", "run a sweep (on blocktuned, or --local) and wait, with a progress bar and ETA");
  AddCommon(sweep_cmd, common, true);
  sweep_cmd->add_option("kernel", sweep->kernel, "kernel name, e.g. matmul (with --from-misses: only this kernel)");
  sweep_cmd->add_option("--shape", sweep->shapes, "problem dims, e.g. m=1024,n=1024,k=1024 (repeatable; required unless --from-misses)");
  sweep_cmd->add_option("--dtype", sweep->dtype, "element type")->capture_default_str();
  sweep_cmd->add_option("--threads", sweep->threads, "threads the kernel runs with")->capture_default_str()->check(CLI::Range(1, 256));
  sweep_cmd->add_option("--strategy", sweep->strategy,
                        "exhaustive, random, anneal, surrogate, transfer or auto (docs/tuning.md, docs/search.md); "
                        "default exhaustive, auto for external kernels")
      ->check(CLI::IsMember({"exhaustive", "random", "anneal", "surrogate", "transfer", "auto"}));
  sweep_cmd->add_option("--budget", sweep->budget,
                        "evaluations per bucket (0: random 32, anneal/surrogate/transfer a tenth of the valid space, at least 8)")
      ->capture_default_str();
  sweep_cmd->add_option("--budget-seconds", sweep->budget_seconds, "wall-clock limit of each bucket's search (0: none)")
      ->capture_default_str()->check(CLI::Range(0.0, 1e7));
  sweep_cmd->add_option("--seed", sweep->seed, "seed for random sampling")->capture_default_str();
  sweep_cmd->add_flag("--no-wait", sweep->no_wait, "queue the sweep and return its id");
  sweep_cmd->add_option("--idempotency-key", sweep->idempotency_key, "a retry with the same key returns the same sweep");
  sweep_cmd->add_flag("--local", sweep->local, "no daemon: run the sweep in this process on the embedded database (--db)");
  sweep_cmd->add_option("--db", sweep->db, "database for --local")->capture_default_str();
  server::AddTimingFlags(sweep_cmd, sweep->timing, "--local: ");
  sweep_cmd->add_option("--worker", sweep->worker, "--local: worker executable (default: blocktune-worker next to this program or in its build tree)");
  sweep_cmd->add_option("--isa", sweep->isa,
                        "run the kernels of this ISA level (avx512, avx2, base; at most the CPU's own); results are "
                        "filed under that level's hardware key")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  sweep_cmd->add_flag("--from-misses", sweep->from_misses,
                      "sweep the most missed buckets of the daemon's host instead of --shape (GET /v1/misses, skipping "
                      "buckets now tuned or pinned): one sweep per kernel, dtype and thread count");
  sweep_cmd->add_option("--top", sweep->top, "with --from-misses: this many buckets")->capture_default_str()->check(CLI::Range(1, 10000));
  sweep_cmd->add_option("--shard", sweep->shard,
                        "--local: run slice I of N (0 <= I < N) of the plan, e.g. $SLURM_ARRAY_TASK_ID/4: exhaustive and random "
                        "cut by (bucket, config), model-guided strategies by bucket; merge the shards' databases with "
                        "`blocktune db merge`, which chooses the winners (docs/scale.md)");
  sweep_cmd->add_flag("--in-process", sweep->in_process, "--local: run configs in this process (debugging only: a crashing config ends the sweep)");

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
  auto* wait_cmd = sweeps_cmd->add_subcommand("wait", "wait for a sweep with a progress bar; exit 1 unless it ends done");
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

  auto lookup = std::make_shared<LookupArgs>();
  auto* lookup_cmd = app.add_subcommand("lookup", "best config for a problem, from blocktuned (says where it came from)");
  AddCommon(lookup_cmd, common, true);
  lookup_cmd->add_option("kernel", lookup->kernel, "kernel name");
  lookup_cmd->add_option("--shape", lookup->shape, "problem dims, e.g. m=512,n=512,k=512");
  lookup_cmd->add_option("--dtype", lookup->dtype, "element type")->capture_default_str();
  lookup_cmd->add_option("--threads", lookup->threads, "threads the kernel will run with")->capture_default_str();
  lookup_cmd->add_option("--hardware", lookup->hardware, "hardware key (default: the server's host)");
  lookup_cmd->add_option("--config", lookup->config, "your own config, validated and echoed (source explicit)");
  lookup_cmd->add_option("--batch", lookup->batch, "JSON file {\"queries\": [...]}: one request for many lookups");

  auto* kernels_cmd = app.add_subcommand("kernels", "list kernels, or describe one, or have the server reload them");
  AddCommon(kernels_cmd, common, true);
  auto kernel_name = std::make_shared<std::string>();
  auto reload = std::make_shared<bool>(false);
  kernels_cmd->add_option("name", *kernel_name, "kernel to describe");
  kernels_cmd->add_flag("--reload", *reload,
                        "have the server read its --kernel-dir folders and tuned rows again (after `blocktune import` "
                        "into its database, or an edited spec); POST /v1/kernels/reload, needs the token");

  auto* hardware_cmd = app.add_subcommand("hardware", "hardware profiles known to the database and this host's");
  AddCommon(hardware_cmd, common, true);
  auto host_only = std::make_shared<bool>(false);
  auto host_threads = std::make_shared<int>(1);
  hardware_cmd->add_flag("--host", *host_only, "only the server host's profile");
  hardware_cmd->add_option("--threads", *host_threads, "thread count for --host's key")->capture_default_str();

  auto tuned = std::make_shared<std::array<std::string, 3>>();
  auto* tuned_cmd = app.add_subcommand("tuned", "tuned entries the server's lookups use");
  AddCommon(tuned_cmd, common, true);
  tuned_cmd->add_option("--kernel", (*tuned)[0], "only this kernel");
  tuned_cmd->add_option("--hardware", (*tuned)[1], "only keys under this prefix");
  tuned_cmd->add_option("--dtype", (*tuned)[2], "only this dtype");

  auto misses = std::make_shared<MissesArgs>();
  auto* misses_cmd = app.add_subcommand(
      "misses", "buckets lookups asked for that no row tuned for their hardware key answered, most asked first");
  AddCommon(misses_cmd, common, true);
  misses_cmd->add_option("--kernel", misses->kernel, "only this kernel");
  misses_cmd->add_option("--hardware", misses->hardware, "only keys equal to this or under it");
  misses_cmd->add_option("--top", misses->top, "this many, most missed first")
      ->capture_default_str()->check(CLI::Range(1, 1000));

  auto ov = std::make_shared<OverrideArgs>();
  auto* override_cmd = app.add_subcommand("override", "pin a config (served as source override), list or delete pins");
  override_cmd->require_subcommand(1);
  auto* set_cmd = override_cmd->add_subcommand("set", "pin a config for (kernel, hardware, dtype, bucket)");
  AddCommon(set_cmd, common, true);
  set_cmd->add_option("kernel", ov->kernel, "kernel name")->required();
  set_cmd->add_option("--config", ov->config, "block sizes, e.g. block_m=96,block_n=512 (unset names: default)")->required();
  set_cmd->add_option("--reason", ov->reason, "why (shown with every answer it serves)")->required();
  set_cmd->add_option("--bucket", ov->bucket, "canonical bucket id, e.g. m1024_n1024_k1024");
  set_cmd->add_option("--shape", ov->shape, "or a problem whose bucket to pin");
  set_cmd->add_option("--hardware", ov->hardware, "hardware key or prefix; * for every machine")->capture_default_str();
  set_cmd->add_option("--dtype", ov->dtype, "element type")->capture_default_str();
  set_cmd->add_option("--expires-at", ov->expires_at, "UTC YYYY-MM-DDTHH:MM:SSZ (default: never)");
  set_cmd->add_option("--ttl-hours", ov->ttl_hours, "or expire this many hours from now");
  auto* olist_cmd = override_cmd->add_subcommand("list", "all pins");
  AddCommon(olist_cmd, common, true);
  auto* odel_cmd = override_cmd->add_subcommand("delete", "remove a pin");
  AddCommon(odel_cmd, common, true);
  odel_cmd->add_option("id", ov->id, "override id")->required();

  auto download = std::make_shared<std::array<std::string, 2>>();
  auto* download_cmd = tables_cmd->add_subcommand("download", "the generated C++ header for a kernel, from blocktuned's rows");
  AddCommon(download_cmd, common, true);
  download_cmd->add_option("kernel", (*download)[0], "kernel name")->required();
  download_cmd->add_option("--out", (*download)[1], "file to write (default: stdout)");

  auto backup = std::make_shared<std::array<std::string, 2>>();
  auto* backup_cmd = app.add_subcommand(
      "backup", "online backup: on the server (into its backup directory), or of a local database with --db/--out");
  AddCommon(backup_cmd, common, true);
  backup_cmd->add_option("--db", (*backup)[0], "back up this local database instead (safe while a daemon writes it)");
  backup_cmd->add_option("--out", (*backup)[1], "destination file for --db (must not exist)");

  auto* health_cmd = app.add_subcommand("health", "is blocktuned alive and ready");
  AddCommon(health_cmd, common, true);
  auto* metrics_cmd = app.add_subcommand("metrics", "blocktuned's Prometheus metrics");
  AddCommon(metrics_cmd, common, true);

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
    if (lookup_cmd->parsed()) return RunLookup(common, *lookup);
    if (kernels_cmd->parsed()) {
      if (*reload) {
        if (!kernel_name->empty()) return Fail(kExitUsage, "kernels --reload takes no kernel name");
        return Show(common, To(Op::kReloadKernels));
      }
      return Show(common, kernel_name->empty() ? To(Op::kListKernels) : To(Op::kGetKernel, {*kernel_name}));
    }
    if (hardware_cmd->parsed()) {
      return Show(common, *host_only ? To(Op::kGetHostHardware, {}, {{"threads", std::to_string(*host_threads)}})
                                   : To(Op::kListHardware));
    }
    if (tuned_cmd->parsed()) return RunTuned(common, (*tuned)[0], (*tuned)[1], (*tuned)[2]);
    if (misses_cmd->parsed()) return RunMisses(common, *misses);
    if (set_cmd->parsed()) return RunOverrideSet(common, *ov);
    if (olist_cmd->parsed()) return RunOverrideList(common);
    if (odel_cmd->parsed()) {
      auto got = Call(common, To(Op::kDeleteOverride, {std::to_string(ov->id)}));
      if (!got) return got.error();
      if (common.json) {
        std::printf("%s\n", got->text.c_str());
      } else {
        std::printf("override %lld deleted\n", static_cast<long long>(ov->id));
      }
      return 0;
    }
    if (download_cmd->parsed()) return RunTablesDownload(common, (*download)[0], (*download)[1]);
    if (backup_cmd->parsed()) return RunBackup(common, (*backup)[0], (*backup)[1]);
    if (health_cmd->parsed()) return RunHealth(common);
    if (metrics_cmd->parsed()) {
      CallOptions o;
      o.raw = true;
      auto got = Call(common, To(Op::kGetMetrics), o);
      if (!got) return got.error();
      std::fwrite(got->text.data(), 1, got->text.size(), stdout);
      return 0;
    }
    return -1;
  };
}

}  // namespace blocktune::client
