// TaskSink: the tuner's SweepSink for one task (one bucket of one sweep) on the store. This is
// the sink the daemon's job runner and `blocktune sweep --local` run (server/service_runner.cc), and
// the one the store and fault-matrix tests drive, so they exercise production's write path.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "store/store.h"
#include "tuner/sweep.h"

namespace blocktune::store {

class TaskSink : public tuner::SweepSink {
 public:
  // What a lookup serves the host for a bucket (its representative problem) now; the daemon
  // answers through its resolver (server/service.cc).
  using ServedFn = std::function<Result<std::optional<Config>>(const std::string& bucket, const Problem& problem)>;
  // Configs other hardware profiles' rows chose for a bucket (tuner::SweepSink::Seeds).
  using SeedsFn = std::function<Result<std::vector<Config>>(const std::string& bucket, const Problem& problem)>;

  // `cancelled`, if given, is polled by the engine between configs; `served`, if given, names
  // the config the decision round must also beat; `seeds`, if given, the configs a transfer or
  // auto search measures first.
  TaskSink(Store& store, TaskRecord task, std::function<bool()> cancelled = {}, ServedFn served = {},
           SeedsFn seeds = {})
      : store_(store),
        task_(std::move(task)),
        cancelled_(std::move(cancelled)),
        served_(std::move(served)),
        seeds_(std::move(seeds)) {}

  // Commits only while this executor owns the task's sweep (MeasurementsTable::Record).
  void set_owner(std::string owner) { owner_ = std::move(owner); }
  // The first error a store call of this sink returned (the engine stops at it): a storage
  // fault (disk full, I/O) the runner waits out, or a lost claim, rather than a failed task.
  const std::optional<Error>& store_error() const { return store_error_; }
  // The hardware key the sweep is filed under (server/service_device.cc): a measurement a
  // runner answered from another device, or with an invalid device line, is refused (an error
  // with path "device", which fails the sweep) instead of stored. Unset: nothing is checked.
  void ExpectDevice(std::string hardware_key) { device_key_ = std::move(hardware_key); }

  Result<std::vector<tuner::Measurement>> Existing(const std::string& bucket) override;
  // Commits the measurement and the engine's planned total for the task (`done` is implied
  // by the rows committed).
  Status Record(tuner::Measurement& m, int64_t done, int64_t total) override;
  bool Cancelled() override { return cancelled_ && cancelled_(); }
  // The decision round needs the incumbent, and records the environment and the round itself.
  Result<std::optional<tuner::TunedEntry>> Incumbent(const std::string& kernel, const std::string& hardware_key,
                                                     DType dtype, const std::string& bucket) override;
  Status RecordEnvironment(const tuner::timing::SweepEnvironment& environment) override;
  Status RecordFinalRound(const tuner::FinalRound& round) override;
  // The transfer prior: earlier sweeps' and this sweep's earlier tasks' passing measurements.
  Result<std::vector<tuner::Measurement>> PriorMeasurements() override;
  Result<std::optional<Config>> Served(const std::string& bucket, const Problem& problem) override {
    return served_ ? served_(bucket, problem) : std::optional<Config>();
  }
  Result<std::vector<Config>> Seeds(const std::string& bucket, const Problem& problem) override {
    return seeds_ ? seeds_(bucket, problem) : std::vector<Config>();
  }
  // Added to the sweep's row (sweeps_table.h AddBreakdown).
  Status RecordBreakdown(const tuner::SweepBreakdown& breakdown) override;
  // Earlier sweeps of this kernel and dtype under other hardware keys.
  Result<std::vector<tuner::search::ProfileMeasurement>> ProfileMeasurements() override;
  Status RecordPriorProfiles(const std::vector<tuner::search::ProfileSimilarity>& profiles) override;

 private:
  template <typename T>
  T Note(T result) {
    if (!result && !store_error_) store_error_ = result.error();
    return result;
  }

  Store& store_;
  TaskRecord task_;
  std::string owner_;
  std::optional<Error> store_error_;
  std::function<bool()> cancelled_;
  ServedFn served_;
  SeedsFn seeds_;
  std::string device_key_;
  Status CheckDevice(const tuner::Measurement& m) const;
};

}  // namespace blocktune::store
