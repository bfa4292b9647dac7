// The sweep_tasks table: one task per bucket of a sweep, leased by the daemon's job runner.
// A lease lost to a crash goes back to the queue on the next start (RequeueInterrupted) and
// never counts against a config: only committed measurements say a config was tried.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "store/database.h"
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
};

class TasksTable {
 public:
  explicit TasksTable(Database& db) : db_(db) {}
  // Adds tasks to a sweep that has none (sweeps queued before migration 0006).
  Status Add(int64_t sweep_id, const std::vector<TaskPlan>& tasks);
  // In ordinal order.
  Result<std::vector<TaskRecord>> List(int64_t sweep_id);
  // Takes the oldest queued task of a queued or running sweep: task and sweep become running,
  // the task's attempts go up by one. nullopt: nothing to do.
  Result<std::optional<TaskRecord>> LeaseNext();
  // Leases this queued task of `sweep_id` (task and sweep become running): an importer that
  // records the measurements itself (external/import.h) takes its own task so no job runner
  // does. not_found if it is not queued.
  Status LeaseTask(int64_t sweep_id, int64_t task_id);
  // Gives a leased task back to the queue (daemon stopping) without touching its measurements.
  Status Release(int64_t task_id);
  // Marks a running task done or failed. Then, if the sweep has no queued or running task left,
  // finishes the sweep (failed if any task failed, else done) and returns true.
  Result<bool> Finish(int64_t task_id, SweepStatus status, const std::string& error);
  // On start: tasks and sweeps a dead daemon left running go back to the queue.
  Status RequeueInterrupted();

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
