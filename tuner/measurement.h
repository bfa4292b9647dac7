// The tuner's records: what happened to one config on one bucket (Measurement), the winner
// per (kernel, hardware, dtype, bucket) (TunedEntry), and the sweep request that produced them.
// Failures are data: every tried config gets an Outcome and is stored like a result.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/config.h"
#include "kernels/core/dtype.h"

namespace blocktune::tuner {

// Closed set; spelled in SQL CHECK constraints and JSON exactly as OutcomeName returns.
enum class Outcome {
  kOk,
  kInvalid,      // rejected by Validate before any launch; detail says why
  kCrashed,      // the run died (signal in detail)
  kTimeout,      // exceeded the per-config time limit
  kOutOfMemory,  // allocation failed or the memory limit was hit
  kNan,          // output contained NaN/Inf where the reference is finite
  kWrongResult,  // finite output outside tolerance of the reference
  kUnstable,     // timings too noisy to trust after re-measurement
  kWorkerLost,   // the worker vanished without a verdict
  // Reported by an external kernel's runner or imported from another tuner (Kernel Tuner's
  // CompilationFailedConfig / RuntimeFailedConfig, T4's compile / runtime invalidity). Last so
  // the values above keep their numbers.
  kCompileFailed,  // the config's code did not compile; it never ran
  kRuntimeFailed,  // it compiled and the launch or run failed (an API error, not a signal)
};

inline constexpr std::string_view kOutcomeNames[] = {
    "ok",           "invalid",  "crashed",     "timeout",        "out_of_memory",  "nan",
    "wrong_result", "unstable", "worker_lost", "compile_failed", "runtime_failed",
};

constexpr std::string_view OutcomeName(Outcome o) { return kOutcomeNames[static_cast<int>(o)]; }
std::optional<Outcome> ParseOutcome(std::string_view s);

struct Measurement {
  int64_t id = 0;  // assigned by the store
  int64_t sweep_id = 0;
  std::string bucket;  // canonical bucket id
  Problem problem;     // the shape that was timed (the bucket's representative)
  Config config;
  Outcome outcome = Outcome::kOk;
  std::string detail;              // reason for a bad outcome, or verification summary
  std::vector<double> samples_ns;  // per-iteration time of each repetition, in order
  int64_t iterations = 0;          // iterations per repetition
  double median_ns = 0;
  double cv = 0;           // stddev / mean of samples_ns
  double max_abs_err = 0;  // verification against the reference
  double max_rel_err = 0;  // worst error as a fraction of the tolerance (<= 1 passes)
  std::string created_at;  // set by the store (UTC ISO-8601)
  // The kernel's fingerprint in the build that measured it (KernelFingerprint); empty for
  // measurements stored before fingerprints existed (unknown).
  std::string fingerprint;
  // The device an external kernel's runner answered from (docs/accelerators.md), not stored
  // per measurement: the sweep checks it and keeps the identity once. `device_key` is the key
  // its device line makes (the host CPU's key when it announced none), `device` the identity
  // as external::DeviceIdentityJson writes it (empty when none was announced); both empty when
  // no runner answered (a built-in kernel, a runner that died first). `device_error` says why
  // a device line was refused: a measurement that carries one fails its sweep, unstored.
  std::string device_key;
  std::string device;
  std::string device_error;
};

// When `later` (more repetitions of m's config: a search measurement's second look, a decision's
// extra round) was answered from another device than m, or carries a refused device line, gives
// m that identity, so the sweep's sink refuses m (store::TaskSink::CheckDevice) instead of
// filing the later samples under m's device; a runner restarted on another GPU between the two
// is caught here. Returns whether it did.
bool TakeForeignDevice(Measurement& m, const Measurement& later);

// What the regression gate of `tables generate --db` decided when a database row would replace
// a checked-in row of the host's own profile (tuner/gate.h): both configs re-timed side by side.
struct GateRecord {
  std::string decision;  // "replaced", "kept", "forced"
  Config old_config;     // the checked-in row's config
  Config new_config;     // the database row's config
  double old_ns = 0;     // medians of the interleaved re-timing (0: not timed, --force)
  double new_ns = 0;
  double noise_band = 0;  // relative band inside which the two are not told apart
  int64_t repetitions = 0;
  std::string at;  // UTC time of the re-timing
};

struct TunedEntry {
  std::string kernel;
  std::string hardware_key;
  DType dtype = DType::kF32;
  std::string bucket;
  int bucket_version = 1;
  Config config;
  double median_ns = 0;
  int64_t samples = 0;
  int64_t sweep_id = 0;
  int64_t measurement_id = 0;
  std::string measured_at;
  // The kernel's fingerprint in the build that measured the row; empty: unknown (rows from
  // before fingerprints; `null` in tuned_entries.jsonl). See kernels/core/fingerprint.h.
  std::string fingerprint;
  // Set when the regression gate decided this row (tables/tuned_entries.jsonl only).
  std::optional<GateRecord> gate;
  // The device its sweep measured on, as the sweep keeps it (store/devices_table.h: the
  // identity's JSON object, migration 0016); empty for a CPU row. Provenance only: generated
  // tables carry it in comments (C++, Python) and a field (JSON, tuned_entries.jsonl).
  std::string device;
};

// Search strategies (tuner/search): two that plan a static list and four model-guided ones that
// choose each config from everything measured so far. Spelled in SQL CHECKs and JSON as named.
enum class Strategy {
  kExhaustive,  // every valid config
  kRandom,      // `budget` configs without replacement, the default first
  kAnneal,      // simulated annealing / local search over one-step neighbours, with restarts
  kSurrogate,   // quadratic ridge model over log block sizes, lowest lower confidence bound next
  kTransfer,    // other buckets' stored landscapes, weighted by likeness, predict this one's
  kAuto,        // picks by space size, budget and prior: prior-ranked, surrogate, or iterated local search
};
inline constexpr std::string_view kStrategyNames[] = {"exhaustive", "random",   "anneal",
                                                      "surrogate",  "transfer", "auto"};
constexpr std::string_view StrategyName(Strategy s) { return kStrategyNames[static_cast<int>(s)]; }
std::optional<Strategy> ParseStrategy(std::string_view s);

struct SweepRequest {
  std::string kernel;
  DType dtype = DType::kF32;
  std::vector<NamedInts> shapes;  // requested problem dims; each maps to a bucket
  int threads = 1;
  Strategy strategy = Strategy::kExhaustive;
  // Evaluations per bucket. 0: the whole space (exhaustive, which ignores it), 32 (random), or
  // a tenth of the bucket's valid space but at least 8 (anneal, surrogate, transfer).
  int64_t budget = 0;
  // Wall-clock limit per bucket for the search, in seconds; 0 = none. Configs replayed from
  // an earlier run of the same sweep cost nothing against it.
  double budget_seconds = 0;
  uint64_t seed = 1;
  // ISA level the kernels run at ("avx512", "avx2", "base"); empty = the daemon's own level.
  // At most the CPU's level; the sweep's rows are filed under that level's hardware key.
  std::string isa;
  // A slice of the sweep (`blocktune sweep --local --shard I/N`): shard_index in [0,
  // shard_count). Exhaustive and random plans are cut by (bucket, config) item, model-guided
  // ones by bucket; the union of the N slices is the unsharded plan (tuner/sweep.h InShard).
  // A sharded exhaustive or random sweep records measurements only: winners are chosen after
  // the shards are merged (store/ingest.h).
  int shard_index = 0;
  int shard_count = 1;
};

}  // namespace blocktune::tuner
