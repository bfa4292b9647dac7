// JSON encoding and decoding for the HTTP API; see codec.h.
#include "server/codec.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace blocktune::wire {
namespace {

Result<int64_t> GetInt(const Json& obj, const char* key, const std::string& path, std::optional<int64_t> fallback) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    return InvalidArgument(std::string("'") + key + "' is required", path);
  }
  if (!it->is_number_integer()) return InvalidArgument(std::string("'") + key + "' must be an integer", path);
  return it->get<int64_t>();
}

Result<std::string> GetString(const Json& obj, const char* key, const std::string& path,
                              std::optional<std::string> fallback, size_t max_len = 256) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (fallback) return *fallback;
    return InvalidArgument(std::string("'") + key + "' is required", path);
  }
  if (!it->is_string()) return InvalidArgument(std::string("'") + key + "' must be a string", path);
  auto s = it->get<std::string>();
  if (s.size() > max_len) return InvalidArgument(std::string("'") + key + "' is too long", path);
  return s;
}

}  // namespace

int HttpStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return 400;
    case ErrorCode::kNotFound: return 404;
    case ErrorCode::kAlreadyExists: return 409;
    case ErrorCode::kFailedPrecondition: return 412;
    case ErrorCode::kResourceExhausted: return 429;
    case ErrorCode::kUnavailable: return 503;
    case ErrorCode::kDeadlineExceeded: return 504;
    case ErrorCode::kDataLoss:
    case ErrorCode::kInternal: return 500;
  }
  return 500;
}

Json EncodeError(const Error& e) {
  return Json{{"error", {{"code", ErrorCodeName(e.code)}, {"message", e.message}, {"path", e.path}}}};
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Result<Json> ParseBody(std::string_view body, const Limits& limits) {
  const server::guards::Verdict v = server::guards::ScanJson(body, limits);
  if (!v.ok()) return InvalidArgument(v.message, v.path);
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("request body is not valid JSON", "body");
  return j;
}

Result<tuner::SweepRequest> DecodeSweepRequest(const Json& j, const Limits& limits) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  static constexpr std::string_view kKnown[] = {"kernel",   "dtype",  "shapes",         "threads",
                                                "strategy", "budget", "budget_seconds", "seed"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (auto k : kKnown) known |= it.key() == k;
    if (!known) return InvalidArgument("unknown field '" + server::guards::Clip(it.key()) + "'", server::guards::Clip(it.key()));
  }
  tuner::SweepRequest r;
  auto kernel = GetString(j, "kernel", "kernel", std::nullopt);
  if (!kernel) return std::unexpected(kernel.error());
  const KernelSpec* spec = FindKernel(*kernel);
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
  auto strategy = GetString(j, "strategy", "strategy", std::string("exhaustive"));
  if (!strategy) return std::unexpected(strategy.error());
  auto st = tuner::ParseStrategy(*strategy);
  if (!st) return InvalidArgument("strategy must be 'exhaustive', 'random', 'anneal', 'surrogate' or 'transfer'", "strategy");
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
  return r;
}

Json EncodeSweepRequest(const tuner::SweepRequest& r) {
  Json shapes = Json::array();
  for (const auto& s : r.shapes) {
    Json o = Json::object();
    for (const auto& [n, v] : s.values()) o[n] = v;
    shapes.push_back(o);
  }
  return Json{{"kernel", r.kernel},
              {"dtype", DTypeName(r.dtype)},
              {"shapes", shapes},
              {"threads", r.threads},
              {"strategy", tuner::StrategyName(r.strategy)},
              {"budget", r.budget},
              {"budget_seconds", r.budget_seconds},
              {"seed", r.seed}};
}

Json EncodeSweep(const store::SweepRecord& s, const store::SweepProgress* progress, double eta_seconds) {
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
  j["error"] = s.error;
  j["created_at"] = s.created_at;
  j["started_at"] = s.started_at;
  j["finished_at"] = s.finished_at;
  const tuner::SweepEnvironment& e = s.environment;
  j["environment"] = {{"load_average", e.load_average}, {"affinity", e.affinity}, {"governor", e.governor},
                      {"compiler", e.compiler},         {"build_flags", e.build_flags}, {"tool_version", e.tool_version}};
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
  v.created_at = GetString(j, "created_at", "created_at", std::string()).value_or("");
  return v;
}

