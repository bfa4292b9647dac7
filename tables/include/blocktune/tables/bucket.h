// blocktune/tables/bucket.h: shape buckets: each dim rounded as its kernel declares, the bucket id.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace blocktune::tables {

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
bool operator==(const BucketName<N>& a, std::string_view b) {
  return a.str() == b;
}
template <std::size_t N>
bool operator==(std::string_view a, const BucketName<N>& b) {
  return b.str() == a;
}
template <std::size_t N>
bool operator!=(const BucketName<N>& a, std::string_view b) {
  return !(a == b);
}
template <std::size_t N>
bool operator!=(std::string_view a, const BucketName<N>& b) {
  return !(b == a);
}

}  // namespace blocktune::tables
