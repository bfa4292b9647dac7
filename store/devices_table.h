// The device a sweep's measurements were taken on (migration 0016, docs/accelerators.md): an
// external kernel's runner announces it, the sweep is filed under its key (sweeps.hardware_id)
// and keeps the identity as provenance (sweeps.device). A runner whose device changes within a
// sweep, or whose identity is invalid, fails the sweep and its unfinished tasks.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/core/result.h"
#include "store/database.h"

namespace blocktune::store {

class DevicesTable {
 public:
  explicit DevicesTable(Database& db) : db_(db) {}
  // Files the sweep under the hardware profile `hardware_id` (HardwareTable::Upsert of the
  // device's key) with `identity` (external::DeviceIdentityJson; '' for none) as provenance.
  // failed_precondition if the sweep already stored a measurement under another key: moving
  // them would file them under a device they were not measured on.
  Status Set(int64_t sweep_id, int64_t hardware_id, const std::string& identity);
  // The identity the sweep keeps; '' if none. not_found for an unknown sweep.
  Result<std::string> Get(int64_t sweep_id);
  // The sweep and every task of it not finished yet become failed with `error`, in one
  // transaction; a finished sweep is left as it is.
  Status Fail(int64_t sweep_id, const std::string& error);

 private:
  Database& db_;
};

}  // namespace blocktune::store
