// Filing an imported set in the store as a finished exhaustive sweep; see import.h.
#include "external/import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "blocktune/version.h"
#include "external/device.h"
#include "external/import_internal.h"
#include "tuner/timing/timing.h"

namespace blocktune::external {

using namespace internal;  // NOLINT: the importers' shared helpers

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
  std::snprintf(key, sizeof key, "import:%s:%016llx", set.format.c_str(),
                static_cast<unsigned long long>(Fnv1a(canonical)));

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
  // The device as a runner would have announced it: the sweep's provenance (sweeps.device).
  const std::string identity = set.identity.kind.empty() ? std::string() : DeviceIdentityJson(set.identity);

  tuner::SweepRequest request;
  request.kernel = set.kernel;
  request.dtype = set.dtype;
  request.shapes = {set.problem};
  request.strategy = tuner::Strategy::kExhaustive;
  const store::TaskPlan plan{bucket, set.problem, static_cast<int64_t>(set.records.size())};
  // The import is the sweep's executor (store/executors_table.h) while it writes, so no daemon
  // on the same file takes the sweep to run it; a long lease, as it renews nothing (its process
  // ending frees the sweep at once on this machine).
  const store::ExecutorRecord self = store::ThisProcess("import");
  constexpr int64_t kImportLeaseMs = 3600 * 1000;
  auto created =
      db.sweeps().Create(request, *hw_id, spec.bucket_version(), std::string(kToolVersion) + " import " + set.format,
                         {plan}, key, key, {}, &self, kImportLeaseMs);
  if (!created) return std::unexpected(created.error());
  ImportSummary summary;
  summary.sweep_id = created->id;
  summary.created = created->created;
  summary.bucket = bucket;
  summary.records = static_cast<int64_t>(set.records.size());
  if (!created->created) return summary;
  if (!identity.empty()) {
    if (auto s = db.devices().Set(created->id, *hw_id, identity); !s) return std::unexpected(s.error());
  }

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
      m.median_ns = tuner::timing::Median(r.samples_ns);
      m.cv = tuner::timing::CoefficientOfVariation(r.samples_ns);
    }
    if (auto s = db.measurements().Record(m, task_id, summary.records, self.id); !s) return std::unexpected(s.error());
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
  auto fin = db.tasks().Finish(task_id, store::SweepStatus::kDone, "", self.id);
  if (!fin) return std::unexpected(fin.error());
  if (auto s = db.executors().Unregister(self.id); !s) return std::unexpected(s.error());
  summary.by_outcome.assign(counts.begin(), counts.end());
  return summary;
}

}  // namespace blocktune::external
