// blocktune/tables/source.h: the lookup's sources and their precedence, written once for every lookup.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <optional>
#include <string_view>
#include <utility>

namespace blocktune::tables {

// Where a lookup's answer came from. The precedence, first hit wins (CLBlast's
// Database::Search pattern, made explicit):
//   explicit        the caller named a config (validated against the problem, then echoed);
//   override        a pin for this bucket under the hardware key, any of its prefixes, or "*";
//   tuned           a row for exactly this hardware key, dtype and bucket;
//   tuned_fallback  a row of this dtype and bucket for the same CPU model at another thread
//                   count, else for another CPU model of the same vendor and ISA level (ties:
//                   smallest key); never another ISA level or vendor (hardware_key.h, ChainOf);
//   nearest         no row for this bucket anywhere in the chain: the row of the closest bucket
//                   at the most specific level that has any;
//   default         the kernel's default block sizes.
// A lookup always answers and says which of these produced the answer. ByPrecedence below is
// the order as code; each lookup offers the steps it has: the daemon all six
// (tuner/lookup.cc), a generated header tuned, tuned_fallback and default (table_lookup.h).
enum class Source { kExplicit, kOverride, kTuned, kTunedFallback, kNearest, kDefault };

// Every source in precedence order (the order of the enum and of ByPrecedence), for the lists
// that name them all (the wire's enum of sources, decoding a source by name).
inline constexpr Source kPrecedence[] = {Source::kExplicit,      Source::kOverride, Source::kTuned,
                                         Source::kTunedFallback, Source::kNearest,  Source::kDefault};

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

// A step a lookup does not have: it never answers (folded away where ByPrecedence is inlined).
struct NoStep {
  constexpr std::nullopt_t operator()() const { return std::nullopt; }
};

// The precedence as code: each step is called in order until one answers. A step returns
// std::optional<Answer> (empty: no answer here, try the next), or is NoStep; `default_config`
// returns an Answer, so a lookup always answers. `tuned` answers both tuned and tuned_fallback:
// one walk down the key's chain (IndexView::Choose) finds the most specific row.
template <typename Answer, typename Explicit, typename Override, typename Tuned, typename Nearest, typename Default>
Answer ByPrecedence(Explicit&& explicit_config, Override&& override_pin, Tuned&& tuned, Nearest&& nearest,
                    Default&& default_config) {
  if (std::optional<Answer> a = explicit_config()) return *std::move(a);
  if (std::optional<Answer> a = override_pin()) return *std::move(a);
  if (std::optional<Answer> a = tuned()) return *std::move(a);
  if (std::optional<Answer> a = nearest()) return *std::move(a);
  return default_config();
}

}  // namespace blocktune::tables
