// T4 JSON files; see import.h.
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
  FileDevice(set, options, {}, "t4", {});
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

}  // namespace blocktune::external
