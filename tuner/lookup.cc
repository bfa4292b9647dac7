// Lookup over tuned entries; see lookup.h.
#include "tuner/lookup.h"

namespace blocktune::tuner {
namespace {

// Adapts TunedEntry to the member names resolve.h expects, without copying strings.
struct RowView {
  std::string_view hardware;
  std::string_view dtype;
  std::string_view bucket;
  const TunedEntry* entry;
};

}  // namespace

Result<LookupAnswer> Lookup(const KernelSpec& spec, const std::vector<TunedEntry>& rows, const LookupQuery& query) {
  Problem p{query.dtype, query.dims};
  if (auto s = spec.ValidateProblem(p); !s) return std::unexpected(s.error());
  LookupAnswer a;
  a.kernel = std::string(spec.name());
  a.bucket = spec.Bucket(p).first;
  std::vector<RowView> views;
  views.reserve(rows.size());
  for (const TunedEntry& e : rows) {
    if (e.kernel == spec.name() && e.bucket_version == spec.bucket_version()) {
      views.push_back({e.hardware_key, DTypeName(e.dtype), e.bucket, &e});
    }
  }
  const auto match = tables::ResolveRow(views, query.hardware_key, DTypeName(query.dtype), a.bucket);
  if (match.row == nullptr) {
    a.config = spec.DefaultConfig();
    a.source = tables::Source::kDefault;
    a.hardware = query.hardware_key;
    return a;
  }
  const TunedEntry& e = *match.row->entry;
  a.config = e.config;
  a.source = match.source;
  a.hardware = e.hardware_key;
  a.median_ns = e.median_ns;
  a.samples = e.samples;
  a.sweep_id = e.sweep_id;
  a.measurement_id = e.measurement_id;
  a.measured_at = e.measured_at;
  return a;
}

}  // namespace blocktune::tuner
