// Stored landscapes: grouping and combining sweeps' measurements, and their text format; see
// stored_buckets.h.
#include "tuner/search/stored_buckets.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <optional>
#include <utility>

namespace blocktune::tuner::search {
namespace {

std::string FormatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

bool InSpace(const StoredConfig& c) {
  return c.outcome != Outcome::kInvalid || c.detail.rfind(kBelowFloorDetail, 0) == 0;
}

std::vector<StoredBucket> GroupMeasurements(const std::string& kernel, const std::string& hardware_key, DType dtype,
                                            const std::vector<Measurement>& measurements) {
  std::map<std::string, StoredBucket> by_bucket;
  for (const Measurement& m : measurements) {
    StoredBucket& b = by_bucket[m.bucket];
    if (b.bucket.empty() || m.sweep_id > b.sweep_id) {
      b = StoredBucket{kernel, hardware_key, dtype, m.bucket, m.sweep_id, {}};
    }
    if (m.sweep_id != b.sweep_id) continue;
    b.configs.push_back(StoredConfig{m.config, m.outcome, m.detail, m.median_ns});
  }
  std::vector<StoredBucket> out;
  for (auto& [_, b] : by_bucket) out.push_back(std::move(b));
  return out;
}

StoredBucket CombineSweeps(const std::vector<StoredBucket>& runs) {
  if (runs.empty()) return {};
  StoredBucket out = runs.front();
  if (runs.size() == 1) return out;
  out.configs.clear();
  std::vector<std::string> order;
  std::map<std::string, std::vector<const StoredConfig*>> by_config;
  for (const StoredBucket& r : runs) {
    out.sweep_id = std::max(out.sweep_id, r.sweep_id);
    for (const StoredConfig& c : r.configs) {
      auto& v = by_config[c.config.ToString()];
      if (v.empty()) order.push_back(c.config.ToString());
      v.push_back(&c);
    }
  }
  for (const std::string& key : order) {
    const auto& v = by_config[key];
    std::vector<double> ok;
    for (const StoredConfig* c : v) {
      if (c->outcome == Outcome::kOk) ok.push_back(c->median_ns);
    }
    StoredConfig combined = *v.front();
    if (!ok.empty()) {
      combined.outcome = Outcome::kOk;
      combined.detail.clear();
      combined.median_ns = *std::min_element(ok.begin(), ok.end());
    }
    out.configs.push_back(std::move(combined));
  }
  return out;
}

std::string FormatStoredBuckets(const std::vector<StoredBucket>& buckets) {
  std::string out = "# kernel\thardware\tdtype\tbucket\tconfig\toutcome\tmedian_ns\n";
  for (const StoredBucket& b : buckets) {
    for (const StoredConfig& c : b.configs) {
      // Only what the oracle needs: the outcome decides membership of the space, and the
      // detail only matters for the below-floor kind of `invalid`.
      std::string outcome(OutcomeName(c.outcome));
      if (c.outcome == Outcome::kInvalid && InSpace(c)) outcome = "invalid_below_floor";
      out += b.kernel + '\t' + b.hardware_key + '\t' + std::string(DTypeName(b.dtype)) + '\t' + b.bucket + '\t' +
             c.config.ToString() + '\t' + outcome + '\t' + FormatDouble(c.outcome == Outcome::kOk ? c.median_ns : 0) +
             '\n';
    }
  }
  return out;
}

Result<std::vector<StoredBucket>> ParseStoredBuckets(std::string_view text) {
  std::vector<StoredBucket> out;
  int line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.empty() || line.front() == '#') continue;
    std::vector<std::string_view> f;
    while (true) {
      const size_t tab = line.find('\t');
      f.push_back(line.substr(0, tab));
      if (tab == std::string_view::npos) break;
      line.remove_prefix(tab + 1);
    }
    const std::string where = "line " + std::to_string(line_no);
    if (f.size() != 7)
      return InvalidArgument(where + ": expected 7 tab-separated fields, got " + std::to_string(f.size()));
    auto dtype = ParseDType(f[2]);
    auto config = NamedInts::Parse(f[4]);
    std::optional<Outcome> outcome;
    std::string detail;
    if (f[5] == "invalid_below_floor") {
      outcome = Outcome::kInvalid;
      detail = std::string(kBelowFloorDetail);
    } else {
      outcome = ParseOutcome(f[5]);
    }
    double median = 0;
    const auto [ptr, ec] = std::from_chars(f[6].data(), f[6].data() + f[6].size(), median);
    if (!dtype || !config || !outcome || ec != std::errc() || ptr != f[6].data() + f[6].size()) {
      return InvalidArgument(where + ": malformed dtype, config, outcome or median_ns");
    }
    if (out.empty() || out.back().kernel != f[0] || out.back().hardware_key != f[1] || out.back().dtype != *dtype ||
        out.back().bucket != f[3]) {
      out.push_back(StoredBucket{std::string(f[0]), std::string(f[1]), *dtype, std::string(f[3]), 0, {}});
    }
    out.back().configs.push_back(StoredConfig{std::move(*config), *outcome, detail, median});
  }
  return out;
}

}  // namespace blocktune::tuner::search
