// Wire format of POST /v1/results (`blocktune push`): one batch of another database's results
// (store::ResultsBatch: a sweep's identity and provenance, its hardware profile, a bounded
// slice of its measurements with every sample) and the answer (store::ApplyResult), with their
// component schemas.
#include <cmath>

#include "external/device.h"
#include "tuner/device_models.h"

#include "server/guards/guards.h"
#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

using internal::GetInt;
using internal::GetString;

namespace {

Json ResultsSweepSchema() {
  using namespace schema;
  return Object({{"uid", Str("the sweep's identity in every database (8-64 of [0-9A-Za-z-_:.])")},
                 {"host", Str("host name the sweep ran on")},
                 {"kernel", Str()},
                 {"dtype", Ref("DType")},
                 {"threads", Int()},
                 {"strategy", Ref("Strategy")},
                 {"budget", Int()},
                 {"budget_seconds", Num()},
                 {"seed", Int()},
                 {"shapes", Array(Map(Int()))},
                 {"shard_index", Int("the slice of the plan this sweep measured (0 of 1: all of it)")},
                 {"shard_count", Int()},
                 {"status", Ref("SweepStatus")},
                 {"progress_total", Int("measurements planned")},
                 {"error", Str()},
                 {"bucket_version", Int()},
                 {"created_at", Str()},
                 {"started_at", Str()},
                 {"finished_at", Str()},
                 {"environment", Ref("Environment")},
                 {"device", Ref("DeviceIdentity"), false}},
                "a sweep as another database holds it; device: the identity its runner announced, present "
                "for a sweep filed under a device key (docs/accelerators.md)");
}

Json ResultsMeasurementSchema() {
  using namespace schema;
  return Object(
      {{"bucket", Str()},
       {"problem", Map(Int(), "the dims that were timed")},
       {"config", Ref("Config")},
       {"outcome", Ref("Outcome")},
       {"detail", Str()},
       {"iterations", Int()},
       {"median_ns", Num()},
       {"cv", Num()},
       {"max_abs_err", Num()},
       {"max_rel_err", Num()},
       {"samples_ns", Array(Num(), "every timed repetition, in order")},
       {"fingerprint", Nullable(Str("the kernel's fingerprint in the build that measured it; null or absent: unknown")),
        false},
       {"created_at", Str()}});
}

Json ResultsBatchSchema() {
  using namespace schema;
  return Object({{"batch_id", Str("the sender's identity of this batch: sending it again adds nothing")},
                 {"sweep", Ref("ResultsSweep")},
                 {"hardware", Ref("Hardware")},
                 {"measurements", Array(Ref("ResultsMeasurement"), "at most 1000")}},
                "one sweep's results, or a slice of them");
}

Result<double> GetNum(const Json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return InvalidArgument("is required", path);
  if (!it->is_number() || !std::isfinite(it->get<double>())) return InvalidArgument("must be a finite number", path);
  return it->get<double>();
}

Result<NamedInts> GetDims(const Json& obj, const char* key, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) return InvalidArgument("is required", path);
  return internal::DecodeConfigObject(*it, path);
}

// Decodes every field of `schema`'s object `j` found at `path` (closed: unknown keys refused).
Status Known(const Json& j, const Json& schema, const std::string& path) {
  if (!j.is_object()) return InvalidArgument("must be an object", path);
  return schema::CheckKnownFields(j, schema, path.empty() ? "" : path + ".");
}

