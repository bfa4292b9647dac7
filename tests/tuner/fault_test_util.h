// Helpers shared by the isolation tests: where the test worker is, which processes are
// children of this test, and an Evaluator wrapper that times and counts every call.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "tuner/evaluator.h"

namespace blocktune::testing {

// Built by tests/CMakeLists.txt next to the test executables.
inline std::string FaultWorkerPath() { return BLOCKTUNE_FAULT_WORKER; }

struct ChildProcess {
  pid_t pid;
  char state;  // R, S, Z, ...
};

// Every process whose parent is this process, from /proc/<pid>/stat ("pid (comm) state ppid").
inline std::vector<ChildProcess> ChildrenOfThisProcess() {
  std::vector<ChildProcess> out;
  const pid_t self = getpid();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(entry.path() / "stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    const size_t close = line.rfind(')');  // comm may contain spaces and parentheses
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) out.push_back({static_cast<pid_t>(std::stol(name)), state});
  }
  return out;
}

// Seconds the calling thread has spent runnable but waiting for a CPU (schedstat field 2).
inline double ThisThreadStarvedSeconds() {
  std::ifstream f("/proc/thread-self/schedstat");
  double on_cpu_ns = 0, waiting_ns = 0;
  f >> on_cpu_ns >> waiting_ns;
  return waiting_ns * 1e-9;
}

// Forwards to another Evaluator and records each Measure's config and wall time, and the
// configs of each MeasureInterleaved (the sweep's decision round).
class RecordingEvaluator : public tuner::Evaluator {
 public:
  // `starved_s`, if given, reports how long the last call's worker waited for a CPU.
  explicit RecordingEvaluator(tuner::Evaluator& inner, std::function<double()> starved_s = {})
      : inner_(inner), starved_s_(std::move(starved_s)) {}
  void Measure(const tuner::EvalRequest& request, const Config& config, tuner::Measurement& m) override {
    const auto start = std::chrono::steady_clock::now();
    const double self_starved_at_start_s = ThisThreadStarvedSeconds();
    inner_.Measure(request, config, m);
    calls.push_back({config.ToString(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                     starved_s_ ? starved_s_() : 0.0, ThisThreadStarvedSeconds() - self_starved_at_start_s});
  }
  std::vector<tuner::Measurement> MeasureInterleaved(const tuner::EvalRequest& request,
                                                     const std::vector<Config>& configs) override {
    for (const Config& c : configs) interleaved.push_back(c.ToString());
    return inner_.MeasureInterleaved(request, configs);
  }

  struct Call {
    std::string config;
    double seconds;         // wall time of the call, spawning a worker included
    double starved_s;       // of which the worker spent this long waiting for a CPU
    double self_starved_s;  // and the calling (parent) thread this long
  };
  std::vector<Call> calls;  // Measure: the search's one measurement per config
  // MeasureInterleaved: the decision round re-timing the best few passing configs.
  std::vector<std::string> interleaved;

 private:
  tuner::Evaluator& inner_;
  std::function<double()> starved_s_;
};

}  // namespace blocktune::testing
