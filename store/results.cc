// CheckBatch: what a results batch must satisfy before anything of it is written; see results.h.
#include "store/results.h"

#include <algorithm>
#include <set>
#include <utility>

#include "kernels/core/kernel_spec.h"
#include "tuner/check.h"

namespace blocktune::store {
namespace {

bool IdentityOk(const std::string& s, size_t min_len, size_t max_len) {
  if (s.size() < min_len || s.size() > max_len) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' || c == '_' ||
           c == ':' || c == '.';
  });
}

}  // namespace

Status CheckBatch(const ResultsBatch& b) {
  if (!IdentityOk(b.batch_id, 1, 200))
    return InvalidArgument("batch_id must be 1-200 characters of [0-9A-Za-z-_:.]", "batch_id");
  const SweepRecord& s = b.sweep;
  if (!IdentityOk(s.uid, 8, 64))
    return InvalidArgument("sweep uid must be 8-64 characters of [0-9A-Za-z-_:.]", "sweep.uid");
  const KernelSpec* spec = FindKernel(s.request.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + s.request.kernel + "'", "sweep.kernel");
  if (s.request.threads < 1 || s.request.threads > 1024)
    return InvalidArgument("threads must be in [1, 1024]", "sweep.threads");
  if (s.request.shard_count < 1 || s.request.shard_index < 0 || s.request.shard_index >= s.request.shard_count) {
    return InvalidArgument("shard must satisfy 0 <= index < count", "sweep.shard");
  }
  if (s.host.size() > 255) return InvalidArgument("host is longer than 255 characters", "sweep.host");
  if (b.hardware.Key() != s.hardware_key) {
    return InvalidArgument("hardware profile's key " + b.hardware.Key() + " is not the sweep's " + s.hardware_key,
                           "hardware");
  }
  if (b.hardware.threads != s.request.threads)
    return InvalidArgument("hardware threads differ from the sweep's", "hardware.threads");
  if (b.measurements.size() > kMaxBatchMeasurements) {
    return InvalidArgument("at most " + std::to_string(kMaxBatchMeasurements) + " measurements per batch",
                           "measurements");
  }
  std::set<std::pair<std::string, std::string>> seen;
  for (size_t i = 0; i < b.measurements.size(); ++i) {
    const tuner::Measurement& m = b.measurements[i];
    const std::string at = "measurements[" + std::to_string(i) + "]";
    if (m.bucket.empty() || m.bucket.size() > 256)
      return InvalidArgument("bucket must be 1-256 characters", at + ".bucket");
    if (m.config.empty()) return InvalidArgument("config is empty", at + ".config");
    if (m.samples_ns.size() > kMaxSamplesPerMeasurement) {
      return InvalidArgument("at most " + std::to_string(kMaxSamplesPerMeasurement) + " samples", at + ".samples");
    }
    if (!seen.emplace(m.bucket, m.config.ToString()).second) {
      return InvalidArgument("the batch holds this bucket and config twice", at + ".config");
    }
    // As its sweep would have made it: the same checks PlanSweep applies, for the hardware it
    // was measured on (tuner/check.h). The whole batch is refused, so nothing of it is written.
    if (m.problem.dtype != s.request.dtype)
      return InvalidArgument("problem dtype differs from the sweep's", at + ".problem");
    if (auto c = tuner::CheckMeasurement(*spec, m, b.hardware); !c) {
      Error e = WithPathPrefix(c.error(), at);
      e.message = at + ": " + e.message;
      return std::unexpected(std::move(e));
    }
  }
  return {};
}

}  // namespace blocktune::store
