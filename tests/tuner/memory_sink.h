// An in-memory SweepSink for the engine tests: stores measurements (so a second RunSweep with
// the same sink resumes), can cancel after a number of records to simulate a stopped sweep,
// and records or serves everything else the engine asks of a sink.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuner/sweep.h"

namespace blocktune::testing {

class MemorySink : public tuner::SweepSink {
 public:
  Result<std::vector<tuner::Measurement>> Existing(const std::string& bucket) override {
    std::vector<tuner::Measurement> out;
    for (const auto& m : stored) {
      if (m.bucket == bucket) out.push_back(m);
    }
    return out;
  }
  Status Record(tuner::Measurement& m, int64_t done, int64_t total) override {
    m.id = static_cast<int64_t>(stored.size()) + 1;
    stored.push_back(m);
    last_done = done;
    last_total = total;
    return {};
  }
  bool Cancelled() override { return cancel_after >= 0 && static_cast<int64_t>(stored.size()) >= cancel_after; }
  Result<std::optional<tuner::TunedEntry>> Incumbent(const std::string&, const std::string&, DType,
                                                     const std::string&) override {
    return incumbent;
  }
  Status RecordEnvironment(const tuner::timing::SweepEnvironment& env) override {
    environment = env;
    return {};
  }
  Status RecordFinalRound(const tuner::FinalRound& round) override {
    rounds.push_back(round);
    return {};
  }
  Result<std::vector<tuner::Measurement>> PriorMeasurements() override { return prior; }

  std::vector<tuner::Measurement> stored;
  std::vector<tuner::Measurement> prior;  // served as the transfer strategy's prior
  int64_t cancel_after = -1;              // stop the sweep once this many are stored; -1 never
  int64_t last_done = 0;                  // progress passed with the last Record
  int64_t last_total = 0;
  std::optional<tuner::TunedEntry> incumbent;
  tuner::timing::SweepEnvironment environment;
  std::vector<tuner::FinalRound> rounds;
};

}  // namespace blocktune::testing
