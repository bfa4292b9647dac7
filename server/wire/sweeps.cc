// Wire format of sweeps and their measurements: the create request, a sweep with progress,
// pages of sweeps and measurements, and their component schemas. A request field is one
// change here: its schema (which is also the decoder's list of known fields and the Sweep
// schema's prefix), one decode line and one encode line.
#include <algorithm>
#include <array>
#include <cmath>

#include "blocktune/tables/resolve.h"
#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

using internal::GetInt;
using internal::GetString;

namespace {

// The levels a request may name (the CLI's "portable" alias is sent as "base").
constexpr std::string_view kIsaLevels[] = {"avx512", "avx2", "base"};

Json SweepRequestSchema() {
  using namespace schema;
  return Object({{"kernel", Str("kernel name (GET /v1/kernels)")},
                 {"dtype", Ref("DType"), false},
                 {"shapes", Array(Map(Int()),
                                  "problem dims, one object per shape, e.g. {\"m\": 1024, \"n\": 1024, \"k\": 512}; "
                                  "each maps to a bucket")},
                 {"threads", Int("threads the kernel runs with, 1 to 256 (default 1)"), false},
                 {"strategy", Ref("Strategy"), false},
                 {"budget", Int("evaluations per bucket, 0 to 100000; 0 = the strategy's default"), false},
                 {"budget_seconds", Num("wall-clock limit per bucket for the search in seconds; 0 = none"), false},
                 {"seed", Int("random seed (default 1)"), false},
                 {"isa",
                  Enum(kIsaLevels,
                       "ISA level the kernels run at, at most the CPU's own (default: the daemon's level); "
                       "the results are filed under that level's hardware key"),
                  false}},
                "a sweep to run");
}

}  // namespace

