// WorkerEvaluator implementation; see worker_evaluator.h.
#include "tuner/isolation/worker_evaluator.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <spdlog/spdlog.h>

extern char** environ;

namespace blocktune::tuner {
namespace {

using isolation::RequestKind;
using isolation::WorkerRequest;
using isolation::WorkerResponse;

// Enough of the worker's stdout/stderr to show why it died ("terminate called after ...",
// a sanitizer report's first lines) without keeping a flood in memory.
constexpr size_t kOutputTailBytes = 4096;
// How much of that tail goes into an outcome's detail.
constexpr size_t kDetailTailChars = 300;

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Moves `fd` to a number >= 10 (close-on-exec), so the spawn's dup2 onto 1, 2 or 3 always
// changes the number and thereby clears close-on-exec on the copy the worker gets.
int MoveHigh(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return high;
}

// Seconds the worker's threads spent runnable but waiting for a CPU (the largest over its
// threads; /proc/<pid>/task/<tid>/schedstat field 2, in ns). 0 if the kernel does not keep it.
double StarvedSeconds(pid_t pid) {
  std::error_code ec;
  double worst_ns = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream f(task.path() / "schedstat");
    double on_cpu_ns = 0, waiting_ns = 0;
    if (f >> on_cpu_ns >> waiting_ns) worst_ns = std::max(worst_ns, waiting_ns);
  }
  return worst_ns * 1e-9;
}

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
}

}  // namespace

double DefaultTimeout(const EvalRequest& request, size_t configs, double min_timeout_s) {
  const double call_s = std::max(request.spec->Flops(request.problem), request.spec->Bytes(request.problem)) / 1e9;
  const double repetition_s = std::max(request.timing.min_repetition_ns * 1e-9, call_s);
  const double per_config_s = call_s + (3.0 + request.timing.repetitions) * repetition_s;
  return std::max(min_timeout_s, 10.0 * static_cast<double>(configs) * per_config_s);
}

int64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_bytes = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_bytes <= 0) return 0;
  return static_cast<int64_t>(pages) * page_bytes;
}

Result<std::string> LocateWorker(const std::string& path) {
  std::string p = path;
  if (p.empty()) {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return MakeError(ErrorCode::kFailedPrecondition, "cannot read /proc/self/exe: " + ec.message());
    p = (self.parent_path() / "blocktune-worker").string();
#if defined(BLOCKTUNE_BUILD_TREE_WORKER)
    // Not installed side by side (a program elsewhere in the build tree): this build's worker.
    if (access(p.c_str(), X_OK) != 0 && access(BLOCKTUNE_BUILD_TREE_WORKER, X_OK) == 0) p = BLOCKTUNE_BUILD_TREE_WORKER;
#endif
  }
  if (access(p.c_str(), X_OK) != 0) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "worker executable " + p + " is missing or not executable: " + std::strerror(errno), "worker");
  }
  return p;
}

std::string SignalName(int signal) {
  switch (signal) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGILL: return "SIGILL";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
    default: return "signal " + std::to_string(signal);
  }
}

WorkerEvaluator::WorkerEvaluator(WorkerOptions options) : options_(std::move(options)) {
  if (options_.memory_limit_bytes == 0) {
    // Half the machine leaves the daemon, the page cache and other work room; 2 GiB keeps a
    // small machine usable for the shipped kernels' largest verification problems.
    options_.memory_limit_bytes = std::max<int64_t>(PhysicalMemoryBytes() / 2, int64_t{2} << 30);
  }
}

WorkerEvaluator::~WorkerEvaluator() { KillAndReap(); }

void WorkerEvaluator::Abort() {
  std::lock_guard lock(mu_);
  const pid_t pid = pid_.load();
  if (pid > 0) {
    aborted_ = true;
    kill(pid, SIGKILL);  // not yet reaped (reaping clears pid_ under mu_), so not a reused pid
  }
}

