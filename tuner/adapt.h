// `blocktune adapt`: the plan that gives this host exact rows for every checked-in bucket. From
// the checked-in rows (tuned_entries.jsonl, any hardware key) it takes every bucket of the
// current bucket version of each kernel and dtype, and makes one sweep request per (kernel,
// dtype, thread count) with those buckets as shapes, a transfer search (its prior: this host's
// earlier buckets and, weighted by measured likeness, other hardware profiles' landscapes) and
// a per-bucket time limit that keeps the whole run within the budget. Each request carries an
// idempotency key derived from everything that defines it, so a re-run after a kill -9 finds
// the same sweeps and resumes them (the sweep machinery's exactly-once guarantee) instead of
// starting new ones. The engine's decision round then faces each candidate with the default
// and the row the host is served now (SweepSink::Served).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/core/result.h"
#include "tuner/measurement.h"

namespace blocktune::tuner {

struct AdaptOptions {
  std::vector<std::string> kernels;  // empty: every registered kernel with checked-in rows
  std::vector<DType> dtypes;         // empty: every dtype with checked-in rows
  std::vector<int> threads = {1, 2};
  std::string isa;  // empty: the host's own level
  double budget_minutes = 15;
  // Share of the budget given to the searches; the rest pays for the decision rounds (up to
  // four contenders, the default and the served row, re-timed interleaved: about as long as
  // six configs of the search) and the regression gate.
  double search_share = 0.6;
  Strategy strategy = Strategy::kTransfer;
  int64_t budget = 0;  // evaluations per bucket; 0: the strategy's default
  uint64_t seed = 1;
};

struct AdaptUnit {
  SweepRequest request;              // shapes: one representative problem per bucket
  std::vector<std::string> buckets;  // canonical ids, in request order
  std::string idempotency_key;       // the same for the same plan, so a re-run resumes it
};

struct AdaptPlan {
  std::vector<AdaptUnit> units;
  int64_t buckets = 0;            // over all units
  double seconds_per_bucket = 0;  // each bucket's search limit (SweepRequest::budget_seconds)
};

// The units for these checked-in rows. Errors name an unknown kernel or dtype, a bucket a
// kernel cannot parse, or a plan with no bucket at all.
Result<AdaptPlan> PlanAdapt(const std::vector<TunedEntry>& checked_in, const AdaptOptions& options);

}  // namespace blocktune::tuner