Result<store::SweepRecord> DecodeSweep(const Json& j, const Limits& limits) {
  static const Json kSchema = ResultsSweepSchema();
  if (auto k = Known(j, kSchema, "sweep"); !k) return std::unexpected(k.error());
  store::SweepRecord s;
  auto str = [&](const char* key, std::string& out, size_t max_len = 256) -> Status {
    auto v = GetString(j, key, std::string("sweep.") + key, std::nullopt, max_len);
    if (!v) return std::unexpected(v.error());
    out = std::move(*v);
    return {};
  };
  auto num = [&](const char* key, int64_t& out) -> Status {
    auto v = GetInt(j, key, std::string("sweep.") + key, std::nullopt);
    if (!v) return std::unexpected(v.error());
    out = *v;
    return {};
  };
  std::string dtype, strategy, status;
  int64_t threads = 0, seed = 0, shard_index = 0, shard_count = 0, bucket_version = 0;
  for (const Status& st :
       {str("uid", s.uid, 64), str("host", s.host), str("kernel", s.request.kernel, 64), str("dtype", dtype, 16),
        str("strategy", strategy, 32), str("status", status, 16), str("error", s.error, limits.max_string_bytes),
        str("created_at", s.created_at, 64), str("started_at", s.started_at, 64), str("finished_at", s.finished_at, 64),
        num("threads", threads), num("budget", s.request.budget), num("seed", seed), num("shard_index", shard_index),
        num("shard_count", shard_count), num("progress_total", s.progress_total),
        num("bucket_version", bucket_version)}) {
    if (!st) return std::unexpected(st.error());
  }
  auto d = ParseDType(dtype);
  if (!d) return InvalidArgument("unknown dtype '" + server::guards::Clip(dtype) + "'", "sweep.dtype");
  s.request.dtype = *d;
  auto strat = tuner::ParseStrategy(strategy);
  if (!strat) return InvalidArgument("unknown strategy '" + server::guards::Clip(strategy) + "'", "sweep.strategy");
  s.request.strategy = *strat;
  auto sts = store::ParseSweepStatus(status);
  if (!sts) return InvalidArgument("unknown status '" + server::guards::Clip(status) + "'", "sweep.status");
  s.status = *sts;
  if (threads < 1 || threads > 1024) return InvalidArgument("threads must be in [1, 1024]", "sweep.threads");
  s.request.threads = static_cast<int>(threads);
  if (shard_count < 1 || shard_count > 100000)
    return InvalidArgument("shard_count must be in [1, 100000]", "sweep.shard_count");
  if (shard_index < 0 || shard_index >= shard_count)
    return InvalidArgument("shard_index must be in [0, shard_count)", "sweep.shard_index");
  s.request.shard_index = static_cast<int>(shard_index);
  s.request.shard_count = static_cast<int>(shard_count);
  if (bucket_version < 0 || bucket_version > 1000000)
    return InvalidArgument("bucket_version out of range", "sweep.bucket_version");
  s.bucket_version = static_cast<int>(bucket_version);
  s.request.seed = static_cast<uint64_t>(seed);
  auto bs = GetNum(j, "budget_seconds", "sweep.budget_seconds");
  if (!bs) return std::unexpected(bs.error());
  s.request.budget_seconds = *bs;
  static const Json kNull;
  const Json& shapes = j.contains("shapes") ? j["shapes"] : kNull;
  if (!shapes.is_array() || shapes.size() > limits.max_shapes) {
    return InvalidArgument("must be an array of at most " + std::to_string(limits.max_shapes) + " objects",
                           "sweep.shapes");
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto dims = internal::DecodeConfigObject(shapes[i], "sweep.shapes[" + std::to_string(i) + "]");
    if (!dims) return std::unexpected(dims.error());
    s.request.shapes.push_back(std::move(*dims));
  }
  const Json& env = j.contains("environment") ? j["environment"] : kNull;
  if (!env.is_object()) return InvalidArgument("must be an object", "sweep.environment");
  tuner::timing::SweepEnvironment& e = s.environment;
  std::pair<const char*, std::string*> env_fields[] = {
      {"load_average", &e.load_average}, {"affinity", &e.affinity},       {"governor", &e.governor},
      {"compiler", &e.compiler},         {"build_flags", &e.build_flags}, {"tool_version", &e.tool_version}};
  for (auto& [key, out] : env_fields) {
    auto v = GetString(env, key, std::string("sweep.environment.") + key, std::string(), 4096);
    if (!v) return std::unexpected(v.error());
    *out = std::move(*v);
  }
  if (auto d = j.find("device"); d != j.end() && !d->is_null()) {
    auto id = external::ParseDeviceIdentity(d->dump());
    if (!id) return std::unexpected(WithPathPrefix(id.error(), "sweep"));
    s.device = external::DeviceIdentityJson(*id);
  }
  return s;
}

