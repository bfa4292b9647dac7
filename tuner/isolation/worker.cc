// Worker process body; see worker.h.
#include "tuner/isolation/worker.h"

#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tuner/evaluator.h"
#include "tuner/isolation/protocol.h"

namespace blocktune::tuner::isolation {
namespace {

// The out-of-memory frame is encoded at start-up: when operator new fails there is no memory
// left to build it, and the handler may only write(2) and _exit(2).
std::string* oom_frame = nullptr;

void OnOutOfMemory() {
  if (oom_frame != nullptr) {
    const char* p = oom_frame->data();
    size_t left = oom_frame->size();
    while (left > 0) {
      const ssize_t n = send(kWorkerChannelFd, p, left, MSG_NOSIGNAL);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  _exit(kWorkerExitOutOfMemory);
}

bool ParseInt(const char* s, int64_t& out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0') return false;
  out = v;
  return true;
}

WorkerResponse Serve(const WorkerRequest& request, const KernelLookup& lookup, InProcessEvaluator& evaluator) {
  WorkerResponse response;
  const KernelSpec* spec = lookup(request.kernel);
  if (spec == nullptr) {
    response.error = "unknown kernel '" + request.kernel + "' in this worker";
    return response;
  }
  const EvalRequest eval{spec, request.problem, request.threads, request.seed, request.timing, /*isa=*/{}};
  const EvalCosts before = evaluator.costs();
  if (request.kind == RequestKind::kMeasure) {
    Measurement m;
    evaluator.Measure(eval, request.configs.front(), m);
    response.results.push_back(std::move(m));
  } else {
    response.results = evaluator.MeasureInterleaved(eval, request.configs);
  }
  response.costs = evaluator.costs() - before;
  return response;
}

}  // namespace

int RunWorker(int argc, char** argv, const KernelLookup& lookup) {
  // Ask for SIGKILL when the parent dies before anything else, then close the race where it
  // died before the prctl: a different parent pid means we were already orphaned.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  int64_t parent_pid = -1;
  int64_t memory_limit_bytes = 0;
  bool sched_idle = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--parent-pid" && i + 1 < argc && ParseInt(argv[i + 1], parent_pid)) {
      ++i;
    } else if (arg == "--memory-limit-bytes" && i + 1 < argc && ParseInt(argv[i + 1], memory_limit_bytes)) {
      ++i;
    } else if (arg == "--sched-idle") {
      sched_idle = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s --parent-pid PID [--memory-limit-bytes N] [--sched-idle]\n"
                   "blocktune's measurement worker; started by blocktuned, not by hand.\n",
                   argv[0]);
      return kWorkerExitUsage;
    }
  }
  if (parent_pid <= 0) {
    std::fprintf(stderr, "%s: --parent-pid is required\n", argv[0]);
    return kWorkerExitUsage;
  }
  if (getppid() != static_cast<pid_t>(parent_pid)) return kWorkerExitOrphaned;
  struct stat st {};
  if (fstat(kWorkerChannelFd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
    std::fprintf(stderr, "%s: descriptor %d is not the parent's channel\n", argv[0], kWorkerChannelFd);
    return kWorkerExitUsage;
  }

  if (sched_idle) {
    // SCHED_IDLE: any runnable normal thread (an HTTP worker answering a lookup) preempts this
    // process at once; the measurement it disturbs shows up as spread and is re-timed or
    // recorded `unstable`, never silently kept.
    const sched_param none{};
    if (sched_setscheduler(0, SCHED_IDLE, &none) != 0) {
      std::fprintf(stderr, "%s: sched_setscheduler(SCHED_IDLE) failed: %s\n", argv[0], std::strerror(errno));
    }
  }
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  if (memory_limit_bytes > 0) {
    const rlimit as{static_cast<rlim_t>(memory_limit_bytes), static_cast<rlim_t>(memory_limit_bytes)};
    if (setrlimit(RLIMIT_AS, &as) != 0) {
      std::fprintf(stderr, "%s: setrlimit(RLIMIT_AS, %lld) failed: %s\n", argv[0],
                   static_cast<long long>(memory_limit_bytes), std::strerror(errno));
      return kWorkerExitUsage;
    }
  }
  WorkerResponse oom;
  oom.fatal = "out_of_memory";
  oom_frame = new std::string(Frame(EncodeResponse(oom)));
  std::set_new_handler(OnOutOfMemory);

  InProcessEvaluator evaluator;  // kept across requests: references are computed once per problem
  WorkerResponse ready;
  ready.ready = true;
  if (!WriteFrame(kWorkerChannelFd, EncodeResponse(ready))) return 0;  // parent gone
  while (true) {
    auto payload = ReadFrame(kWorkerChannelFd);
    if (!payload) {
      // not_found: the parent closed the channel, the normal way to stop a worker.
      return payload.error().code == ErrorCode::kNotFound ? 0 : kWorkerExitUsage;
    }
    WorkerResponse response;
    if (auto request = DecodeRequest(*payload)) {
      response = Serve(*request, lookup, evaluator);
    } else {
      response.error = "bad request: " + request.error().ToString();
    }
    std::fflush(stdout);  // a kernel's buffered prints go out now, not interleaved later
    if (!WriteFrame(kWorkerChannelFd, EncodeResponse(response))) return 0;  // parent gone
  }
}

}  // namespace blocktune::tuner::isolation
