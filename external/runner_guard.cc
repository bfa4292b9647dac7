// The runner's guard process; see runner_guard.h.
#include "external/runner_guard.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>

namespace blocktune::external {
namespace {

// getdents64's record; glibc's struct dirent is not promised to match it.
struct LinuxDirent64 {
  ino64_t d_ino;
  off64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

void WriteError(const char* what) {
  (void)!write(2, what, strlen(what));
  const char* err = strerror(errno);
  (void)!write(2, err, strlen(err));
  (void)!write(2, "\n", 1);
}

// "/proc/<pid>/stat" into `out` (64 bytes is plenty for a pid).
void StatPath(pid_t pid, char* out) {
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(pid); n == 0 || v > 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  const char head[] = "/proc/";
  char* p = out;
  for (const char* h = head; *h; ++h) *p++ = *h;
  while (n > 0) *p++ = digits[--n];
  for (const char* t = "/stat"; *t; ++t) *p++ = *t;
  *p = '\0';
}

long ParseLong(const char*& p) {
  while (*p == ' ') ++p;
  long v = 0;
  bool neg = *p == '-';
  if (neg) ++p;
  while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
  return neg ? -v : v;
}

// SIGKILLs every live process whose parent or process group is this guard (zombies are only
// counted once reaped); returns how many live ones it found. One pass over /proc: a few hundred
// entries, well under a millisecond.
int KillTree(pid_t self) {
  const int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int live = 0;
  alignas(8) char buf[8192];
  while (true) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const LinuxDirent64*>(buf + off);
      off += d->d_reclen;
      const char* name = d->d_name;
      if (*name < '1' || *name > '9') continue;
      const char* q = name;
      const pid_t pid = static_cast<pid_t>(ParseLong(q));
      if (*q != '\0' || pid == self) continue;
      char path[64];
      StatPath(pid, path);
      const int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      char stat[512];
      const ssize_t got = read(fd, stat, sizeof stat - 1);
      close(fd);
      if (got <= 0) continue;
      stat[got] = '\0';
      // "pid (comm) S ppid pgrp ...": comm may hold ')' and spaces, so the last ')' ends it.
      const char* close_paren = nullptr;
      for (const char* c = stat; *c; ++c)
        if (*c == ')') close_paren = c;
      if (close_paren == nullptr || close_paren[1] == '\0' || close_paren[2] == '\0') continue;
      const char state = close_paren[2];
      const char* rest = close_paren + 3;
      const long ppid = ParseLong(rest);
      const long pgrp = ParseLong(rest);
      if (ppid != self && pgrp != self) continue;
      if (state == 'Z' || state == 'X') continue;
      kill(pid, SIGKILL);
      ++live;
    }
  }
  close(dir);
  return live;
}

// Reaps every exited child; records the runner's status. True while any child is left.
bool ReapChildren(pid_t runner, int& status, bool& runner_done) {
  while (true) {
    int st = 0;
    const pid_t p = waitpid(-1, &st, WNOHANG);
    if (p > 0) {
      if (p == runner && !runner_done) {
        status = st;
        runner_done = true;
      }
      continue;
    }
    return p == 0;  // 0: children left, none exited; -1 (ECHILD): none left
  }
}

[[noreturn]] void ExecRunner(pid_t guard, const GuardedExec& e) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != guard) _exit(127);
  signal(SIGPIPE, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  const int a = fcntl(e.stdin_fd, F_DUPFD, 10), b = fcntl(e.log_fd, F_DUPFD, 10), c = fcntl(e.answer_fd, F_DUPFD, 10);
  if (a < 0 || b < 0 || c < 0 || dup2(a, 0) < 0 || dup2(b, 1) < 0 || dup2(b, 2) < 0 || dup2(c, 3) < 0) _exit(127);
  syscall(SYS_close_range, 4u, ~0u, 0u);
  if (chdir(e.working_dir) != 0) {
    WriteError("runner: cannot enter the spec's directory: ");
    _exit(127);
  }
  execvp(e.argv[0], e.argv);
  WriteError("runner: exec failed: ");
  _exit(127);
}

}  // namespace

void RunGuard(pid_t host, const GuardedExec& exec) {
  setpgid(0, 0);
  // SIGTERM and SIGCHLD are taken with sigtimedwait, never by a handler; defaults first, as the
  // host may ignore SIGTERM (an ignored signal is discarded even while blocked).
  signal(SIGTERM, SIG_DFL);
  signal(SIGCHLD, SIG_DFL);
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGCHLD);
  sigprocmask(SIG_SETMASK, &waited, nullptr);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != host) _exit(127);  // the host died before the prctl
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t self = getpid();
  const pid_t runner = fork();
  if (runner < 0) {
    WriteError("runner: fork failed: ");
    _exit(127);
  }
  if (runner == 0) ExecRunner(self, exec);
  // The guard keeps no descriptor: the runner's fd 3 and stdin must close when it does.
  syscall(SYS_close_range, 0u, ~0u, 0u);

  int status = 0;
  bool runner_done = false;
  // 100 ms between looks at the host as well: PR_SET_PDEATHSIG follows the forking thread, and
  // a host thread that ends while its process lives would otherwise go unnoticed.
  const timespec tick{0, 100'000'000};
  while (true) {
    ReapChildren(runner, status, runner_done);
    if (runner_done || getppid() != host) break;
    if (sigtimedwait(&waited, nullptr, &tick) == SIGTERM) break;
  }
  // Everything left goes: the runner (when told to stop), its group, and whatever it started
  // and was reparented here. Each pass kills what it finds; orphans of those come next pass.
  // 3000 passes of >= 1 ms bound a process that will not die (uninterruptible sleep).
  const timespec pause{0, 1'000'000};
  for (int pass = 0; pass < 3000; ++pass) {
    if (!runner_done) kill(runner, SIGKILL);
    const int live = KillTree(self);
    const bool children_left = ReapChildren(runner, status, runner_done);
    if (live == 0 && !children_left) break;
    nanosleep(&pause, nullptr);
  }
  if (!runner_done) _exit(128 + SIGKILL);  // told to stop before the runner ended
  if (WIFSIGNALED(status)) {
    // Ends the same way, so the host reports "was killed by SIGSEGV"; no core of the guard.
    const int sig = WTERMSIG(status);
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(self, sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 127);
}

}  // namespace blocktune::external
