// WorkerProcess and the process helpers; see worker_process.h.
#include "tuner/isolation/worker_process.h"

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

#include "blocktune/tables/host_cpu.h"
#include "tuner/isolation/protocol.h"

extern char** environ;

namespace blocktune::tuner::isolation {
namespace {

// Enough of the worker's stdout/stderr to show why it died ("terminate called after ...",
// a sanitizer report's first lines) without keeping a flood in memory.
constexpr size_t kOutputTailBytes = 4096;
// How much of that tail goes into an outcome's detail.
constexpr size_t kDetailTailChars = 300;

// Moves `fd` to a number >= 10 (close-on-exec), so the spawn's dup2 onto 1, 2 or 3 always
// changes the number and thereby clears close-on-exec on the copy the worker gets.
int MoveHigh(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return high;
}

}  // namespace

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

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

Status WorkerProcess::Spawn(const WorkerCommand& command) {
  std::string path = command.path;
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
  posix_spawn_file_actions_adddup2(&actions, child_channel, kWorkerChannelFd);
  // Whatever the daemon holds (SQLite files, listening and client sockets) stays behind, even
  // descriptors opened without O_CLOEXEC by a library.
  posix_spawn_file_actions_addclosefrom_np(&actions, kWorkerChannelFd + 1);

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
  const std::string limit = std::to_string(std::max<int64_t>(command.memory_limit_bytes, 0));
  std::vector<char*> argv = {path.data(), const_cast<char*>("--parent-pid"), const_cast<char*>(parent.c_str()),
                             const_cast<char*>("--memory-limit-bytes"), const_cast<char*>(limit.c_str())};
  if (command.sched_idle) argv.push_back(const_cast<char*>("--sched-idle"));
  for (const std::string& dir : command.kernel_dirs) {
    argv.push_back(const_cast<char*>("--kernel-dir"));
    argv.push_back(const_cast<char*>(dir.c_str()));
  }
  argv.push_back(nullptr);
  // The daemon's environment minus its API token: a worker runs kernels, not HTTP requests.
  std::vector<char*> env;
  // A request's ISA level replaces the daemon's own BLOCKTUNE_ISA, if any.
  const std::string isa_var = std::string(tables::kIsaEnvVar) + "=";
  const std::string isa_entry = isa_var + command.isa;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "BLOCKTUNE_TOKEN=", 16) == 0) continue;
    if (!command.isa.empty() && std::strncmp(*e, isa_var.c_str(), isa_var.size()) == 0) continue;
    env.push_back(*e);
  }
  if (!command.isa.empty()) env.push_back(const_cast<char*>(isa_entry.c_str()));
  env.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(child_channel);
  close(child_output);
  if (rc != 0) {
    close(sv[0]);
    close(out[0]);
    return MakeError(ErrorCode::kUnavailable, "cannot start worker " + path + ": " + std::strerror(rc));
  }
  channel_fd_ = sv[0];
  output_fd_ = out[0];
  fcntl(output_fd_, F_SETFL, fcntl(output_fd_, F_GETFL) | O_NONBLOCK);
  // glibc 2.36 declares pidfd_open without C linkage for C++; the raw syscall is the same call.
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // -1 before Linux 5.3: polling instead
  output_tail_.clear();
  {
    std::lock_guard lock(mu_);
    pid_ = pid;
  }
  spdlog::debug("worker started pid={} path={} memory_limit_bytes={}", pid, path, limit);
  return {};
}

std::optional<int> WorkerProcess::Exited() const {
  const pid_t pid = pid_.load();
  if (pid <= 0) return std::nullopt;
  siginfo_t info{};
  if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
    return info.si_status;
  }
  return std::nullopt;
}

void WorkerProcess::Abort() {
  std::lock_guard lock(mu_);
  const pid_t pid = pid_.load();
  if (pid > 0) {
    aborted_ = true;
    kill(pid, SIGKILL);  // not yet reaped (reaping clears pid_ under mu_), so not a reused pid
  }
}

void WorkerProcess::CloseDescriptors() {
  for (int* fd : {&channel_fd_, &output_fd_, &pidfd_}) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
  }
}

int WorkerProcess::KillAndReap() {
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

int WorkerProcess::WaitExit(double deadline_s, bool& timed_out) {
  timed_out = false;
  while (true) {
    if (Exited()) {
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

void WorkerProcess::DrainOutput() {
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

std::string WorkerProcess::OutputTail() const {
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

}  // namespace blocktune::tuner::isolation
