// Worker channel codec and framing; see protocol.h. The only file that spells its JSON keys.
#include "tuner/isolation/protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

namespace blocktune::tuner::isolation {
namespace {

using Json = nlohmann::json;

Json IntsToJson(const NamedInts& v) {
  // An array of pairs keeps the kernel's parameter order (a JSON object would not).
  Json out = Json::array();
  for (const auto& [name, value] : v.values()) out.push_back(Json::array({name, value}));
  return out;
}

Result<NamedInts> IntsFromJson(const Json& j, const std::string& path) {
  if (!j.is_array()) return InvalidArgument("expected an array of [name, value] pairs", path);
  NamedInts out;
  for (const Json& pair : j) {
    if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_number_integer()) {
      return InvalidArgument("expected [name, integer]", path);
    }
    out.Set(pair[0].get<std::string>(), pair[1].get<int64_t>());
  }
  return out;
}

// JSON has no NaN or infinity (nlohmann writes null); a verdict's numbers are finite in
// practice, and null reads back as NaN so nothing is silently turned into 0.
double NumberOr(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::numeric_limits<double>::quiet_NaN();
  return it->get<double>();
}

Result<Json> ParseVersioned(std::string_view payload) {
  Json j = Json::parse(payload.begin(), payload.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("worker message is not a JSON object");
  auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int>() != kProtocolVersion) {
    return InvalidArgument("worker protocol version mismatch (want " + std::to_string(kProtocolVersion) + ")", "v");
  }
  return j;
}

}  // namespace

std::string EncodeRequest(const WorkerRequest& r) {
  Json configs = Json::array();
  for (const Config& c : r.configs) configs.push_back(IntsToJson(c));
  Json j = {
      {"v", kProtocolVersion},
      {"kind", r.kind == RequestKind::kMeasure ? "measure" : "measure_interleaved"},
      {"kernel", r.kernel},
      {"dtype", std::string(DTypeName(r.problem.dtype))},
      {"dims", IntsToJson(r.problem.dims)},
      {"threads", r.threads},
      {"seed", r.seed},
      {"min_repetition_ns", r.timing.min_repetition_ns},
      {"repetitions", r.timing.repetitions},
      {"max_iterations", r.timing.max_iterations},
      {"max_cv", r.timing.max_cv},
      {"max_retries", r.timing.max_retries},
      {"rotation_sets", r.timing.rotation_sets},
      {"check_floor", r.timing.check_floor},
      {"stop_above_ns", r.timing.stop_above_ns},
      {"stop_after", r.timing.stop_after},
      {"configs", std::move(configs)},
  };
  return j.dump();
}

Result<WorkerRequest> DecodeRequest(std::string_view payload) {
  auto parsed = ParseVersioned(payload);
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  WorkerRequest r;
  const auto kind = j.value("kind", std::string());
  if (kind == "measure") {
    r.kind = RequestKind::kMeasure;
  } else if (kind == "measure_interleaved") {
    r.kind = RequestKind::kMeasureInterleaved;
  } else {
    return InvalidArgument("unknown request kind '" + kind + "'", "kind");
  }
  r.kernel = j.value("kernel", std::string());
  auto dtype = ParseDType(j.value("dtype", std::string()));
  if (!dtype) return InvalidArgument("unknown dtype", "dtype");
  r.problem.dtype = *dtype;
  auto dims = IntsFromJson(j.value("dims", Json()), "dims");
  if (!dims) return std::unexpected(dims.error());
  r.problem.dims = std::move(*dims);
  r.threads = j.value("threads", 1);
  r.seed = j.value("seed", uint64_t{1});
  r.timing.min_repetition_ns = j.value("min_repetition_ns", r.timing.min_repetition_ns);
  r.timing.repetitions = j.value("repetitions", r.timing.repetitions);
  r.timing.max_iterations = j.value("max_iterations", r.timing.max_iterations);
  r.timing.max_cv = j.value("max_cv", r.timing.max_cv);
  r.timing.max_retries = j.value("max_retries", r.timing.max_retries);
  r.timing.rotation_sets = j.value("rotation_sets", r.timing.rotation_sets);
  r.timing.check_floor = j.value("check_floor", r.timing.check_floor);
  r.timing.stop_above_ns = j.value("stop_above_ns", r.timing.stop_above_ns);
  r.timing.stop_after = j.value("stop_after", r.timing.stop_after);
  const Json configs = j.value("configs", Json());
  if (!configs.is_array() || configs.empty()) return InvalidArgument("configs must be a non-empty array", "configs");
  for (size_t i = 0; i < configs.size(); ++i) {
    auto c = IntsFromJson(configs[i], "configs[" + std::to_string(i) + "]");
    if (!c) return std::unexpected(c.error());
    r.configs.push_back(std::move(*c));
  }
  if (r.kind == RequestKind::kMeasure && r.configs.size() != 1) {
    return InvalidArgument("a measure request carries exactly one config", "configs");
  }
  return r;
}

