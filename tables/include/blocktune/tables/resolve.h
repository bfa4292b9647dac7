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
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

// Keeps a rarely taken path (resolving a key the first time) out of the lookup it would bloat.
#if defined(__GNUC__) || defined(__clang__)
#define BLOCKTUNE_TABLES_NOINLINE __attribute__((noinline))
#else
#define BLOCKTUNE_TABLES_NOINLINE
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
// dispatch cost more than comparing them eight bytes at a time inline (the last word overlapping
// the one before it, so no byte loop for the tail).
inline bool SameText(std::string_view a, std::string_view b) {
  const std::size_t n = a.size();
  if (n != b.size()) return false;
  const char* x = a.data();
  const char* y = b.data();
  auto word = [](const char* p) {
    std::uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
  };
  auto half = [](const char* p) {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
  };
  if (n >= 8) {
    for (std::size_t i = 0; i + 8 < n; i += 8) {
      if (word(x + i) != word(y + i)) return false;
    }
    return word(x + n - 8) == word(y + n - 8);
  }
  if (n >= 4) return half(x) == half(y) && half(x + n - 4) == half(y + n - 4);
  // 1 to 3 bytes: the first, middle and last cover them all (a dtype such as "f32").
  if (n == 0) return true;
  return x[0] == y[0] && x[n / 2] == y[n / 2] && x[n - 1] == y[n - 1];
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
    // The power of two below 2v - 1 is the smallest one at least v (1 for v = 1): no branch.
    const std::uint64_t w = v < 1 ? 1 : static_cast<std::uint64_t>(v);
#if defined(__GNUC__) || defined(__clang__)
    const std::int64_t p = static_cast<std::int64_t>(std::uint64_t{1} << (63 - __builtin_clzll(2 * w - 1)));
#else
    std::int64_t p = 1;
    while (static_cast<std::uint64_t>(p) < w) p <<= 1;
#endif
    // A power-of-two max (every kernel's so far, and known where the dims are constants) is
    // never exceeded: v <= max.
    const bool max_pow2 = d.max > 0 && (d.max & (d.max - 1)) == 0;
    v = !max_pow2 && p > d.max ? d.max : p;
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
// Resolution, written once for every row source: a generated header holds its index as
// constexpr arrays computed by the generator, the daemon builds the same index at run time over
// the rows it loaded from SQLite (tuner/lookup.cc); both are built by BuildIndex below and
// searched by IndexView.
//
// Names: every row's hardware key and every prefix of one at a component boundary, sorted and
// unique (a smaller id is a smaller string), with for each name the ids of its own prefixes
// by depth. A queried key is looked up once in a hash table of the names; its fallback levels
// are names too (the key less its last component, its first three), so from then on the
// query is a few integers.
//
// Choices: the fallback chain, precomputed. For each row key and each prefix of one with three
// or more components, per (dtype, bucket), the row an exact lookup of that name takes and the
// row a fallback to it takes (the smallest key equal to it or under it, the first row of that
// key on a tie), in an open-addressing hash table on (name id, dtype id, rounded dims or the
// bucket id string in the daemon). A lookup hashes its bucket once and probes with its key's
// name id (an exact hit), then with each fallback level's name id in order; nothing found: the
// kernel's default. No rows are walked, no strings built and nothing is allocated.

inline constexpr std::uint32_t kNoId = 0xffffffffu;

// Hashing. Every value is computed the same way by the generator and at run time, so the
// generated slot arrays work wherever the header is compiled (byte order fixed to little-endian).
// Words are multiplied by per-position constants and summed, so the multiplies of one key run in
// parallel, then mixed once.
inline constexpr std::uint64_t kHashKeys[8] = {
    0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0xD6E8FEB86659FD93ull,
    0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull,
};

inline constexpr std::uint64_t HashWord(std::uint64_t w, std::size_t position) {
  return (w ^ kHashKeys[position & 7]) * kHashKeys[(position + 3) & 7];
}

inline constexpr std::uint64_t HashFinish(std::uint64_t x) {
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

inline std::uint64_t HashLoad64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// A name, eight bytes at a time (the last word overlaps the one before it).
inline std::uint64_t HashText(std::string_view s) {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::uint64_t h = n * kHashKeys[0];
  if (n >= 8) {
    std::size_t k = 1;
    for (std::size_t i = 0; i + 8 < n; i += 8, ++k) h += HashWord(HashLoad64(p + i), k);
    return HashFinish(h + HashWord(HashLoad64(p + n - 8), k));
  }
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return HashFinish(h + HashWord(w, 1));
}

// A bucket's part of a choice's hash (ChoiceHash below): its rounded dims (generated headers)
// or its id (the daemon), computed once per lookup however many chain levels are probed. Dims
// are multiplied by per-position constants and summed (a multiply and an add each); the hash
// table's seed multiply and the generator's choice of seed do the rest, and a probe compares
// the whole key after the hash.
inline std::uint64_t BucketHashBase(const std::int64_t* v, std::size_t n) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < n; ++i) h += static_cast<std::uint64_t>(v[i]) * kHashKeys[(i + 1) & 7];
  return h;
}
template <std::size_t N>
std::uint64_t BucketHashBase(const std::array<std::int64_t, N>& v) {
  return BucketHashBase(v.data(), N);
}
inline std::uint64_t BucketHashBase(const std::vector<std::int64_t>& v) { return BucketHashBase(v.data(), v.size()); }
inline std::uint64_t BucketHashBase(std::string_view bucket) { return HashText(bucket); }

