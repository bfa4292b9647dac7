// blocktune/tables/source.h: the lookup's sources and their precedence, written once for every lookup.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <string_view>

#ifndef BLOCKTUNE_TABLES_ALWAYS_INLINE
// ByPrecedence and a header's answer are built where the lookup is: GCC 12 (-O2 and -O3) keeps
// them out of line otherwise, one more call and a copy of the answer per header lookup.
#if defined(__GNUC__) || defined(__clang__)
#define BLOCKTUNE_TABLES_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define BLOCKTUNE_TABLES_ALWAYS_INLINE inline
#endif
#endif

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
  template <typename Answer>
  constexpr bool operator()(const Answer&) const {
    return false;
  }
};

// The precedence as code: each step is called in order with the answer until one fills it in
// and returns true; `default_config` always does, so a lookup always answers. A step a lookup
// does not have is NoStep. `tuned` answers both tuned and tuned_fallback: one walk down the
// key's chain (IndexView::Choose) finds the most specific row. A step that answers sets every
// field, and the answer is not zeroed first: a header lookup takes ~25 ns (tables/bench/
// lookup_bench), and building its answer in an optional and copying it out, or zeroing it
// before the step writes it, measured 1.5-4x that.
template <typename Answer, typename Explicit, typename Override, typename Tuned, typename Nearest, typename Default>
BLOCKTUNE_TABLES_ALWAYS_INLINE Answer ByPrecedence(Explicit&& explicit_config, Override&& override_pin, Tuned&& tuned,
                                                   Nearest&& nearest, Default&& default_config) {
  Answer answer;  // every step that answers sets all of it (a header lookup: no zeroing first)
  if (!explicit_config(answer) && !override_pin(answer) && !tuned(answer) && !nearest(answer)) {
    default_config(answer);
  }
  return answer;
}

}  // namespace blocktune::tables
