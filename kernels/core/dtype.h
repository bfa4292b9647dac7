// DType: the element types kernels accept, with the one name table used by JSON, SQL,
// headers and CLI flags.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace blocktune {

// f16, f64, c64 and c128 are for external kernels and imported results (CLBlast tunes half,
// double and both complex precisions); each built-in kernel lists the ones it runs.
enum class DType : uint8_t { kF32, kBF16, kF16, kF64, kC64, kC128 };

inline constexpr std::array<std::pair<DType, std::string_view>, 6> kDTypeNames{{
    {DType::kF32, "f32"},
    {DType::kBF16, "bf16"},
    {DType::kF16, "f16"},
    {DType::kF64, "f64"},
    {DType::kC64, "c64"},    // complex of two f32
    {DType::kC128, "c128"},  // complex of two f64
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

constexpr int DTypeBytes(DType d) {
  switch (d) {
    case DType::kBF16:
    case DType::kF16: return 2;
    case DType::kF32: return 4;
    case DType::kF64:
    case DType::kC64: return 8;
    case DType::kC128: return 16;
  }
  return 4;
}

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
