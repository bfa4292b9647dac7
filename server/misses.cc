// MissCounter; see misses.h.
#include "server/misses.h"

#include <cstdio>
#include <ctime>
#include <functional>

namespace blocktune::server {

void MissCounter::Count(std::string_view kernel, DType dtype, std::string_view hardware_key, std::string_view bucket,
                        tables::Source source, const NamedInts& dims) {
  if (!IsMiss(source)) return;
  const auto now = std::chrono::system_clock::now();
  // The map key, built in a per-thread buffer: no allocation once the buffer has grown.
  thread_local std::string key;
  const std::string_view dtype_name = DTypeName(dtype);
  key.clear();
  key.append(kernel).push_back('\0');
  key.append(dtype_name).push_back('\0');
  key.append(hardware_key).push_back('\0');
  key.append(bucket);
  const size_t hash = std::hash<std::string>{}(key);
  Shard& shard = shards_[hash % kShards];
  std::lock_guard lock(shard.mu);
  auto it = shard.pending.find(key);
  if (it == shard.pending.end()) {
    if (shard.pending.size() >= max_per_shard_) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Pending p;
    p.counts.kernel = kernel;
    p.counts.dtype = dtype;
    p.counts.hardware_key = hardware_key;
    p.counts.bucket = bucket;
    p.counts.dims = dims;
    p.first = now;
    it = shard.pending.emplace(key, std::move(p)).first;
  }
  Pending& p = it->second;
  p.last = now;
  switch (source) {
    case tables::Source::kTunedFallback: ++p.counts.fallback; break;
    case tables::Source::kNearest: ++p.counts.nearest; break;
    default: ++p.counts.defaulted; break;
  }
}

std::vector<store::MissCount> MissCounter::Take() {
  std::vector<store::MissCount> out;
  for (Shard& shard : shards_) {
    std::unordered_map<std::string, Pending> taken;
    {
      std::lock_guard lock(shard.mu);
      taken.swap(shard.pending);
    }
    for (auto& [_, p] : taken) {
      p.counts.first_seen_at = UtcText(p.first);
      p.counts.last_seen_at = UtcText(p.last);
      out.push_back(std::move(p.counts));
    }
  }
  return out;
}

std::string UtcText(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];  // every field at its widest, as in tuner::UtcNow
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

}  // namespace blocktune::server