namespace internal {

void AddSweepSchemas(Json& s) {
  using namespace schema;
  s["Strategy"] = Enum(tuner::kStrategyNames,
                       "search strategy (docs/tuning.md, docs/search.md); default exhaustive for built-in kernels, "
                       "auto for external ones");
  Json statuses = Json::array();
  // SweepStatus runs from kQueued to kCancelled; the store spells the names.
  for (int i = 0; i <= static_cast<int>(store::SweepStatus::kCancelled); ++i) {
    statuses.push_back(store::SweepStatusName(static_cast<store::SweepStatus>(i)));
  }
  s["SweepStatus"] = Str("state of a sweep");
  s["SweepStatus"]["enum"] = statuses;
  s["Outcome"] = Enum(tuner::kOutcomeNames, "what happened to one config (docs/tuning.md)");
  s["SweepRequest"] = SweepRequestSchema();
  // A stored request has every field filled in.
  Json stored = SweepRequestSchema();
  Json required = Json::array();
  for (auto it = stored["properties"].begin(); it != stored["properties"].end(); ++it) required.push_back(it.key());
  stored["required"] = required;
  // A sweep filed under a device key (gpu.nvidia.sm90.h200) names no ISA level.
  stored["properties"]["isa"]["enum"].push_back("");
  stored["properties"]["isa"]["description"] =
      "the ISA level the kernels ran at (the one its hardware key names); empty for a sweep filed under a device "
      "key, which names none";
  s["CreatedSweep"] = Object({{"id", Int()},
                              {"status", Ref("SweepStatus")},
                              {"created", Bool("false for a replay of an earlier Idempotency-Key")}});
  s["Progress"] = Object({{"done", Int("measurements committed")},
                          {"total", Int("measurements planned")},
                          {"tasks_done", Int("buckets finished"), false},
                          {"tasks_total", Int("buckets"), false},
                          {"by_outcome", Map(Int(), "measurements by outcome name"), false}});
  s["Environment"] = Object({{"load_average", Str("1, 5 and 15 minute load averages when the sweep started")},
                             {"affinity", Str("CPUs the measuring process may run on, e.g. 0-1")},
                             {"governor", Str("cpufreq governor; empty where not readable")},
                             {"compiler", Str()},
                             {"build_flags", Str()},
                             {"tool_version", Str()}},
                            "where the sweep was measured; empty strings until it starts");
  std::vector<Field> breakdown = {
      {"wall_s", Num("the engine's wall clock over the sweep's tasks and runs (a resumed sweep adds each run)")}};
  for (const tuner::EvalPhase& p : tuner::kEvalPhases) {
    breakdown.push_back({p.name, Num(p.doc)});
    if (p.seconds == &tuner::EvalCosts::timed_s)
      breakdown.push_back({"efficiency", Num("timed_s / wall_s: the share of wall time that was measurement")});
  }
  for (Field f : std::initializer_list<Field>{
           {"store_s", Num("the database: reading what is stored, committing measurements and decision rounds")},
           {"search_s", Num("planning and the search strategy (ask, tell, prior)")},
           {"other_s", Num("wall time none of the phases above covers")},
           {"decision_round_s", Num("wall time of the decision rounds (a view: their repetitions are in timed_s)")},
           {"measured", Int("configs measured (not replayed from an earlier run)")},
           {"worker_spawns", Int("worker processes started")},
           {"timing_retries", Int("extra repetitions timed because of the spread")}}) {
    breakdown.push_back(std::move(f));
  }
  s["Breakdown"] =
      Object(breakdown, "where the sweep's wall time went, by disjoint phase (docs/tuning.md, Sweep efficiency)");
  s["DeviceIdentity"] = Object({{"kind", Str("gpu, tpu or cpu")},
                                {"vendor", Str()},
                                {"model", Str("as the runner's framework reports it")},
                                {"arch", Str("sm90, gfx90a, v5e, ...")},
                                {"memory_bytes", Int("0 if unknown")},
                                {"driver", Str()},
                                {"runtime", Str("the framework's and its runtime's versions")},
                                {"platform", Str("the framework: jax, torch, cupy, ...")}},
                               "the device an external kernel's runner announced, kept as the sweep's provenance "
                               "(docs/accelerators.md); null when it announced none");
  s["Sweep"] = Extend(stored,
                      {{"id", Int()},
                       {"status", Ref("SweepStatus")},
                       {"progress", Ref("Progress")},
                       {"eta_seconds", Nullable(Num("seconds left; null when unknown")), false},
                       {"hardware", Str("hardware key the sweep measures on: the host CPU's, or the device "
                                        "its external kernel's runner announced (docs/accelerators.md)")},
                       {"device", Nullable(Ref("DeviceIdentity")), false},
                       {"error", Str("why it failed; empty otherwise")},
                       {"created_at", Str()},
                       {"started_at", Str("empty until started")},
                       {"finished_at", Str("empty until finished")},
                       {"environment", Ref("Environment")},
                       {"breakdown", Ref("Breakdown"), false},
                       {"stalled",
                        Object({{"reason", Str("what stops it: storage (the database cannot be written: disk full, "
                                               "I/O error, read-only)")},
                                {"error", Str("the store's error, e.g. 'step failed: database or disk is full'")},
                                {"since", Str("UTC, when writes began to fail")}}),
                        false},
                       {"executor",
                        Object({{"id", Str("the executor's random id (128 bits, hex)")},
                                {"kind", Enum(std::array{"daemon", "local", "import"},
                                              "a blocktuned, a `blocktune sweep --local` / `adapt --local`, or an "
                                              "import")},
                                {"host", Str()},
                                {"pid", Int()},
                                {"since", Str("UTC, when that process first claimed work on this database")}}),
                        false},
                       {"prior_profiles",
                        Array(Object({{"hardware", Str("the other profile's hardware key")},
                                      {"correlation", Num("Spearman rank correlation with this profile's landscapes "
                                                          "over the configs both measured")},
                                      {"shared_configs", Int("(bucket, config) pairs both measured")},
                                      {"log_weight", Num("what that made its weight in the transfer prior")}}),
                              "other hardware profiles a transfer search drew its prior from (GET of one sweep only)"),
                        false}},
                      "a sweep; breakdown is present once a task of it has run here; progress has tasks and "
                      "by_outcome, and eta_seconds is present, on GET /v1/sweeps/{id}; stalled while the daemon "
                      "cannot write the database (the sweep resumes by itself once it can); executor names the "
                      "process that runs an unfinished sweep (docs/scale.md, One database, many processes)");
  s["SweepList"] = Object({{"sweeps", Array(Ref("Sweep"))},
                           {"next_after_id", Nullable(Int("pass as after_id for the next page; null on the last"))}});
  s["Measurement"] = Object({{"id", Int()},
                             {"bucket", Str()},
                             {"problem", Map(Int(), "the dims that were timed (the bucket's representative)")},
                             {"config", Ref("Config")},
                             {"outcome", Ref("Outcome")},
                             {"detail", Str("reason for a bad outcome, or the verification summary")},
                             {"median_ns", Num()},
                             {"cv", Num("stddev / mean of samples_ns")},
                             {"iterations", Int("iterations per repetition")},
                             {"samples_ns", Array(Num(), "per-iteration time of each repetition")},
                             {"max_abs_err", Num()},
                             {"max_rel_err", Num("worst error as a fraction of the tolerance (<= 1 passes)")},
                             {"fingerprint", Nullable(Str("the kernel's fingerprint in the build that measured it; "
                                                          "null: unknown (measured before fingerprints)"))},
                             {"created_at", Str()}});
  s["MeasurementPage"] =
      Object({{"measurements", Array(Ref("Measurement"))},
              {"next_after_id", Nullable(Int("pass as after_id for the next page; null on the last"))}});
}

}  // namespace internal

