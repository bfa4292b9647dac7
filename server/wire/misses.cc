// Wire format of lookup misses (GET /v1/misses) and their component schemas.
#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

namespace internal {

void AddMissSchemas(Json& s) {
  using namespace schema;
  s["LookupMiss"] = Object({{"kernel", Str()},
                            {"dtype", Ref("DType")},
                            {"hardware", Str("the hardware key the lookups asked for")},
                            {"bucket", Str()},
                            {"dims", Map(Int(), "the first problem counted in the bucket: a shape to sweep it with")},
                            {"fallback", Int("lookups answered tuned_fallback (a row of related hardware)")},
                            {"nearest", Int("lookups answered nearest (a row of another bucket)")},
                            {"default", Int("lookups answered with the kernel's default")},
                            {"count", Int("fallback + nearest + default")},
                            {"first_seen_at", Str("UTC, the first counted lookup")},
                            {"last_seen_at", Str("UTC, the latest counted lookup")},
                            {"current_source", Ref("Source")}},
                           "lookups of one bucket on one hardware key that no row tuned for exactly that key answered; "
                           "current_source is what such a lookup gets now (tuned once a sweep has covered the bucket)");
  s["MissList"] = Object({{"misses", Array(Ref("LookupMiss"), "most counted first")},
                          {"next_offset", Nullable(Int("pass as offset for the next page; null on the last"))}});
}

}  // namespace internal

Json EncodeMiss(const server::MissView& v) {
  const store::MissCount& c = v.miss.counts;
  return Json{{"kernel", c.kernel},
              {"dtype", DTypeName(c.dtype)},
              {"hardware", c.hardware_key},
              {"bucket", c.bucket},
              {"dims", EncodeConfig(c.dims)},
              {"fallback", c.fallback},
              {"nearest", c.nearest},
              {"default", c.defaulted},
              {"count", c.count()},
              {"first_seen_at", c.first_seen_at},
              {"last_seen_at", c.last_seen_at},
              {"current_source", tables::SourceName(v.current)}};
}

Json EncodeMissList(const std::vector<server::MissView>& misses, int64_t next_offset) {
  Json list = Json::array();
  for (const auto& m : misses) list.push_back(EncodeMiss(m));
  return Json{{"misses", list}, {"next_offset", next_offset > 0 ? Json(next_offset) : Json(nullptr)}};
}

Result<std::vector<server::MissView>> DecodeMissList(const Json& j, int64_t* next_offset) {
  using internal::GetInt;
  using internal::GetString;
  if (!j.is_object() || !j.contains("misses") || !j["misses"].is_array()) {
    return InvalidArgument("'misses' must be an array", "misses");
  }
  std::vector<server::MissView> out;
  for (size_t i = 0; i < j["misses"].size(); ++i) {
    const Json& r = j["misses"][i];
    const std::string path = "misses[" + std::to_string(i) + "]";
    if (!r.is_object()) return InvalidArgument("each miss must be an object", path);
    server::MissView v;
    store::MissCount& c = v.miss.counts;
    auto kernel = GetString(r, "kernel", path + ".kernel", std::nullopt);
    auto dtype = GetString(r, "dtype", path + ".dtype", std::nullopt);
    auto hardware = GetString(r, "hardware", path + ".hardware", std::nullopt);
    auto bucket = GetString(r, "bucket", path + ".bucket", std::nullopt);
    auto current = GetString(r, "current_source", path + ".current_source", std::nullopt);
    for (auto* f : {&kernel, &dtype, &hardware, &bucket, &current}) {
      if (!*f) return std::unexpected(f->error());
    }
    auto d = ParseDType(*dtype);
    if (!d) return InvalidArgument("unknown dtype '" + *dtype + "'", path + ".dtype");
    c.kernel = *kernel;
    c.dtype = *d;
    c.hardware_key = *hardware;
    c.bucket = *bucket;
    auto dims = r.find("dims");
    if (dims == r.end()) return InvalidArgument("'dims' is required", path + ".dims");
    auto parsed = internal::DecodeConfigObject(*dims, path + ".dims");
    if (!parsed) return std::unexpected(parsed.error());
    c.dims = std::move(*parsed);
    auto fallback = GetInt(r, "fallback", path + ".fallback", 0);
    auto nearest = GetInt(r, "nearest", path + ".nearest", 0);
    auto defaulted = GetInt(r, "default", path + ".default", 0);
    for (auto* f : {&fallback, &nearest, &defaulted}) {
      if (!*f) return std::unexpected(f->error());
    }
    c.fallback = *fallback;
    c.nearest = *nearest;
    c.defaulted = *defaulted;
    c.first_seen_at = GetString(r, "first_seen_at", path, std::string()).value_or("");
    c.last_seen_at = GetString(r, "last_seen_at", path, std::string()).value_or("");
    bool known = false;
    for (auto src : tables::kPrecedence) {
      if (tables::SourceName(src) == *current) {
        v.current = src;
        known = true;
      }
    }
    if (!known) return InvalidArgument("unknown source '" + *current + "'", path + ".current_source");
    out.push_back(std::move(v));
  }
  if (next_offset != nullptr) {
    const auto it = j.find("next_offset");
    *next_offset = it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
  }
  return out;
}

}  // namespace blocktune::server::wire
