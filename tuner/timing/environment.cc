// Environment capture; see environment.h.
#include "tuner/timing/environment.h"

#include <sched.h>

#include <fstream>
#include <sstream>

#ifndef BLOCKTUNE_BUILD_FLAGS
#define BLOCKTUNE_BUILD_FLAGS "unknown"
#endif

namespace blocktune::tuner::timing {
namespace {

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// "0-1,4" from the affinity mask: runs of consecutive CPUs collapsed.
std::string AffinityList() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {};
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += std::to_string(cpu);
    if (last > cpu) out += '-' + std::to_string(last);
    cpu = last;
  }
  return out;
}

}  // namespace

SweepEnvironment CaptureEnvironment(const std::string& tool_version) {
  SweepEnvironment e;
  std::istringstream load(ReadFirstLine("/proc/loadavg"));
  std::string a, b, c;
  if (load >> a >> b >> c) e.load_average = a + " " + b + " " + c;
  e.affinity = AffinityList();
  e.governor = ReadFirstLine("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor");
#if defined(__clang__)
  e.compiler = std::string("clang++ ") + __clang_version__;
#elif defined(__GNUC__)
  e.compiler = std::string("g++ ") + __VERSION__;
#endif
  e.build_flags = BLOCKTUNE_BUILD_FLAGS;
  e.tool_version = tool_version;
  return e;
}

}  // namespace blocktune::tuner::timing
