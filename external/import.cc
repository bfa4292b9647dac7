// Kernel Tuner, T4 and CLBlast importers and the store side of an import; see import.h.
#include "external/import.h"

#include <algorithm>
#include <charconv>
#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "blocktune/version.h"
#include "tuner/timing/timing.h"

namespace blocktune::external {
namespace {

using nlohmann::json;
using tuner::Outcome;

constexpr size_t kMaxRecords = 2000000;

std::string Slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '_') {
      out += '_';
    }
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out.empty() ? "unknown" : out.substr(0, 64);
}

std::string KernelName(const std::string& s) {
  std::string k = Slug(s);
  if (!std::islower(static_cast<unsigned char>(k[0]))) k.insert(0, "k_");
  return k.substr(0, 64);
}

// Ints from a Kernel Tuner problem size: [1024, 1024], 4096, "(1024, 1024)" or "1024".
std::vector<int64_t> SizeList(const json& j) {
  std::vector<int64_t> out;
  if (j.is_number()) out.push_back(static_cast<int64_t>(j.get<double>()));
  if (j.is_array()) {
    for (const auto& x : j) {
      if (x.is_number()) out.push_back(static_cast<int64_t>(x.get<double>()));
    }
  }
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    int64_t v = 0;
    bool in = false;
    for (char c : s + " ") {
      if (std::isdigit(static_cast<unsigned char>(c))) {
        v = v * 10 + (c - '0');
        in = true;
      } else if (in) {
        out.push_back(v);
        v = 0;
        in = false;
      }
    }
  }
  return out;
}

NamedInts ProblemOf(const std::vector<int64_t>& sizes) {
  static const char* kNames[] = {"size_x", "size_y", "size_z", "size_w"};
  NamedInts p;
  for (size_t i = 0; i < sizes.size() && i < 4; ++i) p.Set(kNames[i], std::max<int64_t>(sizes[i], 1));
  if (p.empty()) p.Set("size_x", 1);
  return p;
}

// Parameter values of the source as integer codes: integers as themselves, anything else
// (floats, strings) by its index in the declared list (labels kept).
class ParamCoder {
 public:
  ParamCoder(std::string name, const json& declared) {
    param_.name = std::move(name);
    bool all_int = declared.is_array() && !declared.empty();
    if (declared.is_array()) {
      for (const auto& v : declared) all_int = all_int && (v.is_number_integer() || (v.is_number() && std::floor(v.get<double>()) == v.get<double>()));
    }
    if (all_int) {
      for (const auto& v : declared) param_.values.push_back(static_cast<int64_t>(v.get<double>()));
      std::sort(param_.values.begin(), param_.values.end());
      param_.values.erase(std::unique(param_.values.begin(), param_.values.end()), param_.values.end());
    } else if (declared.is_array()) {
      for (const auto& v : declared) {
        param_.labels.push_back(v.is_string() ? v.get<std::string>() : v.dump());
        param_.values.push_back(static_cast<int64_t>(param_.values.size()));
      }
    }
  }
  // The code of one record's value; nullopt if it is not among the declared values.
  std::optional<int64_t> Code(const json& v) const {
    if (param_.labels.empty()) {
      if (!v.is_number()) return std::nullopt;
      const double d = v.get<double>();
      const auto iv = static_cast<int64_t>(d);
      if (static_cast<double>(iv) != d) return std::nullopt;
      if (std::find(param_.values.begin(), param_.values.end(), iv) == param_.values.end()) return std::nullopt;
      return iv;
    }
    const std::string s = v.is_string() ? v.get<std::string>() : v.dump();
    const auto it = std::find(param_.labels.begin(), param_.labels.end(), s);
    if (it == param_.labels.end()) return std::nullopt;
    return static_cast<int64_t>(it - param_.labels.begin());
  }
  const ImportedParam& param() const { return param_; }

 private:
  ImportedParam param_;
};

