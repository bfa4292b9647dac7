// HardwareProfile: what the tuner knows about the machine a measurement was taken on, and the
// hardware key that tuned rows are filed under (see tables/resolve.h for the key's grammar).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/resolve.h"

namespace blocktune {

struct HardwareProfile {
  tables::HostCpu cpu;
  std::string model_name;  // /proc/cpuinfo "model name", informational only
  int cores = 1;           // online logical CPUs
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 0;
  int threads = 1;  // the thread count kernels run with; part of the key

  std::string Key() const { return tables::HardwareKey(cpu, threads); }
  // Key prefixes from specific to general, then "default".
  std::vector<std::string> FallbackChain() const;

  // Reads CPUID and sysfs; never fails (unknown values keep their defaults).
  static HardwareProfile Detect(int threads);
};

// This host's profile (threads = 1), detected once per process: kernels consult it on every
// call (ISA dispatch, Validate), and Detect reads sysfs.
const HardwareProfile& HostHardware();

// Whether this host can run code built for an ISA level ("avx512", "avx2", "base"; "portable"
// is the kernels' name for "base"): AVX-512 hosts also run AVX2 code, every host runs base.
bool HostCanRun(std::string_view isa);

}  // namespace blocktune
