// What a sweep's timings depend on besides the config: how loaded the machine was, which CPUs
// the process could run on, the frequency governor, and how the kernels were compiled. Stored
// with every sweep so two tables that disagree can be told apart by their conditions.
#pragma once

#include <string>

namespace blocktune::tuner::timing {

struct SweepEnvironment {
  std::string load_average;  // /proc/loadavg's 1, 5 and 15 minute averages, e.g. "0.52 0.40 0.31"
  std::string affinity;      // CPUs this process may run on, as a list: "0-1", "0,2-3"
  std::string governor;      // cpu0's cpufreq scaling governor; "" where not readable (VMs)
  std::string compiler;      // e.g. "g++ 12.2.0"
  std::string build_flags;   // build type and the flags the kernels were compiled with
  std::string tool_version;  // kToolVersion from blocktune/version.h: "blocktune" and the project version
};

// Reads /proc and sysfs now; fields that cannot be read stay empty, never an error.
SweepEnvironment CaptureEnvironment(const std::string& tool_version);

}  // namespace blocktune::tuner::timing