// A choice's key: a name id, a dtype id and a bucket (its BucketHashBase). Linear in the dims
// and ids, and left so: the table's seed multiply spreads such keys evenly (on the checked-in
// tables a finishing mix displaced ~20x more choices from their home slots).
inline std::uint64_t ChoiceHash(std::uint64_t bucket_base, std::uint32_t name, std::uint32_t dtype) {
  return bucket_base + ((static_cast<std::uint64_t>(name) << 32) | dtype) * kHashKeys[0];
}

// Bucket equality for the choice check: element by element for rounded dims (std::array's == calls
// memcmp), as text for bucket ids.
template <std::size_t N>
bool BucketEqual(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
inline bool BucketEqual(std::string_view a, std::string_view b) { return SameText(a, b); }

// An open-addressing hash table of ids (linear probing, at most half full). The home slot of a
// hash is the top `bits` bits of hash * seed; the builder (BuildHashTable) tries seeds and keeps
// the one that displaces ids least (none, for every table generated so far: one probe per hit).
struct HashSlot {
  std::uint64_t hash;
  std::uint32_t id;  // kNoId: empty
};

struct HashTableView {
  const HashSlot* slots = nullptr;
  std::uint64_t seed = 1;
  unsigned bits = 0;  // 2^bits slots; 0 with no slots

  // The id whose slot holds `hash` and satisfies `same(id)`; kNoId if none.
  template <typename Same>
  std::uint32_t Find(std::uint64_t hash, Same&& same) const {
    if (bits == 0) return kNoId;
    const std::size_t mask = (std::size_t{1} << bits) - 1;
    for (std::size_t s = static_cast<std::size_t>((hash * seed) >> (64 - bits));; s = (s + 1) & mask) {
      const HashSlot& x = slots[s];
      if (x.id == kNoId) return kNoId;
      if (x.hash == hash && same(x.id)) return x.id;
    }
  }
};

struct HashTableData {
  std::vector<HashSlot> slots;
  std::uint64_t seed = 1;
  unsigned bits = 0;
  std::size_t displaced = 0;  // sum over ids of their distance from their home slot
  HashTableView view() const { return {slots.data(), seed, bits}; }
};

// The table of ids 0..hashes.size()-1. Deterministic: the same hashes give the same table.
// Seeds come from a fixed sequence; the table keeps the one whose farthest id is nearest its
// home slot (then the fewest displaced in all): 256 tries up to 4096 ids, 32 beyond. If no seed
// puts every id in its home slot, a table twice as large is tried the same way and kept if one
// does (every probe for a present id is then one slot).
inline HashTableData BuildHashTable(const std::vector<std::uint64_t>& hashes) {
  HashTableData best;
  if (hashes.empty()) return best;
  unsigned min_bits = 1;
  while ((std::size_t{1} << min_bits) < 2 * hashes.size()) ++min_bits;
  const int attempts = hashes.size() <= 4096 ? 256 : 32;
  for (unsigned bits = min_bits; bits <= min_bits + 1; ++bits) {
    if (bits > min_bits && (best.displaced == 0 || hashes.size() > 4096)) break;
    HashTableData best_here;
    std::size_t best_here_max = 0;
    std::uint64_t state = 0x0123456789ABCDEFull;
    for (int attempt = 0; attempt < attempts && (attempt == 0 || best_here.displaced > 0); ++attempt) {
      // splitmix64: a fixed sequence of odd multipliers.
      state += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      const std::uint64_t seed = (z ^ (z >> 31)) | 1;
      HashTableData t;
      t.seed = seed;
      t.bits = bits;
      t.slots.assign(std::size_t{1} << bits, HashSlot{0, kNoId});
      const std::size_t mask = t.slots.size() - 1;
      std::size_t max = 0;
      for (std::size_t id = 0; id < hashes.size(); ++id) {
        std::size_t s = static_cast<std::size_t>((hashes[id] * seed) >> (64 - bits));
        std::size_t d = 0;
        while (t.slots[s].id != kNoId) {
          s = (s + 1) & mask;
          ++d;
        }
        t.slots[s] = {hashes[id], static_cast<std::uint32_t>(id)};
        t.displaced += d;
        max = std::max(max, d);
      }
      if (attempt == 0 || max < best_here_max || (max == best_here_max && t.displaced < best_here.displaced)) {
        best_here = std::move(t);
        best_here_max = max;
      }
    }
    if (bits == min_bits || best_here.displaced == 0) best = std::move(best_here);
  }
  return best;
}

// Where a key's components end: its component count, and the offsets of its third and last
// dots (npos if it has fewer). Eight bytes at a time: a '.' byte is found by a bit trick
// without a branch per character.
struct KeyCuts {
  std::uint32_t depth = 1;
  std::size_t third_dot = std::string_view::npos;
  std::size_t last_dot = std::string_view::npos;
};

inline KeyCuts CutsOf(std::string_view key) {
  KeyCuts c;
  const char* p = key.data();
  const std::size_t n = key.size();
#if defined(__GNUC__) || defined(__clang__)
  if (n >= 8) {
    constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
    // Bit 7 of each byte of the word at `at` that is '.', bytes before `from` cleared.
    auto dots = [&](std::size_t at, unsigned from) {
      const std::uint64_t z = HashLoad64(p + at) ^ 0x2E2E2E2E2E2E2E2Eull;  // '.' bytes become 0
      const std::uint64_t m = ~(((z & kLow7) + kLow7) | z | kLow7);
      return from == 0 ? m : m & (~std::uint64_t{0} << (8 * from));
    };
    auto scan = [&](std::size_t at, std::uint64_t m) {
      for (; m != 0; m &= m - 1) {
        const std::size_t dot = at + static_cast<std::size_t>(__builtin_ctzll(m) >> 3);
        if (++c.depth == 4) c.third_dot = dot;
        c.last_dot = dot;
      }
    };
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) scan(i, dots(i, 0));
    // The tail: the last word again, without the bytes already seen.
    if (i < n) scan(n - 8, dots(n - 8, static_cast<unsigned>(8 - (n - i))));
    return c;
  }
#endif
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != '.') continue;
    if (++c.depth == 4) c.third_dot = i;
    c.last_dot = i;
  }
  return c;
}