namespace {

// The request and, in `spec`, its kernel: the one FindKernel of a submission.
Result<tuner::SweepRequest> DecodeRequest(const Json& j, const Limits& limits, const KernelSpec*& spec) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  static const Json kSchema = SweepRequestSchema();
  if (auto known = schema::CheckKnownFields(j, kSchema); !known) return std::unexpected(known.error());
  tuner::SweepRequest r;
  auto kernel = GetString(j, "kernel", "kernel", std::nullopt);
  if (!kernel) return std::unexpected(kernel.error());
  spec = FindKernel(*kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + server::guards::Clip(*kernel) + "'", "kernel");
  r.kernel = *kernel;
  auto dtype = GetString(j, "dtype", "dtype", std::string("f32"));
  if (!dtype) return std::unexpected(dtype.error());
  auto d = ParseDType(*dtype);
  if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", "dtype");
  r.dtype = *d;
  auto shapes = j.find("shapes");
  if (shapes == j.end() || !shapes->is_array() || shapes->empty()) {
    return InvalidArgument("'shapes' must be a non-empty array of objects", "shapes");
  }
  if (shapes->size() > limits.max_shapes) {
    return InvalidArgument("at most " + std::to_string(limits.max_shapes) + " shapes per sweep", "shapes");
  }
  for (size_t i = 0; i < shapes->size(); ++i) {
    const std::string path = "shapes[" + std::to_string(i) + "]";
    const Json& s = (*shapes)[i];
    if (!s.is_object()) return InvalidArgument("each shape must be an object of dims", path);
    NamedInts dims;
    for (const auto& d : spec->dims()) {
      auto v = GetInt(s, d.bucket.name, path + "." + d.bucket.name, std::nullopt);
      if (!v) return std::unexpected(v.error());
      dims.Set(d.bucket.name, *v);
    }
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!dims.Get(it.key())) {
        return InvalidArgument("unknown dimension '" + server::guards::Clip(it.key()) + "'",
                               path + "." + server::guards::Clip(it.key()));
      }
    }
    r.shapes.push_back(std::move(dims));
  }
  auto threads = GetInt(j, "threads", "threads", 1);
  if (!threads) return std::unexpected(threads.error());
  if (*threads < 1 || *threads > 256) return InvalidArgument("threads must be in [1, 256]", "threads");
  r.threads = static_cast<int>(*threads);
  // Default: exhaustive for built-in kernels (about 180 configs a bucket), auto for external
  // ones, whose 5,000-20,000-config spaces an exhaustive sweep rarely affords (docs/search.md).
  const bool external = spec->runner() != nullptr || !spec->source_file().empty();
  auto strategy = GetString(j, "strategy", "strategy", std::string(external ? "auto" : "exhaustive"));
  if (!strategy) return std::unexpected(strategy.error());
  auto st = tuner::ParseStrategy(*strategy);
  if (!st)
    return InvalidArgument("strategy must be 'exhaustive', 'random', 'anneal', 'surrogate', 'transfer' or 'auto'",
                           "strategy");
  r.strategy = *st;
  auto budget = GetInt(j, "budget", "budget", 0);
  if (!budget) return std::unexpected(budget.error());
  if (*budget < 0 || *budget > 100000) return InvalidArgument("budget must be in [0, 100000]", "budget");
  r.budget = *budget;
  if (auto bs = j.find("budget_seconds"); bs != j.end()) {
    if (!bs->is_number() || !(bs->get<double>() >= 0) || bs->get<double>() > 1e7) {
      return InvalidArgument("budget_seconds must be a number in [0, 1e7]", "budget_seconds");
    }
    r.budget_seconds = bs->get<double>();
  }
  auto seed = GetInt(j, "seed", "seed", 1);
  if (!seed) return std::unexpected(seed.error());
  if (*seed < 0) return InvalidArgument("seed must be >= 0", "seed");
  r.seed = static_cast<uint64_t>(*seed);
  auto isa = GetString(j, "isa", "isa", std::string());
  if (!isa) return std::unexpected(isa.error());
  if (!isa->empty()) {
    if (std::ranges::find(kIsaLevels, *isa) == std::end(kIsaLevels)) {
      return InvalidArgument("isa must be 'avx512', 'avx2' or 'base'", "isa");
    }
    r.isa = *isa;
  }
  return r;
}

}  // namespace

