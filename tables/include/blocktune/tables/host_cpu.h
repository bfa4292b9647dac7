// blocktune/tables/host_cpu.h: the host's CPU (CPUID and BLOCKTUNE_ISA) and its hardware keys.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <string>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "hardware_key.h"

namespace blocktune::tables {

struct HostCpu {
  std::string arch = "unknown";
  std::string isa = "base";  // "avx512" (F+BW+DQ+VL), "avx2" (AVX2+FMA), "base"
  std::string vendor = "unknown";
  int family = 0;
  int model = 0;
};

// The environment variable that restricts a process to a lower ISA level than its CPU has
// ("avx2" on an AVX-512 host, or "base"), so one machine measures and looks up the code paths
// of smaller CPUs. Kernels dispatch on the level DetectHostCpu reports, hardware keys carry it,
// and worker processes inherit it. A value the CPU cannot run, or a misspelt one, is ignored
// here (this header cannot report errors); executables check it at start-up
// (blocktune::CheckIsaEnvironment) so a typo fails loudly instead of measuring the native path.
inline constexpr const char kIsaEnvVar[] = "BLOCKTUNE_ISA";

// ISA levels from least to most capable; a CPU runs its own level and every one below it.
// -1 for a name that is not a level ("portable" is the kernels' name for "base").
inline int IsaRank(std::string_view isa) {
  if (isa == "base" || isa == "portable") return 0;
  if (isa == "avx2") return 1;
  if (isa == "avx512") return 2;
  return -1;
}

// What CPUID says, ignoring kIsaEnvVar.
inline HostCpu DetectNativeCpu() {
  HostCpu cpu;
#if defined(__x86_64__) || defined(__i386__)
  cpu.arch = sizeof(void*) == 8 ? "x86_64" : "x86";
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char v[13] = {};
    for (int i = 0; i < 4; ++i) {
      v[i] = static_cast<char>(b >> (8 * i));
      v[4 + i] = static_cast<char>(d >> (8 * i));
      v[8 + i] = static_cast<char>(c >> (8 * i));
    }
    const std::string_view vs(v);
    cpu.vendor = vs == "GenuineIntel" ? "intel" : vs == "AuthenticAMD" ? "amd" : "other";
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const int base_family = static_cast<int>((a >> 8) & 0xf);
    const int base_model = static_cast<int>((a >> 4) & 0xf);
    cpu.family = base_family == 0xf ? base_family + static_cast<int>((a >> 20) & 0xff) : base_family;
    cpu.model =
        (base_family == 0x6 || base_family == 0xf) ? (static_cast<int>((a >> 16) & 0xf) << 4) + base_model : base_model;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    cpu.isa = "avx512";
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    cpu.isa = "avx2";
  }
#elif defined(__aarch64__)
  cpu.arch = "aarch64";
#endif
  return cpu;
}

// The CPU as kernels should see it: DetectNativeCpu, lowered to kIsaEnvVar's level if that is set
// to a level this CPU runs.
inline HostCpu DetectHostCpu() {
  HostCpu cpu = DetectNativeCpu();
  const char* forced = std::getenv(kIsaEnvVar);
  if (forced != nullptr && *forced != '\0') {
    const std::string_view level = std::string_view(forced) == "portable" ? "base" : std::string_view(forced);
    const int rank = IsaRank(level);
    if (rank >= 0 && rank <= IsaRank(cpu.isa)) cpu.isa = std::string(level);
  }
  return cpu;
}

inline std::string HardwareKey(const HostCpu& cpu, int threads) {
  return cpu.arch + "." + cpu.isa + "." + cpu.vendor + ".fam" + std::to_string(cpu.family) + "_mod" +
         std::to_string(cpu.model) + ".t" + std::to_string(threads);
}

// The ISA level a key names (its second component: "avx2" in x86_64.avx2.amd.fam25_mod1.t2);
// empty if the key has fewer components.
inline std::string_view KeyIsa(std::string_view key) {
  const std::size_t a = key.find('.');
  if (a == std::string_view::npos) return {};
  const std::size_t b = key.find('.', a + 1);
  return b == std::string_view::npos ? std::string_view{} : key.substr(a + 1, b - a - 1);
}

// The key an application on this machine should look up with when it runs `threads` threads.
// Detects the CPU (and reads kIsaEnvVar) on every call; HostKeys below does it once.
inline std::string HostHardwareKey(int threads) { return HardwareKey(DetectHostCpu(), threads); }

// This process's hardware keys, detected once: the first call of Get() runs CPUID and reads
// kIsaEnvVar, and every later call returns the same answer, so a process that sets
// BLOCKTUNE_ISA must do so before its first LookupForHost. Thread-safe (a function-local
// static).
class HostKeys {
 public:
  static constexpr int kMaxThreads = 256;  // keys for 1..kMaxThreads are built on the first call

  static const HostKeys& Get() {
    static const HostKeys keys;
    return keys;
  }
  const HostCpu& cpu() const { return cpu_; }
  // The key at `threads` threads. In 1..kMaxThreads a view of storage that lives as long as
  // the process; other counts are formatted into a per-thread buffer that the next such call
  // on the same thread overwrites.
  std::string_view Key(int threads) const {
    if (threads >= 1 && threads <= kMaxThreads) return keys_[static_cast<std::size_t>(threads)];
    thread_local std::string other;
    other = HardwareKey(cpu_, threads);
    return other;
  }

 private:
  HostKeys() : cpu_(DetectHostCpu()) {
    for (int t = 1; t <= kMaxThreads; ++t) keys_[static_cast<std::size_t>(t)] = HardwareKey(cpu_, t);
  }
  HostCpu cpu_;
  std::string keys_[kMaxThreads + 1];
};

}  // namespace blocktune::tables