// One record's configuration coded by `coders` from the object of its values into `config`; the
// name of the first parameter that is missing or not a declared value otherwise (the record is
// then skipped with a warning by the caller).
std::optional<std::string> CodeConfig(const std::vector<ParamCoder>& coders, const json& values, Config& config) {
  for (const auto& c : coders) {
    const auto code = values.contains(c.param().name) ? c.Code(values[c.param().name]) : std::nullopt;
    if (!code) return c.param().name;
    config.Set(c.param().name, *code);
  }
  return std::nullopt;
}

// Kernel Tuner's failure markers, in the objective field (older releases) or under __error__.
std::optional<std::pair<Outcome, std::string>> KernelTunerFailure(const std::string& marker) {
  if (marker == "InvalidConfig") return std::pair{Outcome::kInvalid, std::string("InvalidConfig (Kernel Tuner)")};
  if (marker == "CompilationFailedConfig") {
    return std::pair{Outcome::kCompileFailed, std::string("CompilationFailedConfig (Kernel Tuner)")};
  }
  if (marker == "RuntimeFailedConfig") {
    return std::pair{Outcome::kRuntimeFailed, std::string("RuntimeFailedConfig (Kernel Tuner)")};
  }
  return std::nullopt;
}

// Scans a JSON string literal starting at text[i] == '"'; returns the index after it, npos if
// the text ends first.
size_t SkipString(const std::string& text, size_t i) {
  for (++i; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == '"') {
      return i + 1;
    }
  }
  return std::string::npos;
}

// The end (exclusive) of the JSON value at text[i] ('{' or '['), npos if the text ends first.
size_t SkipComposite(const std::string& text, size_t i) {
  int depth = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      i = SkipString(text, i);
      if (i == std::string::npos) return i;
      --i;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  return std::string::npos;
}

// A cache Kernel Tuner never closed (it appends one entry per config): the header before
// "cache", then entries for as long as they are complete JSON.
Result<json> ReadTruncatedCache(const std::string& text, std::vector<std::string>& warnings) {
  const size_t key = text.find("\"cache\"");
  if (key == std::string::npos) return InvalidArgument("not a Kernel Tuner cache: no \"cache\" object", "cache");
  std::string head = text.substr(0, key);
  while (!head.empty() && (std::isspace(static_cast<unsigned char>(head.back())) || head.back() == ',')) head.pop_back();
  json doc = json::parse(head + "}", nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgument("not a Kernel Tuner cache: the header before \"cache\" is not valid JSON", "cache");
  }
  json cache = json::object();
  size_t i = text.find('{', key);
  if (i == std::string::npos) {
    warnings.push_back("truncated cache: no entries");
    doc["cache"] = cache;
    return doc;
  }
  ++i;
  bool truncated = false;
  while (true) {
    while (i < text.size() && (std::isspace(static_cast<unsigned char>(text[i])) || text[i] == ',')) ++i;
    if (i >= text.size()) {
      truncated = true;
      break;
    }
    if (text[i] == '}') break;  // closed after all
    if (text[i] != '"') {
      truncated = true;
      break;
    }
    const size_t kend = SkipString(text, i);
    if (kend == std::string::npos) {
      truncated = true;
      break;
    }
    const json k = json::parse(text.substr(i, kend - i), nullptr, false);
    size_t v = text.find_first_not_of(" \t\r\n", kend);
    if (v == std::string::npos || text[v] != ':') {
      truncated = true;
      break;
    }
    v = text.find_first_not_of(" \t\r\n", v + 1);
    if (v == std::string::npos || text[v] != '{') {
      truncated = true;
      break;
    }
    const size_t vend = SkipComposite(text, v);
    if (vend == std::string::npos) {
      truncated = true;
      break;
    }
    const json value = json::parse(text.substr(v, vend - v), nullptr, false);
    if (k.is_discarded() || !k.is_string() || value.is_discarded()) {
      truncated = true;
      break;
    }
    cache[k.get<std::string>()] = value;
    i = vend;
  }
  if (truncated) {
    warnings.push_back("truncated cache: read " + std::to_string(cache.size()) +
                       " complete entries; the rest of the file is not valid JSON");
  }
  doc["cache"] = cache;
  return doc;
}

