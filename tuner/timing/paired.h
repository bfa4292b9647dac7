// Paired comparison of two configs timed in the same interleaved rounds: the per-cycle ratio
// a_r / b_r of their repetitions of one cycle, and a noise band from how much those ratios
// spread. A slow phase of the machine (another process, a frequency dip, the other core busy at
// two threads) lasts longer than one cycle of a round (a few repetitions of ~20 ms), so it slows
// both repetitions of a cycle and leaves their ratio alone: the ratio's spread is the noise that
// can still change a verdict. The band of two unpaired medians (sweep.h NoiseBand, from each
// config's own spread) counts such a phase as noise of each config, so one phase, or one noisy
// config, widens it until a real 8% gain hides inside it (issue 39).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace blocktune::tuner::timing {

struct PairedComparison {
  int64_t cycles = 0;   // paired repetitions the verdict rests on
  int64_t dropped = 0;  // cycles left out as disturbed (see ComparePaired)
  double a_ns = 0;      // median of a's repetitions over those cycles
  double b_ns = 0;      // and of b's
  // 1 - exp(median of log(a_r / b_r)): how much faster a is than b (negative: slower).
  double gain = 0;
  double spread = 0;  // robust standard deviation of log(a_r / b_r): 1.4826 x MAD
  double se = 0;      // standard error of the median log ratio: 1.25 x spread / sqrt(cycles)
  double band = 0;    // max(min_band, 2 x se): a gain beyond it is not noise
  // a is faster than b beyond the band.
  bool Beats() const { return gain > band; }
  // One standard error either way would change the verdict (|gain - band| < se): more cycles
  // would settle it. Never for a < 2-cycle comparison, which has no spread to judge.
  bool Close() const { return cycles >= 2 && gain - band < se && band - gain < se; }
};

// The order in which cycle `cycle` of an interleaved round of `configs` configs times them:
// rotated by one place per cycle and reversed every other pass over all rotations (for two
// configs: A B, B A, B A, A B, ...). With a fixed order every config always had the same slot
// and the same predecessor, whose caches and scratch state it inherited; the configs the
// decision round appends (the incumbent, the default, the served row) were always last, and a
// comparison against them carried that bias, while `blocktune regret` (the default first) carried
// another. Varying both spreads the effect over every config instead of tilting a pair.
std::vector<size_t> CycleOrder(size_t configs, int64_t cycle);

// Pairs a[r] with b[r] for r < min(a.size(), b.size()); non-positive samples are skipped.
//
// Interference only adds time, so a repetition well above its config's fastest one (by more than
// 3% plus three robust CVs of that config) was disturbed. The ratio of a cycle in which neither
// was disturbed is the two configs' own: the verdict rests on those cycles when there are at
// least 3. Otherwise on the cycles no disturbance split (neither or both disturbed: a slow phase
// that covers both slots leaves their ratio alone), when they are at least half; otherwise on
// every cycle, and the band says how busy the machine was. The cycles not used are `dropped`.
// Pairing alone made things worse where preemptions are frequent and independent (a loaded
// machine's 1 ms repetitions: ~45% disturbed each): a cycle is then clean only when both
// repetitions are, so most ratios carried noise that each config's own median ignores, and the
// regression gate's band came out at 50-200% where the unpaired one was 10-80%.
PairedComparison ComparePaired(const std::vector<double>& a, const std::vector<double>& b, double min_band);

// Several rounds' samples of the same two configs (segment k of `a` pairs with segment k of
// `b`): a config's first round, and the extra rounds a close verdict got.
PairedComparison ComparePaired(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               double min_band);

}  // namespace blocktune::tuner::timing