Result<tuner::SweepRequest> DecodeSweepRequest(const Json& j, const Limits& limits) {
  const KernelSpec* spec = nullptr;
  return DecodeRequest(j, limits, spec);
}

Result<SweepSubmission> DecodeSweepSubmission(const Json& j, const Limits& limits) {
  SweepSubmission s;
  auto r = DecodeRequest(j, limits, s.spec);
  if (!r) return std::unexpected(r.error());
  s.request = std::move(*r);
  s.canonical = Dump(EncodeSweepRequest(s.request));
  return s;
}

Json EncodeSweepRequest(const tuner::SweepRequest& r) {
  Json shapes = Json::array();
  for (const auto& s : r.shapes) {
    Json o = Json::object();
    for (const auto& [n, v] : s.values()) o[n] = v;
    shapes.push_back(o);
  }
  Json j{{"kernel", r.kernel},
         {"dtype", DTypeName(r.dtype)},
         {"shapes", shapes},
         {"threads", r.threads},
         {"strategy", tuner::StrategyName(r.strategy)},
         {"budget", r.budget},
         {"budget_seconds", r.budget_seconds},
         {"seed", r.seed}};
  if (!r.isa.empty()) j["isa"] = r.isa;
  return j;
}

Json EncodeBreakdown(const tuner::SweepBreakdown& b) {
  Json j{{"wall_s", b.wall_s}, {"efficiency", b.Efficiency()}};
  for (const tuner::EvalPhase& p : tuner::kEvalPhases) j[p.name] = b.eval.*p.seconds;
  j["store_s"] = b.store_s;
  j["search_s"] = b.search_s;
  j["other_s"] = b.OtherS();
  j["decision_round_s"] = b.decision_s;
  j["measured"] = b.measured;
  j["worker_spawns"] = b.eval.spawns;
  j["timing_retries"] = b.eval.retries;
  return j;
}

