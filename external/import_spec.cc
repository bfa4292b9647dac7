// A device's hardware key and the spec an imported set makes, matches or widens; see import.h.
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
#include "tuner/device_models.h"
#include "tuner/timing/timing.h"

namespace blocktune::external {

using namespace internal;  // NOLINT: the importers' shared helpers

namespace {

// The vendor component of a key from a slugged vendor or device name; "unknown" if none fits.
std::string VendorOf(const std::string& slug) {
  for (const auto& [needle, v] : std::vector<std::pair<std::string, std::string>>{{"nvidia", "nvidia"},
                                                                                  {"geforce", "nvidia"},
                                                                                  {"tesla", "nvidia"},
                                                                                  {"quadro", "nvidia"},
                                                                                  {"advanced_micro_devices", "amd"},
                                                                                  {"amd", "amd"},
                                                                                  {"radeon", "amd"},
                                                                                  {"instinct", "amd"},
                                                                                  {"intel", "intel"},
                                                                                  {"apple", "apple"},
                                                                                  {"qualcomm", "qualcomm"},
                                                                                  {"adreno", "qualcomm"},
                                                                                  {"mali", "arm"}}) {
    if (slug.find(needle) != std::string::npos) return v;
  }
  return "unknown";
}

}  // namespace

tuner::DeviceIdentity ImportedDevice(const std::string& device, const std::string& platform,
                                     const std::string& vendor_name, const std::string& arch) {
  tuner::DeviceIdentity id;
  id.kind = Slug(platform) == "tpu" ? "tpu" : "gpu";
  id.platform = platform;
  id.model = device.empty() ? "unknown device" : device;
  if (id.kind == "tpu") {
    id.vendor = "google";
    id.arch = arch.empty() ? device : arch;
    return id;
  }
  id.vendor = vendor_name.empty() ? "unknown" : VendorOf(Slug(vendor_name));
  if (id.vendor == "unknown") id.vendor = VendorOf(Slug(device));
  const std::string norm = tuner::NormalizeDeviceText(device);
  const bool gfx = norm.size() > 3 && norm.rfind("gfx", 0) == 0 && std::isdigit(static_cast<unsigned char>(norm[3]));
  if (gfx) {
    // OpenCL on ROCm names the device by its gfx target: that is the architecture and, the board
    // being unknown, the model.
    id.vendor = "amd";
    id.model = tuner::DeviceArch("gpu", "amd", device);
  }
  if (tuner::DeviceModelSlug(id.model).empty()) id.model = "unknown";
  if (!arch.empty()) {
    id.arch = arch;
  } else if (gfx) {
    id.arch = device;
  } else if (auto known = tuner::KnownDeviceArch(id.vendor, tuner::DeviceModelSlug(id.model))) {
    id.arch = std::string(*known);
  } else {
    id.arch = std::string(tuner::kUnknownArch);
  }
  return id;
}

std::string DeviceHardwareKey(const std::string& device, const std::string& platform, const std::string& vendor_name,
                              const std::string& arch) {
  // Already a key (a file blocktune exported): kept as it is, or mapped from the scheme before
  // device keys.
  const bool keyish =
      std::count(device.begin(), device.end(), '.') >= 1 && std::all_of(device.begin(), device.end(), [](char c) {
        return std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '.' ||
               c == '_' || c == '-';
      });
  if (keyish && platform.empty() && arch.empty()) return tuner::LegacyDeviceKey(device).value_or(device);
  auto key = tuner::DeviceKey(ImportedDevice(device, platform, vendor_name, arch));
  // Every segment is made non-empty above; what is left is an arch that normalises to nothing
  // ("--arch !!"), which the command refuses before it gets here.
  return key ? *key : "gpu.unknown.unknown.unknown";
}

namespace internal {

void FileDevice(ImportedSet& set, const ImportOptions& options, const std::string& vendor,
                const std::string& format_platform, const std::string& file_arch) {
  const std::string arch = options.arch.empty() ? file_arch : options.arch;
  set.hardware_key = options.hardware_key.empty() ? DeviceHardwareKey(set.device, options.platform, vendor, arch)
                                                  : options.hardware_key;
  tuner::DeviceIdentity id =
      ImportedDevice(set.device, options.platform.empty() ? format_platform : options.platform, vendor, arch);
  if (auto key = tuner::DeviceKey(id); key && *key == set.hardware_key) {
    set.identity = std::move(id);
    if (tables::KeyPrefixAt(set.hardware_key, 3).ends_with("." + std::string(tuner::kUnknownArch))) {
      set.warnings.push_back("the architecture of '" + set.device.substr(0, 80) +
                             "' is not known to blocktune: filed under " + set.hardware_key +
                             "; pass --arch (sm86, gfx1030, ...) to file it under its architecture");
    }
  }
}

}  // namespace internal

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
             .dump(2) +
         "\n";
}

