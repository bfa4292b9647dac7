// Where a sweep's wall time goes. An Evaluator counts what it spends per phase (EvalCosts:
// timed repetitions, calibration, discarded noisy attempts, verification, reference outputs,
// input set-up, worker starts, the channel), the engine adds what it spends itself (store,
// search) and the rest of the wall clock, and the sweep reports the sum as a SweepBreakdown
// whose efficiency is the share of wall time that was timed repetitions. The phases are
// disjoint: they add up to the wall time (other_s is what none of them covers).
#pragma once

#include <cstdint>

namespace blocktune::tuner {

// Seconds an evaluator spent, by phase, cumulative since it was made.
struct EvalCosts {
  double timed_s = 0;      // repetitions that were kept (their samples are the measurement)
  double calibrate_s = 0;  // warm-up calls and iteration-growth batches not kept as repetitions
  double retry_s = 0;      // repetitions timed beyond the kept ones because their spread was too wide
  double verify_s = 0;     // verification: the config on the small problem, checks, comparison
  double reference_s = 0;  // reference outputs computed (cache misses only)
  double setup_s = 0;      // allocating and filling the timed problem's input sets
  double spawn_s = 0;      // starting worker processes until ready, and runners until their first answer
  double transport_s = 0;  // round trips to the worker minus the worker's own time
  double lost_s = 0;       // requests that ended without a verdict: a crash, a timeout, a lost worker
  int64_t spawns = 0;      // worker processes started (runner starts are in spawn_s only)
  int64_t retries = 0;     // those extra repetitions

  double Total() const;
  EvalCosts& operator+=(const EvalCosts& o);
  EvalCosts operator-(const EvalCosts& o) const;
};

// The phases of EvalCosts, once: the arithmetic below, the worker protocol, the sweep JSON and
// its OpenAPI schema, and the store's columns all loop over this list (the two counts, spawns
// and retries, follow it by hand). `name` is the JSON key and the sweep_breakdowns column.
struct EvalPhase {
  const char* name;
  double EvalCosts::*seconds;
  bool from_worker;  // counted inside the worker process and sent with each verdict
  const char* doc;
};
inline constexpr EvalPhase kEvalPhases[] = {
    {"timed_s", &EvalCosts::timed_s, true, "timed repetitions that were kept, in the search and the decision rounds"},
    {"calibrate_s", &EvalCosts::calibrate_s, true,
     "warm-up calls and iteration-growth batches not kept as repetitions"},
    {"retry_s", &EvalCosts::retry_s, true, "repetitions timed beyond the kept ones because their spread was too wide"},
    {"verify_s", &EvalCosts::verify_s, true, "verification against the reference on the small problem"},
    {"reference_s", &EvalCosts::reference_s, true,
     "reference outputs computed (once per verification problem per worker)"},
    {"setup_s", &EvalCosts::setup_s, true, "allocating and filling the timed problem's input sets"},
    // From the worker too: a runner starts inside the worker that measures its kernel (the
    // parent counts the worker's own start, which the worker never does).
    {"spawn_s", &EvalCosts::spawn_s, true,
     "starting worker processes, and external kernels' runners until their first answer (less the times it reports)"},
    {"transport_s", &EvalCosts::transport_s, false, "round trips to the worker minus the worker's own time"},
    {"lost_s", &EvalCosts::lost_s, false, "requests that ended without a verdict (crash, timeout, worker lost)"},
};

inline double EvalCosts::Total() const {
  double total = 0;
  for (const EvalPhase& p : kEvalPhases) total += this->*p.seconds;
  return total;
}
inline EvalCosts& EvalCosts::operator+=(const EvalCosts& o) {
  for (const EvalPhase& p : kEvalPhases) this->*p.seconds += o.*p.seconds;
  spawns += o.spawns;
  retries += o.retries;
  return *this;
}
inline EvalCosts EvalCosts::operator-(const EvalCosts& o) const {
  EvalCosts d = *this;
  for (const EvalPhase& p : kEvalPhases) d.*p.seconds -= o.*p.seconds;
  d.spawns -= o.spawns;
  d.retries -= o.retries;
  return d;
}

// A sweep's (or one task's) wall time by phase. The engine commits what accumulated every few
// seconds (after a measurement is stored) and as RunSweep returns, and the store adds the
// parts up, so a resumed sweep counts every run, and a run ended by SIGKILL loses only the
// time since its last commit (at most ~2 s and the config being measured).
struct SweepBreakdown {
  double wall_s = 0;    // the engine's wall clock, summed over the sweep's tasks
  EvalCosts eval;       // the evaluator's phases
  double store_s = 0;   // the sink: reading what is stored, committing measurements and rounds
  double search_s = 0;  // planning, the strategy's ask/tell and its prior
  // Wall time of the decision rounds (their repetitions and calibration are also counted in
  // eval: this is a view, not a phase).
  double decision_s = 0;
  int64_t measured = 0;  // configs measured (not replayed, not invalid)

  double OtherS() const {
    const double o = wall_s - eval.Total() - store_s - search_s;
    return o > 0 ? o : 0;
  }
  double Efficiency() const { return wall_s > 0 ? eval.timed_s / wall_s : 0; }
  SweepBreakdown& operator+=(const SweepBreakdown& o) {
    wall_s += o.wall_s;
    eval += o.eval;
    store_s += o.store_s;
    search_s += o.search_s;
    decision_s += o.decision_s;
    measured += o.measured;
    return *this;
  }
  SweepBreakdown operator-(const SweepBreakdown& o) const {
    SweepBreakdown d = *this;
    d.wall_s -= o.wall_s;
    d.eval = eval - o.eval;
    d.store_s -= o.store_s;
    d.search_s -= o.search_s;
    d.decision_s -= o.decision_s;
    d.measured -= o.measured;
    return d;
  }
};

}  // namespace blocktune::tuner
