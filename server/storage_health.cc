// StorageHealth; see storage_health.h.
#include "server/storage_health.h"

#include "store/executors_table.h"
#include "tuner/lookup.h"

namespace blocktune::server {

bool IsStorageFault(const Error& e) {
  switch (e.code) {
    case ErrorCode::kResourceExhausted:
    case ErrorCode::kUnavailable:
    case ErrorCode::kInternal: return true;
    case ErrorCode::kFailedPrecondition: return !store::IsLostClaim(e);
    default: return false;
  }
}

bool StorageHealth::Fail(const std::string& source, const Error& e, int64_t sweep_id) {
  std::lock_guard lock(mu_);
  ++failures_;
  auto [it, fresh] = faults_.try_emplace(source);
  if (fresh) it->second.since = tuner::UtcNow();
  it->second.source = source;
  it->second.error = e.message;
  if (sweep_id != 0 || fresh) it->second.sweep_id = sweep_id;
  return fresh;
}

bool StorageHealth::Ok(const std::string& source) {
  std::lock_guard lock(mu_);
  return faults_.erase(source) > 0;
}

std::optional<StorageFault> StorageHealth::Current() const {
  std::lock_guard lock(mu_);
  if (faults_.empty()) return std::nullopt;
  // The runner's first: it names the sweep that waits.
  if (auto it = faults_.find("runner"); it != faults_.end()) return it->second;
  return faults_.begin()->second;
}

int64_t StorageHealth::failures_total() const {
  std::lock_guard lock(mu_);
  return failures_;
}

}  // namespace blocktune::server
