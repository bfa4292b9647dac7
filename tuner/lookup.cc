// Lookup over tuned entries and overrides; see lookup.h.
#include "tuner/lookup.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "kernels/core/fingerprint.h"

namespace blocktune::tuner {

LookupIndex::LookupIndex(std::vector<TunedEntry> rows, std::vector<Override> overrides)
    : rows_(std::move(rows)), overrides_(std::move(overrides)) {
  for (const TunedEntry& e : rows_) {
    by_kernel_[e.kernel][e.bucket_version].rows.push_back({e.hardware_key, DTypeName(e.dtype), e.bucket, &e});
  }
  for (auto& [kernel, versions] : by_kernel_) {
    for (auto& [version, group] : versions) group.index = tables::RowIndex(group.rows);
  }
  for (const Override& o : overrides_) overrides_by_kernel_[o.kernel].push_back(&o);
}

const LookupIndex::KernelRows* LookupIndex::RowsOf(std::string_view kernel, int bucket_version) const {
  auto it = by_kernel_.find(kernel);
  if (it == by_kernel_.end()) return nullptr;
  auto v = it->second.find(bucket_version);
  return v == it->second.end() ? nullptr : &v->second;
}

const std::vector<const Override*>& LookupIndex::OverridesOf(std::string_view kernel) const {
  static const std::vector<const Override*> kNone;
  auto it = overrides_by_kernel_.find(kernel);
  return it == overrides_by_kernel_.end() ? kNone : it->second;
}

std::string UtcNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int64_t ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  // Room for every field at its widest (7 ints of up to 11 characters, 7 separators and the
  // NUL): a year past 9999 gives a longer string, never a truncated one.
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

namespace {

void FillFromRow(const TunedEntry& e, LookupAnswer& a) {
  a.config = e.config;
  a.hardware = e.hardware_key;
  a.matched_bucket = e.bucket;
  a.median_ns = e.median_ns;
  a.samples = e.samples;
  a.sweep_id = e.sweep_id;
  a.measurement_id = e.measurement_id;
  a.measured_at = e.measured_at;
  a.fingerprint = e.fingerprint;
  a.stale = FreshnessOf(e.kernel, e.fingerprint) == Freshness::kStale;
}

// Sum over dims of |log2(a) - log2(b)|: a bucket twice as large in one dim is as far as one
// half as large, and "m64" is closer to "m128" than to "m1024".
double BucketDistance(const Problem& a, const Problem& b) {
  double d = 0;
  for (const auto& [name, v] : a.dims.values()) {
    const int64_t w = b.Dim(name);
    if (v <= 0 || w <= 0) return HUGE_VAL;
    d += std::fabs(std::log2(static_cast<double>(v)) - std::log2(static_cast<double>(w)));
  }
  return d;
}

}  // namespace

Result<LookupAnswer> Lookup(const KernelSpec& spec, const LookupIndex& index, const LookupQuery& query,
                            std::string_view now_utc, bool nearest) {
  Problem p{query.dtype, query.dims};
  if (auto s = spec.ValidateProblem(p); !s) return std::unexpected(s.error());
  LookupAnswer a;
  a.kernel = std::string(spec.name());
  auto [bucket, representative] = spec.Bucket(p);
  a.bucket = std::move(bucket);
  a.matched_bucket = a.bucket;
  const std::string_view dtype = DTypeName(query.dtype);
  a.queried_hardware = query.hardware_key;

  // The steps of the precedence (tables/source.h): each fills in the answer and returns true, or
  // returns false to pass to the next.
  using Answer = Result<LookupAnswer>;
  auto explicit_config = [&](Answer& out) {
    if (!query.explicit_config) return false;
    // CompleteConfig's error already names the field ("config.block_zz").
    auto full = spec.CompleteConfig(*query.explicit_config);
    if (!full) {
      out = std::unexpected(full.error());
      return true;
    }
    a.config = std::move(*full);
    a.source = tables::Source::kExplicit;
    a.hardware = query.hardware_key;
    out = std::move(a);
    return true;
  };

  // Overrides: the most specific hardware level wins; "*" is the least specific. A pin applies
  // under every prefix of the key (an operator's decision), not only along the fallback chain.
  auto override_pin = [&](Answer& out) {
    const auto prefixes = tables::KeyPrefixes(query.hardware_key);
    const Override* pin = nullptr;
    size_t pin_level = prefixes.size() + 1;
    for (const Override* o : index.OverridesOf(spec.name())) {
      if (o->bucket != a.bucket || DTypeName(o->dtype) != dtype) continue;
      if (!o->expires_at.empty() && !now_utc.empty() && o->expires_at <= now_utc) continue;
      size_t level = prefixes.size();  // "*"
      if (o->hardware_key != "*") {
        level = prefixes.size() + 1;
        for (size_t i = 0; i < prefixes.size(); ++i) {
          if (prefixes[i] == o->hardware_key) {
            level = i;
            break;
          }
        }
        if (level > prefixes.size()) continue;
      }
      if (level < pin_level) {
        pin = o;
        pin_level = level;
      }
    }
    if (pin == nullptr) return false;
    a.config = pin->config;
    a.source = tables::Source::kOverride;
    a.hardware = pin->hardware_key;
    a.fallback_levels = static_cast<int>(pin_level);
    a.override_id = pin->id;
    a.reason = pin->reason;
    a.expires_at = pin->expires_at;
    out = std::move(a);
    return true;
  };

  // Rows of another bucket scheme name buckets that no longer mean the same shapes: only this
  // version's rows are searched.
  const LookupIndex::KernelRows* group = index.RowsOf(spec.name(), spec.bucket_version());
  tables::ChainKeys chain = tables::ChainOf(query.hardware_key);
  // The same levels as IndexView::PrepareSameArch: a four-part device key's architecture.
  if (query.device_same_arch && tables::HasSameArchLevel(query.hardware_key)) {
    chain.level[chain.size++] = tables::KeyPrefixAt(query.hardware_key, 3);
  }
  auto tuned = [&](Answer& out) {
    if (group == nullptr) return false;
    const auto view = group->index.view();
    const tables::Resolution r = query.device_same_arch ? view.ResolveQuery(view.PrepareSameArch(query.hardware_key),
                                                                            dtype, std::string_view(a.bucket))
                                                        : group->index.Resolve(query.hardware_key, dtype, a.bucket);
    if (r.row == tables::kNoId) return false;
    FillFromRow(*group->rows[r.row].entry, a);
    a.source = tables::SourceOf(r);
    a.fallback_levels = static_cast<int>(r.level);
    out = std::move(a);
    return true;
  };

  // Nearest: the most specific chain level that has any row of this dtype, then the closest
  // bucket there (sum of |log2| distances per dim; ties: the smaller bucket id, then the
  // smaller key).
  auto nearest_bucket = [&](Answer& out) {
    if (!nearest || group == nullptr) return false;
    uint32_t level = tables::kNoLevel;
    for (const auto& r : group->rows) {
      if (r.dtype == dtype) level = std::min(level, tables::ChainLevel(chain, r.hardware));
    }
    const LookupIndex::RowView* best = nullptr;
    double best_d = HUGE_VAL;
    for (const auto& r : group->rows) {
      if (level == tables::kNoLevel || r.dtype != dtype || tables::ChainLevel(chain, r.hardware) != level) continue;
      auto other = spec.ProblemFromBucket(query.dtype, r.bucket);
      if (!other) continue;
      const double d = BucketDistance(representative, *other);
      if (best == nullptr || d < best_d ||
          (d == best_d && std::pair(r.bucket, r.hardware) < std::pair(best->bucket, best->hardware))) {
        best = &r;
        best_d = d;
      }
    }
    if (best == nullptr) return false;
    // The row passed its kernel's validation on this hardware family; the block checks
    // (micro-tile multiples, panel bytes vs L3) depend on the hardware, not on the dims,
    // and a block larger than a dim takes the remainder path.
    FillFromRow(*best->entry, a);
    a.source = tables::Source::kNearest;
    a.fallback_levels = static_cast<int>(level);
    out = std::move(a);
    return true;
  };

  auto kernel_default = [&](Answer& out) {
    a.config = spec.DefaultConfig();
    a.source = tables::Source::kDefault;
    a.hardware = query.hardware_key;
    a.fallback_levels = static_cast<int>(chain.size);
    out = std::move(a);
    return true;
  };

  return tables::ByPrecedence<Answer>(explicit_config, override_pin, tuned, nearest_bucket, kernel_default);
}

Result<LookupAnswer> Lookup(const KernelSpec& spec, const std::vector<TunedEntry>& rows, const LookupQuery& query) {
  LookupIndex index(rows, {});
  return Lookup(spec, index, query, {}, /*nearest=*/false);
}

}  // namespace blocktune::tuner