Result<std::vector<SweepStatusView>> DecodeSweepList(const Json& j) {
  if (!j.is_object() || !j.contains("sweeps") || !j["sweeps"].is_array()) return InvalidArgument("'sweeps' must be an array");
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
              {"created_at", m.created_at}};
}

Json EncodeMeasurementPage(const std::vector<tuner::Measurement>& ms, int64_t next_after_id) {
  Json list = Json::array();
  for (const auto& m : ms) list.push_back(EncodeMeasurement(m));
  return Json{{"measurements", list}, {"next_after_id", next_after_id > 0 ? Json(next_after_id) : Json(nullptr)}};
}

namespace {
Result<Config> DecodeConfigObject(const Json& j, const std::string& path) {
  if (!j.is_object()) return InvalidArgument("'" + path + "' must be an object of integers", path);
  Config c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer()) {
      return InvalidArgument("config values must be integers", path + "." + server::guards::Clip(it.key()));
    }
    c.Set(it.key(), it->get<int64_t>());
  }
  return c;
}
}  // namespace

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
      auto cfg = DecodeConfigObject(*c, "config");
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
    out.push_back(std::move(x));
  }
  if (next_after_id != nullptr) {
    auto n = j.find("next_after_id");
    *next_after_id = n != j.end() && n->is_number_integer() ? n->get<int64_t>() : 0;
  }
  return out;
}

Json EncodeKernel(const KernelSpec& k) {
  Json params = Json::array();
  for (const auto& p : k.params()) params.push_back({{"name", p.name}, {"candidates", p.candidates}, {"doc", p.doc}});
  Json dims = Json::array();
  Json buckets = Json::array();
  for (const auto& d : k.dims()) {
    dims.push_back({{"name", d.bucket.name}, {"max", d.max_value}, {"doc", d.doc}});
    buckets.push_back({{"dim", d.bucket.name},
                       {"rounding", d.bucket.rounding == tables::Rounding::kPow2Ceil ? "pow2_ceil" : "exact"},
                       {"min", d.bucket.min},
                       {"max", d.bucket.max}});
  }
  Json dtypes = Json::array();
  for (DType d : k.dtypes()) dtypes.push_back(DTypeName(d));
  // Constraints are per parameter (its doc) plus the kernel's Validate, which a config is run
  // through before anything is launched; the space size says what exhaustive costs.
  return Json{{"name", k.name()},
              {"description", k.description()},
              {"params", params},
              {"dims", dims},
              {"dtypes", dtypes},
              {"bucket_version", k.bucket_version()},
              {"buckets", buckets},
              {"config_space_size", k.ConfigSpace().size()},
              {"default_config", EncodeConfig(k.DefaultConfig())}};
}

Json EncodeKernelList() {
  Json list = Json::array();
  for (const KernelSpec* k : AllKernels()) list.push_back(EncodeKernel(*k));
  return Json{{"kernels", list}};
}

Json EncodeHardware(const HardwareProfile& hw, int64_t id, const std::string& first_seen_at) {
  Json j{{"key", hw.Key()},        {"arch", hw.cpu.arch},   {"isa", hw.cpu.isa},
         {"vendor", hw.cpu.vendor}, {"family", hw.cpu.family}, {"model", hw.cpu.model},
         {"model_name", hw.model_name}, {"cores", hw.cores}, {"l1d_bytes", hw.l1d_bytes},
         {"l2_bytes", hw.l2_bytes}, {"l3_bytes", hw.l3_bytes}, {"threads", hw.threads}};
  if (id > 0) j["id"] = id;
  if (!first_seen_at.empty()) j["first_seen_at"] = first_seen_at;
  return j;
}

Json EncodeHardwareList(const std::vector<store::HardwareRecord>& rows, const HardwareProfile& host) {
  Json list = Json::array();
  for (const auto& r : rows) list.push_back(EncodeHardware(r.profile, r.id, r.first_seen_at));
  return Json{{"host", EncodeHardware(host, 0, "")}, {"profiles", list}};
}

Json EncodeTunedEntry(const tuner::TunedEntry& e) {
  return Json{{"kernel", e.kernel},       {"hardware", e.hardware_key},     {"dtype", DTypeName(e.dtype)},
              {"bucket", e.bucket},       {"bucket_version", e.bucket_version}, {"config", EncodeConfig(e.config)},
              {"median_ns", e.median_ns}, {"samples", e.samples},           {"sweep_id", e.sweep_id},
              {"measurement_id", e.measurement_id}, {"measured_at", e.measured_at}};
}