Status MatchSpec(const KernelSpec& spec, const ImportedSet& set) {
  if (spec.params().size() != set.params.size()) {
    return InvalidArgument(
        "kernel " + set.kernel + " exists with other parameters; pass --kernel to import under a new name", "kernel");
  }
  for (const auto& p : set.params) {
    const auto it =
        std::find_if(spec.params().begin(), spec.params().end(), [&](const ParamSpec& s) { return s.name == p.name; });
    if (it == spec.params().end())
      return InvalidArgument("kernel " + set.kernel + " has no parameter " + p.name, "kernel");
    for (int64_t v : p.values) {
      if (std::find(it->candidates.begin(), it->candidates.end(), v) == it->candidates.end()) {
        return InvalidArgument(
            "kernel " + set.kernel + ": " + p.name + "=" + std::to_string(v) + " is not a value of its spec", "kernel");
      }
    }
  }
  if (auto s = spec.ValidateProblem(Problem{set.dtype, set.problem}); !s) {
    return InvalidArgument("kernel " + set.kernel + ": problem " + set.problem.ToString() + ": " + s.error().message,
                           "kernel");
  }
  return {};
}

Result<std::string> WidenSpecJson(const std::string& spec_text, const ImportedSet& set) {
  json j = json::parse(spec_text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return InvalidArgument("kernel " + set.kernel + ": its spec is not a JSON object", "kernel");
  if (j.contains("runner")) {
    return InvalidArgument(
        "kernel " + set.kernel + " has a runner: its values are its author's; pass --kernel to import under a new name",
        "kernel");
  }
  if (!j.contains("parameters") || !j["parameters"].is_array() || j["parameters"].size() != set.params.size()) {
    return InvalidArgument(
        "kernel " + set.kernel + " exists with other parameters; pass --kernel to import under a new name", "kernel");
  }
  for (const auto& p : set.params) {
    if (!p.labels.empty()) {
      return InvalidArgument(
          "kernel " + set.kernel + ": " + p.name + " has non-integer values; pass --kernel to import under a new name",
          "kernel");
    }
    json* target = nullptr;
    for (auto& sp : j["parameters"]) {
      if (sp.is_object() && sp.value("name", std::string()) == p.name) target = &sp;
    }
    if (target == nullptr || !(*target).contains("values") || !(*target)["values"].is_array()) {
      return InvalidArgument(
          "kernel " + set.kernel + " has no parameter " + p.name + "; pass --kernel to import under a new name",
          "kernel");
    }
    std::set<int64_t> values(p.values.begin(), p.values.end());
    for (const auto& v : (*target)["values"]) {
      if (!v.is_number_integer())
        return InvalidArgument("kernel " + set.kernel + ": " + p.name + " has non-integer values", "kernel");
      values.insert(v.get<int64_t>());
    }
    (*target)["values"] = std::vector<int64_t>(values.begin(), values.end());
  }
  json dims = json::array();
  if (j.contains("dims") && j["dims"].is_array()) dims = j["dims"];
  if (dims.size() != set.problem.values().size()) {
    return InvalidArgument("kernel " + set.kernel + " exists with other dims; pass --kernel to import under a new name",
                           "kernel");
  }
  for (const auto& [n, v] : set.problem.values()) {
    bool found = false;
    for (const auto& d : dims) found |= d.is_object() && d.value("name", std::string()) == n;
    if (!found)
      return InvalidArgument("kernel " + set.kernel + " has no dim " + n + "; pass --kernel to import under a new name",
                             "kernel");
  }
  json dtypes = j.contains("dtypes") && j["dtypes"].is_array() ? j["dtypes"] : json::array({"f32"});
  const std::string dtype(DTypeName(set.dtype));
  if (std::find(dtypes.begin(), dtypes.end(), json(dtype)) == dtypes.end()) dtypes.push_back(dtype);
  j["dtypes"] = dtypes;
  return j.dump(2) + "\n";
}

}  // namespace blocktune::external
