// StorageHealth: whether this process can write its database now, as its writers last found
// out. The job runner, the lease renewal and the miss flusher each report what their last write
// did (a source each); a storage fault (disk full, I/O error, read-only or locked file) stays
// current until the same source writes again. The daemon shows a current fault on the sweeps it
// cannot advance (`stalled` in the sweep's JSON), in /healthz, /readyz and /metrics; the work
// itself waits and resumes once a write succeeds, losing nothing (every commit is whole).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "kernels/core/result.h"

namespace blocktune::server {

// Whether an error from the store is the storage's (a retry may succeed once space or the
// file comes back) rather than the request's or a bug's: resource_exhausted (SQLITE_FULL),
// unavailable (busy, locked), internal (I/O errors) and failed_precondition (read-only, cannot
// open), but not a lost claim on a sweep (store::IsLostClaim).
bool IsStorageFault(const Error& e);

struct StorageFault {
  std::string source;    // "runner", "lease" or "misses"
  std::string error;     // the store's message: "step failed: database or disk is full"
  std::string since;     // UTC, when this source first failed in a row
  int64_t sweep_id = 0;  // the sweep the runner was advancing, 0 if none
};

class StorageHealth {
 public:
  // Records a failed write of `source`; returns true when this starts a fault (log it once).
  bool Fail(const std::string& source, const Error& e, int64_t sweep_id = 0);
  // Records a write of `source` that succeeded; returns true when this ends its fault.
  bool Ok(const std::string& source);
  // A current fault, if any (the runner's if it has one).
  std::optional<StorageFault> Current() const;
  int64_t failures_total() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, StorageFault> faults_;
  int64_t failures_ = 0;
};

}  // namespace blocktune::server