Json EncodeTunedList(const std::vector<tuner::TunedEntry>& rows) {
  Json list = Json::array();
  for (const auto& e : rows) list.push_back(EncodeTunedEntry(e));
  return Json{{"entries", list}};
}

Result<std::vector<tuner::TunedEntry>> DecodeTunedList(const Json& j) {
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array()) return InvalidArgument("'entries' must be an array");
  std::vector<tuner::TunedEntry> out;
  for (const auto& r : j["entries"]) {
    if (!r.is_object()) return InvalidArgument("entry must be an object");
    tuner::TunedEntry e;
    e.kernel = GetString(r, "kernel", "kernel", std::string()).value_or("");
    e.hardware_key = GetString(r, "hardware", "hardware", std::string()).value_or("");
    e.dtype = ParseDType(GetString(r, "dtype", "dtype", std::string("f32")).value_or("f32")).value_or(DType::kF32);
    e.bucket = GetString(r, "bucket", "bucket", std::string()).value_or("");
    if (auto c = r.find("config"); c != r.end()) {
      auto cfg = DecodeConfigObject(*c, "config");
      if (!cfg) return std::unexpected(cfg.error());
      e.config = std::move(*cfg);
    }
    if (auto v = r.find("median_ns"); v != r.end() && v->is_number()) e.median_ns = v->get<double>();
    e.samples = GetInt(r, "samples", "samples", 0).value_or(0);
    e.sweep_id = GetInt(r, "sweep_id", "sweep_id", 0).value_or(0);
    e.measured_at = GetString(r, "measured_at", "measured_at", std::string()).value_or("");
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::string> NormaliseTimestamp(std::string_view t, const std::string& path) {
  // YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DDTHH:MM:SS.fffZ (1 to 3 fraction digits)
  auto digits = [&](size_t at, size_t n) {
    if (at + n > t.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (t[i] < '0' || t[i] > '9') return false;
    }
    return true;
  };
  const bool head_ok = t.size() >= 20 && digits(0, 4) && t[4] == '-' && digits(5, 2) && t[7] == '-' && digits(8, 2) &&
                       t[10] == 'T' && digits(11, 2) && t[13] == ':' && digits(14, 2) && t[16] == ':' &&
                       digits(17, 2) && t.back() == 'Z';
  if (!head_ok) return InvalidArgument("timestamp must be UTC 'YYYY-MM-DDTHH:MM:SS[.fff]Z'", path);
  std::string frac = "000";
  if (t.size() > 20) {
    if (t[19] != '.' || t.size() > 24 || t.size() < 22 || !digits(20, t.size() - 21)) {
      return InvalidArgument("timestamp must be UTC 'YYYY-MM-DDTHH:MM:SS[.fff]Z'", path);
    }
    frac = std::string(t.substr(20, t.size() - 21));
    frac.resize(3, '0');
  }
  return std::string(t.substr(0, 19)) + "." + frac + "Z";
}

Result<store::OverrideRecord> DecodeOverride(const Json& j, const Limits& limits) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  static constexpr std::string_view kKnown[] = {"kernel", "hardware", "dtype", "bucket", "config", "reason", "expires_at"};
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (auto k : kKnown) known |= it.key() == k;
    if (!known) return InvalidArgument("unknown field '" + server::guards::Clip(it.key()) + "'", server::guards::Clip(it.key()));
  }
  store::OverrideRecord o;
  auto kernel = GetString(j, "kernel", "kernel", std::nullopt);
  if (!kernel) return std::unexpected(kernel.error());
  o.kernel = *kernel;
  auto hardware = GetString(j, "hardware", "hardware", std::nullopt);
  if (!hardware) return std::unexpected(hardware.error());
  if (hardware->empty()) return InvalidArgument("'hardware' must be a key, a prefix of one, or '*'", "hardware");
  o.hardware_key = *hardware;
  auto dtype = GetString(j, "dtype", "dtype", std::string("f32"));
  if (!dtype) return std::unexpected(dtype.error());
  auto d = ParseDType(*dtype);
  if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", "dtype");
  o.dtype = *d;
  auto bucket = GetString(j, "bucket", "bucket", std::nullopt);
  if (!bucket) return std::unexpected(bucket.error());
  o.bucket = *bucket;
  auto cfg = j.find("config");
  if (cfg == j.end()) return InvalidArgument("'config' is required", "config");
  auto c = DecodeConfigObject(*cfg, "config");
  if (!c) return std::unexpected(c.error());
  if (c->empty()) return InvalidArgument("'config' must name at least one parameter", "config");
  o.config = std::move(*c);
  auto reason = GetString(j, "reason", "reason", std::nullopt, limits.max_string_bytes);
  if (!reason) return std::unexpected(reason.error());
  if (reason->empty()) return InvalidArgument("'reason' must say why the config is pinned", "reason");
  o.reason = *reason;
  if (auto e = j.find("expires_at"); e != j.end() && !e->is_null()) {
    if (!e->is_string()) return InvalidArgument("'expires_at' must be a string or null", "expires_at");
    auto ts = NormaliseTimestamp(e->get<std::string>(), "expires_at");
    if (!ts) return std::unexpected(ts.error());
    o.expires_at = *ts;
  }
  return o;
}

