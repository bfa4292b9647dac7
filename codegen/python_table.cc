// The Python table writer: python/<kernel>_tuned_block_sizes.py, one kernel's rows as a dict
// with infer_block_sizes() (bucketing spelled out per dim) over blocktune_resolve.py beside it.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>

#include "codegen/codegen.h"
#include "codegen/common.h"

namespace blocktune::codegen {

std::string GeneratePython(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries) {
  const auto rows = RowsFor(spec, entries);
  std::ostringstream o;
  o << Banner("#", spec, rows.size());
  o << "\"\"\"Tuned block sizes for " << spec.name()
    << ", keyed by (hardware key, dtype, bucket).\n\n"
       "infer_block_sizes() follows the same precedence as blocktune/tables/resolve.h (see\n"
       "blocktune_resolve.py beside this file): tuned (exact hardware key) -> tuned_fallback\n"
       "(same CPU model at another thread count, then same vendor and ISA level) -> default.\n\"\"\"\n\n";
  o << "try:  # imported as part of a package (tables/python as a package)\n"
       "    from . import blocktune_resolve as _resolve\n"
       "except ImportError:  # tables/python on sys.path\n"
       "    import blocktune_resolve as _resolve\n\n";
  o << "BUCKET_VERSION = " << spec.bucket_version() << "\n\n";
  o << "PARAMS = (";
  for (const auto& p : spec.params()) o << "\"" << p.name << "\", ";
  o << ")\n\nDEFAULT = {";
  for (size_t i = 0; i < spec.params().size(); ++i) {
    o << (i ? ", " : "") << "\"" << spec.params()[i].name
      << "\": " << spec.DefaultConfig().Get(spec.params()[i].name).value_or(0);
  }
  o << "}\n\n# (name, rounding, min, max); rounding is 'pow2_ceil' or 'exact'.\nBUCKET_DIMS = (\n";
  for (const auto& d : spec.dims()) {
    o << "    (\"" << d.bucket.name << "\", \""
      << (d.bucket.rounding == tables::Rounding::kPow2Ceil ? "pow2_ceil" : "exact") << "\", " << d.bucket.min << ", "
      << d.bucket.max << "),\n";
  }
  o << ")\n\n# (hardware, dtype, bucket) -> (config, median_ns, samples, sweep_id, measurement_id,\n#   fingerprint or "
       "None if unknown)\nTUNED = {\n";
  for (const auto& e : rows) {
    if (e.gate) o << "    # " << GateSummary(*e.gate) << "\n";
    if (!e.device.empty()) o << "    # device: " << DeviceSummary(e) << "\n";
    o << "    (\"" << e.hardware_key << "\", \"" << DTypeName(e.dtype) << "\", \"" << e.bucket << "\"): ({";
    for (size_t i = 0; i < spec.params().size(); ++i) {
      o << (i ? ", " : "") << "\"" << spec.params()[i].name
        << "\": " << e.config.Get(spec.params()[i].name).value_or(0);
    }
    o << "}, " << Num(e.median_ns) << ", " << e.samples << ", " << e.sweep_id << ", " << e.measurement_id << ", "
      << (e.fingerprint.empty() ? std::string("None") : "\"" + e.fingerprint + "\"") << "),\n";
  }
  o << "}\n\n_TABLE = _resolve.Table(TUNED, DEFAULT, BUCKET_DIMS)\n\n\n"
       "def bucket_id(**dims):\n"
       "    return _resolve.bucket_id(BUCKET_DIMS, dims)\n\n\n"
       "def infer_block_sizes(hardware_key, dtype, **dims):\n"
       "    \"\"\"Returns (config dict, source, matched hardware key or None, bucket).\"\"\"\n"
       "    # Each dim clamped to BUCKET_DIMS' range and rounded, as bucket_id does.\n";
  std::string values;
  for (size_t i = 0; i < spec.dims().size(); ++i) {
    const tables::BucketDim& d = spec.dims()[i].bucket;
    // Appended rather than "v" + std::to_string(i): GCC 12 reports a false -Wrestrict on that
    // operator+ once this function is inlined differently (GCC bug 105329).
    std::string v = "v";
    v += std::to_string(i);
    values += v + ", ";
    o << "    " << v << " = int(dims[\"" << d.name << "\"])\n";
    if (d.rounding == tables::Rounding::kExact) {
      o << "    " << v << " = " << d.min << " if " << v << " < " << d.min << " else (" << d.max << " if " << v << " > "
        << d.max << " else " << v << ")\n";
      continue;
    }
    // Clamp, round up to a power of two, clamp again: at or below max(min, 1) the answer is the
    // power of two of min (1 for min <= 1), at or above max it is max, between the two the
    // power of two of the value, unless that passes a max that is not a power of two itself.
    const std::int64_t low = std::max<std::int64_t>(d.min, 1);
    const std::int64_t at_low = std::min(tables::RoundDim(d, d.min), d.max);
    const bool max_is_pow2 = d.max > 0 && (d.max & (d.max - 1)) == 0;
    const std::string pow2 = "1 << (" + v + " - 1).bit_length()";
    o << "    " << v << " = " << at_low << " if " << v << " <= " << low << " else (" << d.max << " if " << v
      << " >= " << d.max << " else " << (max_is_pow2 ? pow2 : "min(" + pow2 + ", " + std::to_string(d.max) + ")")
      << ")\n";
  }
  o << "    return _TABLE.lookup(hardware_key, dtype, (" << values
    << "))\n\n\n"
       "def infer_block_sizes_same_arch(hardware_key, dtype, **dims):\n"
       "    \"\"\"infer_block_sizes, where a device key (gpu.<vendor>.<arch>.<model>) without rows of its own\n"
       "    is answered by another model's row of its architecture (tuned_fallback), as blocktuned\n"
       "    --device-fallback same-arch answers; off in infer_block_sizes until blocktune regret has\n"
       "    measured what it costs.\"\"\"\n"
       "    return _resolve.infer(TUNED, DEFAULT, BUCKET_DIMS, hardware_key, dtype, dims, same_arch=True)\n";
  return o.str();
}

}  // namespace blocktune::codegen