// The vendor component of a key from a slugged vendor or device name; "unknown" if none fits.
std::string VendorOf(const std::string& slug) {
  for (const auto& [needle, v] : std::vector<std::pair<std::string, std::string>>{
           {"nvidia", "nvidia"}, {"geforce", "nvidia"}, {"tesla", "nvidia"}, {"quadro", "nvidia"},
           {"advanced_micro_devices", "amd"}, {"amd", "amd"}, {"radeon", "amd"}, {"instinct", "amd"},
           {"intel", "intel"}, {"apple", "apple"}, {"qualcomm", "qualcomm"}, {"adreno", "qualcomm"},
           {"mali", "arm"}}) {
    if (slug.find(needle) != std::string::npos) return v;
  }
  return "unknown";
}

}  // namespace

std::string DeviceHardwareKey(const std::string& device, const std::string& platform, const std::string& vendor_name) {
  // Already a key (a file blocktune exported): kept as it is.
  const bool keyish = std::count(device.begin(), device.end(), '.') >= 1 &&
                      std::all_of(device.begin(), device.end(), [](char c) {
                        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) ||
                               c == '.' || c == '_' || c == '-';
                      });
  if (keyish && platform.empty()) return device;
  std::string slug = Slug(device);
  std::string vendor = vendor_name.empty() ? "unknown" : VendorOf(Slug(vendor_name));
  if (vendor == "unknown") vendor = VendorOf(slug);
  if (slug.rfind(vendor + "_", 0) == 0) slug = slug.substr(vendor.size() + 1);
  std::string p = platform;
  if (p.empty()) p = vendor == "nvidia" ? "cuda" : vendor == "amd" ? "hip" : "opencl";
  return Slug(p) + "." + vendor + "." + slug;
}

Result<ImportedSet> ParseKernelTunerCache(const std::string& text, const ImportOptions& options) {
  ImportedSet set;
  set.format = "kerneltuner";
  json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    auto t = ReadTruncatedCache(text, set.warnings);
    if (!t) return std::unexpected(t.error());
    doc = std::move(*t);
  }
  if (!doc.is_object() || !doc.contains("cache") || !doc["cache"].is_object()) {
    return InvalidArgument("not a Kernel Tuner cache: no \"cache\" object", "cache");
  }
  if (!doc.contains("tune_params_keys") || !doc["tune_params_keys"].is_array() || doc["tune_params_keys"].empty()) {
    return InvalidArgument("Kernel Tuner cache without tune_params_keys", "tune_params_keys");
  }
  const std::string objective = doc.value("objective", std::string("time"));
  set.device = doc.value("device_name", std::string("unknown device"));
  set.kernel = KernelName(options.kernel.empty() ? doc.value("kernel_name", std::string("imported_kernel")) : options.kernel);
  set.hardware_key = options.hardware_key.empty() ? DeviceHardwareKey(set.device, options.platform) : options.hardware_key;
  set.problem = ProblemOf(SizeList(doc.value("problem_size", json())));
  std::vector<ParamCoder> coders;
  for (const auto& k : doc["tune_params_keys"]) {
    if (!k.is_string()) return InvalidArgument("tune_params_keys must be strings", "tune_params_keys");
    const std::string name = k.get<std::string>();
    json declared = doc.contains("tune_params") && doc["tune_params"].contains(name) ? doc["tune_params"][name] : json::array();
    if (declared.empty()) {
      // Values only in the records: collect them.
      for (const auto& [_, e] : doc["cache"].items()) {
        if (e.contains(name) && std::find(declared.begin(), declared.end(), e[name]) == declared.end()) declared.push_back(e[name]);
      }
    }
    coders.emplace_back(name, declared);
  }
  std::set<std::string> seen;
  for (const auto& [key, e] : doc["cache"].items()) {
    if (set.records.size() >= kMaxRecords) return InvalidArgument("more than 2000000 records", "cache");
    if (!e.is_object()) {
      set.warnings.push_back("entry '" + key + "' is not an object; skipped");
      continue;
    }
    ImportedRecord r;
    if (const auto bad = CodeConfig(coders, e, r.config)) {
      set.warnings.push_back("entry '" + key + "': " + *bad + " missing or not a declared value; skipped");
      continue;
    }
    if (!seen.insert(r.config.ToString()).second) {
      set.warnings.push_back("entry '" + key + "' repeats config " + r.config.ToString() + "; the first is kept");
      continue;
    }
    std::optional<std::pair<Outcome, std::string>> failure;
    if (e.contains("__error__") && e["__error__"].is_string()) {
      failure = KernelTunerFailure(e["__error__"].get<std::string>());
      if (!failure) failure = std::pair{Outcome::kRuntimeFailed, e["__error__"].get<std::string>().substr(0, 200) + " (Kernel Tuner)"};
    } else if (e.contains(objective) && e[objective].is_string()) {
      failure = KernelTunerFailure(e[objective].get<std::string>());
      if (!failure) failure = std::pair{Outcome::kRuntimeFailed, e[objective].get<std::string>().substr(0, 200) + " (Kernel Tuner)"};
    }
    if (failure) {
      r.outcome = failure->first;
      r.detail = failure->second;
    } else {
      // Kernel Tuner times are milliseconds: every repetition under "times", else the objective.
      if (e.contains("times") && e["times"].is_array()) {
        for (const auto& t : e["times"]) {
          if (t.is_number() && t.get<double>() > 0) r.samples_ns.push_back(t.get<double>() * 1e6);
        }
      }
      if (r.samples_ns.empty() && e.contains(objective) && e[objective].is_number() && e[objective].get<double>() > 0) {
        r.samples_ns.push_back(e[objective].get<double>() * 1e6);
      }
      if (r.samples_ns.empty()) {
        r.outcome = Outcome::kInvalid;
        r.detail = "no time in the imported record";
      }
    }
    set.records.push_back(std::move(r));
  }
  for (const auto& c : coders) set.params.push_back(c.param());
  return set;
}