// Component count of a key (dots + 1).
inline std::uint32_t KeyDepth(std::string_view key) { return CutsOf(key).depth; }

// The key's first `depth` components (the whole key if it has no more).
inline std::string_view KeyPrefixAt(std::string_view key, std::uint32_t depth) {
  std::uint32_t d = 1;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '.' && d++ == depth) return key.substr(0, i);
  }
  return key;
}

// The depths of a key's fallback levels (ChainOf): the key less its last component if that
// still has more than three, then its first three; none for a key of three or fewer.
struct ChainDepths {
  std::uint32_t depth[kMaxChainLevels - 1] = {};
  std::uint32_t size = 0;  // fallback levels (the chain has size + 1)
};
inline ChainDepths ChainDepthsOf(std::uint32_t depth) {
  ChainDepths c;
  if (depth >= 5) c.depth[c.size++] = depth - 1;
  if (depth >= 4) c.depth[c.size++] = 3;
  return c;
}

// A queried key resolved against an index's names: its own name id (kNoId if no row has that
// key), the chain length, and the fallback levels that name some row key's prefix.
struct Query {
  std::uint32_t key = kNoId;
  std::uint32_t levels = 1;  // the key's chain length (ChainOf(key).size)
  std::uint32_t n = 0;       // entries of level/name in use
  std::uint32_t level[kMaxChainLevels - 1] = {};
  std::uint32_t name[kMaxChainLevels - 1] = {};
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

// The precomputed answers for one (name, dtype, bucket): the row a lookup takes when the name
// is the queried key itself (`exact`: a row with exactly that key) and when it is one of the
// key's fallback levels (`under`: the row of the smallest key that equals the name or continues
// it at a component boundary, as ChainLevel ranks rows). Ties between rows of one key go to the
// first row. kNoId where there is none. Every row key has its choices (for `exact`), and so has
// every prefix of one with at least three components (for `under`: the only depths a fallback
// level has).
template <typename Bucket>
struct Choice {
  std::uint32_t name;   // name id
  std::uint32_t dtype;  // index into the dtype list
  Bucket bucket;
  std::uint32_t exact;
  std::uint32_t under;
};

// The host's queries, one per thread count 1..HostKeys::kMaxThreads, resolved once per process
// and index (LookupForHost).
struct HostChain {
  Query query[HostKeys::kMaxThreads + 1];
};

template <typename Bucket>
struct IndexView {
  const std::string_view* names;  // sorted, unique
  std::size_t num_names;
  const std::uint32_t* name_depth;  // per name, its component count
  const std::uint32_t* prefix;      // prefix[name * prefix_width + d - 1]: the name's first d components
  std::size_t prefix_width;         //   (kNoId past its depth)
  HashTableView name_table;
  const std::string_view* dtypes;  // sorted, unique
  std::size_t num_dtypes;
  const Choice<Bucket>* choices;  // sorted by (dtype, bucket, name)
  std::size_t num_choices;
  HashTableView choice_table;  // on ChoiceHash(BucketHashBase(bucket), name, dtype)

