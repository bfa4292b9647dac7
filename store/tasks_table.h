// The sweep_tasks table: one task per bucket of a sweep. A sweep belongs to one executor at a
// time (migration 0015, store/executors_table.h), which leases its tasks in ordinal order; a
// sweep whose owner stopped holding it (its row expired or is gone, or its process on this
// machine ended) is taken over whole by the next executor that leases, its running task back in
// the queue and every committed measurement kept. A lost lease never counts against a config:
// only committed measurements say a config was tried.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"
#include "store/executors_table.h"
#include "store/sweeps_table.h"

namespace blocktune::store {

struct TaskRecord {
  int64_t id = 0;
  int64_t sweep_id = 0;
  int ordinal = 0;
  std::string bucket;
  NamedInts shape;
  int64_t planned = 0;
  SweepStatus status = SweepStatus::kQueued;
  int64_t attempts = 0;  // leases; a lease lost to a crash is not a failed config
  std::string error;
  // Set by LeaseNext when it took the sweep over from another executor: who, and why
  // ("daemon pid 12 on h: its process ended").
  std::string taken_from;
};

// Who leases, for how long, and what it may run (LeaseNext).
struct Claimant {
  ExecutorRecord self;
  int64_t lease_ms = 30000;
  // Only these sweeps (a --local process runs the sweeps it submitted); nullopt: any.
  std::optional<std::set<int64_t>> only;
  // Whether this process has the sweep's kernel (an external kernel another process loaded may
  // be missing here); empty: every kernel.
  std::function<bool(const std::string& kernel)> can_run;
};

class TasksTable {
 public:
  explicit TasksTable(Database& db) : db_(db) {}
  // Adds tasks to a sweep that has none (sweeps queued before migration 0006).
  Status Add(int64_t sweep_id, const std::vector<TaskPlan>& tasks);
  // In ordinal order.
  Result<std::vector<TaskRecord>> List(int64_t sweep_id);
  // In one write transaction: picks the first sweep (its own first, then by id) that `who` may
  // run and that is free (no owner), its own, or held by an executor that no longer holds it
  // (Holds); takes the sweep (owner = who, registering who's row), puts a task the previous
  // owner left running back in the queue, and leases the sweep's first unfinished task: task and
  // sweep become running, the task's attempts go up by one. nullopt: nothing to do.
  Result<std::optional<TaskRecord>> LeaseNext(const Claimant& who);
  // Leases this queued task of `sweep_id` (task and sweep become running): an importer that
  // records the measurements itself (external/import.h) takes its own task so no job runner
  // does. not_found if it is not queued.
  Status LeaseTask(int64_t sweep_id, int64_t task_id);
  // Gives a leased task back to the queue (daemon stopping) without touching its measurements.
  Status Release(int64_t task_id);
  // Marks a running task done or failed, if `owner` (when not empty) still owns its sweep. Then,
  // if the sweep has no queued or running task left, finishes the sweep (failed if any task
  // failed, else done) and returns true.
  Result<bool> Finish(int64_t task_id, SweepStatus status, const std::string& error, const std::string& owner = {});
  // On start: unfinished sweeps whose owner no longer holds them (or that have none) lose their
  // owner, their running tasks go back to the queue and they show as queued; sweeps of
  // executors that still hold them are left alone. Returns how many sweeps it requeued.
  Result<int64_t> RequeueOrphans();

 private:
  Database& db_;
};

// Inserts `tasks` for the sweep (ordinals 0, 1, ...) and sets its planned total, inside the
// caller's transaction with the lock held (SweepsTable::Create, TasksTable::Add).
Status InsertTasks(Connection& conn, int64_t sweep_id, const std::vector<TaskPlan>& tasks);
// Sets the sweep's progress_total to the sum of its tasks' planned counts, likewise inside the
// caller's transaction (also MeasurementsTable::Record, when the engine's count changes one).
Status SyncPlannedTotal(Connection& conn, int64_t sweep_id);

}  // namespace blocktune::store
