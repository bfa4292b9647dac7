// Name tables for the tuner's enums.
#include "tuner/measurement.h"

namespace blocktune::tuner {

std::optional<Outcome> ParseOutcome(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(kOutcomeNames)); ++i) {
    if (kOutcomeNames[i] == s) return static_cast<Outcome>(i);
  }
  return std::nullopt;
}

bool TakeForeignDevice(Measurement& m, const Measurement& later) {
  if (later.device_error.empty() && (later.device_key.empty() || later.device_key == m.device_key)) return false;
  m.device_key = later.device_key;
  m.device = later.device;
  m.device_error = later.device_error;
  return true;
}

std::optional<Strategy> ParseStrategy(std::string_view s) {
  for (int i = 0; i < static_cast<int>(std::size(kStrategyNames)); ++i) {
    if (kStrategyNames[i] == s) return static_cast<Strategy>(i);
  }
  return std::nullopt;
}

}  // namespace blocktune::tuner
