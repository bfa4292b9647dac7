// blocktune/tables/resolve.h: the lookup policy for tuned block sizes, written once.
//
// This header is the leaf every other piece stands on: the kernel specs use it to bucket
// problems, the daemon uses it to answer GET /v1/lookup from rows loaded out of SQLite, and
// every generated `<kernel>_tuned_block_sizes.h` uses it to answer from constexpr rows. It
// needs only the C++17 standard library (plus <cpuid.h> on x86), so an application can embed
// a generated table without linking anything of ours.
//
// Precedence (CLBlast's Database::Search pattern, made explicit):
//   1. tuned           a row for exactly this hardware key, dtype and bucket;
//   2. tuned_fallback  walking the hardware key from specific to general, the first prefix
//                      under which some row has this dtype and bucket (ties: smallest key);
//   3. default         the kernel's default block sizes.
// A lookup always answers and says which of these produced the answer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace blocktune::tables {

enum class Source { kExplicit, kOverride, kTuned, kTunedFallback, kNearest, kDefault };

inline constexpr std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kExplicit: return "explicit";
    case Source::kOverride: return "override";
    case Source::kTuned: return "tuned";
    case Source::kTunedFallback: return "tuned_fallback";
    case Source::kNearest: return "nearest";
    case Source::kDefault: return "default";
  }
  return "default";
}

// ---------------------------------------------------------------------------------------------
// Hardware keys: dotted, general to specific, e.g. "x86_64.avx512.intel.fam6_mod167.t1".
// Components: architecture, ISA level, CPU vendor, CPU family/model, threads used. The thread
// count is the most specific part: a table tuned for 1 thread is a better guess for 2 threads
// on the same CPU than a table from another CPU.

// The key's prefixes from most to least specific, without "default" (the caller's last resort).
inline std::vector<std::string_view> FallbackChain(std::string_view key) {
  std::vector<std::string_view> chain;
  while (!key.empty()) {
    chain.push_back(key);
    const std::size_t dot = key.rfind('.');
    if (dot == std::string_view::npos) break;
    key = key.substr(0, dot);
  }
  return chain;
}

// True if `key` equals `prefix` or continues it at a component boundary.
inline bool KeyHasPrefix(std::string_view key, std::string_view prefix) {
  if (key.size() < prefix.size() || key.substr(0, prefix.size()) != prefix) return false;
  return key.size() == prefix.size() || key[prefix.size()] == '.';
}

struct HostCpu {
  std::string arch = "unknown";
  std::string isa = "base";    // "avx512" (F+BW+DQ+VL), "avx2" (AVX2+FMA), "base"
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
    cpu.model = (base_family == 0x6 || base_family == 0xf)
                    ? (static_cast<int>((a >> 16) & 0xf) << 4) + base_model
                    : base_model;
  }
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl")) {
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
  return cpu.arch + "." + cpu.isa + "." + cpu.vendor + ".fam" + std::to_string(cpu.family) +
         "_mod" + std::to_string(cpu.model) + ".t" + std::to_string(threads);
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
inline std::string HostHardwareKey(int threads) { return HardwareKey(DetectHostCpu(), threads); }

// ---------------------------------------------------------------------------------------------
// Shape buckets: each kernel declares its dims and how each is rounded; the bucket id is the
// rounded dims joined, e.g. "m1024_n1024_k512". Rounding up to a power of two keeps a table
// small and reviewable, and a problem's bucket shape is never smaller than the problem.

enum class Rounding { kPow2Ceil, kExact };

struct BucketDim {
  const char* name;
  Rounding rounding;
  std::int64_t min;
  std::int64_t max;
};

inline std::int64_t RoundDim(const BucketDim& d, std::int64_t v) {
  if (v < d.min) v = d.min;
  if (d.rounding == Rounding::kPow2Ceil) {
    std::int64_t p = 1;
    while (p < v && p < d.max) p <<= 1;
    v = p;
  }
  return v > d.max ? d.max : v;
}

// Rounds `values` (one per dim, same order) in place and returns the bucket id.
inline std::string BucketId(const BucketDim* dims, std::size_t n, std::int64_t* values) {
  std::string id;
  for (std::size_t i = 0; i < n; ++i) {
    values[i] = RoundDim(dims[i], values[i]);
    if (i) id += '_';
    id += dims[i].name;
    id += std::to_string(values[i]);
  }
  return id;
}

// ---------------------------------------------------------------------------------------------
// Resolution over any sequence of rows that have `hardware`, `dtype` and `bucket` members
// comparable to std::string_view (constexpr rows in a generated header, or rows loaded from
// SQLite in the daemon). Rows need no particular order: ties resolve to the smallest key.

template <typename Row>
struct Match {
  const Row* row = nullptr;  // null: nothing tuned matched, use the default
  Source source = Source::kDefault;
};

template <typename Rows>
auto ResolveRow(const Rows& rows, std::string_view hardware_key, std::string_view dtype,
                std::string_view bucket) -> Match<typename Rows::value_type> {
  using Row = typename Rows::value_type;
  const auto chain = FallbackChain(hardware_key);
  for (std::size_t level = 0; level < chain.size(); ++level) {
    const Row* best = nullptr;
    for (const Row& r : rows) {
      if (std::string_view(r.dtype) != dtype || std::string_view(r.bucket) != bucket) continue;
      const std::string_view hw(r.hardware);
      const bool hit = level == 0 ? hw == chain[0] : KeyHasPrefix(hw, chain[level]);
      if (hit && (best == nullptr || hw < std::string_view(best->hardware))) best = &r;
    }
    if (best != nullptr) return {best, level == 0 ? Source::kTuned : Source::kTunedFallback};
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// The lookup every generated header exposes, written once: bucket the problem, resolve over the
// header's constexpr rows, fall back to the kernel's default. Row needs `hardware`, `dtype`,
// `bucket`, `config` and `median_ns` members.

template <typename Row>
struct TableLookup {
  decltype(Row::config) config;
  Source source;
  std::string_view hardware;  // the key of the row that answered; empty for the default
  std::string bucket;
  double median_ns;  // 0 for the default
  const Row* row;    // provenance (sweep and measurement ids); null for the default
};

template <typename Rows, std::size_t NDims>
TableLookup<typename Rows::value_type> LookupInTable(const Rows& rows,
                                                     const decltype(Rows::value_type::config)& default_config,
                                                     const BucketDim (&dims)[NDims], std::int64_t (&values)[NDims],
                                                     std::string_view hardware_key, std::string_view dtype) {
  std::string bucket = BucketId(dims, NDims, values);
  const auto match = ResolveRow(rows, hardware_key, dtype, bucket);
  if (match.row != nullptr) {
    return {match.row->config, match.source, match.row->hardware, bucket, match.row->median_ns, match.row};
  }
  return {default_config, Source::kDefault, {}, bucket, 0.0, nullptr};
}

}  // namespace blocktune::tables
