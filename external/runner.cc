// Runner processes of external kernels; see runner.h for the protocol.
#include "external/runner.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "external/device.h"
#include "external/runner_guard.h"
#include "tuner/timing/paired.h"
#include "tuner/timing/timing.h"

namespace blocktune::external {
namespace {

using nlohmann::json;
using tuner::Measurement;
using tuner::Outcome;

constexpr size_t kMaxLineBytes = 1 << 20;
constexpr size_t kMaxTimes = 100000;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

std::string SignalText(int sig) {
  const char* name = sigabbrev_np(sig);
  return name != nullptr ? std::string("SIG") + name : "signal " + std::to_string(sig);
}

// What one request line got back.
struct Answer {
  bool ok = false;  // a JSON line arrived and parsed
  json body;
  Outcome failure = Outcome::kWorkerLost;
  std::string detail;
};

class RunnerProcess {
 public:
  RunnerProcess() = default;
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;
  ~RunnerProcess() { Kill(); }

  bool running() const { return pid_ > 0; }
  bool fresh() const { return fresh_; }
  const std::string& log() const { return log_; }

  // The device this process measures on (docs/accelerators.md): what its device line said, if
  // it wrote one before its first answer. `answered` is set once an answer arrived.
  bool answered = false;
  bool announced = false;
  tuner::DeviceIdentity device;

  // fork + exec of the runner behind a guard (runner_guard.h): stdin a pipe, stdout and stderr
  // one log pipe, fd 3 the answer pipe; it inherits this process's limits (RLIMIT_AS, core 0).
  // The guard leads a process group the runner's tree inherits and is its subreaper: when the
  // runner exits, times out or is replaced, or this process dies (even by SIGKILL), it kills the
  // group and every orphan reparented to it, so a runner that forks, even a child that calls
  // setsid, leaves nothing running.
  Status Start(const RunnerSpec& spec) {
    Kill();
    log_.clear();
    int in[2], out[2], res[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]);
      return Internal(std::string("pipe: ") + std::strerror(errno));
    }
    if (pipe2(res, O_CLOEXEC) != 0) {
      close(in[0]), close(in[1]), close(out[0]), close(out[1]);
      return Internal(std::string("pipe: ") + std::strerror(errno));
    }
    std::vector<char*> argv;
    for (const auto& a : spec.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const std::string dir = spec.working_dir;
    const GuardedExec exec{in[0], out[1], res[1], dir.c_str(), argv.data()};
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) {
      for (int fd : {in[0], in[1], out[0], out[1], res[0], res[1]}) close(fd);
      return Internal(std::string("fork: ") + std::strerror(errno));
    }
    if (pid == 0) RunGuard(parent, exec);  // async-signal-safe calls only until exec
    close(in[0]), close(out[1]), close(res[1]);
    setpgid(pid, pid);  // the guard sets it itself too: neither side races the other
    pid_ = pid;
    pgid_ = pid;
    stdin_fd_ = in[1];
    log_fd_ = out[0];
    result_fd_ = res[0];
    fcntl(log_fd_, F_SETFL, O_NONBLOCK);
    fcntl(result_fd_, F_SETFL, O_NONBLOCK);
    fresh_ = true;
    buffer_.clear();
    answered = false;
    announced = false;
    device = {};
    return {};
  }

