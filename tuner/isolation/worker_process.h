// WorkerProcess: one worker child as a process, and nothing of what it says. It starts the
// executable with posix_spawn (fork+exec in one step, no copy of the daemon's threads or heap):
// stdin is /dev/null, stdout and stderr go to a pipe this side drains into a bounded tail (a
// flooding kernel never blocks, and the last bytes are kept for an outcome's detail), the
// channel is a socketpair end on descriptor 3 (kWorkerChannelFd), every other descriptor is
// closed, the signal mask is empty and dispositions are the defaults, and the environment is
// the daemon's minus its API token. The limits travel on the command line (the worker applies
// them to itself, worker.h). It ends a child with SIGKILL and always reaps it: none outlives
// this object. What goes over the channel is WorkerEvaluator's (worker_evaluator.h), which
// decides when a worker is started, reused or replaced.
//
// One thread owns the object; Abort may be called from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kernels/core/result.h"

namespace blocktune::tuner::isolation {

// The physical memory of the machine in bytes (sysconf), 0 if unknown.
int64_t PhysicalMemoryBytes();

// "blocktune-worker" next to the running executable (else the one this build tree made), or
// `path` if given; an error if it is not an executable file (so a daemon can refuse to start
// instead of failing every config).
Result<std::string> LocateWorker(const std::string& path);

// "SIGSEGV" for 11, ...; "signal N" for ones without a name here.
std::string SignalName(int signal);

// The monotonic clock in seconds: what deadlines are given in.
double NowSeconds();

// Seconds the process's threads spent runnable but waiting for a CPU (the largest over its
// threads; /proc/<pid>/task/<tid>/schedstat field 2, in ns). 0 if the kernel does not keep it.
double StarvedSeconds(pid_t pid);

// How a worker is started.
struct WorkerCommand {
  std::string path;  // the executable (LocateWorker)
  // RLIMIT_AS of the worker in bytes (--memory-limit-bytes); <= 0 = no limit.
  int64_t memory_limit_bytes = 0;
  bool sched_idle = false;               // --sched-idle (WorkerOptions::sched_idle)
  std::vector<std::string> kernel_dirs;  // --kernel-dir, each
  // BLOCKTUNE_ISA for the worker, replacing the daemon's own; empty = the daemon's environment.
  std::string isa;
};

class WorkerProcess {
 public:
  WorkerProcess() = default;
  ~WorkerProcess() { KillAndReap(); }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Starts a worker (there must be none). Errors: unavailable (no socketpair, pipe or spawn).
  Status Spawn(const WorkerCommand& command);

  // 0 when there is none (never started, or reaped).
  pid_t pid() const { return pid_.load(); }
  // The parent's end of the channel, the read end of the output pipe (-1 once the worker closed
  // it) and the pidfd (-1 before Linux 5.3: callers poll instead).
  int channel_fd() const { return channel_fd_; }
  int output_fd() const { return output_fd_; }
  int pidfd() const { return pidfd_; }

  // The status (siginfo's si_status: exit code or signal) of a worker that has exited but is not
  // reaped yet (it stays a zombie until KillAndReap); none while it runs, or without a worker.
  std::optional<int> Exited() const;
  // SIGKILL (if still running), reap, close descriptors. Returns the wait status, -1 if none.
  int KillAndReap();
  // Blocks until the worker exits (it already closed its channel) or the deadline passes
  // (NowSeconds), then reaps it as KillAndReap does. Returns the wait status.
  int WaitExit(double deadline_s, bool& timed_out);

  // SIGKILLs the worker from any thread and marks it aborted; a no-op without one.
  void Abort();
  bool aborted() const { return aborted_; }
  void ClearAborted() { aborted_ = false; }

  // Reads what the worker printed so far into the tail (non-blocking).
  void DrainOutput();
  void ClearOutput() { output_tail_.clear(); }
  // "; worker output ends: \"...\"" with the last printable characters, or "" if it printed none.
  std::string OutputTail() const;

 private:
  void CloseDescriptors();

  std::mutex mu_;  // guards pid_ against Abort racing a reap
  std::atomic<pid_t> pid_{0};
  std::atomic<bool> aborted_{false};
  int channel_fd_ = -1;
  int output_fd_ = -1;
  int pidfd_ = -1;
  std::string output_tail_;  // last kOutputTailBytes of the worker's stdout/stderr
};

}  // namespace blocktune::tuner::isolation
