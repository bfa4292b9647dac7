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
//   2. tuned_fallback  a row of this dtype and bucket for the same CPU model at another thread
//                      count, else for another CPU model of the same vendor and ISA level
//                      (ties: smallest key); never another ISA level or vendor (ChainOf);
//   3. default         the kernel's default block sizes.
// A lookup always answers, says which of these produced the answer and how many levels of the
// key's chain it fell.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <utility>
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
// Components: architecture, ISA level, CPU vendor, CPU family/model, threads used.
//
// The fallback chain of a key is the key itself, then the same CPU model at another thread count
// (the key less its last component), then another CPU model of the same vendor and ISA level
// (its first three components), and nothing beyond: the answer after that is the kernel's
// default. Rows tuned for another ISA level or vendor are never borrowed, because the AVX-512
// and AVX2 micro-kernels have different register tiles and their blockings do not transfer
// (measured on an AVX2 AMD host, the AVX-512 Intel rows ran at 0.77x-1.27x of the default,
// geomean 0.98x, at 2 threads). A key of four components falls back to its first three; a key
// of three or fewer has no fallback.

// Levels of a chain at most: the key, its CPU model, its vendor and ISA level.
inline constexpr std::size_t kMaxChainLevels = 3;

struct ChainKeys {
  std::string_view level[kMaxChainLevels] = {};
  std::size_t size = 0;
};

// The key's fallback chain, most specific first (views into `key`).
inline ChainKeys ChainOf(std::string_view key) {
  ChainKeys c;
  c.level[c.size++] = key;
  std::size_t vendor_end = std::string_view::npos;  // the dot after the third component
  int dots = 0;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '.' && ++dots == 3) {
      vendor_end = i;
      break;
    }
  }
  if (vendor_end == std::string_view::npos) return c;
  const std::size_t last = key.rfind('.');
  if (last > vendor_end) c.level[c.size++] = key.substr(0, last);
  c.level[c.size++] = key.substr(0, vendor_end);
  return c;
}

// ChainOf as a vector (views into `key`), without "default" (the caller's last resort).
inline std::vector<std::string_view> FallbackChain(std::string_view key) {
  const ChainKeys c = ChainOf(key);
  return std::vector<std::string_view>(c.level, c.level + c.size);
}

// Every prefix of the key at a component boundary, most specific first, down to the
// architecture. Not a fallback chain: overrides use it, because a pin under a prefix is an
// operator's explicit decision for every key below it.
inline std::vector<std::string_view> KeyPrefixes(std::string_view key) {
  std::vector<std::string_view> prefixes;
  while (!key.empty()) {
    prefixes.push_back(key);
    const std::size_t dot = key.rfind('.');
    if (dot == std::string_view::npos) break;
    key = key.substr(0, dot);
  }
  return prefixes;
}

// a == b without a call into the C library: keys and dtypes are short, and memcmp's call and
// dispatch cost more than comparing them eight bytes at a time inline.
inline bool SameText(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  std::size_t n = a.size();
  for (; n >= 8; n -= 8, x += 8, y += 8) {
    std::uint64_t u, v;
    std::memcpy(&u, x, 8);
    std::memcpy(&v, y, 8);
    if (u != v) return false;
  }
  for (; n > 0; --n, ++x, ++y) {
    if (*x != *y) return false;
  }
  return true;
}

// True if `key` equals `prefix` or continues it at a component boundary.
inline bool KeyHasPrefix(std::string_view key, std::string_view prefix) {
  if (key.size() < prefix.size() || (key.size() > prefix.size() && key[prefix.size()] != '.')) return false;
  return SameText(key.substr(0, prefix.size()), prefix);
}

inline constexpr std::uint32_t kNoLevel = 0xffffffffu;