  std::uint32_t NameId(std::string_view name) const {
    return name_table.Find(HashText(name), [&](std::uint32_t id) { return SameText(names[id], name); });
  }

  std::uint32_t DtypeId(std::string_view dtype) const {
    for (std::size_t i = 0; i < num_dtypes; ++i) {
      if (SameText(dtypes[i], dtype)) return static_cast<std::uint32_t>(i);
    }
    return kNoId;
  }

  // The choices of (name, dtype, bucket); null if no row has them. `base` is the bucket's
  // BucketHashBase.
  template <typename B>
  const Choice<Bucket>* FindChoice(std::uint64_t base, std::uint32_t name, std::uint32_t dtype,
                                   const B& bucket) const {
    const std::uint32_t id = choice_table.Find(ChoiceHash(base, name, dtype), [&](std::uint32_t c) {
      const Choice<Bucket>& x = choices[c];
      return x.name == name && x.dtype == dtype && BucketEqual(x.bucket, bucket);
    });
    return id == kNoId ? nullptr : &choices[id];
  }

  // The key's chain over this index's names. A key that is a name has its levels' ids in the
  // prefix table; any other key is split at its dots and its levels looked up by hash
  // (PrepareLevels).
  Query Prepare(std::string_view key) const {
    Query q;
    q.key = NameId(key);
    if (q.key == kNoId) return PrepareLevels(key);
    const ChainDepths c = ChainDepthsOf(name_depth[q.key]);
    q.levels = c.size + 1;
    for (std::uint32_t i = 0; i < c.size; ++i) {
      q.level[q.n] = i + 1;
      q.name[q.n] = prefix[q.key * prefix_width + c.depth[i] - 1];
      ++q.n;
    }
    return q;
  }

