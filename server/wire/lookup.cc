// Wire format of lookups: GET's query string and POST's batch of queries decoded here with the
// same checks, one answer (also written directly as text, the hot path), batch answers, and
// their component schemas.
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>

#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {
namespace {

Json LookupQuerySchema() {
  using namespace schema;
  return Object({{"kernel", Str("kernel name")},
                 {"dtype", Ref("DType"), false},
                 {"dims", Map(Int(), "one integer per dimension of the kernel, all required")},
                 {"threads", Int("1 to 256 (default 1)"), false},
                 {"hardware", Str("hardware key (default: this host's at `threads`)"), false},
                 {"config", Ref("Config"), false}},
                "one problem");
}

}  // namespace

namespace internal {

void AddLookupSchemas(Json& s) {
  using namespace schema;
  Json sources = Json::array();
  for (auto src : tables::kPrecedence) {
    sources.push_back(tables::SourceName(src));
  }
  s["Source"] = Str("where a lookup's answer came from, in precedence order");
  s["Source"]["enum"] = sources;
  s["OverrideRef"] = Object({{"id", Int()}, {"reason", Str()}, {"expires_at", Nullable(Str("UTC; null: never"))}},
                            "the override that answered");
  s["LookupAnswer"] = Object(
      {{"kernel", Str()},
       {"config", Ref("Config")},
       {"source", Ref("Source")},
       {"hardware", Str("key of the row that answered; the queried key for the default")},
       {"queried_hardware", Str("the key looked up (this host's at `threads` if the query gave none)")},
       {"fallback_levels", Int("levels fallen down the queried key's chain: 0 the key itself (and explicit), 1 the "
                               "same CPU model at another thread count, 2 another CPU model of the same vendor and "
                               "ISA level; the chain's length for default; for override, the components the "
                               "pin's key drops from the queried key")},
       {"bucket", Str("the query's bucket")},
       {"matched_bucket", Str("the row's bucket (differs only for nearest)")},
       {"median_ns", Num("0 for default, explicit and override")},
       {"samples", Int()},
       {"sweep_id", Int()},
       {"measurement_id", Int()},
       {"measured_at", Str()},
       {"fingerprint", Nullable(Str("the row's kernel fingerprint (the build that measured it); null: unknown "
                                    "(rows from before fingerprints) or no row answered"))},
       {"stale", Bool("true when the row's fingerprint is not this build's kernel fingerprint: "
                      "it was measured by another build of the kernel")},
       {"override", Ref("OverrideRef"), false}});
  s["LookupQuery"] = LookupQuerySchema();
  s["BatchLookupRequest"] = Object({{"queries", Array(Ref("LookupQuery"), "1 to 256 problems")}});
  s["BatchLookupResponse"] =
      Object({{"results", Array(Json{{"oneOf", Json::array({Ref("LookupAnswer"), Ref("Error")})}},
                                "an answer or an error per query, in query order")}});
}

}  // namespace internal

Json EncodeLookup(const tuner::LookupAnswer& a) {
  Json j{{"kernel", a.kernel},
         {"config", EncodeConfig(a.config)},
         {"source", tables::SourceName(a.source)},
         {"hardware", a.hardware},
         {"queried_hardware", a.queried_hardware},
         {"fallback_levels", a.fallback_levels},
         {"bucket", a.bucket},
         {"matched_bucket", a.matched_bucket},
         {"median_ns", a.median_ns},
         {"samples", a.samples},
         {"sweep_id", a.sweep_id},
         {"measurement_id", a.measurement_id},
         {"measured_at", a.measured_at},
         {"fingerprint", a.fingerprint.empty() ? Json(nullptr) : Json(a.fingerprint)},
         {"stale", a.stale}};
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
  out += ",\"queried_hardware\":";
  AppendString(out, a.queried_hardware);
  out += ",\"fallback_levels\":";
  AppendInt(out, a.fallback_levels);
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
  out += ",\"fingerprint\":";
  if (a.fingerprint.empty()) {
    out += "null";
  } else {
    AppendString(out, a.fingerprint);
  }
  out += a.stale ? ",\"stale\":true" : ",\"stale\":false";
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

namespace {

// The characters a hardware key may hold (both lookups check them with this message).
Status CheckHardwareKey(const std::string& key, const std::string& path) {
  for (char c : key) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return InvalidArgument("hardware key may hold only letters, digits, '.', '_' and '-'", path);
    }
  }
  return {};
}

}  // namespace

Result<std::string> QueryString(const QueryParams& params, const char* name, std::string fallback, size_t max_len) {
  const size_t count = params.count(name);
  if (count == 0) return fallback;
  if (count > 1) return InvalidArgument(std::string("query parameter '") + name + "' given more than once", name);
  std::string v = params.find(name)->second;
  if (v.size() > max_len) {
    return InvalidArgument(std::string("query parameter '") + name + "' is longer than " + std::to_string(max_len),
                           name);
  }
  return v;
}