Json EncodeSweep(const store::SweepRecord& s, const store::SweepProgress* progress, double eta_seconds,
                 const SweepStall* stalled) {
  Json j = EncodeSweepRequest(s.request);
  j["id"] = s.id;
  j["status"] = store::SweepStatusName(s.status);
  j["progress"] = {{"done", s.progress_done}, {"total", s.progress_total}};
  if (progress != nullptr) {
    Json by = Json::object();
    for (const auto& [outcome, n] : progress->by_outcome) by[outcome] = n;
    j["progress"] = {{"done", progress->done},
                     {"total", progress->total},
                     {"tasks_done", progress->tasks_done},
                     {"tasks_total", progress->tasks_total},
                     {"by_outcome", by}};
    j["eta_seconds"] = eta_seconds >= 0 ? Json(eta_seconds) : Json(nullptr);
  }
  j["hardware"] = s.hardware_key;
  // The level the sweep runs at, requested or the daemon's own: the one its key names (a
  // device key names none).
  j["isa"] = tables::IsDeviceKey(s.hardware_key) ? std::string() : std::string(tables::KeyIsa(s.hardware_key));
  // The identity as the store keeps it (always an object it wrote); null for none.
  const Json device = s.device.empty() ? Json() : Json::parse(s.device, nullptr, false);
  j["device"] = device.is_object() ? device : Json(nullptr);
  j["error"] = s.error;
  j["created_at"] = s.created_at;
  j["started_at"] = s.started_at;
  j["finished_at"] = s.finished_at;
  const tuner::timing::SweepEnvironment& e = s.environment;
  j["environment"] = {{"load_average", e.load_average}, {"affinity", e.affinity},
                      {"governor", e.governor},         {"compiler", e.compiler},
                      {"build_flags", e.build_flags},   {"tool_version", e.tool_version}};
  if (s.breakdown) j["breakdown"] = EncodeBreakdown(*s.breakdown);
  if (stalled != nullptr) j["stalled"] = {{"reason", "storage"}, {"error", stalled->error}, {"since", stalled->since}};
  const bool unfinished = s.status == store::SweepStatus::kQueued || s.status == store::SweepStatus::kRunning;
  if (unfinished && s.executor) {
    j["executor"] = {{"id", s.executor->id},
                     {"kind", s.executor->kind},
                     {"host", s.executor->host},
                     {"pid", s.executor->pid},
                     {"since", s.executor->started_at}};
  }
  if (!s.prior_profiles.empty()) {
    Json profiles = Json::array();
    for (const auto& p : s.prior_profiles) {
      profiles.push_back({{"hardware", p.hardware_key},
                          {"correlation", p.correlation},
                          {"shared_configs", p.shared},
                          {"log_weight", p.log_weight}});
    }
    j["prior_profiles"] = profiles;
  }
  return j;
}

Json EncodeSweepList(const std::vector<store::SweepRecord>& sweeps, int64_t next_after_id) {
  Json list = Json::array();
  for (const auto& s : sweeps) list.push_back(EncodeSweep(s));
  return Json{{"sweeps", list}, {"next_after_id", next_after_id > 0 ? Json(next_after_id) : Json(nullptr)}};
}

Json EncodeCreatedSweep(int64_t id, bool created) {
  return Json{{"id", id}, {"status", "queued"}, {"created", created}};
}

Result<SweepStatusView> DecodeSweepStatus(const Json& j) {
  if (!j.is_object()) return InvalidArgument("sweep must be an object");
  SweepStatusView v;
  auto id = GetInt(j, "id", "id", std::nullopt);
  auto status = GetString(j, "status", "status", std::nullopt);
  if (!id) return std::unexpected(id.error());
  if (!status) return std::unexpected(status.error());
  v.id = *id;
  v.status = *status;
  v.kernel = GetString(j, "kernel", "kernel", std::string()).value_or("");
  if (auto b = j.find("breakdown"); b != j.end() && b->is_object()) {
    tuner::SweepBreakdown d;
    const auto num = [&](const char* key) {
      auto it = b->find(key);
      return it != b->end() && it->is_number() ? it->get<double>() : 0.0;
    };
    d.wall_s = num("wall_s");
    for (const tuner::EvalPhase& p : tuner::kEvalPhases) d.eval.*p.seconds = num(p.name);
    d.store_s = num("store_s");
    d.search_s = num("search_s");
    d.decision_s = num("decision_round_s");
    d.measured = static_cast<int64_t>(num("measured"));
    d.eval.spawns = static_cast<int64_t>(num("worker_spawns"));
    d.eval.retries = static_cast<int64_t>(num("timing_retries"));
    v.breakdown = d;
  }
  if (auto p = j.find("progress"); p != j.end() && p->is_object()) {
    v.done = GetInt(*p, "done", "progress.done", 0).value_or(0);
    v.total = GetInt(*p, "total", "progress.total", 0).value_or(0);
    if (auto by = p->find("by_outcome"); by != p->end() && by->is_object()) {
      for (auto it = by->begin(); it != by->end(); ++it) {
        if (it->is_number_integer()) v.by_outcome.emplace_back(it.key(), it->get<int64_t>());
      }
    }
  }
  if (auto e = j.find("eta_seconds"); e != j.end() && e->is_number()) v.eta_seconds = e->get<double>();
  if (auto sh = j.find("shapes"); sh != j.end() && sh->is_array()) v.buckets = static_cast<int64_t>(sh->size());
  v.error = GetString(j, "error", "error", std::string(), 1 << 16).value_or("");
  if (auto st = j.find("stalled"); st != j.end() && st->is_object()) {
    v.stalled = GetString(*st, "reason", "stalled.reason", std::string("stalled")).value_or("stalled") + ": " +
                GetString(*st, "error", "stalled.error", std::string(), 1 << 12).value_or("") + " (since " +
                GetString(*st, "since", "stalled.since", std::string()).value_or("") + ")";
  }
  v.created_at = GetString(j, "created_at", "created_at", std::string()).value_or("");
  return v;
}

