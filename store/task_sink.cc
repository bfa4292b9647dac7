// TaskSink: each SweepSink call is one store operation; see task_sink.h.
#include "store/task_sink.h"

namespace blocktune::store {

Result<std::vector<tuner::Measurement>> TaskSink::Existing(const std::string& bucket) {
  return Note(store_.measurements().ListBucket(task_.sweep_id, bucket));
}

Status TaskSink::CheckDevice(const tuner::Measurement& m) const {
  if (!m.device_error.empty()) {
    return MakeError(ErrorCode::kFailedPrecondition,
                     "sweep " + std::to_string(task_.sweep_id) + ": " + m.device_error + "; nothing of it was stored",
                     "device");
  }
  if (device_key_.empty() || m.device_key.empty() || m.device_key == device_key_) return {};
  return MakeError(ErrorCode::kFailedPrecondition,
                   "sweep " + std::to_string(task_.sweep_id) + " is filed under " + device_key_ +
                       ", but the runner answered from " + m.device_key +
                       (m.device.empty() ? std::string(" (no device line)") : " (" + m.device + ")") +
                       ": the device changed within the sweep (a runner restarted on another device?); that "
                       "measurement was not stored and the sweep fails",
                   "device");
}

Status TaskSink::Record(tuner::Measurement& m, int64_t /*done*/, int64_t total) {
  if (auto s = CheckDevice(m); !s) return s;
  return Note(store_.measurements().Record(m, task_.id, total, owner_));
}

Result<std::optional<tuner::TunedEntry>> TaskSink::Incumbent(const std::string& kernel, const std::string& hardware_key,
                                                             DType dtype, const std::string& bucket) {
  return Note(store_.tuned().Get(kernel, hardware_key, dtype, bucket));
}

Status TaskSink::RecordEnvironment(const tuner::timing::SweepEnvironment& environment) {
  return Note(store_.sweeps().SetEnvironment(task_.sweep_id, environment));
}

Status TaskSink::RecordFinalRound(const tuner::FinalRound& round) {
  for (const tuner::Measurement& m : round.candidates) {
    if (auto s = CheckDevice(m); !s) return s;
  }
  return Note(store_.decisions().Record(round));
}

Status TaskSink::RecordBreakdown(const tuner::SweepBreakdown& breakdown) {
  return Note(store_.sweeps().AddBreakdown(task_.sweep_id, breakdown));
}

Result<std::vector<tuner::search::ProfileMeasurement>> TaskSink::ProfileMeasurements() {
  return Note(store_.measurements().ListOtherProfiles(task_.sweep_id));
}

Status TaskSink::RecordPriorProfiles(const std::vector<tuner::search::ProfileSimilarity>& profiles) {
  return Note(store_.sweeps().SetPriorProfiles(task_.sweep_id, profiles));
}

Result<std::vector<tuner::Measurement>> TaskSink::PriorMeasurements() {
  return Note(store_.measurements().ListPrior(task_.sweep_id, task_.ordinal));
}

}  // namespace blocktune::store