  // The fallback levels of `key` only (q.key stays kNoId): as ChainOf, the key less its last
  // component if that is below arch.isa.vendor, then arch.isa.vendor, each looked up by hash.
  Query PrepareLevels(std::string_view key) const {
    Query q;
    const KeyCuts cuts = CutsOf(key);
    const ChainDepths c = ChainDepthsOf(cuts.depth);
    q.levels = c.size + 1;
    for (std::uint32_t i = 0; i < c.size; ++i) {
      const std::uint32_t id = NameId(key.substr(0, c.depth[i] == 3 ? cuts.third_dot : cuts.last_dot));
      if (id == kNoId) continue;  // no row key is under this level
      q.level[q.n] = i + 1;
      q.name[q.n] = id;
      ++q.n;
    }
    return q;
  }

  // The row for query `q`: the key's own choice if it has an exact row, else the first fallback
  // level that has a choice; a probe of the choice table each, the bucket hashed once.
  template <typename B>
  Resolution Choose(const Query& q, std::uint32_t dtype, const B& bucket) const {
    if (dtype == kNoId) return {kNoId, q.levels};
    const std::uint64_t base = BucketHashBase(bucket);
    if (q.key != kNoId) {
      const Choice<Bucket>* c = FindChoice(base, q.key, dtype, bucket);
      if (c != nullptr && c->exact != kNoId) return {c->exact, 0};
    }
    for (std::uint32_t i = 0; i < q.n; ++i) {
      const Choice<Bucket>* c = FindChoice(base, q.name[i], dtype, bucket);
      if (c != nullptr && c->under != kNoId) return {c->under, q.level[i]};
    }
    return {kNoId, q.levels};
  }

  // Resolution for any key, given as a string (the daemon): the key is resolved against the
  // names (Prepare), then chosen for as below.
  template <typename B>
  Resolution Resolve(std::string_view key, std::string_view dtype, const B& bucket) const {
    return Choose(Prepare(key), DtypeId(dtype), bucket);
  }

  // Resolution for a key already resolved against this index (Prepare, or a QueryMemo of this
  // index): integers and the bucket only.
  template <typename B>
  Resolution ResolveQuery(const Query& q, std::string_view dtype, const B& bucket) const {
    return Choose(q, DtypeId(dtype), bucket);
  }

  // The host's queries over this index (see HostChain); detects the CPU on first use.
  HostChain ForHost() const {
    const HostKeys& host = HostKeys::Get();
    HostChain h;
    h.query[0] = Query{};
    for (int t = 1; t <= HostKeys::kMaxThreads; ++t) h.query[t] = Prepare(host.Key(t));
    return h;
  }

  // Resolution for the host key at `threads` threads (`dtype` an index into `dtypes`), from the
  // host's queries resolved before.
  template <typename B>
  Resolution ResolveForHost(const HostChain& host, int threads, std::uint32_t dtype, const B& bucket) const {
    if (threads < 1 || threads > HostKeys::kMaxThreads) return ResolveForHostSlow(threads, dtype, bucket);
    return Choose(host.query[threads], dtype, bucket);
  }
  template <typename B>
  Resolution ResolveForHost(const HostChain& host, int threads, std::string_view dtype, const B& bucket) const {
    return ResolveForHost(host, threads, DtypeId(dtype), bucket);
  }

  // A thread count HostChain does not hold: the key is formatted and resolved on every call.
  template <typename B>
  BLOCKTUNE_TABLES_NOINLINE Resolution ResolveForHostSlow(int threads, std::uint32_t dtype, const B& bucket) const {
    return Choose(Prepare(HostKeys::Get().Key(threads)), dtype, bucket);
  }
};

// Queried keys of one index and their resolved chains (Query), so that a process that looks up
// with the same few keys over and over (an application before every kernel launch) resolves
// each key once instead of cutting it at its dots and hashing its levels on every call: on the
// matmul table that was ~500 of a fallback lookup's ~850 instructions (callgrind,
// docs/performance.md#lookup-cost). A hit costs comparing the key with the copy kept here,
// eight bytes at a time. Four slots, picked by the key's length and last byte (keys of one CPU
// at different thread counts differ there), each replaced by the next key that maps to it; keys
// longer than kMaxKey bytes are resolved on every call. Name ids belong to one index, so a memo
// serves one: it forgets everything when asked about another. Not thread-safe: the generated
// headers keep one per thread (thread_local). Constant-initialised, so a thread_local memo
// needs no guard on access.
class QueryMemo {
 public:
  static constexpr std::size_t kSlots = 4;
  static constexpr std::size_t kMaxKey = 60;

