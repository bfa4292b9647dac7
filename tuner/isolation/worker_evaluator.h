// WorkerEvaluator: an Evaluator that runs every config in a separate worker process, so a
// config that segfaults, hangs, exhausts memory or scribbles over the process becomes a
// recorded outcome instead of taking the daemon (and its SQLite handle) down.
//
// This side of it is the conversation: each request goes to blocktune-worker as one frame on
// the channel (protocol.h), and the answer is read back within a limit that grows with the
// work and with the time the worker waited for a CPU; no answer becomes an outcome (timeout,
// crashed, out_of_memory, worker_lost) with the last bytes the worker printed. The process
// (started with posix_spawn, its descriptors, signals and environment, killed and reaped) is
// WorkerProcess's (worker_process.h). The worker is reused while it returns verdicts and is
// replaced lazily after anything else: a timeout (SIGKILL, then reaped), a crash, an
// out-of-memory exit, a protocol error, or a verdict other than ok / invalid (a config that
// produced garbage may also have corrupted the worker's memory). Every child is reaped; none
// outlives this object.
//
// One thread at a time may call Measure / MeasureInterleaved (the daemon's job runner); Abort
// may be called from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "tuner/evaluator.h"
#include "tuner/isolation/protocol.h"
#include "tuner/isolation/worker_process.h"

namespace blocktune::tuner::isolation {

struct WorkerOptions {
  // The worker executable; empty = blocktune-worker next to this program (/proc/self/exe).
  std::string worker_path;
  // Limit per config in seconds (an interleaved request gets it once per config); 0 = derived
  // from the request (DefaultTimeout). It is wall time, extended by any time the worker spent
  // runnable but waiting for a CPU, so a loaded machine does not turn slow starts into timeouts.
  double timeout_s = 0;
  // Floor of the derived limit: start-up, reference computation and a loaded machine all fit.
  double min_timeout_s = 10;
  // How long a fresh worker may take to say it is ready (exec, loading, set-up). Not charged to
  // any config: a worker that misses it is killed and the spawn fails.
  double startup_timeout_s = 30;
  // Run the worker under SCHED_IDLE, so that anything else runnable on the machine (the
  // daemon's lookups above all) preempts the kernel being measured at once. The daemon turns
  // it on by default (--worker-sched); timings disturbed that way are caught by the CV check.
  bool sched_idle = false;
  // RLIMIT_AS of the worker in bytes; 0 = half the machine's physical memory (at least 2 GiB),
  // negative = no limit.
  int64_t memory_limit_bytes = 0;
  // Folders of external kernel specs the worker loads at start-up (--kernel-dir), so it knows
  // the same kernels as the daemon.
  std::vector<std::string> kernel_dirs;
};

// The default per-request limit: 10x a pessimistic estimate of the work, at least
// min_timeout_s. The estimate assumes 1 GFLOP/s and 1 GB/s, ~1/200 of one core of the machine
// this was written on, so only a config hundreds of times slower than a good one is cut; per
// config it allows a verification call, calibration (~3 calls) and every repetition, each at
// least min_repetition_ns long.
double DefaultTimeout(const EvalRequest& request, size_t configs, double min_timeout_s);

class WorkerEvaluator : public Evaluator {
 public:
  explicit WorkerEvaluator(WorkerOptions options);
  ~WorkerEvaluator() override;  // SIGKILLs and reaps the worker, if any
  WorkerEvaluator(const WorkerEvaluator&) = delete;
  WorkerEvaluator& operator=(const WorkerEvaluator&) = delete;

  void Measure(const EvalRequest& request, const Config& config, Measurement& m) override;
  // One request for all configs. If the worker dies during it, each config is re-measured on
  // its own so only the one responsible gets the bad outcome.
  std::vector<Measurement> MeasureInterleaved(const EvalRequest& request, const std::vector<Config>& configs) override;

  // Kills the worker; a request in flight ends at once with worker_lost ("aborted"). Safe from
  // any thread, e.g. to stop a daemon without waiting for a long config.
  void Abort();
  // The next request starts a fresh worker: the kernel folders changed (the daemon reloaded
  // them) and a worker knows the specs it loaded at start-up. Safe from any thread; a request
  // in flight finishes on the old worker.
  void RestartBeforeNextRequest() { restart_ = true; }

  // For tests and logs.
  pid_t worker_pid() const { return process_.pid(); }
  int64_t workers_started() const { return workers_started_; }
  // Run-queue wait of the worker during the last request, by which its deadline was extended.
  double last_starved_s() const { return last_starved_s_; }
  const WorkerOptions& options() const { return options_; }
  EvalCosts costs() const override { return costs_; }

 private:
  // What one round trip produced: the worker's response, or the outcome that replaces it.
  struct Exchange {
    bool ok = false;
    double wall_s = 0;  // the round trip, spawn included
    WorkerResponse response;
    Outcome outcome = Outcome::kWorkerLost;
    std::string detail;
  };

  // RoundTripOnce plus its costs (costs_).
  Exchange RoundTrip(const WorkerRequest& request, double timeout_s);
  Exchange RoundTripOnce(const WorkerRequest& request, double timeout_s);
  Status EnsureWorker();
  // SpawnAndAwait, timed into costs_.spawn_s.
  Status Spawn();
  Status SpawnAndAwait();
  // Waits for the fresh worker's ready frame (WorkerOptions::startup_timeout_s).
  Status AwaitReady();

  WorkerOptions options_;
  std::string resolved_path_;
  WorkerProcess process_;
  std::atomic<bool> restart_{false};
  // ISA level the next request needs (EvalRequest::isa) and the one the running worker was
  // started with; a worker is pinned to its level by its environment, so a change restarts it.
  std::string wanted_isa_;
  std::string worker_isa_;
  int64_t workers_started_ = 0;
  double last_starved_s_ = 0;
  EvalCosts costs_;
  double spawn_in_request_s_ = 0;  // spawn time inside the current round trip (not transport)
};

}  // namespace blocktune::tuner::isolation