Json EncodeOverrideRequest(const store::OverrideRecord& o) {
  return Json{{"kernel", o.kernel},   {"hardware", o.hardware_key},      {"dtype", DTypeName(o.dtype)},
              {"bucket", o.bucket},   {"config", EncodeConfig(o.config)}, {"reason", o.reason},
              {"expires_at", o.expires_at.empty() ? Json(nullptr) : Json(o.expires_at)}};
}

Json EncodeOverride(const store::OverrideRecord& o) {
  Json j = EncodeOverrideRequest(o);
  j["id"] = o.id;
  j["created_at"] = o.created_at;
  return j;
}

Json EncodeOverrideList(const std::vector<store::OverrideRecord>& rows) {
  Json list = Json::array();
  for (const auto& o : rows) list.push_back(EncodeOverride(o));
  return Json{{"overrides", list}};
}

Result<std::vector<store::OverrideRecord>> DecodeOverrideList(const Json& j) {
  if (!j.is_object() || !j.contains("overrides") || !j["overrides"].is_array()) return InvalidArgument("'overrides' must be an array");
  std::vector<store::OverrideRecord> out;
  Limits generous;
  generous.max_string_bytes = 1 << 16;
  for (const auto& r : j["overrides"]) {
    if (!r.is_object()) return InvalidArgument("override must be an object");
    Json body = r;
    const int64_t id = GetInt(r, "id", "id", 0).value_or(0);
    const std::string created = GetString(r, "created_at", "created_at", std::string()).value_or("");
    body.erase("id");
    body.erase("created_at");
    auto o = DecodeOverride(body, generous);
    if (!o) return std::unexpected(o.error());
    o->id = id;
    o->created_at = created;
    out.push_back(std::move(*o));
  }
  return out;
}

Json EncodeBackup(const std::string& path, int64_t bytes) { return Json{{"path", path}, {"bytes", bytes}}; }
Json EncodeStatus(std::string_view status) { return Json{{"status", status}}; }
Json EncodeReady(bool ready, std::string_view detail) {
  return Json{{"status", ready ? "ready" : "not_ready"}, {"detail", detail}};
}

Json EncodeConfig(const Config& c) {
  Json o = Json::object();
  for (const auto& [n, v] : c.values()) o[n] = v;
  return o;
}

Json EncodeLookup(const tuner::LookupAnswer& a) {
  Json j{{"kernel", a.kernel},
         {"config", EncodeConfig(a.config)},
         {"source", tables::SourceName(a.source)},
         {"hardware", a.hardware},
         {"bucket", a.bucket},
         {"matched_bucket", a.matched_bucket},
         {"median_ns", a.median_ns},
         {"samples", a.samples},
         {"sweep_id", a.sweep_id},
         {"measurement_id", a.measurement_id},
         {"measured_at", a.measured_at}};
  if (a.source == tables::Source::kOverride) {
    j["override"] = {{"id", a.override_id},
                     {"reason", a.reason},
                     {"expires_at", a.expires_at.empty() ? Json(nullptr) : Json(a.expires_at)}};
  }
  return j;
}

namespace {

// JSON string literal: quotes, backslashes and control characters escaped; bytes outside
// ASCII become U+FFFD (none of our keys, kernels, buckets or timestamps have any, and a
// hardware key from a query is echoed only after the same substitution Dump() makes).
void AppendString(std::string& out, std::string_view s) {
  out += '"';
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
    } else if (u >= 0x80) {
      out += "\\ufffd";
    } else {
      out += c;
    }
  }
  out += '"';
}

void AppendInt(std::string& out, int64_t v) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

