// blocktune/tables/source.h: which of the lookup's row sources produced an answer (the precedence of resolve.h).
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <string_view>

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

}  // namespace blocktune::tables