std::string EncodeResponse(const WorkerResponse& r) {
  Json results = Json::array();
  for (const Measurement& m : r.results) {
    results.push_back({
        {"outcome", std::string(OutcomeName(m.outcome))},
        {"detail", m.detail},
        {"samples_ns", m.samples_ns},
        {"iterations", m.iterations},
        {"median_ns", m.median_ns},
        {"cv", m.cv},
        {"max_abs_err", m.max_abs_err},
        {"max_rel_err", m.max_rel_err},
    });
    // An external kernel's device (measurement.h); absent for built-in kernels.
    if (!m.device_key.empty()) results.back()["device_key"] = m.device_key;
    if (!m.device.empty()) results.back()["device"] = m.device;
    if (!m.device_error.empty()) results.back()["device_error"] = m.device_error;
  }
  Json j = {{"v", kProtocolVersion}, {"results", std::move(results)}};
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.fatal.empty()) j["fatal"] = r.fatal;
  if (r.ready) j["ready"] = true;
  if (r.costs.Total() > 0) {
    Json costs = Json::object();
    for (const EvalPhase& p : kEvalPhases) {
      if (p.from_worker) costs[p.name] = r.costs.*p.seconds;
    }
    costs["retries"] = r.costs.retries;
    j["costs"] = std::move(costs);
  }
  // A kernel's detail text may hold invalid UTF-8; replace rather than fail to encode.
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<WorkerResponse> DecodeResponse(std::string_view payload) {
  auto parsed = ParseVersioned(payload);
  if (!parsed) return std::unexpected(parsed.error());
  const Json& j = *parsed;
  WorkerResponse r;
  r.error = j.value("error", std::string());
  r.fatal = j.value("fatal", std::string());
  r.ready = j.value("ready", false);
  // Optional: a worker of an older build sends none, and its time counts as transport.
  if (auto c = j.find("costs"); c != j.end() && c->is_object()) {
    for (const EvalPhase& p : kEvalPhases) {
      if (p.from_worker) r.costs.*p.seconds = NumberOr(*c, p.name);
    }
    r.costs.retries = c->value("retries", int64_t{0});
  }
  const Json results = j.value("results", Json::array());
  if (!results.is_array()) return InvalidArgument("results must be an array", "results");
  for (size_t i = 0; i < results.size(); ++i) {
    const Json& e = results[i];
    const std::string path = "results[" + std::to_string(i) + "]";
    if (!e.is_object()) return InvalidArgument("expected an object", path);
    auto outcome = ParseOutcome(e.value("outcome", std::string()));
    if (!outcome) return InvalidArgument("unknown outcome", path + ".outcome");
    Measurement m;
    m.outcome = *outcome;
    m.detail = e.value("detail", std::string());
    const Json samples = e.value("samples_ns", Json::array());
    if (!samples.is_array()) return InvalidArgument("samples_ns must be an array", path + ".samples_ns");
    for (const Json& s : samples) {
      m.samples_ns.push_back(s.is_number() ? s.get<double>() : std::numeric_limits<double>::quiet_NaN());
    }
    m.iterations = e.value("iterations", int64_t{0});
    m.median_ns = NumberOr(e, "median_ns");
    m.cv = NumberOr(e, "cv");
    m.max_abs_err = NumberOr(e, "max_abs_err");
    m.max_rel_err = NumberOr(e, "max_rel_err");
    m.device_key = e.value("device_key", std::string());
    m.device = e.value("device", std::string());
    m.device_error = e.value("device_error", std::string());
    r.results.push_back(std::move(m));
  }
  return r;
}

std::string Frame(std::string_view payload) {
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(payload);
  return out;
}

Result<std::optional<std::string>> FrameReader::Next() {
  if (buffer_.size() < 4) return std::optional<std::string>();
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<unsigned char>(buffer_[i])) << (8 * i);
  if (n > kMaxFrameBytes) {
    return InvalidArgument("frame of " + std::to_string(n) + " bytes exceeds the " + std::to_string(kMaxFrameBytes) +
                           "-byte limit");
  }
  if (buffer_.size() < 4 + size_t{n}) return std::optional<std::string>();
  std::string payload = buffer_.substr(4, n);
  buffer_.erase(0, 4 + size_t{n});
  return std::optional<std::string>(std::move(payload));
}

Status WriteFrame(int fd, std::string_view payload) {
  const std::string frame = Frame(payload);
  size_t off = 0;
  while (off < frame.size()) {
    // MSG_NOSIGNAL: a parent that went away is an error here, not a SIGPIPE.
    const ssize_t n = send(fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return MakeError(ErrorCode::kUnavailable, std::string("channel write failed: ") + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return {};
}

namespace {

// Reads exactly `size` bytes (never more, so nothing after this frame is consumed). Returns
// the number read before EOF, or -1 on error.
ssize_t ReadExact(int fd, char* data, size_t size) {
  size_t off = 0;
  while (off < size) {
    const ssize_t n = read(fd, data + off, size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) break;
    off += static_cast<size_t>(n);
  }
  return static_cast<ssize_t>(off);
}

}  // namespace

Result<std::string> ReadFrame(int fd) {
  char header[4];
  const ssize_t h = ReadExact(fd, header, 4);
  if (h == 0) return NotFound("channel closed");
  if (h != 4) return MakeError(ErrorCode::kUnavailable, "channel closed or failed mid-frame");
  uint32_t n = 0;
  for (int i = 0; i < 4; ++i) n |= static_cast<uint32_t>(static_cast<unsigned char>(header[i])) << (8 * i);
  if (n > kMaxFrameBytes) return InvalidArgument("frame of " + std::to_string(n) + " bytes exceeds the limit");
  std::string payload(n, '\0');
  if (ReadExact(fd, payload.data(), n) != static_cast<ssize_t>(n)) {
    return MakeError(ErrorCode::kUnavailable, "channel closed or failed mid-frame");
  }
  return payload;
}

}  // namespace blocktune::tuner::isolation
