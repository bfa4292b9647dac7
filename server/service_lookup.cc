// Service's lookups: the index over the store's tuned rows and overrides (rebuilt when they or
// the kernels change), answers, tuned entries, overrides, table headers and ingested results.
#include "server/service.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <unistd.h>
#include <cerrno>

#include <filesystem>
#include <map>

#include "codegen/codegen.h"
#include "external/spec.h"
#include "store/task_sink.h"

namespace blocktune::server {
namespace {

tuner::Override ToOverride(const store::OverrideRecord& o) {
  return tuner::Override{o.id, o.kernel, o.hardware_key, o.dtype, o.bucket, o.config, o.reason, o.expires_at};
}

}  // namespace

std::string Service::HostKey(int threads) const {
  if (threads >= 0 && threads < static_cast<int>(host_keys_.size())) return host_keys_[threads];
  HardwareProfile hw = host_;
  hw.threads = threads;
  return hw.Key();
}

std::shared_ptr<const tuner::LookupIndex> Service::Index() const {
  std::shared_lock lock(index_mu_);
  return index_;
}

Status Service::ReloadIndex() {
  auto rows = store_->tuned().List();
  if (!rows) return std::unexpected(rows.error());
  auto overrides = store_->overrides().List();
  if (!overrides) return std::unexpected(overrides.error());
  std::vector<tuner::Override> pins;
  for (const auto& o : *overrides) pins.push_back(ToOverride(o));
  // Only rows that pass the sweep's checks are served (codegen::Publishable: canonical bucket,
  // current bucket version, a config of the kernel's space that it validates for the bucket on
  // the row's ISA, a median that is a time, samples): a database written by an older build, or
  // rows pushed before ingest checked them, cannot put an invalid config into a lookup answer or
  // GET /v1/tables, and what the index holds is also all that GET /v1/tuned and the dashboard
  // list. A skipped row is logged the first time this daemon meets it, not on every reload.
  std::vector<std::string> skipped;
  auto base = codegen::Publishable(checked_in_, &skipped);
  auto served = codegen::Publishable(std::move(*rows), &skipped);
  // A row of a kernel this daemon has not loaded (another daemon's --kernel-dir, a folder
  // removed) cannot be served, so it is not listed either (GET /v1/tuned, the dashboard); a
  // reload that brings its kernel back brings the row back.
  std::erase_if(served, [&](const tuner::TunedEntry& e) {
    if (FindKernel(e.kernel) != nullptr) return false;
    skipped.push_back(e.kernel + " " + e.hardware_key + " " + std::string(DTypeName(e.dtype)) + " " + e.bucket +
                      ": kernel '" + e.kernel + "' is not loaded here [kernel]");
    return true;
  });
  {
    std::lock_guard lock(skipped_mu_);
    for (const auto& why : skipped) {
      if (skipped_rows_.insert(why).second) spdlog::warn("tuned row skipped, not served: {}", why);
    }
  }
  // The checked-in table is the base layer, so a fresh daemon already answers with what the
  // project ships; rows measured into this database replace those with the same key.
  auto index = std::make_shared<const tuner::LookupIndex>(codegen::Merge(std::move(base), served), std::move(pins));
  std::unique_lock lock(index_mu_);
  index_ = std::move(index);
  return {};
}

Result<KernelReload> Service::ReloadKernels() {
  std::lock_guard lock(reload_mu_);
  auto report = external::ReloadKernelDirs(options_.kernel_dirs);
  if (!report) {
    spdlog::warn("kernel reload refused error=\"{}\"", report.error().message);
    return std::unexpected(report.error());
  }
  KernelReload out;
  out.added = report->added;
  out.replaced = report->replaced;
  out.unchanged = report->unchanged;
  if ((!out.added.empty() || !out.replaced.empty()) && options_.on_kernels_changed) options_.on_kernels_changed();
  if (auto s = ReloadIndex(); !s) return std::unexpected(s.error());
  out.tuned_rows = static_cast<int64_t>(Index()->rows().size());
  spdlog::info("kernels reloaded added={} replaced={} unchanged={} tuned_rows={}", out.added.size(),
               out.replaced.size(), out.unchanged, out.tuned_rows);
  return out;
}

Result<tuner::LookupAnswer> Service::Lookup(const KernelSpec& spec, tuner::LookupQuery query, int threads) const {
  if (query.hardware_key.empty()) query.hardware_key = HostKey(threads);
  return Lookup(spec, query);
}

Result<tuner::LookupAnswer> Service::Lookup(const KernelSpec& spec, const tuner::LookupQuery& query) const {
  const auto index = Index();
  // The clock is read only when an override could be in play (most lookups have none).
  std::string now;
  if (!index->OverridesOf(spec.name()).empty()) now = tuner::UtcNow();
  if (options_.device_same_arch && !query.device_same_arch) {
    tuner::LookupQuery q = query;
    q.device_same_arch = true;
    return tuner::Lookup(spec, *index, q, now);
  }
  return tuner::Lookup(spec, *index, query, now);
}

std::vector<tuner::TunedEntry> Service::Tuned(const std::string& kernel, const std::string& hardware_prefix,
                                              const std::string& dtype) const {
  const auto index = Index();
  std::vector<tuner::TunedEntry> out;
  for (const auto& e : index->rows()) {
    if (!kernel.empty() && e.kernel != kernel) continue;
    if (!dtype.empty() && DTypeName(e.dtype) != dtype) continue;
    if (!hardware_prefix.empty() && !tables::KeyHasPrefix(e.hardware_key, hardware_prefix)) continue;
    out.push_back(e);
  }
  return out;
}

Result<store::OverrideRecord> Service::PutOverride(const store::OverrideRecord& o) {
  const KernelSpec* spec = FindKernel(o.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + o.kernel + "'", "kernel");
  bool dtype_ok = false;
  for (DType d : spec->dtypes()) dtype_ok |= d == o.dtype;
  if (!dtype_ok)
    return InvalidArgument("kernel " + o.kernel + " does not support dtype " + std::string(DTypeName(o.dtype)),
                           "dtype");
  auto problem = spec->ProblemFromBucket(o.dtype, o.bucket);
  if (!problem) return std::unexpected(WithPathPrefix(problem.error(), "bucket"));
  if (spec->Bucket(*problem).first != o.bucket) {
    return InvalidArgument(
        "'" + o.bucket + "' is not a canonical bucket id; use '" + spec->Bucket(*problem).first + "'", "bucket");
  }
  auto full = spec->CompleteConfig(o.config);  // its error names the field: "config.block_zz"
  if (!full) return std::unexpected(full.error());
  store::OverrideRecord complete = o;
  complete.config = std::move(*full);
  // Validated against this host when the pin targets it; a pin for another machine is taken on
  // trust (this host cannot know that machine's ISA and caches).
  if (o.hardware_key == "*" || tables::KeyHasPrefix(HostKey(1), o.hardware_key) ||
      tables::KeyHasPrefix(o.hardware_key, HostKey(1).substr(0, HostKey(1).rfind('.')))) {
    if (auto s = spec->ValidateConfig(complete.config, *problem, host_); !s) {
      return std::unexpected(WithPathPrefix(s.error(), "config"));
    }
  }
  auto stored = store_->overrides().Upsert(complete);
  if (!stored) return std::unexpected(stored.error());
  if (auto s = ReloadIndex(); !s) return std::unexpected(s.error());
  spdlog::info("override set id={} kernel={} hardware={} bucket={} config={}", stored->id, stored->kernel,
               stored->hardware_key, stored->bucket, stored->config.ToString());
  return stored;
}

Status Service::DeleteOverride(int64_t id) {
  if (auto s = store_->overrides().Delete(id); !s) return s;
  spdlog::info("override deleted id={}", id);
  return ReloadIndex();
}

Result<std::string> Service::TableHeader(const KernelSpec& spec) const {
  const auto index = Index();
  std::vector<tuner::TunedEntry> rows;
  for (const auto& e : index->rows()) {
    if (e.kernel == spec.name()) rows.push_back(e);
  }
  return codegen::GenerateHeader(spec, rows);
}

Result<store::ApplyResult> Service::IngestResults(const store::ResultsBatch& batch) {
  auto r = store_->results().Apply(batch);
  if (!r) return r;
  if (r->winners > 0) {
    if (auto s = ReloadIndex(); !s) return std::unexpected(s.error());
  }
  spdlog::info("results ingested batch={} sweep={} measurements={} inserted={} replayed={} winners={}", batch.batch_id,
               r->sweep_id, r->measurements, r->inserted, r->replayed, r->winners);
  return r;
}

}  // namespace blocktune::server
