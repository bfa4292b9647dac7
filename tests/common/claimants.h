// Executors for the store's lease tests (store/executors_table.h): this process, and one whose
// process is gone, as a runner killed with SIGKILL leaves its row behind.
#pragma once

#include <string>

#include "store/tasks_table.h"

namespace blocktune::test {

// This process as an executor with a fresh id (two calls: two executors of one live process).
inline store::Claimant LiveClaimant(const std::string& kind = "daemon") {
  store::Claimant c;
  c.self = store::ThisProcess(kind);
  return c;
}

// An executor of this machine whose process no longer exists: pid 999999999 is above the
// kernel's largest pid_max (2^22), so kill(pid, 0) says ESRCH.
inline store::Claimant GoneClaimant() {
  store::Claimant c = LiveClaimant();
  c.self.pid = 999999999;
  return c;
}

}  // namespace blocktune::test
