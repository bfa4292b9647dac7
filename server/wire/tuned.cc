// Wire format of tuned entries (the rows lookups serve) and their component schema.
#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

namespace internal {

void AddTunedSchemas(Json& s) {
  using namespace schema;
  s["TunedEntry"] = Object({{"kernel", Str()},
                            {"hardware", Str()},
                            {"dtype", Ref("DType")},
                            {"bucket", Str()},
                            {"bucket_version", Int()},
                            {"config", Ref("Config")},
                            {"median_ns", Num()},
                            {"samples", Int()},
                            {"sweep_id", Int()},
                            {"measurement_id", Int()},
                            {"measured_at", Str()},
                            {"fingerprint", Nullable(Str("the kernel's fingerprint in the build that measured the row; "
                                                         "null: unknown (measured before fingerprints)"))}});
  s["TunedList"] = Object({{"entries", Array(Ref("TunedEntry"))}});
}

}  // namespace internal

Json EncodeTunedEntry(const tuner::TunedEntry& e) {
  return Json{{"kernel", e.kernel},
              {"hardware", e.hardware_key},
              {"dtype", DTypeName(e.dtype)},
              {"bucket", e.bucket},
              {"bucket_version", e.bucket_version},
              {"config", EncodeConfig(e.config)},
              {"median_ns", e.median_ns},
              {"samples", e.samples},
              {"sweep_id", e.sweep_id},
              {"measurement_id", e.measurement_id},
              {"measured_at", e.measured_at},
              {"fingerprint", e.fingerprint.empty() ? Json(nullptr) : Json(e.fingerprint)}};
}

Json EncodeTunedList(const std::vector<tuner::TunedEntry>& rows) {
  Json list = Json::array();
  for (const auto& e : rows) list.push_back(EncodeTunedEntry(e));
  return Json{{"entries", list}};
}

Result<std::vector<tuner::TunedEntry>> DecodeTunedList(const Json& j) {
  if (!j.is_object() || !j.contains("entries") || !j["entries"].is_array())
    return InvalidArgument("'entries' must be an array");
  std::vector<tuner::TunedEntry> out;
  for (const auto& r : j["entries"]) {
    if (!r.is_object()) return InvalidArgument("entry must be an object");
    tuner::TunedEntry e;
    e.kernel = internal::GetString(r, "kernel", "kernel", std::string()).value_or("");
    e.hardware_key = internal::GetString(r, "hardware", "hardware", std::string()).value_or("");
    e.dtype =
        ParseDType(internal::GetString(r, "dtype", "dtype", std::string("f32")).value_or("f32")).value_or(DType::kF32);
    e.bucket = internal::GetString(r, "bucket", "bucket", std::string()).value_or("");
    if (auto c = r.find("config"); c != r.end()) {
      auto cfg = internal::DecodeConfigObject(*c, "config");
      if (!cfg) return std::unexpected(cfg.error());
      e.config = std::move(*cfg);
    }
    if (auto v = r.find("median_ns"); v != r.end() && v->is_number()) e.median_ns = v->get<double>();
    e.samples = internal::GetInt(r, "samples", "samples", 0).value_or(0);
    e.sweep_id = internal::GetInt(r, "sweep_id", "sweep_id", 0).value_or(0);
    e.measured_at = internal::GetString(r, "measured_at", "measured_at", std::string()).value_or("");
    if (auto f = r.find("fingerprint"); f != r.end() && f->is_string()) e.fingerprint = f->get<std::string>();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace blocktune::server::wire
