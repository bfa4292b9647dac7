// The runner protocol (docs/external-kernels.md): how blocktune measures an external kernel.
// The runner is the spec's `runner.command`, started with fork + exec (no shell) in the spec
// file's folder. Per config blocktune writes one JSON object per line to the runner's stdin:
//   {"kernel", "dtype", "shape": {dim: value}, "config": {param: value}, "min_time_ms", "repetitions"}
// and reads one JSON object per line from the runner's file descriptor 3:
//   {"times_ms": [t, ...]}                     a measured config (one time per repetition)
//   {"outcome": "invalid" | "compile_failed" | "runtime_failed" | "wrong_result", "message": "..."}
// The runner's stdout and stderr go to a pipe kept as a capped log (the last kLogTailBytes are
// appended to a failed config's detail). What blocktune records:
//   times_ms                 ok (unstable if the spread stays above max_cv after the retries)
//   invalid                  invalid
//   compile_failed           compile_failed (detail: the message)
//   runtime_failed           runtime_failed (detail: the message and the log's tail)
//   wrong_result             wrong_result (correctness is the runner's to check)
//   the runner exits or is killed before answering        crashed (exit status or signal)
//   anything else on fd 3 (not JSON, wrong fields, > 1 MiB) worker_lost ("runner protocol error")
//   no answer within the timeout                          timeout (the runner is SIGKILLed)
// Before its first answer a runner may write one device line on fd 3, {"device": {"kind",
// "vendor", "model", "arch", "memory_bytes", "driver", "runtime", "platform"}} (external/device.h,
// docs/accelerators.md): every answer of that process then carries the device's key
// (Measurement::device_key, gpu.nvidia.sm90.h200), which the sweep files under; no line (or kind
// cpu) is the host CPU's key. An invalid identity, a second line or one after an answer is a
// protocol error that also sets Measurement::device_error, which fails the sweep.
// A runner that failed a config in any way but invalid / compile_failed / wrong_result is
// replaced before the next config. runner.persistent (default true) keeps one process for many
// configs; false starts one per config and closes its stdin after the one request line.
#pragma once

#include <memory>

#include "tuner/evaluator.h"

namespace blocktune::external {

// Bytes of the runner's stdout/stderr kept per process (the tail).
inline constexpr size_t kLogTailBytes = 16 * 1024;
// Extra time the first config of a fresh runner gets for the runner's own start-up (an
// interpreter importing NumPy on a loaded machine), on top of the per-config timeout: the
// spec's runner.timeout_s once more, or this when the spec sets none.
inline constexpr double kRunnerStartupAllowanceS = 20;
// Per-config limit when neither the spec (runner.timeout_s) nor the caller sets one.
inline constexpr double kDefaultRunnerTimeoutS = 600;

// What InProcessEvaluator uses for external kernels; keeps one runner process per kernel
// while it keeps answering. SetRunnerMeasurerFactory(MakeRunnerMeasurer) installs it.
std::unique_ptr<tuner::RunnerMeasurer> MakeRunnerMeasurer();

}  // namespace blocktune::external