Result<HardwareProfile> DecodeHardwareProfile(const Json& j) {
  if (!j.is_object()) return InvalidArgument("must be an object", "hardware");
  HardwareProfile h;
  std::pair<const char*, std::string*> strs[] = {
      {"arch", &h.cpu.arch}, {"isa", &h.cpu.isa}, {"vendor", &h.cpu.vendor}, {"model_name", &h.model_name}};
  for (auto& [key, out] : strs) {
    auto v = GetString(j, key, std::string("hardware.") + key, std::nullopt);
    if (!v) return std::unexpected(v.error());
    *out = std::move(*v);
  }
  int64_t v[7] = {};
  const char* ints[] = {"family", "model", "cores", "l1d_bytes", "l2_bytes", "l3_bytes", "threads"};
  for (int i = 0; i < 7; ++i) {
    auto x = GetInt(j, ints[i], std::string("hardware.") + ints[i], std::nullopt);
    if (!x) return std::unexpected(x.error());
    if (*x < 0 || *x > (int64_t{1} << 50)) return InvalidArgument("out of range", std::string("hardware.") + ints[i]);
    v[i] = *x;
  }
  h.cpu.family = static_cast<int>(v[0] & 0xffffff);
  h.cpu.model = static_cast<int>(v[1] & 0xffffff);
  h.cores = static_cast<int>(std::min<int64_t>(v[2], 1 << 20));
  h.l1d_bytes = v[3];
  h.l2_bytes = v[4];
  h.l3_bytes = v[5];
  if (v[6] < 1 || v[6] > 1024) return InvalidArgument("threads must be in [1, 1024]", "hardware.threads");
  h.threads = static_cast<int>(v[6]);
  auto key = GetString(j, "key", "hardware.key", std::nullopt);
  if (!key) return std::unexpected(key.error());
  // An accelerator's key (docs/accelerators.md) is not made of the CPU fields: it is taken as
  // given when it is one, a key of the scheme before device keys mapped as the store's are
  // (migration 0016).
  if (const std::string device = tuner::LegacyDeviceKey(*key).value_or(*key);
      *key != h.Key() && tables::IsDeviceKey(device) && device.size() <= 128 &&
      std::all_of(device.begin(), device.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
      })) {
    h.device_key = device;
  }
  if (*key != h.Key() && h.device_key.empty()) {
    return InvalidArgument(
        "key '" + server::guards::Clip(*key) + "' is not what the profile's fields make (" + h.Key() + ")",
        "hardware.key");
  }
  return h;
}

Result<tuner::Measurement> DecodeResultsMeasurement(const Json& j, DType dtype, const std::string& at,
                                                    const Limits& limits) {
  static const Json kSchema = ResultsMeasurementSchema();
  if (auto k = Known(j, kSchema, at); !k) return std::unexpected(k.error());
  tuner::Measurement m;
  auto bucket = GetString(j, "bucket", at + ".bucket", std::nullopt);
  if (!bucket) return std::unexpected(bucket.error());
  m.bucket = std::move(*bucket);
  auto problem = GetDims(j, "problem", at + ".problem");
  if (!problem) return std::unexpected(problem.error());
  m.problem = Problem{dtype, std::move(*problem)};
  auto config = GetDims(j, "config", at + ".config");
  if (!config) return std::unexpected(config.error());
  m.config = std::move(*config);
  auto outcome_name = GetString(j, "outcome", at + ".outcome", std::nullopt, 32);
  if (!outcome_name) return std::unexpected(outcome_name.error());
  auto outcome = tuner::ParseOutcome(*outcome_name);
  if (!outcome)
    return InvalidArgument("unknown outcome '" + server::guards::Clip(*outcome_name) + "'", at + ".outcome");
  m.outcome = *outcome;
  auto detail = GetString(j, "detail", at + ".detail", std::nullopt, limits.max_string_bytes);
  if (!detail) return std::unexpected(detail.error());
  m.detail = std::move(*detail);
  auto iterations = GetInt(j, "iterations", at + ".iterations", std::nullopt);
  if (!iterations) return std::unexpected(iterations.error());
  m.iterations = *iterations;
  double* nums[] = {&m.median_ns, &m.cv, &m.max_abs_err, &m.max_rel_err};
  const char* names[] = {"median_ns", "cv", "max_abs_err", "max_rel_err"};
  for (int i = 0; i < 4; ++i) {
    auto x = GetNum(j, names[i], at + "." + names[i]);
    if (!x) return std::unexpected(x.error());
    *nums[i] = *x;
  }
  static const Json kNull;
  const Json& samples = j.contains("samples_ns") ? j["samples_ns"] : kNull;
  if (!samples.is_array() || samples.size() > store::kMaxSamplesPerMeasurement) {
    return InvalidArgument(
        "must be an array of at most " + std::to_string(store::kMaxSamplesPerMeasurement) + " numbers",
        at + ".samples_ns");
  }
  for (const Json& x : samples) {
    if (!x.is_number() || !std::isfinite(x.get<double>()))
      return InvalidArgument("must hold finite numbers", at + ".samples_ns");
    m.samples_ns.push_back(x.get<double>());
  }
  auto created = GetString(j, "created_at", at + ".created_at", std::nullopt, 64);
  if (!created) return std::unexpected(created.error());
  m.created_at = std::move(*created);
  // Optional (senders before fingerprints omit it); null: unknown. A fingerprint is 16 hex
  // digits; up to 64 characters are stored as sent (another build's scheme may differ).
  if (auto f = j.find("fingerprint"); f != j.end() && !f->is_null()) {
    auto fp = GetString(j, "fingerprint", at + ".fingerprint", std::nullopt, 64);
    if (!fp) return std::unexpected(fp.error());
    m.fingerprint = std::move(*fp);
  }
  return m;
}

}  // namespace

