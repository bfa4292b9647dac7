// Service's lookup misses: counted in memory, flushed to the store by the flusher thread, listed.
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

void Service::FlusherLoop() {
  const auto period = std::chrono::duration<double>(std::max(0.01, options_.miss_flush_seconds));
  std::unique_lock lock(flush_mu_);
  while (!flush_stopping_) {
    if (flush_cv_.wait_for(lock, period, [&] { return flush_stopping_; })) break;
    lock.unlock();
    if (auto s = FlushMisses(); !s) {
      if (IsStorageFault(s.error())) StorageFailed("misses", s.error());
      spdlog::error("storing lookup misses failed error=\"{}\"", s.error().ToString());
    }
    lock.lock();
  }
}

Status Service::FlushMisses() {
  auto batch = misses_.Take();
  if (batch.empty()) return {};
  if (auto s = store_->misses().Add(batch); !s) {
    return MakeError(s.error().code,
                     s.error().message + " (" + std::to_string(batch.size()) + " buckets of counts lost)");
  }
  StorageOk("misses");
  return {};
}

Result<std::vector<MissView>> Service::ListMisses(const store::MissFilter& filter) {
  if (auto s = FlushMisses(); !s) return std::unexpected(s.error());
  auto rows = store_->misses().List(filter);
  if (!rows) return std::unexpected(rows.error());
  std::vector<MissView> out;
  out.reserve(rows->size());
  for (auto& r : *rows) {
    MissView v{std::move(r), tables::Source::kDefault};
    if (const KernelSpec* spec = FindKernel(v.miss.counts.kernel)) {
      const tuner::LookupQuery q{v.miss.counts.dtype, v.miss.counts.dims, v.miss.counts.hardware_key, std::nullopt};
      if (auto a = Lookup(*spec, q)) v.current = a->source;
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace blocktune::server