Result<ImportedSet> ParseT4(const std::string& text, const ImportOptions& options) {
  ImportedSet set;
  set.format = "t4";
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("results") || !doc["results"].is_array()) {
    return InvalidArgument("not T4 JSON: no \"results\" array", "results");
  }
  const json env = doc.value("environment", json::object());
  const json meta = doc.value("metadata", json::object());
  set.device = env.value("device_name", meta.value("device_name", std::string("unknown device")));
  std::string name = options.kernel;
  if (name.empty()) name = meta.value("kernel_name", env.value("kernel_name", std::string("imported_kernel")));
  set.kernel = KernelName(name);
  set.hardware_key = options.hardware_key.empty() ? DeviceHardwareKey(set.device, options.platform) : options.hardware_key;
  set.problem = ProblemOf(SizeList(meta.value("problem_size", env.value("problem_size", json()))));
  // Parameters: the union of the configurations' keys, in first-seen order, values collected.
  std::vector<std::string> names;
  std::map<std::string, json> declared;
  for (const auto& r : doc["results"]) {
    if (!r.is_object() || !r.contains("configuration") || !r["configuration"].is_object()) continue;
    for (const auto& [k, v] : r["configuration"].items()) {
      if (!declared.count(k)) {
        names.push_back(k);
        declared[k] = json::array();
      }
      if (std::find(declared[k].begin(), declared[k].end(), v) == declared[k].end()) declared[k].push_back(v);
    }
  }
  if (names.empty()) return InvalidArgument("T4 results without configurations", "results");
  std::vector<ParamCoder> coders;
  for (const auto& n : names) coders.emplace_back(n, declared[n]);
  std::set<std::string> seen;
  for (size_t i = 0; i < doc["results"].size(); ++i) {
    const json& r = doc["results"][i];
    if (!r.is_object() || !r.contains("configuration")) {
      set.warnings.push_back("results[" + std::to_string(i) + "] has no configuration; skipped");
      continue;
    }
    ImportedRecord rec;
    if (CodeConfig(coders, r["configuration"], rec.config) || !seen.insert(rec.config.ToString()).second) {
      set.warnings.push_back("results[" + std::to_string(i) + "] skipped (incomplete or repeated configuration)");
      continue;
    }
    const std::string invalidity = r.value("invalidity", std::string("correct"));
    if (invalidity == "correct") {
      for (const auto& m : r.value("measurements", json::array())) {
        if (!m.is_object() || m.value("name", std::string()) != "time") continue;
        const std::string unit = m.value("unit", std::string("ms"));
        const double scale = unit == "s" ? 1e9 : unit == "us" ? 1e3 : unit == "ns" ? 1 : 1e6;
        const json v = m.contains("value") ? m["value"] : json();
        if (v.is_number()) rec.samples_ns.push_back(v.get<double>() * scale);
        if (v.is_array()) {
          for (const auto& x : v) {
            if (x.is_number()) rec.samples_ns.push_back(x.get<double>() * scale);
          }
        }
      }
      std::erase_if(rec.samples_ns, [](double x) { return !(x > 0) || !std::isfinite(x); });
      if (rec.samples_ns.empty()) {
        rec.outcome = Outcome::kInvalid;
        rec.detail = "no time measurement in the imported record";
      }
    } else if (invalidity == "compile") {
      rec.outcome = Outcome::kCompileFailed;
      rec.detail = "T4 invalidity compile";
    } else if (invalidity == "runtime") {
      rec.outcome = Outcome::kRuntimeFailed;
      rec.detail = "T4 invalidity runtime";
    } else if (invalidity == "correctness") {
      rec.outcome = Outcome::kWrongResult;
      rec.detail = "wrong_result: T4 invalidity correctness";
    } else if (invalidity == "timeout") {
      rec.outcome = Outcome::kTimeout;
      rec.detail = "T4 invalidity timeout";
    } else {
      rec.outcome = Outcome::kInvalid;
      rec.detail = "T4 invalidity " + invalidity.substr(0, 64);
    }
    set.records.push_back(std::move(rec));
  }
  for (const auto& c : coders) set.params.push_back(c.param());
  return set;
}

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
  set.hardware_key = options.hardware_key.empty() ? DeviceHardwareKey(name, options.platform.empty() ? "opencl" : options.platform, vendor)
                                                  : options.hardware_key;
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

