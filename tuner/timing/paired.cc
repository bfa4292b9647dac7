// Paired comparison of two configs' interleaved repetitions; see paired.h.
#include "tuner/timing/paired.h"

#include <algorithm>
#include <cmath>

#include "tuner/timing/timing.h"

namespace blocktune::tuner::timing {

std::vector<size_t> CycleOrder(size_t configs, int64_t cycle) {
  std::vector<size_t> order(configs);
  if (configs == 0) return order;
  const auto n = static_cast<int64_t>(configs);
  const int64_t c = std::max<int64_t>(cycle, 0);
  for (size_t i = 0; i < configs; ++i) order[i] = static_cast<size_t>((static_cast<int64_t>(i) + c) % n);
  if ((c / n) % 2 == 1) std::reverse(order.begin(), order.end());
  return order;
}

namespace {

// Above this a repetition of a config was disturbed: its fastest repetition plus 3% plus three
// robust CVs (a quiet config's repetitions spread ~1%, so ~6% above its fastest).
double DisturbedAbove(const std::vector<double>& samples) {
  const double fastest = *std::min_element(samples.begin(), samples.end());
  return fastest * (1.03 + 3 * RobustCv(samples));
}

}  // namespace

PairedComparison ComparePaired(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b,
                               double min_band) {
  std::vector<double> pa, pb;  // the paired repetitions, cycle by cycle
  for (size_t k = 0; k < std::min(a.size(), b.size()); ++k) {
    for (size_t r = 0; r < std::min(a[k].size(), b[k].size()); ++r) {
      if (!(a[k][r] > 0) || !(b[k][r] > 0)) continue;
      pa.push_back(a[k][r]);
      pb.push_back(b[k][r]);
    }
  }
  PairedComparison c;
  c.band = min_band;
  if (pa.empty()) return c;
  const double a_above = DisturbedAbove(pa), b_above = DisturbedAbove(pb);
  std::vector<size_t> quiet, unsplit, all;
  for (size_t r = 0; r < pa.size(); ++r) {
    const bool da = pa[r] > a_above, db = pb[r] > b_above;
    if (!da && !db) quiet.push_back(r);
    if (da == db) unsplit.push_back(r);
    all.push_back(r);
  }
  const std::vector<size_t>& kept = quiet.size() >= std::min<size_t>(3, pa.size())           ? quiet
                                    : unsplit.size() >= 2 && 2 * unsplit.size() >= pa.size() ? unsplit
                                                                                             : all;
  std::vector<double> log_ratio, a_kept, b_kept;
  for (size_t r : kept) {
    log_ratio.push_back(std::log(pa[r] / pb[r]));
    a_kept.push_back(pa[r]);
    b_kept.push_back(pb[r]);
  }
  c.cycles = static_cast<int64_t>(kept.size());
  c.dropped = static_cast<int64_t>(pa.size() - kept.size());
  c.a_ns = Median(a_kept);
  c.b_ns = Median(b_kept);
  const double center = Median(log_ratio);
  c.gain = 1.0 - std::exp(center);
  std::vector<double> dev;
  dev.reserve(log_ratio.size());
  for (double x : log_ratio) dev.push_back(std::fabs(x - center));
  c.spread = 1.4826 * Median(std::move(dev));
  // The standard error of a median is ~1.25 sigma / sqrt(n) (normal noise); two of them is the
  // same ~95% the unpaired band stood for.
  c.se = 1.25 * c.spread / std::sqrt(static_cast<double>(c.cycles));
  c.band = std::max(min_band, 2.0 * c.se);
  return c;
}

PairedComparison ComparePaired(const std::vector<double>& a, const std::vector<double>& b, double min_band) {
  return ComparePaired(std::vector<std::vector<double>>{a}, std::vector<std::vector<double>>{b}, min_band);
}

}  // namespace blocktune::tuner::timing
