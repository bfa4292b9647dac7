// The checked-in table's text form, tables/tuned_entries.jsonl: rows written one JSON object a
// line in a fixed order, read back with every field checked (errors name the line and field),
// and merged by key.
#include <algorithm>
#include <string>
#include <utility>

#include "codegen/codegen.h"
#include "codegen/common.h"
#include "kernels/core/fingerprint.h"

namespace blocktune::codegen {
namespace {

Result<Config> ParseConfigJson(const ordered_json& j, const std::string& where, const std::string& field) {
  if (!j.is_object()) return InvalidArgument(where + ": '" + field + "' must be an object", field);
  Config c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it->is_number_integer())
      return InvalidArgument(where + ": " + field + "." + it.key() + " must be an integer", field);
    c.Set(it.key(), it->get<int64_t>());
  }
  return c;
}

Result<tuner::GateRecord> ParseGateJson(const ordered_json& j, const std::string& where) {
  if (!j.is_object()) return InvalidArgument(where + ": 'gate' must be an object", "gate");
  tuner::GateRecord g;
  auto d = j.find("decision");
  if (d == j.end() || !d->is_string())
    return InvalidArgument(where + ": 'gate.decision' must be a string", "gate.decision");
  g.decision = d->get<std::string>();
  for (const char* f : {"old_config", "new_config"}) {
    auto it = j.find(f);
    if (it == j.end()) return InvalidArgument(where + ": 'gate." + f + "' is missing", std::string("gate.") + f);
    auto c = ParseConfigJson(*it, where, std::string("gate.") + f);
    if (!c) return std::unexpected(c.error());
    (std::string_view(f) == "old_config" ? g.old_config : g.new_config) = std::move(*c);
  }
  for (auto [f, out] :
       {std::pair<const char*, double*>{"old_ns", &g.old_ns}, {"new_ns", &g.new_ns}, {"noise_band", &g.noise_band}}) {
    auto it = j.find(f);
    if (it == j.end() || !it->is_number())
      return InvalidArgument(where + ": 'gate." + f + "' must be a number", std::string("gate.") + f);
    *out = it->get<double>();
  }
  auto r = j.find("repetitions");
  if (r == j.end() || !r->is_number_integer())
    return InvalidArgument(where + ": 'gate.repetitions' must be an integer", "gate.repetitions");
  g.repetitions = r->get<int64_t>();
  auto at = j.find("at");
  if (at == j.end() || !at->is_string()) return InvalidArgument(where + ": 'gate.at' must be a string", "gate.at");
  g.at = at->get<std::string>();
  return g;
}

}  // namespace

std::string ExportJsonl(std::vector<tuner::TunedEntry> entries) {
  std::string out;
  for (const auto& e : Sorted(std::move(entries))) {
    ordered_json j;
    j["kernel"] = e.kernel;
    j["hardware"] = e.hardware_key;
    j["dtype"] = DTypeName(e.dtype);
    j["bucket"] = e.bucket;
    j["bucket_version"] = e.bucket_version;
    ordered_json cfg = ordered_json::object();
    for (const auto& [n, v] : e.config.values()) cfg[n] = v;
    j["config"] = cfg;
    j["median_ns"] = e.median_ns;
    j["samples"] = e.samples;
    j["sweep_id"] = e.sweep_id;
    j["measurement_id"] = e.measurement_id;
    j["measured_at"] = e.measured_at;
    j["fingerprint"] = e.fingerprint.empty() ? ordered_json(nullptr) : ordered_json(e.fingerprint);
    if (e.gate) j["gate"] = GateJson(*e.gate);
    if (auto d = DeviceJson(e); !d.is_null()) j["device"] = d;
    out += j.dump();
    out += '\n';
  }
  return out;
}

Result<std::vector<tuner::TunedEntry>> ParseJsonl(std::string_view text) {
  std::vector<tuner::TunedEntry> out;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = "line " + std::to_string(line_no);
    const auto j = ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return InvalidArgument(where + ": not a JSON object");
    auto str = [&](const char* key) -> Result<std::string> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_string()) return InvalidArgument(where + ": '" + key + "' must be a string", key);
      return it->get<std::string>();
    };
    auto num = [&](const char* key) -> Result<double> {
      auto it = j.find(key);
      if (it == j.end() || !it->is_number()) return InvalidArgument(where + ": '" + key + "' must be a number", key);
      return it->get<double>();
    };
    tuner::TunedEntry e;
    auto kernel = str("kernel");
    auto hardware = str("hardware");
    auto dtype = str("dtype");
    auto bucket = str("bucket");
    auto measured_at = str("measured_at");
    auto bucket_version = num("bucket_version");
    auto median = num("median_ns");
    auto samples = num("samples");
    auto sweep_id = num("sweep_id");
    auto measurement_id = num("measurement_id");
    for (const auto* r : {&kernel, &hardware, &dtype, &bucket, &measured_at}) {
      if (!*r) return std::unexpected(r->error());
    }
    for (const auto* r : {&bucket_version, &median, &samples, &sweep_id, &measurement_id}) {
      if (!*r) return std::unexpected(r->error());
    }
    auto d = ParseDType(*dtype);
    if (!d) return InvalidArgument(where + ": unknown dtype '" + *dtype + "'", "dtype");
    auto cfg = j.find("config");
    if (cfg == j.end() || !cfg->is_object()) return InvalidArgument(where + ": 'config' must be an object", "config");
    for (auto it = cfg->begin(); it != cfg->end(); ++it) {
      if (!it->is_number_integer()) return InvalidArgument(where + ": config." + it.key() + " must be an integer");
      e.config.Set(it.key(), it->get<int64_t>());
    }
    e.kernel = *kernel;
    e.hardware_key = *hardware;
    e.dtype = *d;
    e.bucket = *bucket;
    e.bucket_version = static_cast<int>(*bucket_version);
    e.median_ns = *median;
    e.samples = static_cast<int64_t>(*samples);
    e.sweep_id = static_cast<int64_t>(*sweep_id);
    e.measurement_id = static_cast<int64_t>(*measurement_id);
    e.measured_at = *measured_at;
    if (auto fp = j.find("fingerprint"); fp != j.end() && !fp->is_null()) {
      if (!fp->is_string() || fp->get<std::string>().empty() ||
          fp->get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos) {
        return InvalidArgument(where + ": 'fingerprint' must be null or a lowercase hex string", "fingerprint");
      }
      e.fingerprint = fp->get<std::string>();
    }
    if (auto dev = j.find("device"); dev != j.end() && !dev->is_null()) {
      if (!dev->is_object()) return InvalidArgument(where + ": 'device' must be null or an object", "device");
      e.device = dev->dump();
    }
    if (auto g = j.find("gate"); g != j.end()) {
      auto gate = ParseGateJson(*g, where);
      if (!gate) return std::unexpected(gate.error());
      e.gate = std::move(*gate);
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<tuner::TunedEntry> Merge(std::vector<tuner::TunedEntry> base,
                                     const std::vector<tuner::TunedEntry>& update) {
  for (const auto& u : update) {
    auto it = std::find_if(base.begin(), base.end(), [&](const auto& b) { return SortKey(b) == SortKey(u); });
    if (it != base.end()) {
      // A stale row (measured by another build of the kernel) never replaces a fresh one.
      const bool keep = FreshnessOf(u.kernel, u.fingerprint) == Freshness::kStale &&
                        FreshnessOf(it->kernel, it->fingerprint) == Freshness::kFresh;
      if (!keep) *it = u;
    } else {
      base.push_back(u);
    }
  }
  return Sorted(std::move(base));
}

}  // namespace blocktune::codegen
