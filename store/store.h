// Store: blocktune's SQLite database (Chromium's history_database model). It owns the one
// connection (store/database.h) and exposes a class per table group, each with its SQL beside
// its methods: hardware, sweeps (with idempotency keys and progress), tasks (the runner's
// leases), executors (the processes that own sweeps), measurements (with samples and the
// transfer prior), decisions (final rounds), tuned entries, overrides, lookup misses, results
// from other databases (results_table.h), and maintenance (backup, integrity, stats, schema
// version). Opening migrates an older schema forward (store/migrate.h), refuses a newer one,
// checks integrity, and never rewrites a file that is not ours. Every table operation is one
// transaction under the connection's one lock.
#pragma once

#include <memory>
#include <string>

#include "kernels/core/result.h"
#include "store/database.h"
#include "store/decisions_table.h"
#include "store/devices_table.h"
#include "store/executors_table.h"
#include "store/hardware_table.h"
#include "store/maintenance.h"
#include "store/measurements_table.h"
#include "store/migrate.h"
#include "store/misses_table.h"
#include "store/overrides_table.h"
#include "store/results_table.h"
#include "store/sweeps_table.h"
#include "store/tasks_table.h"
#include "store/tuned_table.h"

namespace blocktune::store {

class Store {
 public:
  // Creates the file if missing. Errors: data_loss (not a database, corrupt, or another
  // application's), failed_precondition (schema newer than this build), unavailable (locked).
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  HardwareTable& hardware() { return hardware_; }
  SweepsTable& sweeps() { return sweeps_; }
  TasksTable& tasks() { return tasks_; }
  ExecutorsTable& executors() { return executors_; }
  MeasurementsTable& measurements() { return measurements_; }
  DecisionsTable& decisions() { return decisions_; }
  DevicesTable& devices() { return devices_; }
  TunedTable& tuned() { return tuned_; }
  OverridesTable& overrides() { return overrides_; }
  MissesTable& misses() { return misses_; }
  Maintenance& maintenance() { return maintenance_; }
  ResultsTable& results() { return results_; }

 private:
  explicit Store(Connection conn);

  Database db_;
  HardwareTable hardware_{db_};
  SweepsTable sweeps_{db_};
  TasksTable tasks_{db_};
  ExecutorsTable executors_{db_};
  MeasurementsTable measurements_{db_};
  DecisionsTable decisions_{db_};
  DevicesTable devices_{db_};
  TunedTable tuned_{db_};
  OverridesTable overrides_{db_};
  MissesTable misses_{db_};
  Maintenance maintenance_{db_};
  ResultsTable results_{db_};
};

}  // namespace blocktune::store
