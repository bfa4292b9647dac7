// The JSON table writer: json/<kernel>_tuned_block_sizes.json, one kernel's rows, parameters,
// bucket dims and default config for readers in any language.
#include <string>

#include "codegen/codegen.h"
#include "codegen/common.h"

namespace blocktune::codegen {

std::string GenerateJson(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries) {
  const auto rows = RowsFor(spec, entries);
  ordered_json j;
  j["generated_by"] = std::string(kRegenerateCommand);
  j["kernel"] = spec.name();
  j["bucket_version"] = spec.bucket_version();
  ordered_json params = ordered_json::array();
  for (const auto& p : spec.params()) params.push_back(p.name);
  j["params"] = params;
  ordered_json dims = ordered_json::array();
  for (const auto& d : spec.dims()) {
    dims.push_back({{"name", d.bucket.name},
                    {"rounding", d.bucket.rounding == tables::Rounding::kPow2Ceil ? "pow2_ceil" : "exact"},
                    {"min", d.bucket.min},
                    {"max", d.bucket.max}});
  }
  j["bucket_dims"] = dims;
  ordered_json def = ordered_json::object();
  const Config default_config = spec.DefaultConfig();
  for (const auto& [n, v] : default_config.values()) def[n] = v;
  j["default"] = def;
  ordered_json out_rows = ordered_json::array();
  for (const auto& e : rows) {
    ordered_json cfg = ordered_json::object();
    for (const auto& [n, v] : e.config.values()) cfg[n] = v;
    out_rows.push_back({{"hardware", e.hardware_key},
                        {"dtype", DTypeName(e.dtype)},
                        {"bucket", e.bucket},
                        {"config", cfg},
                        {"median_ns", e.median_ns},
                        {"samples", e.samples},
                        {"sweep_id", e.sweep_id},
                        {"measurement_id", e.measurement_id},
                        {"fingerprint", e.fingerprint.empty() ? ordered_json(nullptr) : ordered_json(e.fingerprint)}});
    if (e.gate) out_rows.back()["gate"] = GateJson(*e.gate);
    if (auto d = DeviceJson(e); !d.is_null()) out_rows.back()["device"] = d;
  }
  j["rows"] = out_rows;
  return j.dump(2) + "\n";
}

}  // namespace blocktune::codegen
