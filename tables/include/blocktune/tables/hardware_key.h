// blocktune/tables/hardware_key.h: the hardware key grammar and its fallback chain.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace blocktune::tables {

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

// Device keys (docs/accelerators.md): an accelerator's key is gpu.<vendor>.<arch>.<model> or
// tpu.<vendor>.<generation>. Its chain is the key alone: a row of another model of the same
// architecture (gpu.nvidia.sm90.h100 for gpu.nvidia.sm90.h200) serves only where a caller asks
// for it explicitly (tuner::LookupQuery::device_same_arch, `blocktuned --device-fallback
// same-arch`), off until `blocktune regret` has measured what it costs; another architecture,
// vendor or kind never. A CPU key never reaches a device key's rows either: every level of its
// chain starts with its CPU architecture.
inline bool IsDeviceKey(std::string_view key) {
  const auto kind = [&](const char* k) {
    return key.size() >= 3 && key[0] == k[0] && key[1] == k[1] && key[2] == k[2] && (key.size() == 3 || key[3] == '.');
  };
  return kind("gpu") || kind("tpu");
}

struct ChainKeys {
  std::string_view level[kMaxChainLevels] = {};
  std::size_t size = 0;
};

// The key's fallback chain, most specific first (views into `key`); a device key's is itself.
inline ChainKeys ChainOf(std::string_view key) {
  ChainKeys c;
  c.level[c.size++] = key;
  if (IsDeviceKey(key)) return c;
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

}  // namespace blocktune::tables
