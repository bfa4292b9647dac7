// WorkerEvaluator implementation: the requests it sends a worker, the answers it reads back
// within the limit, and what it makes of a worker that gives none; see worker_evaluator.h. The
// process itself (start, kill, reap) is WorkerProcess's (worker_process.h).
#include "tuner/isolation/worker_evaluator.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>

#include <spdlog/spdlog.h>

namespace blocktune::tuner::isolation {
namespace {

// A compile failure is an answer like invalid (an external runner said it and is fine), and
// `unstable` is a timing verdict on a config that passed verification (its repetitions spread
// too wide, usually because something else ran): neither says anything about the worker's
// memory, and replacing the worker costs a spawn plus its references and input sets again
// (~0.2 s for matmul 512^3, more than a config's timing). Every other failure may have left
// the worker in any state.
bool OutcomeKeepsWorker(Outcome o) {
  return o == Outcome::kOk || o == Outcome::kInvalid || o == Outcome::kCompileFailed || o == Outcome::kUnstable;
}

void CopyVerdict(const Measurement& from, Measurement& to) {
  to.outcome = from.outcome;
  to.detail = from.detail;
  to.samples_ns = from.samples_ns;
  to.iterations = from.iterations;
  to.median_ns = from.median_ns;
  to.cv = from.cv;
  to.max_abs_err = from.max_abs_err;
  to.max_rel_err = from.max_rel_err;
  to.device_key = from.device_key;
  to.device = from.device;
  to.device_error = from.device_error;
}

}  // namespace

double DefaultTimeout(const EvalRequest& request, size_t configs, double min_timeout_s) {
  const double call_s = std::max(request.spec->Flops(request.problem), request.spec->Bytes(request.problem)) / 1e9;
  const double repetition_s = std::max(request.timing.min_repetition_ns * 1e-9, call_s);
  const double per_config_s = call_s + (3.0 + request.timing.repetitions) * repetition_s;
  return std::max(min_timeout_s, 10.0 * static_cast<double>(configs) * per_config_s);
}

WorkerEvaluator::WorkerEvaluator(WorkerOptions options) : options_(std::move(options)) {
  if (options_.memory_limit_bytes == 0) {
    // Half the machine leaves the daemon, the page cache and other work room; 2 GiB keeps a
    // small machine usable for the shipped kernels' largest verification problems.
    options_.memory_limit_bytes = std::max<int64_t>(PhysicalMemoryBytes() / 2, int64_t{2} << 30);
  }
}

WorkerEvaluator::~WorkerEvaluator() { process_.KillAndReap(); }

void WorkerEvaluator::Abort() { process_.Abort(); }

Status WorkerEvaluator::EnsureWorker() {
  if (restart_.exchange(false) && process_.pid() > 0) {
    spdlog::info("worker restarted: kernel folders reloaded");
    process_.KillAndReap();
  }
  if (process_.pid() > 0 && worker_isa_ != wanted_isa_) {
    spdlog::debug("worker restarted for isa={} (was {})", wanted_isa_.empty() ? "host" : wanted_isa_,
                  worker_isa_.empty() ? "host" : worker_isa_);
    process_.KillAndReap();
  }
  const pid_t pid = process_.pid();
  if (pid > 0) {
    // A worker that died while idle (killed by an operator, say) is not the next config's
    // fault: notice it here, reap it and start a fresh one.
    if (const std::optional<int> status = process_.Exited()) {
      spdlog::warn("worker died while idle pid={} status={}", pid, *status);
      process_.KillAndReap();
    } else {
      return {};
    }
  }
  return Spawn();
}

Status WorkerEvaluator::Spawn() {
  const double start_s = NowSeconds();
  ++costs_.spawns;
  auto s = SpawnAndAwait();
  const double took_s = NowSeconds() - start_s;
  costs_.spawn_s += took_s;
  spawn_in_request_s_ += took_s;
  return s;
}

Status WorkerEvaluator::SpawnAndAwait() {
  if (resolved_path_.empty()) {
    auto path = LocateWorker(options_.worker_path);
    if (!path) return std::unexpected(path.error());
    resolved_path_ = *path;
  }
  const WorkerCommand command{resolved_path_, options_.memory_limit_bytes, options_.sched_idle, options_.kernel_dirs,
                              wanted_isa_};
  if (auto s = process_.Spawn(command); !s) return s;
  worker_isa_ = wanted_isa_;
  ++workers_started_;
  if (auto s = AwaitReady(); !s) {
    spdlog::warn("worker not ready pid={} error=\"{}\"", process_.pid(), s.error().message);
    process_.KillAndReap();
    return s;
  }
  return {};
}

Status WorkerEvaluator::AwaitReady() {
  const double deadline_s = NowSeconds() + options_.startup_timeout_s;
  FrameReader reader;
  char buf[4096];
  while (true) {
    const double left_s = deadline_s - NowSeconds();
    if (left_s <= 0) {
      return MakeError(
          ErrorCode::kDeadlineExceeded,
          "worker did not start within " + std::to_string(options_.startup_timeout_s) + " s" + process_.OutputTail());
    }
    pollfd fds[2];
    nfds_t n = 0;
    fds[n++] = pollfd{process_.channel_fd(), POLLIN, 0};
    if (process_.output_fd() >= 0) fds[n++] = pollfd{process_.output_fd(), POLLIN, 0};
    if (poll(fds, n, static_cast<int>(left_s * 1000.0) + 1) < 0 && errno != EINTR) {
      return MakeError(ErrorCode::kUnavailable, std::string("poll failed: ") + std::strerror(errno));
    }
    process_.DrainOutput();
    const ssize_t r = recv(process_.channel_fd(), buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return MakeError(ErrorCode::kUnavailable, "worker exited during start-up" + process_.OutputTail());
    }
    if (r > 0) reader.Append(buf, static_cast<size_t>(r));
    auto payload = reader.Next();
    if (!payload) return MakeError(ErrorCode::kUnavailable, "protocol error at start-up: " + payload.error().message);
    if (!*payload) continue;
    auto hello = DecodeResponse(**payload);
    if (!hello || !hello->ready || !reader.empty()) {
      return MakeError(ErrorCode::kUnavailable, "worker did not say it was ready (protocol mismatch?)");
    }
    return {};
  }
}

WorkerEvaluator::Exchange WorkerEvaluator::RoundTrip(const WorkerRequest& request, double timeout_s) {
  const double began_s = NowSeconds();
  spawn_in_request_s_ = 0;
  Exchange ex = RoundTripOnce(request, timeout_s);
  ex.wall_s = NowSeconds() - began_s;
  // Spawn time is counted by Spawn; of the rest, the worker's own phases are in its response
  // and what remains is the channel (encoding, the socket, scheduling the two processes). A
  // request without a verdict is time the bad config took.
  const double rest_s = std::max(0.0, ex.wall_s - spawn_in_request_s_);
  if (ex.ok) {
    costs_ += ex.response.costs;
    costs_.transport_s += std::max(0.0, rest_s - ex.response.costs.Total());
  } else {
    costs_.lost_s += rest_s;
  }
  return ex;
}

WorkerEvaluator::Exchange WorkerEvaluator::RoundTripOnce(const WorkerRequest& request, double timeout_s) {
  Exchange ex;
  const std::string frame = Frame(EncodeRequest(request));
  process_.ClearAborted();
  process_.ClearOutput();  // a detail quotes only what the worker printed for this request
  for (int attempt = 0;; ++attempt) {
    if (auto s = EnsureWorker(); !s) {
      ex.detail = s.error().message;
      return ex;
    }
    size_t off = 0;
    while (off < frame.size()) {
      const ssize_t n = send(process_.channel_fd(), frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    if (off == frame.size()) break;
    process_.KillAndReap();  // it died between requests; one fresh worker gets the request
    if (attempt == 1) {
      ex.detail = "cannot send the request to a fresh worker";
      return ex;
    }
  }

  const double start_s = NowSeconds();
  double deadline_s = start_s + timeout_s;
  // The limit charges the worker for time it ran or waited on something, not for time a busy
  // machine kept it off the CPU: on reaching the deadline it is extended by the run-queue wait
  // the worker accumulated since the request was sent. On an idle machine that is ~0 and the
  // limit is plain wall time; a spinning config still runs out of it.
  const pid_t pid = process_.pid();
  const double starved_at_start_s = StarvedSeconds(pid);
  last_starved_s_ = 0;
  FrameReader reader;
  bool exited = false;
  while (true) {
    if (process_.aborted()) {
      process_.KillAndReap();
      ex.detail = "aborted: the evaluator was stopped while this config ran";
      return ex;
    }
    double left_s = deadline_s - NowSeconds();
    if (left_s <= 0 && !exited) {
      const double starved_s = StarvedSeconds(pid) - starved_at_start_s;
      if (starved_s > last_starved_s_ + 1e-3) {
        deadline_s += starved_s - last_starved_s_;
        last_starved_s_ = starved_s;
        left_s = deadline_s - NowSeconds();
      }
    }
    if (left_s <= 0) {
      process_.KillAndReap();
      ex.outcome = Outcome::kTimeout;
      char buf[160];
      std::snprintf(buf, sizeof buf, "no verdict within %.3f s; worker killed (SIGKILL)", timeout_s);
      if (last_starved_s_ > 0.01) {
        std::snprintf(buf + std::strlen(buf), sizeof buf - std::strlen(buf),
                      " (limit extended by the %.3f s it spent waiting for a CPU)", last_starved_s_);
      }
      ex.detail = buf;
      return ex;
    }
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = pollfd{process_.channel_fd(), POLLIN, 0};
    if (process_.output_fd() >= 0) fds[n++] = pollfd{process_.output_fd(), POLLIN, 0};
    if (process_.pidfd() >= 0 && !exited) fds[n++] = pollfd{process_.pidfd(), POLLIN, 0};
    // Without a pidfd, wake every 20 ms to notice an exit; with one, the deadline is the bound.
    const int wait_ms = static_cast<int>(std::min(left_s * 1000.0, process_.pidfd() >= 0 ? 1000.0 : 20.0)) + 1;
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
      process_.KillAndReap();
      ex.detail = std::string("poll failed: ") + std::strerror(errno);
      return ex;
    }
    process_.DrainOutput();

    bool channel_eof = false;
    char buf[65536];
    while (true) {
      const ssize_t r = recv(process_.channel_fd(), buf, sizeof buf, MSG_DONTWAIT);
      if (r > 0) {
        reader.Append(buf, static_cast<size_t>(r));
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      channel_eof = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
      break;
    }
    auto payload = reader.Next();
    if (!payload) {
      process_.KillAndReap();
      ex.detail = "protocol error: " + payload.error().message;
      return ex;
    }
    if (*payload) {
      auto response = DecodeResponse(**payload);
      if (!response) {
        process_.KillAndReap();
        ex.detail = "protocol error: " + response.error().ToString();
        return ex;
      }
      if (response->fatal == "out_of_memory") {
        bool timed_out = false;
        process_.WaitExit(deadline_s, timed_out);
        ex.outcome = Outcome::kOutOfMemory;
        ex.detail = "allocation failed in the worker (memory limit " +
                    std::to_string(options_.memory_limit_bytes >> 20) + " MiB)";
        return ex;
      }
      if (!response->error.empty()) {
        ex.detail = "worker refused the request: " + response->error;
        return ex;  // the worker itself is fine; keep it
      }
      if (response->results.size() != request.configs.size()) {
        process_.KillAndReap();
        ex.detail = "protocol error: " + std::to_string(response->results.size()) + " results for " +
                    std::to_string(request.configs.size()) + " configs";
        return ex;
      }
      ex.ok = true;
      ex.response = std::move(*response);
      return ex;
    }
    if (process_.pidfd() >= 0 && !exited) {
      pollfd p{process_.pidfd(), POLLIN, 0};
      exited = poll(&p, 1, 0) == 1;
      // Its end of the channel is closed now; the next recv sees any last bytes, then EOF.
      if (exited) continue;
    }
    if (!channel_eof) continue;

    // No verdict and the channel is closed: the worker is dying or dead. Collect how, allowing
    // 0.5 s past the deadline for an exit already under way (a loaded machine can take that
    // long to finish tearing a process down).
    bool timed_out = false;
    const int status = process_.WaitExit(std::max(deadline_s, NowSeconds() + 0.5), timed_out);
    const std::string tail = process_.OutputTail();
    if (process_.aborted()) {
      ex.detail = "aborted: the evaluator was stopped while this config ran";
    } else if (timed_out) {
      ex.outcome = Outcome::kTimeout;
      ex.detail = "worker closed its channel without a verdict and was still running at the limit; killed" + tail;
    } else if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      ex.outcome = Outcome::kCrashed;
      ex.detail = SignalName(sig) + " (worker killed by signal " + std::to_string(sig) + ")";
      // Nothing here sends SIGKILL except the timeout path above; the usual other sender is
      // the kernel's OOM killer when RLIMIT_AS is above what the machine can back.
      if (sig == SIGKILL) ex.detail += "; not sent by blocktune, possibly the kernel's OOM killer";
      ex.detail += tail;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerExitOutOfMemory) {
      ex.outcome = Outcome::kOutOfMemory;
      ex.detail = "allocation failed in the worker (memory limit " + std::to_string(options_.memory_limit_bytes >> 20) +
                  " MiB)";
    } else {
      ex.detail = "worker exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                  " without a verdict" + tail;
    }
    return ex;
  }
}

namespace {

// An external kernel's runner enforces its own per-config limit inside the worker (external/
// runner.h: runner.timeout_s, else 600 s, plus a start-up allowance for a fresh runner, per
// timing attempt); the worker's limit only has to be longer, so the runner's verdict, with its
// log, is what gets recorded. Flops and bytes of an external kernel say nothing about its cost.
double RunnerTimeout(const EvalRequest& request, size_t requests) {
  const RunnerSpec* runner = request.spec->runner();
  const double per = runner->timeout_s > 0 ? runner->timeout_s : 600;
  return 30 + 20 + per * static_cast<double>(requests);
}

}  // namespace

void WorkerEvaluator::Measure(const EvalRequest& request, const Config& config, Measurement& m) {
  wanted_isa_ = request.isa;
  WorkerRequest wr{RequestKind::kMeasure,
                   std::string(request.spec->name()),
                   request.problem,
                   request.threads,
                   request.seed,
                   request.timing,
                   {config}};
  const double timeout_s = options_.timeout_s > 0 ? options_.timeout_s
                           : request.spec->runner() != nullptr
                               ? RunnerTimeout(request, 1 + std::max(0, request.timing.max_retries))
                               : DefaultTimeout(request, 1, options_.min_timeout_s);
  Exchange ex = RoundTrip(wr, timeout_s);
  if (!ex.ok) {
    m.outcome = ex.outcome;
    m.detail = std::move(ex.detail);
    spdlog::warn("config failed in worker kernel={} config={} outcome={} detail=\"{}\"", request.spec->name(),
                 config.ToString(), OutcomeName(m.outcome), m.detail);
    return;
  }
  CopyVerdict(ex.response.results.front(), m);
  if (!OutcomeKeepsWorker(m.outcome)) process_.KillAndReap();
}

std::vector<Measurement> WorkerEvaluator::MeasureInterleaved(const EvalRequest& request,
                                                             const std::vector<Config>& configs) {
  wanted_isa_ = request.isa;
  std::vector<Measurement> out(configs.size());
  if (configs.empty()) return out;
  WorkerRequest wr{RequestKind::kMeasureInterleaved,
                   std::string(request.spec->name()),
                   request.problem,
                   request.threads,
                   request.seed,
                   request.timing,
                   configs};
  const double timeout_s =
      options_.timeout_s > 0 ? options_.timeout_s * static_cast<double>(configs.size())
      : request.spec->runner() != nullptr
          ? RunnerTimeout(request, configs.size() * static_cast<size_t>(std::max(1, request.timing.repetitions)))
          : DefaultTimeout(request, configs.size(), options_.min_timeout_s);
  Exchange ex = RoundTrip(wr, timeout_s);
  if (ex.ok) {
    bool keep = true;
    for (size_t i = 0; i < configs.size(); ++i) {
      CopyVerdict(ex.response.results[i], out[i]);
      keep = keep && OutcomeKeepsWorker(out[i].outcome);
    }
    if (!keep) process_.KillAndReap();
    return out;
  }
  if (configs.size() == 1) {
    out[0].outcome = ex.outcome;
    out[0].detail = std::move(ex.detail);
    return out;
  }
  // Which config killed the batch is unknown; alone, each one answers for itself.
  spdlog::warn("interleaved batch failed outcome={} detail=\"{}\"; re-measuring {} configs one by one",
               OutcomeName(ex.outcome), ex.detail, configs.size());
  for (size_t i = 0; i < configs.size(); ++i) out[i] = MeasureInterleaved(request, {configs[i]}).front();
  return out;
}

}  // namespace blocktune::tuner::isolation