Result<int64_t> QueryInt(const QueryParams& params, const char* name, std::optional<int64_t> fallback, int64_t lo,
                         int64_t hi) {
  const size_t count = params.count(name);
  if (count == 0) {
    if (fallback) return *fallback;
    return InvalidArgument(std::string("query parameter '") + name + "' is required", name);
  }
  if (count > 1) return InvalidArgument(std::string("query parameter '") + name + "' given more than once", name);
  const std::string& v = params.find(name)->second;
  int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
    return InvalidArgument(std::string("query parameter '") + name + "' must be an integer", name);
  }
  if (out < lo || out > hi) {
    return InvalidArgument(std::string("query parameter '") + name + "' must be in [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]",
                           name);
  }
  return out;
}

Result<LookupRequest> DecodeLookupQuery(const QueryParams& params) {
  LookupRequest r;
  auto kernel = QueryString(params, "kernel", "", 64);
  if (!kernel) return std::unexpected(kernel.error());
  if (kernel->empty()) return InvalidArgument("query parameter 'kernel' is required", "kernel");
  r.spec = FindKernel(*kernel);
  if (r.spec == nullptr) return InvalidArgument("unknown kernel '" + server::guards::Clip(*kernel) + "'", "kernel");
  r.kernel = *kernel;
  for (const auto& [name, value] : params) {
    bool known = name == "kernel" || name == "dtype" || name == "threads" || name == "hardware" || name == "config";
    for (const auto& dim : r.spec->dims()) known |= name == dim.bucket.name;
    if (!known) {
      return InvalidArgument("unknown query parameter '" + server::guards::Clip(name) + "'",
                             server::guards::Clip(name));
    }
  }
  auto dtype = QueryString(params, "dtype", "f32", 16);
  if (!dtype) return std::unexpected(dtype.error());
  auto d = ParseDType(*dtype);
  if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", "dtype");
  r.query.dtype = *d;
  for (const auto& dim : r.spec->dims()) {
    auto v = QueryInt(params, dim.bucket.name, std::nullopt, INT64_MIN, INT64_MAX);
    if (!v) return std::unexpected(v.error());
    r.query.dims.Set(dim.bucket.name, *v);
  }
  auto threads = QueryInt(params, "threads", 1, 1, 256);
  if (!threads) return std::unexpected(threads.error());
  r.threads = static_cast<int>(*threads);
  auto hardware = QueryString(params, "hardware", "", 200);
  if (!hardware) return std::unexpected(hardware.error());
  if (auto s = CheckHardwareKey(*hardware, "hardware"); !s) return std::unexpected(s.error());
  r.query.hardware_key = *hardware;
  if (params.count("config") > 0) {
    auto text = QueryString(params, "config", "", 512);
    if (!text) return std::unexpected(text.error());
    auto cfg = NamedInts::Parse(*text);
    if (!cfg) return std::unexpected(WithPathPrefix(cfg.error(), "config"));
    r.query.explicit_config = std::move(*cfg);
  }
  return r;
}

Result<std::vector<LookupRequest>> DecodeBatchLookup(const Json& j, const Limits& limits) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() != "queries")
      return InvalidArgument("unknown field '" + server::guards::Clip(it.key()) + "'", server::guards::Clip(it.key()));
  }
  auto qs = j.find("queries");
  if (qs == j.end() || !qs->is_array() || qs->empty())
    return InvalidArgument("'queries' must be a non-empty array", "queries");
  if (qs->size() > limits.max_batch_queries) {
    return InvalidArgument("at most " + std::to_string(limits.max_batch_queries) + " queries per batch", "queries");
  }
  std::vector<LookupRequest> out;
  for (size_t i = 0; i < qs->size(); ++i) {
    const std::string path = "queries[" + std::to_string(i) + "]";
    const Json& q = (*qs)[i];
    if (!q.is_object()) return InvalidArgument("each query must be an object", path);
    static const Json kSchema = LookupQuerySchema();
    if (auto known = schema::CheckKnownFields(q, kSchema, path + "."); !known) return std::unexpected(known.error());
    LookupRequest r;
    auto kernel = internal::GetString(q, "kernel", path + ".kernel", std::nullopt);
    if (!kernel) return std::unexpected(kernel.error());
    r.spec = FindKernel(*kernel);
    if (r.spec == nullptr)
      return InvalidArgument("unknown kernel '" + server::guards::Clip(*kernel) + "'", path + ".kernel");
    const KernelSpec* spec = r.spec;
    r.kernel = *kernel;
    auto dtype = internal::GetString(q, "dtype", path + ".dtype", std::string("f32"));
    if (!dtype) return std::unexpected(dtype.error());
    auto d = ParseDType(*dtype);
    if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", path + ".dtype");
    r.query.dtype = *d;
    auto dims = q.find("dims");
    if (dims == q.end() || !dims->is_object()) return InvalidArgument("'dims' must be an object", path + ".dims");
    for (const auto& dim : spec->dims()) {
      auto v = internal::GetInt(*dims, dim.bucket.name, path + ".dims." + dim.bucket.name, std::nullopt);
      if (!v) return std::unexpected(v.error());
      r.query.dims.Set(dim.bucket.name, *v);
    }
    for (auto it = dims->begin(); it != dims->end(); ++it) {
      if (!r.query.dims.Get(it.key())) {
        return InvalidArgument("unknown dimension '" + server::guards::Clip(it.key()) + "'",
                               path + ".dims." + server::guards::Clip(it.key()));
      }
    }
    auto threads = internal::GetInt(q, "threads", path + ".threads", 1);
    if (!threads) return std::unexpected(threads.error());
    if (*threads < 1 || *threads > 256) return InvalidArgument("threads must be in [1, 256]", path + ".threads");
    r.threads = static_cast<int>(*threads);
    auto hardware = internal::GetString(q, "hardware", path + ".hardware", std::string());
    if (!hardware) return std::unexpected(hardware.error());
    if (auto s = CheckHardwareKey(*hardware, path + ".hardware"); !s) return std::unexpected(s.error());
    r.query.hardware_key = *hardware;
    if (auto c = q.find("config"); c != q.end() && !c->is_null()) {
      auto cfg = internal::DecodeConfigObject(*c, path + ".config");
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
    Json q{{"kernel", r.kernel},
           {"dtype", DTypeName(r.query.dtype)},
           {"dims", EncodeConfig(r.query.dims)},
           {"threads", r.threads}};
    if (!r.query.hardware_key.empty()) q["hardware"] = r.query.hardware_key;
    if (r.query.explicit_config) q["config"] = EncodeConfig(*r.query.explicit_config);
    list.push_back(q);
  }
  return Json{{"queries", list}};
}

