// The sweep's checks, applied to results this process did not measure: a measurement pushed
// (POST /v1/results) or merged (`blocktune db merge`), and a tuned row read back from a database
// (the daemon's lookup index, `tables generate`, GET /v1/tables). A sweep only measures configs
// of its kernel spec's space that the spec validates for the bucket (PlanSweep calls
// CheckConfig for every config it plans), so anything else that claims to be a result of one is
// refused (ingest) or skipped with a warning (rows already stored by an older build): a config
// must set every parameter, only the spec's parameters, each to one of its candidates, and pass
// the spec's own validation (KernelSpec::ValidateConfig: tile multiples, cache limits, an
// external spec's restrictions) on the bucket's problem; a bucket must be what the spec's bucket
// function makes of the problem. Errors name the field ("config.block_m", "samples_ns[2]").
#pragma once

#include <string_view>

#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

// Per-iteration times a measurement may report, in ns. Below a picosecond no kernel iteration
// runs (a clock cycle is ~0.2-0.5 ns); above 10^15 ns (11.6 days) no repetition was timed (the
// longest per-config limit anywhere is the runner's 600 s default). 1e-305 and 1e308 are not
// measurements, and either would win or poison a pooled median.
inline constexpr double kMinTimeNs = 1e-3;
inline constexpr double kMaxTimeNs = 1e15;

// The config is one of the spec's space: every parameter set, nothing else, each value one of
// its candidates (KernelSpec::ConfigSpace). Paths "config.<param>".
Status CheckInSpace(const KernelSpec& spec, const Config& config);

// CheckInSpace, then the spec's validation on the bucket's representative problem and `hw`.
// What PlanSweep keeps of the space; an error here is what a sweep records as `invalid`.
Status CheckConfig(const KernelSpec& spec, const Config& config, const Problem& bucket_problem,
                   const HardwareProfile& hw);

// A measurement from elsewhere, checked as its sweep would have made it, for the hardware
// profile it was measured on: the problem valid for the kernel and `bucket` its bucket; the
// config in the space, and valid for the bucket unless the outcome says it was not (`invalid`);
// times and samples finite and in [kMinTimeNs, kMaxTimeNs]; iterations, cv and errors
// non-negative; the outcome consistent with its fields (`ok`: a median and max_rel_err <= 1,
// i.e. it passed verification; `invalid` and `compile_failed`: it never ran, so no samples).
// Paths relative to the measurement ("config.block_m", "median_ns", "samples_ns[1]").
Status CheckMeasurement(const KernelSpec& spec, const Measurement& m, const HardwareProfile& hw);

// The hardware a key names, as far as validation needs it: arch and ISA level (the tile rules);
// caches unknown (0: no cache limit applied).
HardwareProfile ProfileOfKey(std::string_view key);

// A tuned row from a database or the checked-in jsonl: the kernel's current bucket version, a
// canonical bucket, a config that CheckConfig accepts for the bucket on the key's ISA, a median
// in [kMinTimeNs, kMaxTimeNs] and at least one sample. The message names the row.
Status CheckTunedEntry(const KernelSpec& spec, const TunedEntry& e);

}  // namespace blocktune::tuner