namespace internal {

void AddResultsSchemas(Json& s) {
  using namespace schema;
  s["ResultsSweep"] = ResultsSweepSchema();
  s["ResultsMeasurement"] = ResultsMeasurementSchema();
  s["ResultsBatch"] = ResultsBatchSchema();
  s["IngestResult"] = Object({{"batch_id", Str()},
                              {"sweep_id", Int("the sweep's id in this database")},
                              {"measurements", Int("in the batch")},
                              {"inserted", Int("new here (for a replay: when the batch was first applied)")},
                              {"replayed", Bool("the batch id was applied before; nothing was written")},
                              {"winners", Int("tuned entries recomputed from every stored measurement")}});
}

}  // namespace internal

Json EncodeResultsBatch(const store::ResultsBatch& b) {
  const store::SweepRecord& s = b.sweep;
  const tuner::timing::SweepEnvironment& e = s.environment;
  Json shapes = Json::array();
  for (const auto& sh : s.request.shapes) shapes.push_back(EncodeConfig(sh));
  Json sweep{{"uid", s.uid},
             {"host", s.host},
             {"kernel", s.request.kernel},
             {"dtype", DTypeName(s.request.dtype)},
             {"threads", s.request.threads},
             {"strategy", tuner::StrategyName(s.request.strategy)},
             {"budget", s.request.budget},
             {"budget_seconds", s.request.budget_seconds},
             {"seed", static_cast<int64_t>(s.request.seed)},
             {"shapes", shapes},
             {"shard_index", s.request.shard_index},
             {"shard_count", s.request.shard_count},
             {"status", store::SweepStatusName(s.status)},
             {"progress_total", s.progress_total},
             {"error", s.error},
             {"bucket_version", s.bucket_version},
             {"created_at", s.created_at},
             {"started_at", s.started_at},
             {"finished_at", s.finished_at},
             {"environment", Json{{"load_average", e.load_average},
                                  {"affinity", e.affinity},
                                  {"governor", e.governor},
                                  {"compiler", e.compiler},
                                  {"build_flags", e.build_flags},
                                  {"tool_version", e.tool_version}}}};
  // Only when there is one: a daemon of a build before device keys refuses a field it does not know.
  if (!s.device.empty()) sweep["device"] = Json::parse(s.device, nullptr, false);
  Json ms = Json::array();
  for (const tuner::Measurement& m : b.measurements) {
    ms.push_back(Json{{"bucket", m.bucket},
                      {"problem", EncodeConfig(m.problem.dims)},
                      {"config", EncodeConfig(m.config)},
                      {"outcome", tuner::OutcomeName(m.outcome)},
                      {"detail", m.detail},
                      {"iterations", m.iterations},
                      {"median_ns", std::isfinite(m.median_ns) ? m.median_ns : 0.0},
                      {"cv", std::isfinite(m.cv) ? m.cv : 0.0},
                      {"max_abs_err", std::isfinite(m.max_abs_err) ? m.max_abs_err : 0.0},
                      {"max_rel_err", std::isfinite(m.max_rel_err) ? m.max_rel_err : 0.0},
                      {"samples_ns", m.samples_ns},
                      {"fingerprint", m.fingerprint.empty() ? Json(nullptr) : Json(m.fingerprint)},
                      {"created_at", m.created_at}});
  }
  return Json{{"batch_id", b.batch_id},
              {"sweep", sweep},
              {"hardware", EncodeHardware(b.hardware, 0, "")},
              {"measurements", ms}};
}