void WorkerEvaluator::CloseDescriptors() {
  for (int* fd : {&channel_fd_, &output_fd_, &pidfd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

int WorkerEvaluator::KillAndReap() {
  int status = -1;
  {
    std::lock_guard lock(mu_);
    const pid_t pid = pid_.load();
    if (pid > 0) {
      kill(pid, SIGKILL);  // harmless if it already exited: it is a zombie until reaped below
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = 0;
    }
  }
  CloseDescriptors();
  return status;
}

Status WorkerEvaluator::EnsureWorker() {
  if (restart_.exchange(false) && pid_.load() > 0) {
    spdlog::info("worker restarted: kernel folders reloaded");
    KillAndReap();
  }
  if (pid_.load() > 0 && worker_isa_ != wanted_isa_) {
    spdlog::debug("worker restarted for isa={} (was {})", wanted_isa_.empty() ? "host" : wanted_isa_,
                  worker_isa_.empty() ? "host" : worker_isa_);
    KillAndReap();
  }
  const pid_t pid = pid_.load();
  if (pid > 0) {
    // A worker that died while idle (killed by an operator, say) is not the next config's
    // fault: notice it here, reap it and start a fresh one.
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      spdlog::warn("worker died while idle pid={} status={}", pid, info.si_status);
      KillAndReap();
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
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    return MakeError(ErrorCode::kUnavailable, std::string("socketpair: ") + std::strerror(errno));
  }
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(sv[0]);
    close(sv[1]);
    return MakeError(ErrorCode::kUnavailable, std::string("pipe2: ") + std::strerror(errno));
  }
  const int child_channel = MoveHigh(sv[1]);
  const int child_output = MoveHigh(out[1]);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, child_output, 1);
  posix_spawn_file_actions_adddup2(&actions, child_output, 2);
  posix_spawn_file_actions_adddup2(&actions, child_channel, isolation::kWorkerChannelFd);
  // Whatever the daemon holds (SQLite files, listening and client sockets) stays behind, even
  // descriptors opened without O_CLOEXEC by a library.
  posix_spawn_file_actions_addclosefrom_np(&actions, isolation::kWorkerChannelFd + 1);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The daemon blocks SIGINT/SIGTERM in every thread (one thread sigwaits for them) and may
  // ignore SIGPIPE; the worker starts with an empty mask and default dispositions.
  sigset_t mask;
  sigemptyset(&mask);
  posix_spawnattr_setsigmask(&attr, &mask);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGSEGV, SIGABRT, SIGILL, SIGBUS, SIGFPE, SIGXCPU,
                SIGXFSZ, SIGALRM, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, s);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  const std::string parent = std::to_string(getpid());
  const std::string limit = std::to_string(std::max<int64_t>(options_.memory_limit_bytes, 0));
  std::vector<char*> argv = {resolved_path_.data(), const_cast<char*>("--parent-pid"),
                             const_cast<char*>(parent.c_str()), const_cast<char*>("--memory-limit-bytes"),
                             const_cast<char*>(limit.c_str())};
  if (options_.sched_idle) argv.push_back(const_cast<char*>("--sched-idle"));
  for (const std::string& dir : options_.kernel_dirs) {
    argv.push_back(const_cast<char*>("--kernel-dir"));
    argv.push_back(const_cast<char*>(dir.c_str()));
  }
  argv.push_back(nullptr);
  // The daemon's environment minus its API token: a worker runs kernels, not HTTP requests.
  std::vector<char*> env;
  // A request's ISA level replaces the daemon's own BLOCKTUNE_ISA, if any.
  const std::string isa_var = std::string(tables::kIsaEnvVar) + "=";
  const std::string isa_entry = isa_var + wanted_isa_;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "BLOCKTUNE_TOKEN=", 16) == 0) continue;
    if (!wanted_isa_.empty() && std::strncmp(*e, isa_var.c_str(), isa_var.size()) == 0) continue;
    env.push_back(*e);
  }
  if (!wanted_isa_.empty()) env.push_back(const_cast<char*>(isa_entry.c_str()));
  env.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, resolved_path_.c_str(), &actions, &attr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(child_channel);
  close(child_output);
  if (rc != 0) {
    close(sv[0]);
    close(out[0]);
    return MakeError(ErrorCode::kUnavailable, "cannot start worker " + resolved_path_ + ": " + std::strerror(rc));
  }
  channel_fd_ = sv[0];
  output_fd_ = out[0];
  worker_isa_ = wanted_isa_;
  fcntl(output_fd_, F_SETFL, fcntl(output_fd_, F_GETFL) | O_NONBLOCK);
  // glibc 2.36 declares pidfd_open without C linkage for C++; the raw syscall is the same call.
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1 before Linux 5.3: polling instead
  output_tail_.clear();
  {
    std::lock_guard lock(mu_);
    pid_ = pid;
  }
  ++workers_started_;
  spdlog::debug("worker started pid={} path={} memory_limit_bytes={}", pid, resolved_path_, limit);
  if (auto s = AwaitReady(); !s) {
    spdlog::warn("worker not ready pid={} error=\"{}\"", pid, s.error().message);
    KillAndReap();
    return s;
  }
  return {};
}

