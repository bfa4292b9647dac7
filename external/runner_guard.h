// The guard: a small process between a runner's host (blocktune-worker, or the CLI/daemon
// in-process) and the runner itself, so that nothing the runner starts outlives it. Forked by
// RunnerProcess, it becomes a child subreaper (PR_SET_CHILD_SUBREAPER: every orphan of the
// runner's tree, including one that left the group with setsid, is reparented to it), asks for
// SIGTERM when its host dies (PR_SET_PDEATHSIG), and runs the runner as its only direct child.
// When the runner exits, when the host sends SIGTERM (a kill, a timeout, a replacement) or when
// the host dies (even by SIGKILL), it SIGKILLs every process of its group and every child it
// has, repeatedly, until none is left, then exits as the runner did (same status or signal).
// Runs between fork and exec in a possibly multithreaded process: raw system calls only, no
// allocation, no locks.
#pragma once

#include <sys/types.h>

namespace blocktune::external {

// What the runner process needs at exec, prepared before the fork (no allocation after it).
struct GuardedExec {
  int stdin_fd = -1;   // becomes the runner's 0
  int log_fd = -1;     // becomes its 1 and 2
  int answer_fd = -1;  // becomes its 3
  const char* working_dir = nullptr;
  char* const* argv = nullptr;
};

// Called in the child of fork(); never returns. `host` is the forking process's pid.
[[noreturn]] void RunGuard(pid_t host, const GuardedExec& exec);

}  // namespace blocktune::external
