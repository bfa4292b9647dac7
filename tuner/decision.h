// The verdicts of a bucket's decision round: which config the bucket publishes, from the
// round's interleaved repetitions. Every comparison is a pair (a candidate against the default,
// against the incumbent row, against the served row) judged by its own paired band
// (timing/paired.h): the spread of the per-cycle ratios of those two configs, not the spread of
// either config alone, so a slow phase that hits both does not hide a real gain and a noisy
// third config does not set the band of anyone else's pair. Each of the search's candidates is
// judged on its own pairs (the fastest one that wins all of them is chosen), so a noisy
// candidate that happens to have the lowest median cannot block a clean one behind it. A verdict
// within one standard error of its band gets its pair timed again (`retime`), up to a number
// of extra rounds; the rest cost nothing extra.
//
// The rules it keeps: never slower than the default beyond the noise (a row must beat the
// default, or the default is the row); the incumbent row and the row the host is served now
// stay unless beaten beyond the noise, and each of them keeps that claim only while it beats
// the default itself.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tuner/measurement.h"
#include "tuner/sweep.h"

namespace blocktune::tuner {

// Who is who in a decision round: the configs as timed, the search's candidates first.
struct RoundRoles {
  std::vector<Config> configs;
  size_t searched = 0;  // configs[0, searched) came from the search
  std::optional<size_t> incumbent;
  std::optional<size_t> default_config;
  std::optional<size_t> served;
};

struct RoundDecision {
  size_t chosen = 0;  // index into the configs
  std::string text;   // the decision record: what won or stayed, and the figures of each verdict
  double noise_band = 0;
  std::optional<Verdict> verdict;
  // The round's measurements with the extra rounds' repetitions appended (median and CV over
  // all of them), one per config, as timed.
  std::vector<Measurement> timed;
  int64_t rounds = 1;
};

// Times the configs with these indices again, interleaved: one Measurement each, in order. An
// empty answer declines (the round would cost too much): no more extra rounds are asked for.
using RetimeFn = std::function<std::vector<Measurement>(const std::vector<size_t>&)>;

// `round`: one Measurement per config of `roles`, from one interleaved round. At most
// `max_extra_rounds` extra rounds in all, and at most `max_extra_rounds_per_config` for the
// verdicts of any one config (the served row's claim over the default, or one challenger), so
// the first close verdict cannot spend what the next one needs.
RoundDecision DecideRound(const RoundRoles& roles, const std::vector<Measurement>& round, const RetimeFn& retime,
                          double min_band, int max_extra_rounds, int max_extra_rounds_per_config = 2);

// "1.23 ms", "456 us": a median for the decision record.
std::string FormatNs(double ns);

}  // namespace blocktune::tuner
