// JSON encoding and decoding for the HTTP API; see codec.h.
#include "server/codec.h"

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

Result<Json> ParseBody(std::string_view body, const Limits& limits) {
  if (body.size() > limits.max_body_bytes) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "request body exceeds " + std::to_string(limits.max_body_bytes) + " bytes", "body");
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits.max_depth) {
        return InvalidArgument("JSON nesting deeper than " + std::to_string(limits.max_depth), "body");
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
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
    if (!known) return InvalidArgument("unknown field '" + it.key() + "'", it.key());
  }
  tuner::SweepRequest r;
  auto kernel = GetString(j, "kernel", "kernel", std::nullopt);
  if (!kernel) return std::unexpected(kernel.error());
  const KernelSpec* spec = FindKernel(*kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + *kernel + "'", "kernel");
  r.kernel = *kernel;
  auto dtype = GetString(j, "dtype", "dtype", std::string("f32"));
  if (!dtype) return std::unexpected(dtype.error());
  auto d = ParseDType(*dtype);
  if (!d) return InvalidArgument("unknown dtype '" + *dtype + "'", "dtype");
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
      if (!dims.Get(it.key())) return InvalidArgument("unknown dimension '" + it.key() + "'", path + "." + it.key());
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
  if (!st) return InvalidArgument("strategy must be 'exhaustive', 'random', 'anneal' or 'surrogate'", "strategy");
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

Json EncodeSweep(const store::SweepRecord& s) {
  Json j = EncodeSweepRequest(s.request);
  j["id"] = s.id;
  j["status"] = store::SweepStatusName(s.status);
  j["progress"] = {{"done", s.progress_done}, {"total", s.progress_total}};
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

Result<SweepStatusView> DecodeSweepStatus(const Json& j) {
  if (!j.is_object()) return InvalidArgument("sweep must be an object");
  SweepStatusView v;
  auto id = GetInt(j, "id", "id", std::nullopt);
  auto status = GetString(j, "status", "status", std::nullopt);
  if (!id) return std::unexpected(id.error());
  if (!status) return std::unexpected(status.error());
  v.id = *id;
  v.status = *status;
  if (auto p = j.find("progress"); p != j.end() && p->is_object()) {
    v.done = GetInt(*p, "done", "progress.done", 0).value_or(0);
    v.total = GetInt(*p, "total", "progress.total", 0).value_or(0);
  }
  v.error = GetString(j, "error", "error", std::string(), 1 << 16).value_or("");
  return v;
}

Json EncodeConfig(const Config& c) {
  Json o = Json::object();
  for (const auto& [n, v] : c.values()) o[n] = v;
  return o;
}

Json EncodeLookup(const tuner::LookupAnswer& a) {
  return Json{{"kernel", a.kernel},
              {"config", EncodeConfig(a.config)},
              {"source", tables::SourceName(a.source)},
              {"hardware", a.hardware},
              {"bucket", a.bucket},
              {"median_ns", a.median_ns},
              {"samples", a.samples},
              {"sweep_id", a.sweep_id},
              {"measurement_id", a.measurement_id},
              {"measured_at", a.measured_at}};
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
  return a;
}

}  // namespace blocktune::wire
