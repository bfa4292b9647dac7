// The wire format of blocktune's HTTP API: the only place that spells JSON keys. Decoders
// never throw (nlohmann is used with allow_exceptions=false and type checks before every get)
// and name the offending field in Error::path, e.g. "shapes[1].k".
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "kernels/core/result.h"
#include "schema/store.h"
#include "tuner/lookup.h"
#include "tuner/measurement.h"

namespace blocktune::wire {

using Json = nlohmann::ordered_json;  // keys keep insertion order: config keys in parameter order

struct Limits {
  size_t max_body_bytes = 1 << 20;
  int max_depth = 16;
  size_t max_shapes = 256;
};

// ErrorCode -> HTTP status, in exactly one place.
int HttpStatus(ErrorCode code);

// {"error": {"code": "...", "message": "...", "path": "..."}}
Json EncodeError(const Error& e);

// Parses a request body: size and nesting depth are checked before nlohmann sees the text
// (deeply nested input can exhaust its recursive parser).
Result<Json> ParseBody(std::string_view body, const Limits& limits);

Result<tuner::SweepRequest> DecodeSweepRequest(const Json& j, const Limits& limits);
Json EncodeSweepRequest(const tuner::SweepRequest& r);

Json EncodeSweep(const store::SweepRecord& s);
struct SweepStatusView {
  int64_t id = 0;
  std::string status;
  int64_t done = 0;
  int64_t total = 0;
  std::string error;
};
Result<SweepStatusView> DecodeSweepStatus(const Json& j);

Json EncodeLookup(const tuner::LookupAnswer& a);
Result<tuner::LookupAnswer> DecodeLookup(const Json& j);

Json EncodeConfig(const Config& c);

}  // namespace blocktune::wire