  constexpr QueryMemo() = default;

  // The key's Query; valid until the next call of Get on this memo. The hit is inline; a miss
  // (resolving and storing the key) is a call.
  template <typename B>
  const Query& Get(const IndexView<B>& index, std::string_view key) {
    if (owner_ == index.names && key.size() <= kMaxKey) {
      const std::size_t last = key.empty() ? 0 : static_cast<unsigned char>(key.back());
      const Slot& s = slots_[(key.size() + last) & (kSlots - 1)];
      if (s.size == key.size() && SameText(std::string_view(s.text, s.size), key)) return s.query;
    }
    return Miss(index, key);
  }

 private:
  template <typename B>
  BLOCKTUNE_TABLES_NOINLINE const Query& Miss(const IndexView<B>& index, std::string_view key) {
    if (owner_ != index.names) {
      for (Slot& s : slots_) s.size = kEmpty;
      owner_ = index.names;
    }
    if (key.size() > kMaxKey) {
      long_ = index.Prepare(key);
      return long_;
    }
    const std::size_t last = key.empty() ? 0 : static_cast<unsigned char>(key.back());
    Slot& s = slots_[(key.size() + last) & (kSlots - 1)];
    s.query = index.Prepare(key);
    std::copy(key.begin(), key.end(), s.text);
    s.size = static_cast<std::uint32_t>(key.size());
    return s.query;
  }

  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  struct Slot {
    std::uint32_t size = kEmpty;  // of `text`; kEmpty: unused
    char text[kMaxKey] = {};
    Query query = {};
  };
  const void* owner_ = nullptr;  // the index's names array
  Slot slots_[kSlots] = {};
  Query long_ = {};  // the last key longer than kMaxKey
};

// What the index is made of, as vectors: built by BuildIndex for the daemon's rows (RowIndex)
// and by the generator, which prints it as the arrays of a generated header.
template <typename Bucket>
struct IndexData {
  std::vector<std::string_view> names;  // views into the rows' keys
  std::vector<std::uint32_t> name_depth;
  std::vector<std::uint32_t> prefix;
  std::size_t prefix_width = 0;
  HashTableData name_table;
  std::vector<std::string_view> dtypes;  // views into the rows' dtypes
  std::vector<Choice<Bucket>> choices;
  HashTableData choice_table;

