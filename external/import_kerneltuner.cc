// Kernel Tuner cache files (both layouts, truncated caches read as far as valid); see import.h.
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
  while (!head.empty() && (std::isspace(static_cast<unsigned char>(head.back())) || head.back() == ','))
    head.pop_back();
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

}  // namespace

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
  set.kernel =
      KernelName(options.kernel.empty() ? doc.value("kernel_name", std::string("imported_kernel")) : options.kernel);
  FileDevice(set, options, {}, "kerneltuner", {});
  set.problem = ProblemOf(SizeList(doc.value("problem_size", json())));
  std::vector<ParamCoder> coders;
  for (const auto& k : doc["tune_params_keys"]) {
    if (!k.is_string()) return InvalidArgument("tune_params_keys must be strings", "tune_params_keys");
    const std::string name = k.get<std::string>();
    json declared =
        doc.contains("tune_params") && doc["tune_params"].contains(name) ? doc["tune_params"][name] : json::array();
    if (declared.empty()) {
      // Values only in the records: collect them.
      for (const auto& [_, e] : doc["cache"].items()) {
        if (e.contains(name) && std::find(declared.begin(), declared.end(), e[name]) == declared.end())
          declared.push_back(e[name]);
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
      if (!failure)
        failure =
            std::pair{Outcome::kRuntimeFailed, e["__error__"].get<std::string>().substr(0, 200) + " (Kernel Tuner)"};
    } else if (e.contains(objective) && e[objective].is_string()) {
      failure = KernelTunerFailure(e[objective].get<std::string>());
      if (!failure)
        failure =
            std::pair{Outcome::kRuntimeFailed, e[objective].get<std::string>().substr(0, 200) + " (Kernel Tuner)"};
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

}  // namespace blocktune::external
