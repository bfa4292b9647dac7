// The timing knobs of a sweep's measurements, declared once for the two programs that run sweeps:
// blocktuned (its job runner) and `blocktune sweep --local` (the same runner in-process). Both
// spell, range-check and document them identically, and copy them into
// tuner::timing::TimingOptions the same way.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "tuner/timing/timing.h"

namespace blocktune::server {

struct TimingFlags {
  double min_repetition_ms = tuner::timing::TimingOptions{}.min_repetition_ns / 1e6;
  int repetitions = tuner::timing::TimingOptions{}.repetitions;
  double max_cv = tuner::timing::TimingOptions{}.max_cv;

  void ApplyTo(tuner::timing::TimingOptions& timing) const {
    timing.min_repetition_ns = min_repetition_ms * 1e6;
    timing.repetitions = repetitions;
    timing.max_cv = max_cv;
  }
};

// Adds --min-repetition-ms, --repetitions and --max-cv to `cmd`. `help_prefix` goes before each
// help text (the CLI's sweep says "--local: ", since the daemon's own flags time remote sweeps).
inline void AddTimingFlags(CLI::App* cmd, TimingFlags& flags, const std::string& help_prefix = "") {
  cmd->add_option("--min-repetition-ms", flags.min_repetition_ms,
                  help_prefix + "minimum length of one timed repetition")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 10000.0));  // 0.01: flow tests that only need a verdict
  cmd->add_option("--repetitions", flags.repetitions,
                  help_prefix +
                      "timed repetitions per config (a searched config whose first 2 are "
                      "both over 1.15x the bucket's best so far stops there; not in "
                      "exhaustive sweeps)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--max-cv", flags.max_cv,
                  help_prefix +
                      "noise limit: a config whose repetitions spread more (robust coefficient of variation) is "
                      "re-timed, then recorded unstable")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 1e6));
}

}  // namespace blocktune::server