Result<std::vector<SweepStatusView>> DecodeSweepList(const Json& j) {
  if (!j.is_object() || !j.contains("sweeps") || !j["sweeps"].is_array())
    return InvalidArgument("'sweeps' must be an array");
  std::vector<SweepStatusView> out;
  for (const auto& s : j["sweeps"]) {
    auto v = DecodeSweepStatus(s);
    if (!v) return std::unexpected(v.error());
    out.push_back(std::move(*v));
  }
  return out;
}

Json EncodeMeasurement(const tuner::Measurement& m) {
  return Json{{"id", m.id},
              {"bucket", m.bucket},
              {"problem", EncodeConfig(m.problem.dims)},
              {"config", EncodeConfig(m.config)},
              {"outcome", tuner::OutcomeName(m.outcome)},
              {"detail", m.detail},
              {"median_ns", m.median_ns},
              {"cv", m.cv},
              {"iterations", m.iterations},
              {"samples_ns", m.samples_ns},
              {"max_abs_err", m.max_abs_err},
              {"max_rel_err", m.max_rel_err},
              {"fingerprint", m.fingerprint.empty() ? Json(nullptr) : Json(m.fingerprint)},
              {"created_at", m.created_at}};
}

Json EncodeMeasurementPage(const std::vector<tuner::Measurement>& ms, int64_t next_after_id) {
  Json list = Json::array();
  for (const auto& m : ms) list.push_back(EncodeMeasurement(m));
  return Json{{"measurements", list}, {"next_after_id", next_after_id > 0 ? Json(next_after_id) : Json(nullptr)}};
}

Result<std::vector<tuner::Measurement>> DecodeMeasurementPage(const Json& j, int64_t* next_after_id) {
  if (!j.is_object() || !j.contains("measurements") || !j["measurements"].is_array()) {
    return InvalidArgument("'measurements' must be an array");
  }
  std::vector<tuner::Measurement> out;
  for (const auto& m : j["measurements"]) {
    if (!m.is_object()) return InvalidArgument("measurement must be an object");
    tuner::Measurement x;
    x.id = GetInt(m, "id", "id", 0).value_or(0);
    x.bucket = GetString(m, "bucket", "bucket", std::string()).value_or("");
    if (auto c = m.find("config"); c != m.end()) {
      auto cfg = internal::DecodeConfigObject(*c, "config");
      if (!cfg) return std::unexpected(cfg.error());
      x.config = std::move(*cfg);
    }
    auto outcome = tuner::ParseOutcome(GetString(m, "outcome", "outcome", std::string()).value_or(""));
    if (!outcome) return InvalidArgument("unknown outcome", "outcome");
    x.outcome = *outcome;
    x.detail = GetString(m, "detail", "detail", std::string(), 1 << 16).value_or("");
    if (auto v = m.find("median_ns"); v != m.end() && v->is_number()) x.median_ns = v->get<double>();
    if (auto v = m.find("cv"); v != m.end() && v->is_number()) x.cv = v->get<double>();
    x.created_at = GetString(m, "created_at", "created_at", std::string()).value_or("");
    // Absent from servers before fingerprints, null for measurements of unknown fingerprint.
    if (auto f = m.find("fingerprint"); f != m.end() && f->is_string()) x.fingerprint = f->get<std::string>();
    out.push_back(std::move(x));
  }
  if (next_after_id != nullptr) {
    auto n = j.find("next_after_id");
    *next_after_id = n != j.end() && n->is_number_integer() ? n->get<int64_t>() : 0;
  }
  return out;
}

}  // namespace blocktune::server::wire
