// Helpers shared by the isolation tests: where the test worker is, which processes are
// children of this test, and an Evaluator wrapper that times and counts every call.
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

// Forwards to another Evaluator and records each Measure's config and wall time.
class RecordingEvaluator : public tuner::Evaluator {
 public:
  explicit RecordingEvaluator(tuner::Evaluator& inner) : inner_(inner) {}
  void Measure(const tuner::EvalRequest& request, const Config& config, tuner::Measurement& m) override {
    const auto start = std::chrono::steady_clock::now();
    inner_.Measure(request, config, m);
    calls.push_back({config.ToString(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()});
  }
  std::vector<tuner::Measurement> MeasureInterleaved(const tuner::EvalRequest& request,
                                                     const std::vector<Config>& configs) override {
    for (const Config& c : configs) calls.push_back({c.ToString(), 0});
    return inner_.MeasureInterleaved(request, configs);
  }

  struct Call {
    std::string config;
    double seconds;
  };
  std::vector<Call> calls;

 private:
  tuner::Evaluator& inner_;
};

}  // namespace blocktune::testing
