// The regression gate of `blocktune tables generate --db`: before a database row replaces a
// checked-in row of the HOST's own profile (its hardware key) with another config, both configs
// are verified and timed again side by side on this machine (Evaluator::MeasureInterleaved,
// repetitions interleaved), and the old row is kept unless the new config is faster beyond the
// noise band (NoiseBand from the robust CVs, as in the sweep's decision round). `force` takes the
// new row untimed. The decision and both timings go into the row (TunedEntry::gate), so the
// checked-in jsonl and the generated tables say why the row is what it is. Rows of other
// profiles are merged as they are: this machine cannot time them. A device's row
// (gpu.nvidia.sm90.h200, docs/accelerators.md) is timed through its kernel's runner and judged
// only if the runner answers from that device; otherwise it is merged as it is (other_device).
//
// Staleness comes first, as everywhere: a stale database row (measured by another build of the
// kernel) never replaces a fresh checked-in row. See docs/tables.md#regression-gate.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "tuner/evaluator.h"
#include "tuner/measurement.h"
#include "tuner/timing/timing.h"

namespace blocktune::tuner {

struct GateOptions {
  bool force = false;
  timing::TimingOptions timing;  // `repetitions` interleaved rounds of both configs
  double min_noise_band = 0.02;  // as SweepOptions::min_noise_band
  // Verifies and times both configs. The CLI passes a WorkerEvaluator, so a config that
  // crashes or hangs becomes that config's outcome (the new row is refused, or the old one
  // replaced) instead of ending the merge. Null: an InProcessEvaluator (tests with in-process
  // kernels), where a crashing config takes the process down.
  Evaluator* evaluator = nullptr;
  // The kernel of a row; default FindKernel (tests pass their own kernels).
  std::function<const KernelSpec*(std::string_view)> find_kernel;
  // Whether a hardware key is this machine's; default IsHostKey.
  std::function<bool(std::string_view)> is_host_key;
  // The UTC timestamp written with a decision; default UtcNow().
  std::string now;
};

// What happened to one database row that had a checked-in row under the same key.
struct GateEvent {
  std::string kernel, hardware, dtype, bucket;
  // "replaced", "kept", "forced" (gate decisions, with `record`), or "same_config",
  // "other_profile", "other_device" (a device row whose runner does not answer from that device
  // here), "stale_db_row", "old_row_invalid" (merged or refused without timing).
  std::string what;
  std::optional<GateRecord> record;
  std::string detail;
};

// True if `key` is this machine's hardware key at the thread count the key names (".tN"), at any
// ISA level this CPU can run (the gate times such a row at its level).
bool IsHostKey(std::string_view key);

// The thread count a key names in its last component ("...t4" -> 4); 0 if none.
int KeyThreads(std::string_view key);

// Merges `update` (database rows) into `base` (the checked-in rows) like codegen::Merge, with
// the gate for host rows and the staleness rule; `events` (optional) gets one entry per update
// row that met a checked-in row. Errors: a row of an unknown kernel, or a bucket that does not
// parse, when it would need timing.
Result<std::vector<TunedEntry>> GatedMerge(std::vector<TunedEntry> base, const std::vector<TunedEntry>& update,
                                           const GateOptions& options, std::vector<GateEvent>* events = nullptr);

}  // namespace blocktune::tuner
