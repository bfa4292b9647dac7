// The JSON CLBlast's tuners write; see import.h.
#include "external/import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "blocktune/version.h"
#include "external/import_internal.h"
#include "tuner/timing/timing.h"

namespace blocktune::external {

using namespace internal;  // NOLINT: the importers' shared helpers

namespace {

// A metadata field of a CLBlast file: the tuner writes every one as a JSON string ("1024").
std::string MetaString(const json& doc, const char* key) {
  if (!doc.contains(key)) return {};
  const json& v = doc[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number()) return v.dump();
  return {};
}

// CLBlast's precision codes (its Precision enum: the bits of one element, twice for complex).
std::optional<DType> CLBlastDType(const std::string& precision) {
  if (precision == "32") return DType::kF32;
  if (precision == "16") return DType::kF16;
  if (precision == "64") return DType::kF64;
  if (precision == "3232") return DType::kC64;
  if (precision == "6464") return DType::kC128;
  return std::nullopt;
}

}  // namespace

Result<ImportedSet> ParseCLBlast(const std::string& text, const ImportOptions& options) {
  ImportedSet set;
  set.format = "clblast";
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    return InvalidArgument("not a CLBlast tuner file: no \"results\" array", "results");
  }
  const std::string family = MetaString(doc, "kernel_family");
  if (family.empty()) return InvalidArgument("not a CLBlast tuner file: no \"kernel_family\"", "kernel_family");
  const std::string precision = MetaString(doc, "precision");
  const auto dtype = CLBlastDType(precision);
  if (!dtype) {
    return InvalidArgument("precision '" + precision.substr(0, 16) + "' is not one of CLBlast's 16, 32, 64, 3232, 6464",
                           "precision");
  }
  set.dtype = *dtype;
  // The variant stays in the name (xgemm_1, xgemm_2): CLBlast's variants search different
  // value ranges of the same parameters, and a spec holds one space.
  set.kernel = KernelName(options.kernel.empty() ? family : options.kernel);
  // CLBlast's own device name (the board name on AMD, where the OpenCL name is a code name like
  // "gfx906") when the file has it, else OpenCL's; the vendor from the vendor fields.
  std::string name = MetaString(doc, "clblast_device_name");
  if (name.empty()) name = MetaString(doc, "device");
  if (name.empty()) name = "unknown device";
  set.device = name;
  std::string vendor = MetaString(doc, "clblast_device_vendor");
  if (vendor.empty()) vendor = MetaString(doc, "device_vendor");
  // CLBlast records the architecture as OpenCL reports it ("SM6.1" on NVIDIA).
  FileDevice(set, options, vendor, "opencl", MetaString(doc, "clblast_device_architecture"));
  // Problem size: the tuner's size arguments; alpha and beta are scalars, kept in the context.
  for (const auto& [key, dim] : std::vector<std::pair<const char*, const char*>>{
           {"arg_m", "m"}, {"arg_n", "n"}, {"arg_k", "k"}, {"arg_batch_count", "batch_count"}}) {
    const std::string v = MetaString(doc, key);
    if (v.empty()) continue;
    int64_t size = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), size);
    if (ec != std::errc() || end != v.data() + v.size() || size < 1) {
      return InvalidArgument(std::string(key) + " '" + v.substr(0, 32) + "' is not a positive integer", key);
    }
    set.problem.Set(dim, size);
  }
  if (set.problem.empty()) set.problem.Set("size_x", 1);
  set.context = "CLBlast " + family + " precision " + precision;
  for (const char* key : {"arg_alpha", "arg_beta", "device_type", "device_compute_units", "device_core_clock"}) {
    const std::string v = MetaString(doc, key);
    if (!v.empty()) set.context += std::string(", ") + key + "=" + v.substr(0, 64);
  }
  // Parameters: the union of the results' keys but PRECISION (the tuner adds it to every result;
  // it is the file's precision, the dtype here), values collected.
  std::vector<std::string> names;
  std::map<std::string, json> declared;
  std::string kernel_seen;
  for (size_t i = 0; i < doc["results"].size(); ++i) {
    const json& r = doc["results"][i];
    if (!r.is_object() || !r.contains("parameters") || !r["parameters"].is_object()) continue;
    for (const auto& [k, v] : r["parameters"].items()) {
      if (k == "PRECISION") {
        if (v.dump() != precision) {
          set.warnings.push_back("results[" + std::to_string(i) + "]: PRECISION " + v.dump().substr(0, 16) +
                                 " is not the file's precision " + precision);
        }
        continue;
      }
      if (!declared.count(k)) {
        names.push_back(k);
        declared[k] = json::array();
      }
      if (std::find(declared[k].begin(), declared[k].end(), v) == declared[k].end()) declared[k].push_back(v);
    }
    const std::string kernel = r.value("kernel", std::string());
    if (kernel_seen.empty()) kernel_seen = kernel;
    if (kernel != kernel_seen) {
      set.warnings.push_back("results[" + std::to_string(i) + "]: kernel " + kernel.substr(0, 64) + " is not " +
                             kernel_seen.substr(0, 64) + "; its record is filed with the others");
    }
  }
  if (names.empty()) return InvalidArgument("CLBlast results without parameters", "results");
  if (!kernel_seen.empty()) set.context += ", OpenCL kernel " + kernel_seen.substr(0, 64);
  std::vector<ParamCoder> coders;
  for (const auto& n : names) coders.emplace_back(n, declared[n]);
  std::set<std::string> seen;
  for (size_t i = 0; i < doc["results"].size(); ++i) {
    if (set.records.size() >= kMaxRecords) return InvalidArgument("more than 2000000 records", "results");
    const json& r = doc["results"][i];
    const std::string where = "results[" + std::to_string(i) + "]";
    if (!r.is_object() || !r.contains("parameters") || !r["parameters"].is_object()) {
      set.warnings.push_back(where + " has no parameters; skipped");
      continue;
    }
    ImportedRecord rec;
    if (const auto bad = CodeConfig(coders, r["parameters"], rec.config)) {
      set.warnings.push_back(where + ": " + *bad + " missing or not an integer; skipped");
      continue;
    }
    if (!seen.insert(rec.config.ToString()).second) {
      set.warnings.push_back(where + " repeats config " + rec.config.ToString() + "; the first is kept");
      continue;
    }
    // "time" is milliseconds, the minimum of the tuner's runs, printed with 3 decimals.
    const json t = r.contains("time") ? r["time"] : json();
    if (!t.is_number() || !std::isfinite(t.get<double>()) || t.get<double>() < 0) {
      rec.outcome = Outcome::kInvalid;
      rec.detail = "no time in the imported record";
    } else if (t.get<double>() == 0) {
      // A kernel under 0.5 us prints as 0.000: measured, but with no usable number.
      rec.outcome = Outcome::kUnstable;
      rec.detail = "time 0.000 ms: below the file's resolution (CLBlast prints 3 decimals of a millisecond)";
    } else {
      rec.samples_ns.push_back(t.get<double>() * 1e6);
      rec.detail = "CLBlast tuner: the best of its runs; it matched CLBlast's reference";
    }
    set.records.push_back(std::move(rec));
  }
  for (const auto& c : coders) set.params.push_back(c.param());
  return set;
}

}  // namespace blocktune::external