  // Writes one request line; false if the runner no longer reads (it exited).
  bool Send(const std::string& line, bool close_after) {
    const char* p = line.data();
    size_t left = line.size();
    while (left > 0) {
      const ssize_t n = write(stdin_fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      left -= static_cast<size_t>(n);
    }
    if (close_after) {
      close(stdin_fd_);
      stdin_fd_ = -1;
    }
    return true;
  }

  // Waits for one line on fd 3 until `deadline`; drains the log meanwhile.
  Answer Receive(double deadline, double timeout_s) {
    Answer a;
    fresh_ = false;
    while (true) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        a.body = json::parse(line, nullptr, false);
        if (a.body.is_discarded()) {
          return Garbage("not a JSON line on fd 3: '" + Clip(line) + "'");
        }
        a.ok = true;
        return a;
      }
      if (buffer_.size() > kMaxLineBytes) return Garbage("more than 1 MiB on fd 3 without a newline");
      const double left = deadline - Now();
      if (left <= 0) {
        Kill();
        char buf[160];
        std::snprintf(buf, sizeof buf, "runner gave no answer within %.3g s; killed (SIGKILL)", timeout_s);
        a.failure = Outcome::kTimeout;
        a.detail = buf + LogSuffix();
        return a;
      }
      pollfd fds[2] = {{result_fd_, POLLIN, 0}, {log_fd_, POLLIN, 0}};
      // 200 ms at most between looks at the runner itself (below).
      const int timeout_ms = static_cast<int>(std::min(left * 1000 + 1, 200.0));
      const int r = poll(fds, log_fd_ >= 0 ? 2 : 1, timeout_ms);
      if (r < 0 && errno != EINTR) return Garbage(std::string("poll: ") + std::strerror(errno));
      DrainLog();
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
        char chunk[65536];
        const ssize_t n = read(result_fd_, chunk, sizeof chunk);
        if (n > 0) {
          buffer_.append(chunk, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) {
          // fd 3 closed: the runner exited (or closed it); either way no answer is coming.
          const std::string how = Reap(deadline);
          a.failure = Outcome::kCrashed;
          a.detail = "runner " + how + " without an answer" + LogSuffix();
          return a;
        }
      }
      // A runner that exits while its child holds fd 3 (`sleep 30 &`) sends no EOF: its exit is
      // the answer, not the timeout (peeked with WNOWAIT for Reap; what it wrote is read first).
      siginfo_t info{};
      if (pid_ > 0 && waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid_) {
        char chunk[65536];
        ssize_t n = 0;
        while ((n = read(result_fd_, chunk, sizeof chunk)) > 0) buffer_.append(chunk, static_cast<size_t>(n));
        if (buffer_.find('\n') != std::string::npos) continue;
        const std::string how = Reap(deadline);
        a.failure = Outcome::kCrashed;
        a.detail = "runner " + how + " without an answer" + LogSuffix();
        return a;
      }
    }
  }

  // Waits for a runner whose stdin was closed to exit (a per-config runner), then kills it.
  void Finish() {
    if (pid_ > 0) Reap(Now() + 5);
  }

  // SIGTERM to the guard, which kills the runner's whole tree and exits; SIGKILL to the guard and
  // its group after 2 s (its runner then dies by PR_SET_PDEATHSIG, its group by the kill below).
  void Kill() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      int status = 0;
      const double give_up = Now() + 2;
      pid_t r = 0;
      while ((r = waitpid(pid_, &status, WNOHANG)) == 0 && Now() < give_up) usleep(1000);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        kill(pid_, SIGKILL);
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
      }
      pid_ = 0;
    }
    KillGroup();
    CloseAll();
  }

  std::string LogSuffix() {
    DrainLog();
    if (log_.empty()) return "";
    return "; runner output (last " + std::to_string(std::min(log_.size(), kLogTailBytes)) + " bytes): " + log_;
  }

 private:
  Answer Garbage(const std::string& why) {
    Answer a;
    a.failure = Outcome::kWorkerLost;
    a.detail = "runner protocol error: " + why + LogSuffix();
    Kill();
    return a;
  }

  static std::string Clip(const std::string& s) { return s.size() > 200 ? s.substr(0, 200) + "..." : s; }

  void DrainLog() {
    if (log_fd_ < 0) return;
    char chunk[65536];
    while (true) {
      const ssize_t n = read(log_fd_, chunk, sizeof chunk);
      if (n <= 0) {
        if (n == 0) {
          close(log_fd_);
          log_fd_ = -1;
        }
        return;
      }
      log_.append(chunk, static_cast<size_t>(n));
      if (log_.size() > kLogTailBytes) log_.erase(0, log_.size() - kLogTailBytes);
    }
  }

  // Collects the exit status (killing the runner at `deadline`): "exited with status 3", "was killed by SIGSEGV".
  std::string Reap(double deadline) {
    std::string how = "is gone";
    bool killed = false;
    while (pid_ > 0) {
      int status = 0;
      const pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        if (WIFEXITED(status)) how = "exited with status " + std::to_string(WEXITSTATUS(status));
        if (WIFSIGNALED(status)) how = "was killed by " + SignalText(WTERMSIG(status));
        pid_ = 0;
        break;
      }
      if (r < 0 && errno != EINTR) {
        pid_ = 0;
        break;
      }
      if (Now() > deadline) {
        // The guard's SIGTERM takes the runner's tree with it; SIGKILL if it is not gone in 2 s.
        kill(pid_, killed ? SIGKILL : SIGTERM);
        deadline = Now() + (killed ? 3600 : 2);
        killed = true;
        how = "closed fd 3 and was killed (SIGKILL)";
        continue;
      }
      DrainLog();
      usleep(2000);
    }
    DrainLog();
    KillGroup();
    CloseAll();
    return how;
  }

  // Kills what is left of the runner's process group once the runner itself is reaped. The
  // group id cannot name another group yet: Linux does not reuse a pid while a process group
  // of that id has members, and with none left the kill finds nothing (ESRCH).
  void KillGroup() {
    if (pgid_ > 0) kill(-pgid_, SIGKILL);
    pgid_ = 0;
  }

  void CloseAll() {
    for (int* fd : {&stdin_fd_, &log_fd_, &result_fd_}) {
      if (*fd >= 0) close(*fd);
      *fd = -1;
    }
    buffer_.clear();
  }

  pid_t pid_ = 0;   // the guard (runner_guard.h), whose exit status is the runner's
  pid_t pgid_ = 0;  // the guard's process group (its pid), until killed
  int stdin_fd_ = -1;
  int log_fd_ = -1;
  int result_fd_ = -1;
  bool fresh_ = false;
  std::string buffer_;
  std::string log_;
};

