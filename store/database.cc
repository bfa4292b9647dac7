// Database: the shared connection's transaction helper; see database.h.
#include "store/database.h"

namespace blocktune::store {

Status Database::InTransaction(const std::function<Status()>& body) {
  if (auto s = conn_.Exec("BEGIN IMMEDIATE"); !s) return s;
  if (auto s = body(); !s) {
    (void)conn_.Exec("ROLLBACK");
    return s;
  }
  if (auto s = conn_.Exec("COMMIT"); !s) {
    (void)conn_.Exec("ROLLBACK");
    return s;
  }
  return {};
}

}  // namespace blocktune::store
