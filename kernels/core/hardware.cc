// Host detection: CPUID for the key, sysfs for cache sizes, /proc/cpuinfo for the model name.
#include "kernels/core/hardware.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace blocktune {
namespace {

// Parses sysfs cache sizes such as "48K" or "2048K" or "105M".
int64_t ParseCacheSize(const std::string& text) {
  int64_t v = 0;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') v = v * 10 + (text[i++] - '0');
  if (i < text.size() && text[i] == 'K') v *= 1024;
  if (i < text.size() && text[i] == 'M') v *= 1024 * 1024;
  return v;
}

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::vector<std::string> HardwareProfile::FallbackChain() const {
  std::vector<std::string> chain;
  const std::string key = Key();  // FallbackChain returns views into it
  for (auto k : tables::FallbackChain(key)) chain.emplace_back(k);
  chain.emplace_back("default");
  return chain;
}

HardwareProfile HardwareProfile::Detect(int threads) {
  HardwareProfile p;
  p.cpu = tables::DetectHostCpu();
  p.threads = threads;
  p.cores = static_cast<int>(std::thread::hardware_concurrency());
  if (p.cores <= 0) p.cores = 1;
  for (int idx = 0; idx < 8; ++idx) {
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    const std::string level = ReadLine(base + "level");
    if (level.empty()) break;
    const std::string type = ReadLine(base + "type");
    const int64_t size = ParseCacheSize(ReadLine(base + "size"));
    if (level == "1" && type == "Data") p.l1d_bytes = size;
    if (level == "2") p.l2_bytes = size;
    if (level == "3") p.l3_bytes = size;
  }
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) p.model_name = line.substr(colon + 2);
      break;
    }
  }
  return p;
}

const HardwareProfile& HostHardware() {
  static const HardwareProfile kHost = HardwareProfile::Detect(1);
  return kHost;
}

bool HostCanRun(std::string_view isa) {
  const int rank = tables::IsaRank(isa);
  return rank >= 0 && rank <= tables::IsaRank(HostHardware().cpu.isa);
}

const std::string& NativeIsa() {
  static const std::string kNative = tables::DetectNativeCpu().isa;
  return kNative;
}

namespace {

Status CheckRunnable(std::string_view isa, std::string_view source) {
  const int rank = tables::IsaRank(isa);
  if (rank < 0) {
    return InvalidArgument(
        std::string(source) + ": unknown ISA level '" + std::string(isa) + "' (expected avx512, avx2 or base)", "isa");
  }
  if (rank > tables::IsaRank(NativeIsa())) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     std::string(source) + ": this CPU runs " + NativeIsa() + ", not " + std::string(isa), "isa");
  }
  return {};
}

}  // namespace

Status ForceIsa(std::string_view isa) {
  if (auto s = CheckRunnable(isa, "--isa"); !s) return s;
  const std::string level = isa == "portable" ? "base" : std::string(isa);
  // setenv before the first HostHardware() call makes detection see the level; workers spawned
  // later inherit it. Overwrites an inherited BLOCKTUNE_ISA: the flag is the later word.
  setenv(tables::kIsaEnvVar, level.c_str(), 1);
  if (HostHardware().cpu.isa != level) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "--isa " + level + " came after kernels already dispatched to " + HostHardware().cpu.isa, "isa");
  }
  return {};
}

Status CheckIsaEnvironment() {
  const char* forced = std::getenv(tables::kIsaEnvVar);
  if (forced == nullptr || *forced == '\0') return {};
  return CheckRunnable(forced, tables::kIsaEnvVar);
}

}  // namespace blocktune