Status WorkerEvaluator::AwaitReady() {
  const double deadline_s = NowSeconds() + options_.startup_timeout_s;
  isolation::FrameReader reader;
  char buf[4096];
  while (true) {
    const double left_s = deadline_s - NowSeconds();
    if (left_s <= 0) {
      return MakeError(
          ErrorCode::kDeadlineExceeded,
          "worker did not start within " + std::to_string(options_.startup_timeout_s) + " s" + OutputTail());
    }
    pollfd fds[2];
    nfds_t n = 0;
    fds[n++] = pollfd{channel_fd_, POLLIN, 0};
    if (output_fd_ >= 0) fds[n++] = pollfd{output_fd_, POLLIN, 0};
    if (poll(fds, n, static_cast<int>(left_s * 1000.0) + 1) < 0 && errno != EINTR) {
      return MakeError(ErrorCode::kUnavailable, std::string("poll failed: ") + std::strerror(errno));
    }
    DrainOutput();
    const ssize_t r = recv(channel_fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return MakeError(ErrorCode::kUnavailable, "worker exited during start-up" + OutputTail());
    }
    if (r > 0) reader.Append(buf, static_cast<size_t>(r));
    auto payload = reader.Next();
    if (!payload) return MakeError(ErrorCode::kUnavailable, "protocol error at start-up: " + payload.error().message);
    if (!*payload) continue;
    auto hello = isolation::DecodeResponse(**payload);
    if (!hello || !hello->ready || !reader.empty()) {
      return MakeError(ErrorCode::kUnavailable, "worker did not say it was ready (protocol mismatch?)");
    }
    return {};
  }
}

