// DType: the element types kernels accept, with the one name table used by JSON, SQL,
// headers and CLI flags.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace blocktune {

enum class DType : uint8_t { kF32, kBF16 };

inline constexpr std::array<std::pair<DType, std::string_view>, 2> kDTypeNames{{
    {DType::kF32, "f32"},
    {DType::kBF16, "bf16"},
}};

constexpr std::string_view DTypeName(DType d) {
  for (const auto& [t, n] : kDTypeNames) {
    if (t == d) return n;
  }
  return "unknown";
}

constexpr std::optional<DType> ParseDType(std::string_view s) {
  for (const auto& [t, n] : kDTypeNames) {
    if (n == s) return t;
  }
  return std::nullopt;
}

constexpr int DTypeBytes(DType d) { return d == DType::kF32 ? 4 : 2; }

// bf16 storage: the upper 16 bits of an IEEE f32, rounded to nearest even on conversion.
struct BF16 {
  uint16_t bits = 0;
};

inline float BF16ToFloat(BF16 v) {
  uint32_t u = static_cast<uint32_t>(v.bits) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline BF16 FloatToBF16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    return BF16{static_cast<uint16_t>((u >> 16) | 0x40)};  // keep NaN a NaN
  }
  u += 0x7fffu + ((u >> 16) & 1u);
  return BF16{static_cast<uint16_t>(u >> 16)};
}

}  // namespace blocktune
