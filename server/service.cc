// Service implementation; see service.h.
#include "server/service.h"

#include <spdlog/spdlog.h>

#include "tables/codegen/codegen.h"

namespace blocktune::server {

Service::Service(std::unique_ptr<store::Store> store, ServiceOptions options)
    : store_(std::move(store)), options_(std::move(options)), host_(HardwareProfile::Detect(1)) {
  options_.sweep.tool_version = options_.tool_version;  // recorded with each sweep's environment
  snapshot_ = std::make_shared<const std::vector<tuner::TunedEntry>>();
}

Service::~Service() { Stop(); }

Status Service::Start() {
  auto checked_in = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  if (!checked_in) return std::unexpected(checked_in.error());
  checked_in_ = std::move(*checked_in);
  if (auto s = store_->RequeueRunningSweeps(); !s) return s;
  if (auto s = ReloadSnapshot(); !s) return s;
  runner_ = std::thread([this] { RunnerLoop(); });
  return {};
}

void Service::Stop() {
  {
    std::lock_guard lock(runner_mu_);
    stopping_ = true;
  }
  cancel_current_ = true;
  runner_cv_.notify_all();
  if (runner_.joinable()) runner_.join();
}

std::string Service::HostKey(int threads) const {
  HardwareProfile hw = host_;
  hw.threads = threads;
  return hw.Key();
}

Status Service::ReloadSnapshot() {
  auto rows = store_->ListTunedEntries();
  if (!rows) return std::unexpected(rows.error());
  // The checked-in table is the base layer, so a fresh daemon already answers with what the
  // project ships; rows measured into this database replace those with the same key.
  auto snap = std::make_shared<const std::vector<tuner::TunedEntry>>(codegen::Merge(checked_in_, *rows));
  std::unique_lock lock(snapshot_mu_);
  snapshot_ = std::move(snap);
  return {};
}

Result<tuner::LookupAnswer> Service::Lookup(const std::string& kernel, tuner::LookupQuery query, int threads) {
  const KernelSpec* spec = FindKernel(kernel);
  if (spec == nullptr) return NotFound("unknown kernel '" + kernel + "'", "kernel");
  if (query.hardware_key.empty()) query.hardware_key = HostKey(threads);
  std::shared_ptr<const std::vector<tuner::TunedEntry>> snap;
  {
    std::shared_lock lock(snapshot_mu_);
    snap = snapshot_;
  }
  return tuner::Lookup(*spec, *snap, query);
}

Result<int64_t> Service::SubmitSweep(const tuner::SweepRequest& request) {
  const KernelSpec* spec = FindKernel(request.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + request.kernel + "'", "kernel");
  HardwareProfile hw = host_;
  hw.threads = request.threads;
  auto plans = tuner::PlanSweep(request, *spec, hw);
  if (!plans) return std::unexpected(plans.error());
  auto hw_id = store_->UpsertHardware(hw);
  if (!hw_id) return std::unexpected(hw_id.error());
  const int64_t total = tuner::PlannedTotal(*plans);
  auto id = store_->CreateSweep(request, *hw_id, spec->bucket_version(), options_.tool_version, total);
  if (!id) return std::unexpected(id.error());
  spdlog::info("sweep queued id={} kernel={} buckets={} threads={} strategy={}", *id, request.kernel, plans->size(),
               request.threads, tuner::StrategyName(request.strategy));
  {
    std::lock_guard lock(runner_mu_);
    wake_ = true;
  }
  runner_cv_.notify_all();
  return *id;
}

void Service::RunnerLoop() {
  while (true) {
    std::optional<store::SweepRecord> next;
    {
      std::unique_lock lock(runner_mu_);
      if (stopping_) return;
    }
    auto queued = store_->ListSweeps(store::SweepStatus::kQueued, 1);
    if (!queued) {
      spdlog::error("listing queued sweeps failed error=\"{}\"", queued.error().ToString());
    } else if (!queued->empty()) {
      next = std::move(queued->front());
    }
    if (next) {
      RunOne(*next);
      continue;
    }
    std::unique_lock lock(runner_mu_);
    // Woken by SubmitSweep; the timeout also picks up sweeps queued by another process.
    runner_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stopping_ || wake_; });
    wake_ = false;
  }
}

void Service::RunOne(const store::SweepRecord& sweep) {
  const KernelSpec* spec = FindKernel(sweep.request.kernel);
  if (spec == nullptr) {
    (void)store_->SetSweepStatus(sweep.id, store::SweepStatus::kFailed, "unknown kernel " + sweep.request.kernel);
    return;
  }
  if (auto s = store_->SetSweepStatus(sweep.id, store::SweepStatus::kRunning); !s) {
    spdlog::error("cannot mark sweep running id={} error=\"{}\"", sweep.id, s.error().ToString());
    return;
  }
  HardwareProfile hw = host_;
  hw.threads = sweep.request.threads;
  spdlog::info("sweep started id={} kernel={} hardware={}", sweep.id, sweep.request.kernel, hw.Key());
  cancel_current_ = false;
  store::StoreSink sink(*store_, sweep.id, [this] { return cancel_current_.load(); });
  const auto start = std::chrono::steady_clock::now();
  auto winners = tuner::RunSweep(sweep.request, sweep.id, *spec, hw, sink, options_.sweep);
  if (!winners) {
    spdlog::error("sweep failed id={} error=\"{}\"", sweep.id, winners.error().ToString());
    (void)store_->SetSweepStatus(sweep.id, store::SweepStatus::kFailed, winners.error().ToString());
    return;
  }
  if (cancel_current_) {
    std::lock_guard lock(runner_mu_);
    // Stopping the daemon leaves the sweep queued so the next start resumes it.
    (void)store_->SetSweepStatus(sweep.id, stopping_ ? store::SweepStatus::kQueued : store::SweepStatus::kCancelled);
    return;
  }
  for (const auto& w : *winners) {
    if (auto s = store_->UpsertTunedEntry(w); !s) {
      spdlog::error("storing tuned entry failed sweep={} bucket={} error=\"{}\"", sweep.id, w.bucket, s.error().ToString());
    }
  }
  if (auto s = ReloadSnapshot(); !s) spdlog::error("reloading tuned entries failed error=\"{}\"", s.error().ToString());
  (void)store_->SetSweepStatus(sweep.id, store::SweepStatus::kDone);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("sweep done id={} buckets_tuned={} seconds={:.1f}", sweep.id, winners->size(), secs);
}

}  // namespace blocktune::server