Result<store::ResultsBatch> DecodeResultsBatch(const Json& j, const Limits& limits) {
  static const Json kSchema = ResultsBatchSchema();
  if (auto k = Known(j, kSchema, ""); !k) return std::unexpected(k.error());
  store::ResultsBatch b;
  auto id = GetString(j, "batch_id", "batch_id", std::nullopt, 200);
  if (!id) return std::unexpected(id.error());
  b.batch_id = std::move(*id);
  auto sweep = DecodeSweep(j.contains("sweep") ? j["sweep"] : Json(), limits);
  if (!sweep) return std::unexpected(sweep.error());
  b.sweep = std::move(*sweep);
  auto hw = DecodeHardwareProfile(j.contains("hardware") ? j["hardware"] : Json());
  if (!hw) return std::unexpected(hw.error());
  b.hardware = std::move(*hw);
  b.sweep.hardware_key = b.hardware.Key();
  auto ms = j.find("measurements");
  if (ms == j.end() || !ms->is_array() || ms->size() > store::kMaxBatchMeasurements) {
    return InvalidArgument("must be an array of at most " + std::to_string(store::kMaxBatchMeasurements) + " objects",
                           "measurements");
  }
  for (size_t i = 0; i < ms->size(); ++i) {
    auto m =
        DecodeResultsMeasurement((*ms)[i], b.sweep.request.dtype, "measurements[" + std::to_string(i) + "]", limits);
    if (!m) return std::unexpected(m.error());
    b.measurements.push_back(std::move(*m));
  }
  return b;
}

Json EncodeIngestResult(const std::string& batch_id, const store::ApplyResult& r) {
  return Json{{"batch_id", batch_id},   {"sweep_id", r.sweep_id}, {"measurements", r.measurements},
              {"inserted", r.inserted}, {"replayed", r.replayed}, {"winners", r.winners}};
}

Result<store::ApplyResult> DecodeIngestResult(const Json& j) {
  if (!j.is_object()) return InvalidArgument("answer must be an object");
  store::ApplyResult r;
  // Type-checked before every get: Json::value() throws on a field of another type (an array
  // for "measurements" ended `push` with std::terminate; found by deploy/fuzz-results.sh).
  auto count = [&](const char* key, int64_t fallback, int64_t& out) -> Status {
    auto it = j.find(key);
    if (it == j.end()) {
      out = fallback;
      return {};
    }
    if (!it->is_number_integer()) return InvalidArgument(std::string("answer's ") + key + " must be an integer", key);
    out = it->get<int64_t>();
    return {};
  };
  for (const Status& st : {count("sweep_id", 0, r.sweep_id), count("measurements", -1, r.measurements),
                           count("inserted", -1, r.inserted), count("winners", 0, r.winners)}) {
    if (!st) return std::unexpected(st.error());
  }
  if (auto it = j.find("replayed"); it != j.end()) {
    if (!it->is_boolean()) return InvalidArgument("answer's replayed must be true or false", "replayed");
    r.replayed = it->get<bool>();
  }
  if (r.measurements < 0 || r.inserted < 0) return InvalidArgument("answer lacks measurements or inserted");
  return r;
}

}  // namespace blocktune::server::wire