void WorkerEvaluator::DrainOutput() {
  if (output_fd_ < 0) return;
  char buf[65536];
  while (true) {
    const ssize_t n = read(output_fd_, buf, sizeof buf);
    if (n > 0) {
      output_tail_.append(buf, static_cast<size_t>(n));
      if (output_tail_.size() > kOutputTailBytes) output_tail_.erase(0, output_tail_.size() - kOutputTailBytes);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {  // the worker closed stdout and stderr, or exited
      close(output_fd_);
      output_fd_ = -1;
    }
    return;
  }
}

std::string WorkerEvaluator::OutputTail() const {
  std::string tail = output_tail_.size() > kDetailTailChars
                         ? output_tail_.substr(output_tail_.size() - kDetailTailChars)
                         : output_tail_;
  for (char& c : tail) {
    if (c == '\n' || c == '\t') c = ' ';
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  while (!tail.empty() && tail.back() == ' ') tail.pop_back();
  return tail.empty() ? "" : "; worker output ends: \"" + tail + "\"";
}

int WorkerEvaluator::WaitExit(double deadline_s, bool& timed_out) {
  timed_out = false;
  const pid_t pid = pid_.load();
  while (true) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return KillAndReap();  // already exited: the kill is a no-op, the reap collects its status
    }
    const double left_s = deadline_s - NowSeconds();
    if (left_s <= 0) {
      timed_out = true;
      return KillAndReap();
    }
    DrainOutput();
    if (pidfd_ >= 0) {
      pollfd p{pidfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(std::min(left_s * 1000.0, 100.0)) + 1);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
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
  const std::string frame = isolation::Frame(isolation::EncodeRequest(request));
  aborted_ = false;
  output_tail_.clear();  // a detail quotes only what the worker printed for this request
  for (int attempt = 0;; ++attempt) {
    if (auto s = EnsureWorker(); !s) {
      ex.detail = s.error().message;
      return ex;
    }
    size_t off = 0;
    while (off < frame.size()) {
      const ssize_t n = send(channel_fd_, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    if (off == frame.size()) break;
    KillAndReap();  // it died between requests; one fresh worker gets the request
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
  const pid_t pid = pid_.load();
  const double starved_at_start_s = StarvedSeconds(pid);
  last_starved_s_ = 0;
  isolation::FrameReader reader;
  bool exited = false;
  while (true) {
    if (aborted_) {
      KillAndReap();
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
      KillAndReap();
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
    fds[n++] = pollfd{channel_fd_, POLLIN, 0};
    if (output_fd_ >= 0) fds[n++] = pollfd{output_fd_, POLLIN, 0};
    if (pidfd_ >= 0 && !exited) fds[n++] = pollfd{pidfd_, POLLIN, 0};
    // Without a pidfd, wake every 20 ms to notice an exit; with one, the deadline is the bound.
    const int wait_ms = static_cast<int>(std::min(left_s * 1000.0, pidfd_ >= 0 ? 1000.0 : 20.0)) + 1;
    if (poll(fds, n, wait_ms) < 0 && errno != EINTR) {
      KillAndReap();
      ex.detail = std::string("poll failed: ") + std::strerror(errno);
      return ex;
    }
    DrainOutput();

    bool channel_eof = false;
    char buf[65536];
    while (true) {
      const ssize_t r = recv(channel_fd_, buf, sizeof buf, MSG_DONTWAIT);
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
      KillAndReap();
      ex.detail = "protocol error: " + payload.error().message;
      return ex;
    }
    if (*payload) {
      auto response = isolation::DecodeResponse(**payload);
      if (!response) {
        KillAndReap();
        ex.detail = "protocol error: " + response.error().ToString();
        return ex;
      }
      if (response->fatal == "out_of_memory") {
        bool timed_out = false;
        WaitExit(deadline_s, timed_out);
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
        KillAndReap();
        ex.detail = "protocol error: " + std::to_string(response->results.size()) + " results for " +
                    std::to_string(request.configs.size()) + " configs";
        return ex;
      }
      ex.ok = true;
      ex.response = std::move(*response);
      return ex;
    }
    if (pidfd_ >= 0 && !exited) {
      pollfd p{pidfd_, POLLIN, 0};
      exited = poll(&p, 1, 0) == 1;
      // Its end of the channel is closed now; the next recv sees any last bytes, then EOF.
      if (exited) continue;
    }
    if (!channel_eof) continue;

    // No verdict and the channel is closed: the worker is dying or dead. Collect how, allowing
    // 0.5 s past the deadline for an exit already under way (a loaded machine can take that
    // long to finish tearing a process down).
    bool timed_out = false;
    const int status = WaitExit(std::max(deadline_s, NowSeconds() + 0.5), timed_out);
    const std::string tail = OutputTail();
    if (aborted_) {
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
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == isolation::kWorkerExitOutOfMemory) {
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
  if (!OutcomeKeepsWorker(m.outcome)) KillAndReap();
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
    if (!keep) KillAndReap();
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

}  // namespace blocktune::tuner