json RequestLine(const tuner::EvalRequest& r, const Config& config, int repetitions) {
  json shape = json::object();
  for (const auto& [n, v] : r.problem.dims.values()) shape[n] = v;
  json cfg = json::object();
  for (const auto& [n, v] : config.values()) cfg[n] = v;
  return json{{"kernel", std::string(r.spec->name())},
              {"dtype", std::string(DTypeName(r.problem.dtype))},
              {"shape", shape},
              {"config", cfg},
              {"min_time_ms", r.timing.min_repetition_ns / 1e6},
              {"repetitions", repetitions},
              {"threads", r.threads}};
}

// The host CPU's key for a request (a runner that announced no device, or a CPU): at the
// request's thread count and ISA level, as the sweep's own key is.
std::string HostKeyFor(const tuner::EvalRequest& r) {
  tables::HostCpu cpu = HostHardware().cpu;
  if (!r.isa.empty()) cpu.isa = r.isa;
  return tables::HardwareKey(cpu, r.threads);
}

// A device line: {"device": {...}} and nothing else.
bool IsDeviceLine(const json& body) { return body.is_object() && body.size() == 1 && body.contains("device"); }

// What one answer says the runner spent: the wall of its timed repetitions and everything else
// it did for the request (build, inputs, warm-up, check, calibration), in seconds; -1 = not
// reported (a runner older than these fields).
struct Spent {
  double timed_s = -1, overhead_s = -1;
};

// Reads a runner's answer into `m` and `spent`; false unless it is a usable set of times (then
// `m` holds the outcome the answer means).
bool Interpret(const json& body, Measurement& m, Spent& spent) {
  if (!body.is_object()) {
    m.outcome = Outcome::kWorkerLost;
    m.detail = "runner protocol error: the answer is not a JSON object";
    return false;
  }
  for (const auto& [field, out] :
       {std::pair{"timed_ms", &spent.timed_s}, std::pair{"overhead_ms", &spent.overhead_s}}) {
    if (!body.contains(field)) continue;
    const json& v = body[field];
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      m.outcome = Outcome::kWorkerLost;
      m.detail = std::string("runner protocol error: ") + field + " holds '" + v.dump().substr(0, 64) +
                 "', not a non-negative number";
      return false;
    }
    *out = v.get<double>() * 1e-3;
  }
  if (body.contains("times_ms")) {
    const json& t = body["times_ms"];
    if (!t.is_array() || t.empty() || t.size() > kMaxTimes) {
      m.outcome = Outcome::kWorkerLost;
      m.detail = "runner protocol error: times_ms must be a non-empty array of at most 100000 numbers";
      return false;
    }
    m.samples_ns.clear();
    for (const json& x : t) {
      if (!x.is_number() || !std::isfinite(x.get<double>()) || x.get<double>() <= 0) {
        m.outcome = Outcome::kWorkerLost;
        m.detail = "runner protocol error: times_ms holds '" + x.dump() + "', not a positive number";
        return false;
      }
      m.samples_ns.push_back(x.get<double>() * 1e6);
    }
    m.outcome = Outcome::kOk;
    return true;
  }
  if (body.contains("outcome") && body["outcome"].is_string()) {
    const std::string o = body["outcome"].get<std::string>();
    std::string message =
        body.contains("message") && body["message"].is_string() ? body["message"].get<std::string>() : "";
    if (message.size() > 4000) message.resize(4000);
    if (o == "invalid") {
      m.outcome = Outcome::kInvalid;
      m.detail = message.empty() ? "the runner rejected the config" : message;
    } else if (o == "compile_failed") {
      m.outcome = Outcome::kCompileFailed;
      m.detail = message.empty() ? "the runner reports a compile failure" : message;
    } else if (o == "runtime_failed") {
      m.outcome = Outcome::kRuntimeFailed;
      m.detail = message.empty() ? "the runner reports a runtime failure" : message;
    } else if (o == "wrong_result") {
      m.outcome = Outcome::kWrongResult;
      m.detail = "wrong_result: " + message;
    } else {
      m.outcome = Outcome::kWorkerLost;
      m.detail = "runner protocol error: unknown outcome '" + o.substr(0, 64) + "'";
    }
    return false;
  }
  m.outcome = Outcome::kWorkerLost;
  m.detail = "runner protocol error: the answer has neither times_ms nor outcome";
  return false;
}