std::string SpecJsonFor(const ImportedSet& set) {
  json params = json::array();
  for (const auto& p : set.params) {
    json j{{"name", p.name}, {"values", p.values}};
    if (!p.labels.empty()) {
      j["categorical"] = true;
      std::string doc = "imported labels by code:";
      for (size_t i = 0; i < p.labels.size(); ++i) {
        doc += ' ';
        doc += std::to_string(i);
        doc += '=';
        doc += p.labels[i];
      }
      j["doc"] = doc.substr(0, 1000);
    }
    params.push_back(j);
  }
  json dims = json::array();
  for (const auto& [n, v] : set.problem.values()) {
    dims.push_back({{"name", n}, {"rounding", "exact"}, {"min", 1}, {"max", int64_t{1} << 40}});
  }
  std::string description = "imported from " + set.format + " results for " + set.device;
  if (!set.context.empty()) description += " (" + set.context + ")";
  return json{{"name", set.kernel},
              {"description", description.substr(0, 900) + "; no runner: add one to sweep it with blocktune"},
              {"parameters", params},
              {"dims", dims},
              {"dtypes", {DTypeName(set.dtype)}}}
             .dump(2) + "\n";
}

Status MatchSpec(const KernelSpec& spec, const ImportedSet& set) {
  if (spec.params().size() != set.params.size()) {
    return InvalidArgument("kernel " + set.kernel + " exists with other parameters; pass --kernel to import under a new name", "kernel");
  }
  for (const auto& p : set.params) {
    const auto it = std::find_if(spec.params().begin(), spec.params().end(), [&](const ParamSpec& s) { return s.name == p.name; });
    if (it == spec.params().end()) return InvalidArgument("kernel " + set.kernel + " has no parameter " + p.name, "kernel");
    for (int64_t v : p.values) {
      if (std::find(it->candidates.begin(), it->candidates.end(), v) == it->candidates.end()) {
        return InvalidArgument("kernel " + set.kernel + ": " + p.name + "=" + std::to_string(v) + " is not a value of its spec", "kernel");
      }
    }
  }
  if (auto s = spec.ValidateProblem(Problem{set.dtype, set.problem}); !s) {
    return InvalidArgument("kernel " + set.kernel + ": problem " + set.problem.ToString() + ": " + s.error().message, "kernel");
  }
  return {};
}

