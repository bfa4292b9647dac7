// Helpers the importers share (internal to external/import_*.cc): naming, problem sizes and
// coding a source's parameter values as integers.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "external/import.h"

namespace blocktune::external::internal {

using nlohmann::json;
using tuner::Outcome;

constexpr size_t kMaxRecords = 2000000;

inline std::string Slug(const std::string& s) {
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

inline std::string KernelName(const std::string& s) {
  std::string k = Slug(s);
  if (!std::islower(static_cast<unsigned char>(k[0]))) k.insert(0, "k_");
  return k.substr(0, 64);
}

// Ints from a Kernel Tuner problem size: [1024, 1024], 4096, "(1024, 1024)" or "1024".
inline std::vector<int64_t> SizeList(const json& j) {
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

inline NamedInts ProblemOf(const std::vector<int64_t>& sizes) {
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
      for (const auto& v : declared)
        all_int =
            all_int && (v.is_number_integer() || (v.is_number() && std::floor(v.get<double>()) == v.get<double>()));
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
inline std::optional<std::string> CodeConfig(const std::vector<ParamCoder>& coders, const json& values,
                                             Config& config) {
  for (const auto& c : coders) {
    const auto code = values.contains(c.param().name) ? c.Code(values[c.param().name]) : std::nullopt;
    if (!code) return c.param().name;
    config.Set(c.param().name, *code);
  }
  return std::nullopt;
}

// Files the set under its device: set.hardware_key (options.hardware_key if given, else
// DeviceHardwareKey) and set.identity (ImportedDevice; platform --platform else `format_platform`)
// when the key is the identity's, with a warning when the architecture is unknown.
void FileDevice(ImportedSet& set, const ImportOptions& options, const std::string& vendor,
                const std::string& format_platform, const std::string& file_arch);

}  // namespace blocktune::external::internal
