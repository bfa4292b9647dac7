// HardwareProfile: what the tuner knows about the machine a measurement was taken on, and the
// hardware key that tuned rows are filed under (see tables/resolve.h for the key's grammar).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/result.h"

namespace blocktune {

struct HardwareProfile {
  tables::HostCpu cpu;
  std::string model_name;  // /proc/cpuinfo "model name", informational only
  int cores = 1;           // online logical CPUs
  int64_t l1d_bytes = 32 * 1024;
  int64_t l2_bytes = 1024 * 1024;
  int64_t l3_bytes = 0;
  int threads = 1;  // the thread count kernels run with; part of the key
  // A device blocktune did not detect (results imported from another tuner, an external
  // kernel's accelerator): its key as given, e.g. "cuda.nvidia.geforce_rtx_2080_ti" or
  // "tpu.v5e", used instead of the CPU key. Dotted, general to specific, like every key.
  std::string device_key;

  std::string Key() const { return device_key.empty() ? tables::HardwareKey(cpu, threads) : device_key; }
  // Key prefixes from specific to general, then "default".
  std::vector<std::string> FallbackChain() const;

  // Reads CPUID and sysfs; never fails (unknown values keep their defaults).
  static HardwareProfile Detect(int threads);
};

// This host's profile (threads = 1), detected once per process: kernels consult it on every
// call (ISA dispatch, Validate), and Detect reads sysfs.
const HardwareProfile& HostHardware();

// Whether this process may run code built for an ISA level ("avx512", "avx2", "base";
// "portable" is the kernels' name for "base"): AVX-512 hosts also run AVX2 code, every host runs
// base. A process restricted with ForceIsa / BLOCKTUNE_ISA answers for its forced level.
bool HostCanRun(std::string_view isa);

// The level the CPU itself supports, whatever BLOCKTUNE_ISA says.
const std::string& NativeIsa();

// Restricts this process, and every worker process it starts afterwards (they inherit the
// environment), to `isa` ("avx512", "avx2", "base" or "portable"): kernels dispatch to that
// level's code and hardware keys carry it (x86_64.avx2.amd.fam25_mod1.t1), so what an AVX-512
// host measures of its AVX2 path is filed where an AVX2 host looks. Errors: an unknown name
// (invalid_argument), a level this CPU cannot run, or a call after kernels already dispatched
// to a different level (failed_precondition: call it first thing in main).
Status ForceIsa(std::string_view isa);

// Checks BLOCKTUNE_ISA if it is set (the header-only detection silently ignores a bad value):
// executables call it at start-up so a misspelt or unrunnable level is an error, not a
// measurement of the native path under the wrong name.
Status CheckIsaEnvironment();

}  // namespace blocktune
