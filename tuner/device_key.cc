// Device keys; see device_key.h. Every rule here mirrors python/src/blocktune/device.py (the
// reference) rule for rule.
#include "tuner/device_key.h"

#include <algorithm>
#include <optional>
#include <set>

#include "blocktune/tables/resolve.h"
#include "kernels/core/hardware.h"

namespace blocktune::tuner {
namespace {

bool IsAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// Words of a model name that name the vendor or its brand, not the device.
bool BrandWord(std::string_view w) {
  static const std::set<std::string_view> kBrand = {"nvidia",  "amd",   "ati",   "radeon", "instinct",
                                                    "geforce", "tesla", "intel", "google", "corporation",
                                                    "r",       "tm",    "gpu"};
  return kBrand.count(w) > 0;
}

// Form factor and memory size (device.py's _PACKAGING): sxm\d*, pcie, pci, nvl, hbm\d*e?,
// \d+gb, \d+g, gb.
bool PackagingWord(std::string_view w) {
  auto digits_then = [&](std::string_view prefix, std::string_view suffix, bool digits_required) {
    if (w.size() < prefix.size() + suffix.size() || w.substr(0, prefix.size()) != prefix ||
        w.substr(w.size() - suffix.size()) != suffix) {
      return false;
    }
    const std::string_view mid = w.substr(prefix.size(), w.size() - prefix.size() - suffix.size());
    if (digits_required && mid.empty()) return false;
    return std::all_of(mid.begin(), mid.end(), IsDigit);
  };
  if (w == "pcie" || w == "pci" || w == "nvl" || w == "gb") return true;
  if (digits_then("sxm", "", false)) return true;
  if (digits_then("hbm", "", false) || digits_then("hbm", "e", false)) return true;
  return digits_then("", "gb", true) || digits_then("", "g", true);
}

std::string Trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return std::string(s);
}

Result<std::string> Segment(std::string_view field, std::string value) {
  if (value.empty()) return InvalidArgument("empty (nothing of [a-z0-9] in it)", "device." + std::string(field));
  if (!std::all_of(value.begin(), value.end(), [](char c) { return IsAlnum(c) || c == '_'; })) {
    return InvalidArgument("'" + value + "' is not [a-z0-9_]+", "device." + std::string(field));
  }
  return value;
}

// NVIDIA's compute capability: (sm[_ ]?)?(\d+)(\.(\d+))?([a-z]?) as a whole -> sm<major><minor><suffix>.
std::optional<std::string> ComputeCapability(std::string_view t) {
  size_t i = 0;
  if (t.substr(0, 2) == "sm") {
    i = 2;
    if (i < t.size() && (t[i] == '_' || t[i] == ' ')) ++i;
  }
  const size_t major_at = i;
  while (i < t.size() && IsDigit(t[i])) ++i;
  if (i == major_at) return std::nullopt;
  std::string out = "sm" + std::string(t.substr(major_at, i - major_at));
  if (i < t.size() && t[i] == '.') {
    const size_t minor_at = ++i;
    while (i < t.size() && IsDigit(t[i])) ++i;
    if (i == minor_at) return std::nullopt;
    out += t.substr(minor_at, i - minor_at);
  }
  if (i < t.size() && t[i] >= 'a' && t[i] <= 'z') out += t[i++];
  if (i != t.size()) return std::nullopt;
  return out;
}

// "v<digits>" followed by `rest`: the TPU generation rules' ^(v\d+)...$ patterns.
size_t GenerationEnd(std::string_view a) {
  if (a.empty() || a[0] != 'v') return 0;
  size_t i = 1;
  while (i < a.size() && IsDigit(a[i])) ++i;
  return i > 1 ? i : 0;
}

}  // namespace

std::string NormalizeDeviceText(std::string_view text) {
  std::string out;
  bool gap = false;
  for (char c : text) {
    c = Lower(c);
    if (IsAlnum(c)) {
      if (gap && !out.empty()) out += '_';
      out += c;
      gap = false;
    } else {
      gap = true;
    }
  }
  return out;
}

std::string DeviceModelSlug(std::string_view model) {
  const std::string norm = NormalizeDeviceText(model);
  std::string out;
  size_t start = 0;
  while (start <= norm.size()) {
    size_t end = norm.find('_', start);
    if (end == std::string::npos) end = norm.size();
    const std::string_view w = std::string_view(norm).substr(start, end - start);
    if (!w.empty() && !BrandWord(w) && !PackagingWord(w)) {
      if (!out.empty()) out += '_';
      out += w;
    }
    start = end + 1;
  }
  return out;
}

std::string DeviceVendor(std::string_view vendor) {
  const std::string v = NormalizeDeviceText(vendor);
  if (v == "nvidia_corporation") return "nvidia";
  if (v == "advanced_micro_devices" || v == "advanced_micro_devices_inc" || v == "amd_inc") return "amd";
  if (v == "intel_corporation") return "intel";
  if (v == "google_llc") return "google";
  return v;
}

std::string DeviceArch(std::string_view kind, std::string_view vendor, std::string_view arch) {
  std::string text = Trim(arch);
  std::transform(text.begin(), text.end(), text.begin(), Lower);
  if (kind == "gpu" && vendor == "amd") text = text.substr(0, text.find(':'));
  if (kind == "gpu" && vendor == "nvidia") {
    if (auto cc = ComputeCapability(text)) return *cc;
  }
  std::string a = NormalizeDeviceText(text);
  if (kind == "tpu") {
    if (a.rfind("tpu", 0) == 0) a.erase(0, a.size() > 3 && a[3] == '_' ? 4 : 3);
    // ^(v\d+)_?lite$ -> \1e
    if (const size_t g = GenerationEnd(a); g > 0) {
      const std::string_view rest = std::string_view(a).substr(g);
      if (rest == "lite" || rest == "_lite") {
        a = a.substr(0, g) + "e";
      } else if (rest.size() == 2 && rest[0] == '_' && rest[1] >= 'a' && rest[1] <= 'z') {
        a = a.substr(0, g) + rest[1];  // ^(v\d+)_([a-z])$ -> \1\2
      }
    }
  }
  return a;
}

Result<std::string> DeviceKey(const DeviceIdentity& id, int threads) {
  if (id.kind != "gpu" && id.kind != "tpu" && id.kind != "cpu") {
    std::string what = "'";
    what.append(id.kind, 0, 32);
    what += "' is not one of gpu, tpu, cpu";
    return InvalidArgument(std::move(what), "device.kind");
  }
  if (id.kind == "cpu") return tables::HardwareKey(HostHardware().cpu, threads);
  auto vendor = Segment("vendor", DeviceVendor(id.vendor));
  if (!vendor) return std::unexpected(vendor.error());
  auto arch = Segment("arch", DeviceArch(id.kind, *vendor, id.arch));
  if (!arch) return std::unexpected(arch.error());
  std::string key = id.kind + "." + *vendor + "." + *arch;
  if (id.kind == "gpu") {
    auto model = Segment("model", DeviceModelSlug(id.model));
    if (!model) return std::unexpected(model.error());
    key += "." + *model;
  }
  if (key.size() > kMaxDeviceKeyChars) {
    return InvalidArgument("key " + key.substr(0, 40) + "... is " + std::to_string(key.size()) + " characters, over " +
                               std::to_string(kMaxDeviceKeyChars),
                           "device");
  }
  return key;
}

}  // namespace blocktune::tuner