class Runners final : public tuner::RunnerMeasurer {
 public:
  void Measure(const tuner::EvalRequest& request, const Config& config, Measurement& m) override {
    const RunnerSpec& spec = *request.spec->runner();
    // Configs the spec's restrictions exclude never reach the runner.
    if (auto s = request.spec->ValidateConfig(config, request.problem, HostHardware()); !s) {
      m.outcome = Outcome::kInvalid;
      m.detail = s.error().message;
      return;
    }
    int attempts = 0;
    std::vector<double> best;
    double best_timed_s = 0, all_timed_s = 0;
    while (true) {
      ++attempts;
      const double before = costs_.timed_s;
      if (!Ask(request, spec, config, request.timing.repetitions, m)) return;
      const double timed_s = costs_.timed_s - before;
      all_timed_s += timed_s;
      if (best.empty() || tuner::timing::RobustCv(m.samples_ns) < tuner::timing::RobustCv(best)) {
        best = m.samples_ns;
        best_timed_s = timed_s;
      }
      if (tuner::timing::RobustCv(best) <= request.timing.max_cv || attempts > request.timing.max_retries) break;
    }
    // The attempts not kept were retries, not the measurement.
    costs_.timed_s -= all_timed_s - best_timed_s;
    costs_.retry_s += all_timed_s - best_timed_s;
    costs_.retries += static_cast<int64_t>(attempts - 1) * std::max(1, request.timing.repetitions);
    Finish(m, best);
    if (const double spread = tuner::timing::RobustCv(best); spread > request.timing.max_cv) {
      char buf[200];
      std::snprintf(buf, sizeof buf, "robust cv %.3f (cv %.3f) above %.3f after %d timing attempts", spread, m.cv,
                    request.timing.max_cv, attempts);
      m.outcome = Outcome::kUnstable;
      m.detail = buf;
    }
  }

  // Repetition r of every config before repetition r + 1 of any, one-repetition requests in
  // timing::CycleOrder's turn (as in-process rounds): drift in speed hits every config alike.
  std::vector<Measurement> MeasureInterleaved(const tuner::EvalRequest& request,
                                              const std::vector<Config>& configs) override {
    const RunnerSpec& spec = *request.spec->runner();
    std::vector<Measurement> out(configs.size());
    std::vector<std::vector<double>> samples(configs.size());
    std::vector<bool> live(configs.size(), true);
    for (int r = 0; r < std::max(1, request.timing.repetitions); ++r) {
      for (size_t i : tuner::timing::CycleOrder(configs.size(), r)) {
        if (!live[i]) continue;
        if (!Ask(request, spec, configs[i], 1, out[i])) {
          live[i] = false;
          continue;
        }
        samples[i].insert(samples[i].end(), out[i].samples_ns.begin(), out[i].samples_ns.end());
      }
    }
    for (size_t i = 0; i < configs.size(); ++i) {
      if (live[i]) Finish(out[i], samples[i]);
    }
    return out;
  }

  tuner::EvalCosts TakeCosts() override { return std::exchange(costs_, tuner::EvalCosts{}); }

 private:
  static void Finish(Measurement& m, const std::vector<double>& samples) {
    m.outcome = Outcome::kOk;
    m.samples_ns = samples;
    m.iterations = 1;
    m.median_ns = tuner::timing::Median(samples);
    m.cv = tuner::timing::CoefficientOfVariation(samples);
  }