Error BatchQueryError(const LookupRequest& q, size_t i, Error e) {
  // The lookup names a dimension by itself ("n": GET's query parameter); a batch query holds
  // its dimensions under "dims". Other paths ("dtype", "config.block_m") are the query's own.
  const std::string_view head = std::string_view(e.path).substr(0, e.path.find_first_of(".["));
  bool dim = false;
  for (const auto& d : q.spec->dims()) dim |= !head.empty() && head == d.bucket.name;
  if (dim) e = WithPathPrefix(std::move(e), "dims");
  return WithPathPrefix(std::move(e), "queries[" + std::to_string(i) + "]");
}

Json EncodeBatchLookup(const std::vector<LookupRequest>& queries,
                       const std::vector<Result<tuner::LookupAnswer>>& answers) {
  Json list = Json::array();
  for (size_t i = 0; i < answers.size(); ++i) {
    const auto& a = answers[i];
    list.push_back(a ? EncodeLookup(*a) : EncodeError(BatchQueryError(queries[i], i, a.error())));
  }
  return Json{{"results", list}};
}

Result<tuner::LookupAnswer> DecodeLookup(const Json& j) {
  if (!j.is_object()) return InvalidArgument("lookup answer must be an object");
  tuner::LookupAnswer a;
  auto kernel = internal::GetString(j, "kernel", "kernel", std::nullopt);
  auto source = internal::GetString(j, "source", "source", std::nullopt);
  auto hardware = internal::GetString(j, "hardware", "hardware", std::string());
  auto bucket = internal::GetString(j, "bucket", "bucket", std::string());
  if (!kernel) return std::unexpected(kernel.error());
  if (!source) return std::unexpected(source.error());
  a.kernel = *kernel;
  a.hardware = hardware.value_or("");
  a.bucket = bucket.value_or("");
  bool known = false;
  for (auto s : tables::kPrecedence) {
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
  a.samples = internal::GetInt(j, "samples", "samples", 0).value_or(0);
  a.sweep_id = internal::GetInt(j, "sweep_id", "sweep_id", 0).value_or(0);
  a.measurement_id = internal::GetInt(j, "measurement_id", "measurement_id", 0).value_or(0);
  a.measured_at = internal::GetString(j, "measured_at", "measured_at", std::string()).value_or("");
  // Absent from servers before the fallback fields: the queried key unknown, levels 0.
  a.queried_hardware = internal::GetString(j, "queried_hardware", "queried_hardware", std::string()).value_or("");
  a.fallback_levels = static_cast<int>(internal::GetInt(j, "fallback_levels", "fallback_levels", 0).value_or(0));
  a.matched_bucket = internal::GetString(j, "matched_bucket", "matched_bucket", std::string()).value_or(a.bucket);
  // Absent from servers before fingerprints: unknown, not stale.
  if (auto f = j.find("fingerprint"); f != j.end() && f->is_string()) a.fingerprint = f->get<std::string>();
  if (auto st = j.find("stale"); st != j.end() && st->is_boolean()) a.stale = st->get<bool>();
  if (auto o = j.find("override"); o != j.end() && o->is_object()) {
    a.override_id = internal::GetInt(*o, "id", "override.id", 0).value_or(0);
    a.reason = internal::GetString(*o, "reason", "override.reason", std::string(), 1 << 16).value_or("");
    a.expires_at = internal::GetString(*o, "expires_at", "override.expires_at", std::string()).value_or("");
  }
  return a;
}

}  // namespace blocktune::server::wire