  IndexView<Bucket> view() const {
    return {names.data(),   names.size(),  name_depth.data(), prefix.data(),  prefix_width,
            name_table.view(), dtypes.data(), dtypes.size(),     choices.data(), choices.size(),
            choice_table.view()};
  }
};

// One row as the index sees it.
template <typename Bucket>
struct IndexRow {
  std::string_view hardware;
  std::string_view dtype;
  Bucket bucket;
};

template <typename Bucket>
IndexData<Bucket> BuildIndex(const std::vector<IndexRow<Bucket>>& rows) {
  IndexData<Bucket> x;
  // Names: each key and its prefixes at component boundaries.
  for (const auto& r : rows) {
    const std::uint32_t depth = KeyDepth(r.hardware);
    for (std::uint32_t d = 1; d <= depth; ++d) x.names.push_back(KeyPrefixAt(r.hardware, d));
    x.dtypes.push_back(r.dtype);
  }
  for (auto* v : {&x.names, &x.dtypes}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  auto name_id = [&](std::string_view s) {
    return static_cast<std::uint32_t>(std::lower_bound(x.names.begin(), x.names.end(), s) - x.names.begin());
  };
  for (std::string_view n : x.names) {
    x.name_depth.push_back(KeyDepth(n));
    x.prefix_width = std::max<std::size_t>(x.prefix_width, x.name_depth.back());
  }
  x.prefix.assign(x.names.size() * x.prefix_width, kNoId);
  std::vector<std::uint64_t> hashes;
  for (std::size_t id = 0; id < x.names.size(); ++id) {
    for (std::uint32_t d = 1; d <= x.name_depth[id]; ++d) {
      x.prefix[id * x.prefix_width + d - 1] = name_id(KeyPrefixAt(x.names[id], d));
    }
    hashes.push_back(HashText(x.names[id]));
  }
  x.name_table = BuildHashTable(hashes);

  // Choices: every row offers itself to its key (exact) and to each prefix of its key with at
  // least three components (under). Sorted by (dtype, bucket, name, row key, row), the first
  // offer of a (dtype, bucket, name) is its `under` (smallest key, then first row) and the first
  // whose key is the name itself its `exact`.
  struct Offer {
    std::uint32_t dtype;
    const Bucket* bucket;
    std::uint32_t name;
    std::uint32_t key;
    std::uint32_t row;
  };
  std::vector<Offer> offers;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto dtype = static_cast<std::uint32_t>(std::lower_bound(x.dtypes.begin(), x.dtypes.end(), r.dtype) -
                                                  x.dtypes.begin());
    const std::uint32_t key = name_id(r.hardware);
    const std::uint32_t depth = x.name_depth[key];
    for (std::uint32_t d = 1; d <= depth; ++d) {
      if (d == depth || d >= 3) {
        offers.push_back({dtype, &r.bucket, x.prefix[key * x.prefix_width + d - 1], key, static_cast<std::uint32_t>(i)});
      }
    }
  }
  std::sort(offers.begin(), offers.end(), [](const Offer& a, const Offer& b) {
    if (a.dtype != b.dtype) return a.dtype < b.dtype;
    if (*a.bucket < *b.bucket) return true;
    if (*b.bucket < *a.bucket) return false;
    if (a.name != b.name) return a.name < b.name;
    if (a.key != b.key) return a.key < b.key;
    return a.row < b.row;
  });
  hashes.clear();
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const Offer& o = offers[i];
    if (i == 0 || o.dtype != x.choices.back().dtype || o.name != x.choices.back().name ||
        !(*o.bucket == x.choices.back().bucket)) {
      const bool under = x.name_depth[o.name] >= 3;
      x.choices.push_back({o.name, o.dtype, *o.bucket, kNoId, under ? o.row : kNoId});
      hashes.push_back(ChoiceHash(BucketHashBase(*o.bucket), o.name, o.dtype));
    }
    if (o.key == o.name && x.choices.back().exact == kNoId) x.choices.back().exact = o.row;
  }
  x.choice_table = BuildHashTable(hashes);
  return x;
}
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
// `build` empty (fingerprints unavailable): nothing is reported stale. The generated headers
// answer with StaleFlags below instead, computed by the compiler; this is the same rule.
template <typename Lookup>
Lookup MarkStale(Lookup r, std::string_view build) {
  if (r.row != nullptr) {
    r.fingerprint = r.row->fingerprint;
    r.stale = !build.empty() && !r.fingerprint.empty() && !SameText(r.fingerprint, build);
  }
  return r;
}

// Per row, whether it is stale in a build of fingerprint `build` (MarkStale's rule): a
// generated header's kStale, evaluated at compile time, so a lookup reads a flag instead of
// comparing fingerprints.
template <typename Row, std::size_t NRows>
constexpr std::array<bool, NRows> StaleFlags(const std::array<Row, NRows>& rows, std::string_view build) {
  std::array<bool, NRows> stale{};
  for (std::size_t i = 0; i < NRows; ++i) {
    stale[i] = !build.empty() && !rows[i].fingerprint.empty() && rows[i].fingerprint != build;
  }
  return stale;
}

template <typename Row, std::size_t NRows, std::size_t NDims>
TableLookup<Row, NDims> AnswerFrom(const std::array<Row, NRows>& rows, const std::array<bool, NRows>& stale,
                                   const Resolution& r, const decltype(Row::config)& default_config,
                                   const BucketName<NDims>& bucket, std::string_view queried) {
  const int levels = static_cast<int>(r.level);
  if (r.row == kNoId) return {default_config, Source::kDefault, {}, queried, levels, bucket, 0.0, nullptr, {}, false};
  const Row& row = rows[r.row];
  return {row.config, SourceOf(r), row.hardware, queried, levels, bucket, row.median_ns, &row, row.fingerprint,
          stale[r.row]};
}