// Shortest representation that round-trips, like nlohmann's dump; always with a '.' or an
// exponent so the value stays a JSON float ("0.0", not "0").
void AppendDouble(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string_view text(buf, static_cast<size_t>(end - buf));
  out += text;
  if (text.find_first_of(".eEn") == std::string_view::npos) out += ".0";
}

}  // namespace

std::string EncodeLookupText(const tuner::LookupAnswer& a) {
  std::string out;
  out.reserve(384);
  out += "{\"kernel\":";
  AppendString(out, a.kernel);
  out += ",\"config\":{";
  bool first = true;
  for (const auto& [name, value] : a.config.values()) {
    if (!first) out += ',';
    first = false;
    AppendString(out, name);
    out += ':';
    AppendInt(out, value);
  }
  out += "},\"source\":";
  AppendString(out, tables::SourceName(a.source));
  out += ",\"hardware\":";
  AppendString(out, a.hardware);
  out += ",\"bucket\":";
  AppendString(out, a.bucket);
  out += ",\"matched_bucket\":";
  AppendString(out, a.matched_bucket);
  out += ",\"median_ns\":";
  AppendDouble(out, a.median_ns);
  out += ",\"samples\":";
  AppendInt(out, a.samples);
  out += ",\"sweep_id\":";
  AppendInt(out, a.sweep_id);
  out += ",\"measurement_id\":";
  AppendInt(out, a.measurement_id);
  out += ",\"measured_at\":";
  AppendString(out, a.measured_at);
  if (a.source == tables::Source::kOverride) {
    out += ",\"override\":{\"id\":";
    AppendInt(out, a.override_id);
    out += ",\"reason\":";
    AppendString(out, a.reason);
    out += ",\"expires_at\":";
    if (a.expires_at.empty()) {
      out += "null";
    } else {
      AppendString(out, a.expires_at);
    }
    out += '}';
  }
  out += '}';
  return out;
}

Result<std::vector<LookupRequest>> DecodeBatchLookup(const Json& j, const Limits& limits) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "queries") return InvalidArgument("unknown field '" + server::guards::Clip(it.key()) + "'", server::guards::Clip(it.key()));
  }
  auto qs = j.find("queries");
  if (qs == j.end() || !qs->is_array() || qs->empty()) return InvalidArgument("'queries' must be a non-empty array", "queries");
  if (qs->size() > limits.max_batch_queries) {
    return InvalidArgument("at most " + std::to_string(limits.max_batch_queries) + " queries per batch", "queries");
  }
  std::vector<LookupRequest> out;
  for (size_t i = 0; i < qs->size(); ++i) {
    const std::string path = "queries[" + std::to_string(i) + "]";
    const Json& q = (*qs)[i];
    if (!q.is_object()) return InvalidArgument("each query must be an object", path);
    static constexpr std::string_view kKnown[] = {"kernel", "dtype", "dims", "threads", "hardware", "config"};
    for (auto it = q.begin(); it != q.end(); ++it) {
      bool known = false;
      for (auto k : kKnown) known |= it.key() == k;
      if (!known) return InvalidArgument("unknown field '" + server::guards::Clip(it.key()) + "'", path + "." + server::guards::Clip(it.key()));
    }
    LookupRequest r;
    auto kernel = GetString(q, "kernel", path + ".kernel", std::nullopt);
    if (!kernel) return std::unexpected(kernel.error());
    const KernelSpec* spec = FindKernel(*kernel);
    if (spec == nullptr) return InvalidArgument("unknown kernel '" + server::guards::Clip(*kernel) + "'", path + ".kernel");
    r.kernel = *kernel;
    auto dtype = GetString(q, "dtype", path + ".dtype", std::string("f32"));
    if (!dtype) return std::unexpected(dtype.error());
    auto d = ParseDType(*dtype);
    if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", path + ".dtype");
    r.query.dtype = *d;
    auto dims = q.find("dims");
    if (dims == q.end() || !dims->is_object()) return InvalidArgument("'dims' must be an object", path + ".dims");
    for (const auto& dim : spec->dims()) {
      auto v = GetInt(*dims, dim.bucket.name, path + ".dims." + dim.bucket.name, std::nullopt);
      if (!v) return std::unexpected(v.error());
      r.query.dims.Set(dim.bucket.name, *v);
    }
    for (auto it = dims->begin(); it != dims->end(); ++it) {
      if (!r.query.dims.Get(it.key())) {
        return InvalidArgument("unknown dimension '" + server::guards::Clip(it.key()) + "'", path + ".dims." + server::guards::Clip(it.key()));
      }
    }
    auto threads = GetInt(q, "threads", path + ".threads", 1);
    if (!threads) return std::unexpected(threads.error());
    if (*threads < 1 || *threads > 256) return InvalidArgument("threads must be in [1, 256]", path + ".threads");
    r.threads = static_cast<int>(*threads);
    auto hardware = GetString(q, "hardware", path + ".hardware", std::string());
    if (!hardware) return std::unexpected(hardware.error());
    for (char c : *hardware) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
        return InvalidArgument("hardware key may hold only letters, digits, '.', '_' and '-'", path + ".hardware");
      }
    }
    r.query.hardware_key = *hardware;
    if (auto c = q.find("config"); c != q.end() && !c->is_null()) {
      auto cfg = DecodeConfigObject(*c, path + ".config");
      if (!cfg) return std::unexpected(cfg.error());
      r.query.explicit_config = std::move(*cfg);
    }
    out.push_back(std::move(r));
  }
  return out;
}

