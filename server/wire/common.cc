// The parts of the wire format every resource shares: errors and their HTTP statuses, body
// parsing, timestamps, configs, small status bodies, the field getters the decoders use, and
// the component schemas of those bodies (Error, Status, Ready, Backup, Config, DType, OpenApi).
#include <array>
#include <ranges>

#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

namespace internal {

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
                              std::optional<std::string> fallback, size_t max_len) {
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

void AddCommonSchemas(Json& s) {
  using namespace schema;
  // Every ErrorCode, plus the guards' "unauthenticated" (401), which is no ErrorCode because
  // only the HTTP layer produces it.
  Json codes = Json::array();
  for (int c = 0; c <= static_cast<int>(ErrorCode::kInternal); ++c)
    codes.push_back(ErrorCodeName(static_cast<ErrorCode>(c)));
  codes.push_back("unauthenticated");
  Json code = Str("canonical error code");
  code["enum"] = codes;
  s["Error"] = Object({{"error", Object({{"code", code},
                                         {"message", Str("what went wrong, for people")},
                                         {"path", Str("the field, parameter or header at fault; empty if none")}})}},
                      "every failure, from a handler or from the guards before routing");
  s["Status"] = Object({{"status", Str()}});
  s["Health"] = Object(
      {{"status", Enum(std::array{"ok", "degraded"}, "degraded: the process serves but cannot write its database")},
       {"storage_error", Str("the last refused write's error and since when"), false}});
  s["Ready"] = Object({{"status", Enum(std::array{"ready", "not_ready"})}, {"detail", Str("why not ready")}});
  s["Backup"] = Object({{"path", Str("the file written")}, {"bytes", Int()}});
  s["Config"] = Map(Int(), "block sizes by parameter name, e.g. {\"block_m\": 96}");
  s["DType"] = Enum(kDTypeNames | std::views::values, "element type");
  s["OpenApi"] = Object({{"openapi", Str()},
                         {"info", Map(Json::object())},
                         {"servers", Array(Map(Json::object()))},
                         {"tags", Array(Map(Json::object()))},
                         {"paths", Map(Json::object())},
                         {"components", Map(Json::object())}},
                        "an OpenAPI 3.1 document");
}

}  // namespace internal

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
  // nlohmann's lexer takes a NUL byte for the end of input, so "{...}\0anything" would parse;
  // JSON text has no raw NUL (RFC 8259: not whitespace, and escaped inside strings).
  if (body.find('\0') != std::string_view::npos)
    return InvalidArgument("request body is not valid JSON (NUL byte)", "body");
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgument("request body is not valid JSON", "body");
  return j;
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

Json EncodeBackup(const std::string& path, int64_t bytes) { return Json{{"path", path}, {"bytes", bytes}}; }
Json EncodeStatus(std::string_view status) { return Json{{"status", status}}; }
Json EncodeHealth(std::string_view storage_error) {
  if (storage_error.empty()) return Json{{"status", "ok"}};
  return Json{{"status", "degraded"}, {"storage_error", storage_error}};
}
Json EncodeReady(bool ready, std::string_view detail) {
  return Json{{"status", ready ? "ready" : "not_ready"}, {"detail", detail}};
}

Json EncodeConfig(const Config& c) {
  Json o = Json::object();
  for (const auto& [n, v] : c.values()) o[n] = v;
  return o;
}

Json ComponentSchemas() {
  Json s = Json::object();
  internal::AddCommonSchemas(s);
  internal::AddLookupSchemas(s);
  internal::AddKernelSchemas(s);
  internal::AddSweepSchemas(s);
  internal::AddTunedSchemas(s);
  internal::AddOverrideSchemas(s);
  internal::AddMissSchemas(s);
  internal::AddDashboardSchemas(s);
  internal::AddResultsSchemas(s);
  return s;
}

}  // namespace blocktune::server::wire
