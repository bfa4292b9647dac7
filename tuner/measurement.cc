// Name tables for the tuner's enums.
#include "tuner/measurement.h"

namespace blocktune::tuner {

std::optional<Outcome> ParseOutcome(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(kOutcomeNames)); ++i) {
    if (kOutcomeNames[i] == s) return static_cast<Outcome>(i);
  }
  return std::nullopt;
}

std::optional<Strategy> ParseStrategy(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(kStrategyNames)); ++i) {
    if (kStrategyNames[i] == s) return static_cast<Strategy>(i);
  }
  return std::nullopt;
}

}  // namespace blocktune::tuner