Json EncodeBatchLookupRequest(const std::vector<LookupRequest>& queries) {
  Json list = Json::array();
  for (const auto& r : queries) {
    Json q{{"kernel", r.kernel}, {"dtype", DTypeName(r.query.dtype)}, {"dims", EncodeConfig(r.query.dims)}, {"threads", r.threads}};
    if (!r.query.hardware_key.empty()) q["hardware"] = r.query.hardware_key;
    if (r.query.explicit_config) q["config"] = EncodeConfig(*r.query.explicit_config);
    list.push_back(q);
  }
  return Json{{"queries", list}};
}

Json EncodeBatchLookup(const std::vector<Result<tuner::LookupAnswer>>& answers) {
  Json list = Json::array();
  for (const auto& a : answers) list.push_back(a ? EncodeLookup(*a) : EncodeError(a.error()));
  return Json{{"results", list}};
}

Result<tuner::LookupAnswer> DecodeLookup(const Json& j) {
  if (!j.is_object()) return InvalidArgument("lookup answer must be an object");
  tuner::LookupAnswer a;
  auto kernel = GetString(j, "kernel", "kernel", std::nullopt);
  auto source = GetString(j, "source", "source", std::nullopt);
  auto hardware = GetString(j, "hardware", "hardware", std::string());
  auto bucket = GetString(j, "bucket", "bucket", std::string());
  if (!kernel) return std::unexpected(kernel.error());
  if (!source) return std::unexpected(source.error());
  a.kernel = *kernel;
  a.hardware = hardware.value_or("");
  a.bucket = bucket.value_or("");
  bool known = false;
  for (auto s : {tables::Source::kExplicit, tables::Source::kOverride, tables::Source::kTuned,
                 tables::Source::kTunedFallback, tables::Source::kNearest, tables::Source::kDefault}) {
    if (tables::SourceName(s) == *source) {
      a.source = s;
      known = true;
    }
  }
  if (!known) return InvalidArgument("unknown source '" + *source + "'", "source");
  auto cfg = j.find("config");
  if (cfg == j.end() || !cfg->is_object()) return InvalidArgument("'config' must be an object", "config");
  for (auto it = cfg->begin(); it != cfg->end(); ++it) {
    if (!it->is_number_integer()) return InvalidArgument("config values must be integers", "config." + it.key());
    a.config.Set(it.key(), it->get<int64_t>());
  }
  if (auto m = j.find("median_ns"); m != j.end() && m->is_number()) a.median_ns = m->get<double>();
  a.samples = GetInt(j, "samples", "samples", 0).value_or(0);
  a.sweep_id = GetInt(j, "sweep_id", "sweep_id", 0).value_or(0);
  a.measurement_id = GetInt(j, "measurement_id", "measurement_id", 0).value_or(0);
  a.measured_at = GetString(j, "measured_at", "measured_at", std::string()).value_or("");
  a.matched_bucket = GetString(j, "matched_bucket", "matched_bucket", std::string()).value_or(a.bucket);
  if (auto o = j.find("override"); o != j.end() && o->is_object()) {
    a.override_id = GetInt(*o, "id", "override.id", 0).value_or(0);
    a.reason = GetString(*o, "reason", "override.reason", std::string(), 1 << 16).value_or("");
    a.expires_at = GetString(*o, "expires_at", "override.expires_at", std::string()).value_or("");
  }
  return a;
}

}  // namespace blocktune::wire
