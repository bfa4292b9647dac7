// Wire format of overrides (pinned configs) and their component schemas.
#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {
namespace {

Json OverrideRequestSchema() {
  using namespace schema;
  return Object({{"kernel", Str()},
                 {"hardware", Str("a hardware key, a prefix of one, or '*' for any")},
                 {"dtype", Ref("DType"), false},
                 {"bucket", Str("canonical bucket id, e.g. m1024_n1024_k512")},
                 {"config", Ref("Config")},
                 {"reason", Str("why the config is pinned; not empty")},
                 {"expires_at", Nullable(Str("UTC 'YYYY-MM-DDTHH:MM:SS[.fff]Z'; null or absent: never")), false}},
                "a config to pin");
}

}  // namespace

namespace internal {

void AddOverrideSchemas(Json& s) {
  using namespace schema;
  Json stored = OverrideRequestSchema();
  stored["required"] = Json::array({"kernel", "hardware", "dtype", "bucket", "config", "reason", "expires_at"});
  s["OverrideRequest"] = OverrideRequestSchema();
  s["Override"] = Extend(stored, {{"id", Int()}, {"created_at", Str()}}, "a pinned config");
  s["OverrideList"] = Object({{"overrides", Array(Ref("Override"))}});
}

}  // namespace internal

Result<store::OverrideRecord> DecodeOverride(const Json& j, const Limits& limits) {
  if (!j.is_object()) return InvalidArgument("request body must be a JSON object", "body");
  static const Json kSchema = OverrideRequestSchema();
  if (auto known = schema::CheckKnownFields(j, kSchema); !known) return std::unexpected(known.error());
  store::OverrideRecord o;
  auto kernel = internal::GetString(j, "kernel", "kernel", std::nullopt);
  if (!kernel) return std::unexpected(kernel.error());
  o.kernel = *kernel;
  auto hardware = internal::GetString(j, "hardware", "hardware", std::nullopt);
  if (!hardware) return std::unexpected(hardware.error());
  if (hardware->empty()) return InvalidArgument("'hardware' must be a key, a prefix of one, or '*'", "hardware");
  o.hardware_key = *hardware;
  auto dtype = internal::GetString(j, "dtype", "dtype", std::string("f32"));
  if (!dtype) return std::unexpected(dtype.error());
  auto d = ParseDType(*dtype);
  if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(*dtype) + "'", "dtype");
  o.dtype = *d;
  auto bucket = internal::GetString(j, "bucket", "bucket", std::nullopt);
  if (!bucket) return std::unexpected(bucket.error());
  o.bucket = *bucket;
  auto cfg = j.find("config");
  if (cfg == j.end()) return InvalidArgument("'config' is required", "config");
  auto c = internal::DecodeConfigObject(*cfg, "config");
  if (!c) return std::unexpected(c.error());
  if (c->empty()) return InvalidArgument("'config' must name at least one parameter", "config");
  o.config = std::move(*c);
  auto reason = internal::GetString(j, "reason", "reason", std::nullopt, limits.max_string_bytes);
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
  return Json{{"kernel", o.kernel},
              {"hardware", o.hardware_key},
              {"dtype", DTypeName(o.dtype)},
              {"bucket", o.bucket},
              {"config", EncodeConfig(o.config)},
              {"reason", o.reason},
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
  if (!j.is_object() || !j.contains("overrides") || !j["overrides"].is_array())
    return InvalidArgument("'overrides' must be an array");
  std::vector<store::OverrideRecord> out;
  Limits generous;
  generous.max_string_bytes = 1 << 16;
  for (const auto& r : j["overrides"]) {
    if (!r.is_object()) return InvalidArgument("override must be an object");
    Json body = r;
    const int64_t id = internal::GetInt(r, "id", "id", 0).value_or(0);
    const std::string created = internal::GetString(r, "created_at", "created_at", std::string()).value_or("");
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

}  // namespace blocktune::server::wire