// The chain level at which a row tuned under `row_key` answers a lookup for chain `c`: 0 for the
// key itself, otherwise the first level whose prefix the row key has; kNoLevel if none.
inline std::uint32_t ChainLevel(const ChainKeys& c, std::string_view row_key) {
  if (SameText(row_key, c.level[0])) return 0;
  for (std::size_t l = 1; l < c.size; ++l) {
    if (KeyHasPrefix(row_key, c.level[l])) return static_cast<std::uint32_t>(l);
  }
  return kNoLevel;
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

// Clamps to [min, max]; kPow2Ceil rounds up to a power of two first (the smallest one at least
// `v`, or `max` if that is smaller).
inline std::int64_t RoundDim(const BucketDim& d, std::int64_t v) {
  if (v < d.min) v = d.min;
  if (v > d.max) v = d.max;
  if (d.rounding == Rounding::kPow2Ceil) {
    std::int64_t p = 1;
    if (v > 1) {
#if defined(__GNUC__) || defined(__clang__)
      p = std::int64_t{1} << (64 - __builtin_clzll(static_cast<unsigned long long>(v - 1)));
#else
      while (p < v) p <<= 1;
#endif
    }
    v = p > d.max ? d.max : p;
  }
  return v;
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

// A bucket as its rounded dims; the id string ("m1024_n1024_k1024") is built only when asked
// for, so a lookup allocates nothing.
template <std::size_t N>
struct BucketName {
  const BucketDim* dims = nullptr;
  std::array<std::int64_t, N> values{};  // rounded, in the kernel's dim order

  std::string str() const {
    std::string id;
    for (std::size_t i = 0; i < N; ++i) {
      if (i) id += '_';
      id += dims[i].name;
      id += std::to_string(values[i]);
    }
    return id;
  }
  operator std::string() const { return str(); }
};

template <std::size_t N>
bool operator==(const BucketName<N>& a, std::string_view b) { return a.str() == b; }
template <std::size_t N>
bool operator==(std::string_view a, const BucketName<N>& b) { return b.str() == a; }
template <std::size_t N>
bool operator!=(const BucketName<N>& a, std::string_view b) { return !(a == b); }
template <std::size_t N>
bool operator!=(std::string_view a, const BucketName<N>& b) { return !(b == a); }

// ---------------------------------------------------------------------------------------------
// Resolution, written once for every row source: a generated header indexes its constexpr rows
// at generation time, the daemon indexes the rows it loaded from SQLite (tuner/lookup.cc).
//
// An index interns the rows' hardware keys and dtypes into small ids, each list sorted (a
// smaller key id is a smaller key), and holds one entry per row sorted by (dtype id, bucket, key
// id). A lookup finds the run of entries with its dtype and bucket by binary search; each entry
// of the run is ranked by the ChainLevel of its key, and the lowest level answers, the first
// entry of that level (the smallest key) on a tie. No run, or no entry of the run on the
// query's chain: the kernel's default. No strings are built and nothing is allocated.

inline constexpr std::uint32_t kNoId = 0xffffffffu;


// Bucket order and equality for the index: element by element for rounded dims (std::array's
// operators call memcmp for ==), as text for bucket ids.
template <std::size_t N>
bool BucketLess(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}
template <std::size_t N>
bool BucketEqual(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
inline bool BucketLess(std::string_view a, std::string_view b) { return a < b; }
inline bool BucketEqual(std::string_view a, std::string_view b) { return SameText(a, b); }

// `Bucket` is what the index compares: std::array<std::int64_t, N> of rounded dims in a
// generated header, the bucket id string in the daemon.
template <typename Bucket>
struct IndexEntry {
  std::uint32_t dtype;  // index into the dtype list
  Bucket bucket;
  std::uint32_t key;  // index into the key list
  std::uint32_t row;  // index of the row in the caller's row list
};

// Which row answers and from how far: `level` is the chain level of the row's key (0: the key
// itself); with no row (kNoId) it is the number of levels the chain has, all of them missed.
struct Resolution {
  std::uint32_t row = kNoId;
  std::uint32_t level = 0;
};

inline Source SourceOf(const Resolution& r) {
  if (r.row == kNoId) return Source::kDefault;
  return r.level == 0 ? Source::kTuned : Source::kTunedFallback;
}

// The host's chain over one index's keys, computed once per process and index (LookupForHost):
// for each key id its level on the host's chain below the key itself (1 or 2, or kNoLevel),
// and for each thread count 1..HostKeys::kMaxThreads the id of the host key at that count.
struct HostChain {
  std::vector<std::uint32_t> level;
  std::uint32_t exact[HostKeys::kMaxThreads + 1];
  std::uint32_t levels;  // the host key's chain length
};

template <typename Entry>
struct IndexView {
  const std::string_view* keys;  // sorted, unique
  std::size_t num_keys;
  const std::string_view* dtypes;  // sorted, unique
  std::size_t num_dtypes;
  const Entry* entries;  // sorted by (dtype, bucket, key)
  std::size_t num_entries;

  std::uint32_t KeyId(std::string_view key) const {
    const std::string_view* end = keys + num_keys;
    const std::string_view* it = std::lower_bound(keys, end, key);
    return it != end && *it == key ? static_cast<std::uint32_t>(it - keys) : kNoId;
  }

  std::uint32_t DtypeId(std::string_view dtype) const {
    for (std::size_t i = 0; i < num_dtypes; ++i) {
      if (SameText(dtypes[i], dtype)) return static_cast<std::uint32_t>(i);
    }
    return kNoId;
  }

  // The entries with this dtype and bucket, in key order; empty if there are none.
  template <typename Bucket>
  std::pair<const Entry*, const Entry*> Run(std::uint32_t dtype, const Bucket& bucket) const {
    const Entry* first = entries;
    const Entry* last = entries + num_entries;
    const Entry* lo = std::partition_point(first, last, [&](const Entry& e) {
      return e.dtype < dtype || (e.dtype == dtype && BucketLess(e.bucket, bucket));
    });
    const Entry* hi = lo;
    while (hi != last && hi->dtype == dtype && BucketEqual(hi->bucket, bucket)) ++hi;
    return {lo, hi};
  }

  // The lowest-level entry of [lo, hi) by `level_of(key id)`; ties go to the first (smallest key).
  template <typename LevelOf>
  static Resolution Pick(const Entry* lo, const Entry* hi, std::uint32_t levels, LevelOf&& level_of) {
    std::uint32_t best_row = kNoId;
    std::uint32_t best_level = kNoLevel;
    for (const Entry* e = lo; e != hi; ++e) {
      const std::uint32_t l = level_of(e->key);
      if (l < best_level) {
        best_row = e->row;
        best_level = l;
        if (l == 0) break;
      }
    }
    return best_row == kNoId ? Resolution{kNoId, levels} : Resolution{best_row, best_level};
  }

  // Resolution for any key, given as a string.
  template <typename Bucket>
  Resolution Resolve(std::string_view key, std::string_view dtype, const Bucket& bucket) const {
    const std::uint32_t d = DtypeId(dtype);
    const auto run = d == kNoId ? std::pair<const Entry*, const Entry*>{nullptr, nullptr} : Run(d, bucket);
    // The exact key first: the common hit needs no chain.
    for (const Entry* e = run.first; e != run.second; ++e) {
      if (SameText(keys[e->key], key)) return {e->row, 0};
    }
    const ChainKeys chain = ChainOf(key);
    return Pick(run.first, run.second, static_cast<std::uint32_t>(chain.size),
                [&](std::uint32_t id) { return ChainLevel(chain, keys[id]); });
  }

  // The host's chain over this index's keys (see HostChain); detects the CPU on first use.
  HostChain ForHost() const {
    const HostKeys& host = HostKeys::Get();
    const ChainKeys chain = ChainOf(host.Key(1));
    HostChain h;
    h.levels = static_cast<std::uint32_t>(chain.size);
    h.level.resize(num_keys);
    for (std::size_t id = 0; id < num_keys; ++id) {
      std::uint32_t l = kNoLevel;
      for (std::size_t i = 1; i < chain.size && l == kNoLevel; ++i) {
        if (KeyHasPrefix(keys[id], chain.level[i])) l = static_cast<std::uint32_t>(i);
      }
      h.level[id] = l;
    }
    h.exact[0] = kNoId;
    for (int t = 1; t <= HostKeys::kMaxThreads; ++t) h.exact[t] = KeyId(host.Key(t));
    return h;
  }

  // Resolution for the host key at `threads` threads, by key id only.
  template <typename Bucket>
  Resolution ResolveForHost(const HostChain& host, int threads, std::string_view dtype, const Bucket& bucket) const {
    if (threads < 1 || threads > HostKeys::kMaxThreads) {
      return Resolve(HostKeys::Get().Key(threads), dtype, bucket);
    }
    const std::uint32_t d = DtypeId(dtype);
    const auto run = d == kNoId ? std::pair<const Entry*, const Entry*>{nullptr, nullptr} : Run(d, bucket);
    const std::uint32_t exact = host.exact[threads];
    return Pick(run.first, run.second, host.levels,
                [&](std::uint32_t id) { return id == exact ? 0u : host.level[id]; });
  }
};

// ---------------------------------------------------------------------------------------------
// The lookup every generated header exposes, written once: bucket the problem, resolve over the
// header's index, fall back to the kernel's default. Row needs `hardware`, `config` and
// `median_ns` members.

template <typename Row, std::size_t NDims>
struct TableLookup {
  decltype(Row::config) config;
  Source source;
  std::string_view hardware;  // the key of the row that answered; empty for the default
  // The key looked up: for LookupForHost the host's (storage as HostKeys::Key), for
  // LookupBlockSizes a view of the caller's argument, valid as long as that is.
  std::string_view queried_hardware;
  // Levels fallen down the queried key's chain: 0 the key itself, 1 the same CPU model at
  // another thread count, 2 the same vendor and ISA level; for the default, the length of the
  // chain (every level was tried).
  int fallback_levels;
  BucketName<NDims> bucket;  // the problem's bucket; .str() gives its id
  double median_ns;          // 0 for the default
  const Row* row;            // provenance (sweep and measurement ids); null for the default
  // The row's kernel fingerprint (empty: unknown, or the default), and whether it differs from
  // the fingerprint of the build the header is compiled with (MarkStale): a stale row was
  // measured by another build of the kernel. Unknown fingerprints are never stale.
  std::string_view fingerprint = {};
  bool stale = false;
};

// Sets `fingerprint` and `stale` of a lookup answered by a row with a `fingerprint` member.
// `build` empty (fingerprints unavailable): nothing is reported stale.
template <typename Lookup>
Lookup MarkStale(Lookup r, std::string_view build) {
  if (r.row != nullptr) {
    r.fingerprint = r.row->fingerprint;
    r.stale = !build.empty() && !r.fingerprint.empty() && !SameText(r.fingerprint, build);
  }
  return r;
}

template <typename Row, std::size_t NRows, typename Entry, std::size_t NDims>
TableLookup<Row, NDims> AnswerFrom(const std::array<Row, NRows>& rows, const Resolution& r,
                                   const decltype(Row::config)& default_config, const BucketName<NDims>& bucket,
                                   std::string_view queried) {
  const int levels = static_cast<int>(r.level);
  if (r.row == kNoId) return {default_config, Source::kDefault, {}, queried, levels, bucket, 0.0, nullptr};
  const Row& row = rows[r.row];
  return {row.config, SourceOf(r), row.hardware, queried, levels, bucket, row.median_ns, &row};
}

template <std::size_t NDims>
BucketName<NDims> RoundBucket(const BucketDim (&dims)[NDims], const std::array<std::int64_t, NDims>& values) {
  BucketName<NDims> b;
  b.dims = dims;
  for (std::size_t i = 0; i < NDims; ++i) b.values[i] = RoundDim(dims[i], values[i]);
  return b;
}

template <typename Row, std::size_t NRows, typename Entry, std::size_t NDims>
TableLookup<Row, NDims> LookupInTable(const std::array<Row, NRows>& rows, const IndexView<Entry>& index,
                                      const decltype(Row::config)& default_config, const BucketDim (&dims)[NDims],
                                      const std::array<std::int64_t, NDims>& values, std::string_view hardware_key,
                                      std::string_view dtype) {
  const BucketName<NDims> bucket = RoundBucket(dims, values);
  const Resolution r = index.Resolve(hardware_key, dtype, bucket.values);
  return AnswerFrom<Row, NRows, Entry, NDims>(rows, r, default_config, bucket, hardware_key);
}

template <typename Row, std::size_t NRows, typename Entry, std::size_t NDims>
TableLookup<Row, NDims> LookupInTableForHost(const std::array<Row, NRows>& rows, const IndexView<Entry>& index,
                                             const HostChain& host, const decltype(Row::config)& default_config,
                                             const BucketDim (&dims)[NDims],
                                             const std::array<std::int64_t, NDims>& values, int threads,
                                             std::string_view dtype) {
  const BucketName<NDims> bucket = RoundBucket(dims, values);
  const Resolution r = index.ResolveForHost(host, threads, dtype, bucket.values);
  return AnswerFrom<Row, NRows, Entry, NDims>(rows, r, default_config, bucket, HostKeys::Get().Key(threads));
}

// ---------------------------------------------------------------------------------------------
// An index built at run time over any rows with `hardware`, `dtype` and `bucket` members
// convertible to std::string_view (the daemon's rows from SQLite; tests). It keeps views into
// the rows, which must outlive it and stay where they are.

class RowIndex {
 public:
  using Entry = IndexEntry<std::string_view>;

  RowIndex() = default;
  template <typename Rows>
  explicit RowIndex(const Rows& rows) {
    for (const auto& r : rows) {
      keys_.push_back(std::string_view(r.hardware));
      dtypes_.push_back(std::string_view(r.dtype));
    }
    Unique(keys_);
    Unique(dtypes_);
    std::uint32_t i = 0;
    for (const auto& r : rows) {
      const std::string_view hw(r.hardware), dt(r.dtype);
      const auto key = static_cast<std::uint32_t>(std::lower_bound(keys_.begin(), keys_.end(), hw) - keys_.begin());
      const auto dtype = static_cast<std::uint32_t>(std::lower_bound(dtypes_.begin(), dtypes_.end(), dt) - dtypes_.begin());
      entries_.push_back({dtype, std::string_view(r.bucket), key, i++});
    }
    std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      if (a.dtype != b.dtype) return a.dtype < b.dtype;
      if (a.bucket != b.bucket) return a.bucket < b.bucket;
      if (a.key != b.key) return a.key < b.key;
      return a.row < b.row;
    });
  }
  // Copies would point into another object's vectors only by accident; moves keep the buffers.
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;
  RowIndex(RowIndex&&) = default;
  RowIndex& operator=(RowIndex&&) = default;

  IndexView<Entry> view() const {
    return {keys_.data(), keys_.size(), dtypes_.data(), dtypes_.size(), entries_.data(), entries_.size()};
  }
  Resolution Resolve(std::string_view hardware_key, std::string_view dtype, std::string_view bucket) const {
    return view().Resolve(hardware_key, dtype, bucket);
  }

 private:
  static void Unique(std::vector<std::string_view>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
  std::vector<std::string_view> keys_;
  std::vector<std::string_view> dtypes_;
  std::vector<Entry> entries_;
};

template <typename Row>
struct Match {
  const Row* row = nullptr;  // null: nothing tuned matched, use the default
  Source source = Source::kDefault;
  int fallback_levels = 0;  // as TableLookup::fallback_levels
};

// One-off resolution over a row sequence (indexes it first; hold a RowIndex to resolve many).
template <typename Rows>
auto ResolveRow(const Rows& rows, std::string_view hardware_key, std::string_view dtype,
                std::string_view bucket) -> Match<typename Rows::value_type> {
  const RowIndex index(rows);
  const Resolution r = index.Resolve(hardware_key, dtype, bucket);
  Match<typename Rows::value_type> m;
  m.source = SourceOf(r);
  m.fallback_levels = static_cast<int>(r.level);
  if (r.row != kNoId) m.row = &*(std::begin(rows) + r.row);
  return m;
}

}  // namespace blocktune::tables