template <std::size_t NDims>
BucketName<NDims> RoundBucket(const BucketDim (&dims)[NDims], const std::array<std::int64_t, NDims>& values) {
  BucketName<NDims> b;
  b.dims = dims;
  for (std::size_t i = 0; i < NDims; ++i) b.values[i] = RoundDim(dims[i], values[i]);
  return b;
}

// The lookups of a generated header take its constexpr tables as template arguments (Rows: its
// kRows, Stale: kStale, Index: kIndex, Default: kDefault, Dims: kDims), so each header gets its
// own copy of this code with the tables' sizes, seeds, dtype names and bucket rounding folded
// into it by the compiler: the same code as for any index, without loading what is constant.
template <const auto& Rows, const auto& Dims>
using LookupOf = TableLookup<typename std::remove_cv_t<std::remove_reference_t<decltype(Rows)>>::value_type,
                             std::extent_v<std::remove_reference_t<decltype(Dims)>>>;

template <const auto& Dims, std::size_t NDims = std::extent_v<std::remove_reference_t<decltype(Dims)>>>
BucketName<NDims> RoundBucketOf(const std::array<std::int64_t, NDims>& values) {
  return RoundBucket(Dims, values);
}

// `memo` holds the keys this caller resolved before over `Index` (the headers pass one per
// thread); `dtype` is an index into Index.dtypes (kNoId: none has it).
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableById(
    QueryMemo& memo, const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values,
    std::string_view hardware_key, std::uint32_t dtype) {
  const auto bucket = RoundBucketOf<Dims>(values);
  const Resolution r = Index.Choose(memo.Get(Index, hardware_key), dtype, bucket.values);
  return AnswerFrom(Rows, Stale, r, Default, bucket, hardware_key);
}

// The dtype is found among the table's (a few compares, folded away for a literal where this
// is inlined), then LookupInTableById.
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTable(
    QueryMemo& memo, const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values,
    std::string_view hardware_key, std::string_view dtype) {
  return LookupInTableById<Rows, Stale, Index, Default, Dims>(memo, values, hardware_key, Index.DtypeId(dtype));
}

// `host` is Index.ForHost(), kept by the caller.
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableForHostById(
    const HostChain& host,
    const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values, int threads,
    std::uint32_t dtype) {
  const auto bucket = RoundBucketOf<Dims>(values);
  const Resolution r = Index.ResolveForHost(host, threads, dtype, bucket.values);
  return AnswerFrom(Rows, Stale, r, Default, bucket, HostKeys::Get().Key(threads));
}

template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableForHost(
    const HostChain& host,
    const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values, int threads,
    std::string_view dtype) {
  return LookupInTableForHostById<Rows, Stale, Index, Default, Dims>(host, values, threads, Index.DtypeId(dtype));
}

// ---------------------------------------------------------------------------------------------
// An index built at run time over any rows with `hardware`, `dtype` and `bucket` members
// convertible to std::string_view (the daemon's rows from SQLite; tests): BuildIndex with bucket
// ids for buckets, searched by the same IndexView as a generated header. It keeps views into the
// rows, which must outlive it and stay where they are.

class RowIndex {
 public:
  RowIndex() = default;
  template <typename Rows>
  explicit RowIndex(const Rows& rows) {
    std::vector<IndexRow<std::string_view>> index_rows;
    for (const auto& r : rows) {
      index_rows.push_back({std::string_view(r.hardware), std::string_view(r.dtype), std::string_view(r.bucket)});
    }
    data_ = BuildIndex(index_rows);
  }
  // Copies would point into another object's vectors only by accident; moves keep the buffers.
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;
  RowIndex(RowIndex&&) = default;
  RowIndex& operator=(RowIndex&&) = default;

  IndexView<std::string_view> view() const { return data_.view(); }
  Resolution Resolve(std::string_view hardware_key, std::string_view dtype, std::string_view bucket) const {
    return view().Resolve(hardware_key, dtype, bucket);
  }

 private:
  IndexData<std::string_view> data_;
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