  // One request line and its answer. True with m.samples_ns filled for a measured config;
  // false with m's outcome and detail set otherwise.
  bool Ask(const tuner::EvalRequest& request, const RunnerSpec& spec, const Config& config, int repetitions,
           Measurement& m) {
    if (spec.command.empty()) {
      m.outcome = Outcome::kInvalid;
      m.detail = "kernel " + std::string(request.spec->name()) + " has no runner in its spec (" +
                 std::string(request.spec->source_file()) + ")";
      return false;
    }
    RunnerProcess& proc = processes_[std::string(request.spec->name())];
    const double asked = Now();  // a runner started for this request: its start-up is spawn_s below
    const bool starting = !proc.running();
    if (starting) {
      if (auto s = proc.Start(spec); !s) {
        m.outcome = Outcome::kWorkerLost;
        m.detail = "cannot start the runner: " + s.error().message;
        return false;
      }
    }
    const double timeout_s = spec.timeout_s > 0 ? spec.timeout_s : kDefaultRunnerTimeoutS;
    const double startup = spec.timeout_s > 0 ? spec.timeout_s : kRunnerStartupAllowanceS;
    const double deadline = Now() + timeout_s + (proc.fresh() ? startup : 0);
    const std::string line = RequestLine(request, config, repetitions).dump() + "\n";
    // A runner that exits before reading is reported by Receive (fd 3 closes).
    proc.Send(line, /*close_after=*/!spec.persistent);
    Answer a = proc.Receive(deadline, timeout_s);
    if (a.ok && IsDeviceLine(a.body)) {
      // The device line, allowed once and only before the first answer. An identity that
      // makes no key is refused with the field it is about; the sweep fails on device_error.
      if (proc.answered || proc.announced) {
        m.outcome = Outcome::kWorkerLost;
        m.detail = std::string("runner protocol error: a device line ") +
                   (proc.announced ? "came twice" : "came after the first answer") + proc.LogSuffix();
        m.device_error = m.detail;
        proc.Kill();
        return false;
      }
      auto id = ParseDeviceIdentity(a.body["device"].dump(-1, ' ', false, json::error_handler_t::replace));
      if (!id) {
        m.outcome = Outcome::kWorkerLost;
        m.device_error = "the runner's device line is invalid: " + id.error().path + ": " + id.error().message;
        m.detail = "runner protocol error: " + m.device_error + proc.LogSuffix();
        proc.Kill();
        return false;
      }
      proc.announced = true;
      proc.device = std::move(*id);
      a = proc.Receive(deadline, timeout_s);
    }
    // Which device answered (or announced itself before failing): the sweep stores the
    // measurement only if that is the sweep's device (server/service_device.cc). A CPU announced
    // as such is the host, as no line is.
    m.device_key.clear();
    m.device.clear();
    if (a.ok || proc.announced) {
      m.device_key = HostKeyFor(request);
      if (proc.announced) {
        if (proc.device.kind != "cpu") {
          if (auto key = tuner::DeviceKey(proc.device, request.threads)) m.device_key = *key;
        }
        m.device = DeviceIdentityJson(proc.device);
      }
    }
    if (!a.ok) {
      m.outcome = a.failure;
      m.detail = a.detail;
      return false;
    }
    proc.answered = true;
    Spent spent;
    const bool measured = Interpret(a.body, m, spent);
    // A runner without timed_ms is credited with the sum of its times (per-call means: an
    // undercount when it loops); one without overhead_ms has it counted as transport.
    if (measured) {
      double sum_s = 0;
      for (double ns : m.samples_ns) sum_s += ns * 1e-9;
      costs_.timed_s += spent.timed_s >= 0 ? spent.timed_s : sum_s;
    }
    if (spent.overhead_s >= 0) costs_.calibrate_s += spent.overhead_s;
    if (starting) {  // interpreter, imports, device: a process start like a worker's, not transport
      costs_.spawn_s += std::max(0.0, Now() - asked - std::max(spent.timed_s, 0.0) - std::max(spent.overhead_s, 0.0));
    }
    // A config the runner rejected, could not compile or found wrong leaves it in a known state;
    // after a runtime failure (a failed launch can poison a GPU context) or anything worse the
    // runner is replaced.
    if (!measured && m.outcome != Outcome::kInvalid && m.outcome != Outcome::kWrongResult &&
        m.outcome != Outcome::kCompileFailed) {
      if (m.outcome == Outcome::kCrashed || m.outcome == Outcome::kWorkerLost || m.outcome == Outcome::kRuntimeFailed) {
        m.detail += proc.LogSuffix();
      }
      proc.Kill();  // a runner that failed a config otherwise may be in any state
    } else if (!spec.persistent) {
      proc.Finish();
    }
    return measured;
  }

  std::map<std::string, RunnerProcess> processes_;
  tuner::EvalCosts costs_;  // since the last TakeCosts
};

}  // namespace

std::unique_ptr<tuner::RunnerMeasurer> MakeRunnerMeasurer() { return std::make_unique<Runners>(); }

}  // namespace blocktune::external