Result<std::string> WidenSpecJson(const std::string& spec_text, const ImportedSet& set) {
  json j = json::parse(spec_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return InvalidArgument("kernel " + set.kernel + ": its spec is not a JSON object", "kernel");
  if (j.contains("runner")) {
    return InvalidArgument("kernel " + set.kernel + " has a runner: its values are its author's; pass --kernel to import under a new name",
                           "kernel");
  }
  if (!j.contains("parameters") || !j["parameters"].is_array() || j["parameters"].size() != set.params.size()) {
    return InvalidArgument("kernel " + set.kernel + " exists with other parameters; pass --kernel to import under a new name", "kernel");
  }
  for (const auto& p : set.params) {
    if (!p.labels.empty()) {
      return InvalidArgument("kernel " + set.kernel + ": " + p.name + " has non-integer values; pass --kernel to import under a new name",
                             "kernel");
    }
    json* target = nullptr;
    for (auto& sp : j["parameters"]) {
      if (sp.is_object() && sp.value("name", std::string()) == p.name) target = &sp;
    }
    if (target == nullptr || !(*target).contains("values") || !(*target)["values"].is_array()) {
      return InvalidArgument("kernel " + set.kernel + " has no parameter " + p.name + "; pass --kernel to import under a new name", "kernel");
    }
    std::set<int64_t> values(p.values.begin(), p.values.end());
    for (const auto& v : (*target)["values"]) {
      if (!v.is_number_integer()) return InvalidArgument("kernel " + set.kernel + ": " + p.name + " has non-integer values", "kernel");
      values.insert(v.get<int64_t>());
    }
    (*target)["values"] = std::vector<int64_t>(values.begin(), values.end());
  }
  json dims = json::array();
  if (j.contains("dims") && j["dims"].is_array()) dims = j["dims"];
  if (dims.size() != set.problem.values().size()) {
    return InvalidArgument("kernel " + set.kernel + " exists with other dims; pass --kernel to import under a new name", "kernel");
  }
  for (const auto& [n, v] : set.problem.values()) {
    bool found = false;
    for (const auto& d : dims) found |= d.is_object() && d.value("name", std::string()) == n;
    if (!found) return InvalidArgument("kernel " + set.kernel + " has no dim " + n + "; pass --kernel to import under a new name", "kernel");
  }
  json dtypes = j.contains("dtypes") && j["dtypes"].is_array() ? j["dtypes"] : json::array({"f32"});
  const std::string dtype(DTypeName(set.dtype));
  if (std::find(dtypes.begin(), dtypes.end(), json(dtype)) == dtypes.end()) dtypes.push_back(dtype);
  j["dtypes"] = dtypes;
  return j.dump(2) + "\n";
}

namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

Result<ImportSummary> StoreImport(store::Store& db, const KernelSpec& spec, const ImportedSet& set) {
  if (auto s = MatchSpec(spec, set); !s) return std::unexpected(s.error());
  if (set.records.empty()) return InvalidArgument("no records to import", "records");
  const Problem problem{set.dtype, set.problem};
  const auto [bucket, rep] = spec.Bucket(problem);
  // What makes an import the same import: kernel, device key, dtype, bucket and every record.
  // (f32 is left out so imports made before there was a choice keep their key.)
  std::string canonical = set.format + "|" + set.kernel + "|" + set.hardware_key + "|" + bucket;
  if (set.dtype != DType::kF32) canonical += "|" + std::string(DTypeName(set.dtype));
  for (const auto& r : set.records) {
    canonical += "|" + r.config.ToString() + ":" + std::string(tuner::OutcomeName(r.outcome));
    for (double x : r.samples_ns) {
      canonical += ',';
      canonical += std::to_string(static_cast<int64_t>(std::llround(x)));
    }
  }
  char key[64];
  std::snprintf(key, sizeof key, "import:%s:%016llx", set.format.c_str(), static_cast<unsigned long long>(Fnv1a(canonical)));

  HardwareProfile hw;
  hw.device_key = set.hardware_key;
  hw.model_name = set.device;
  const size_t dot = set.hardware_key.find('.');
  hw.cpu.arch = set.hardware_key.substr(0, dot);
  hw.cpu.isa = "device";
  const std::string rest = dot == std::string::npos ? "" : set.hardware_key.substr(dot + 1);
  hw.cpu.vendor = rest.substr(0, rest.find('.'));
  auto hw_id = db.hardware().Upsert(hw);
  if (!hw_id) return std::unexpected(hw_id.error());

  tuner::SweepRequest request;
  request.kernel = set.kernel;
  request.dtype = set.dtype;
  request.shapes = {set.problem};
  request.strategy = tuner::Strategy::kExhaustive;
  const store::TaskPlan plan{bucket, set.problem, static_cast<int64_t>(set.records.size())};
  auto created = db.sweeps().Create(request, *hw_id, spec.bucket_version(),
                                    std::string(kToolVersion) + " import " + set.format, {plan}, key, key);
  if (!created) return std::unexpected(created.error());
  ImportSummary summary;
  summary.sweep_id = created->id;
  summary.created = created->created;
  summary.bucket = bucket;
  summary.records = static_cast<int64_t>(set.records.size());
  if (!created->created) return summary;

  auto tasks = db.tasks().List(created->id);
  if (!tasks) return std::unexpected(tasks.error());
  if (tasks->size() != 1) return Internal("import sweep without its task");
  const int64_t task_id = tasks->front().id;
  if (auto s = db.tasks().LeaseTask(created->id, task_id); !s) return std::unexpected(s.error());
  std::map<std::string, int64_t> counts;
  const tuner::Measurement* best = nullptr;
  std::vector<tuner::Measurement> stored;
  stored.reserve(set.records.size());
  for (const auto& r : set.records) {
    tuner::Measurement m;
    m.sweep_id = created->id;
    m.bucket = bucket;
    m.problem = rep;
    m.config = r.config;
    m.outcome = r.outcome;
    m.detail = r.detail;
    m.samples_ns = r.samples_ns;
    if (!r.samples_ns.empty()) {
      m.iterations = 1;
      m.median_ns = tuner::Median(r.samples_ns);
      m.cv = tuner::CoefficientOfVariation(r.samples_ns);
    }
    if (auto s = db.measurements().Record(m, task_id, summary.records); !s) return std::unexpected(s.error());
    ++counts[std::string(tuner::OutcomeName(m.outcome))];
    stored.push_back(std::move(m));
  }
  for (const auto& m : stored) {
    if (m.outcome == Outcome::kOk && (best == nullptr || m.median_ns < best->median_ns)) best = &m;
  }
  if (best != nullptr) {
    tuner::TunedEntry e;
    e.kernel = set.kernel;
    e.hardware_key = set.hardware_key;
    e.dtype = set.dtype;
    e.bucket = bucket;
    e.bucket_version = spec.bucket_version();
    e.config = best->config;
    e.median_ns = best->median_ns;
    e.samples = static_cast<int64_t>(best->samples_ns.size());
    e.sweep_id = created->id;
    e.measurement_id = best->id;
    if (auto s = db.tuned().Upsert(e); !s) return std::unexpected(s.error());
    summary.winner = best->config;
    summary.winner_median_ns = best->median_ns;
  }
  auto fin = db.tasks().Finish(task_id, store::SweepStatus::kDone, "");
  if (!fin) return std::unexpected(fin.error());
  summary.by_outcome.assign(counts.begin(), counts.end());
  return summary;
}

}  // namespace blocktune::external
