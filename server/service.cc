// Service implementation; see service.h.
#include "server/service.h"

#include <spdlog/spdlog.h>

#include <sys/resource.h>

#include <cerrno>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "external/spec.h"
#include "schema/task_sink.h"
#include "tables/codegen/codegen.h"

namespace blocktune::server {
namespace {

tuner::Override ToOverride(const store::OverrideRecord& o) {
  return tuner::Override{o.id, o.kernel, o.hardware_key, o.dtype, o.bucket, o.config, o.reason, o.expires_at};
}

}  // namespace

Service::Service(std::unique_ptr<store::Store> store, std::string db_path, ServiceOptions options)
    : store_(std::move(store)),
      db_path_(std::move(db_path)),
      options_(std::move(options)),
      host_(HardwareProfile::Detect(1)),
      index_(std::make_shared<const tuner::LookupIndex>()),
      rate_tokens_(options_.sweep_burst),
      rate_at_(std::chrono::steady_clock::now()),
      misses_(options_.max_pending_misses) {
  options_.sweep.tool_version = options_.tool_version;  // recorded with each sweep's environment
  for (int t = 0; t <= 256; ++t) {
    HardwareProfile hw = host_;
    hw.threads = t;
    host_keys_.push_back(hw.Key());
  }
}

Service::~Service() { Stop(); }

Status Service::Start() {
  auto checked_in = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  if (!checked_in) return std::unexpected(checked_in.error());
  checked_in_ = std::move(*checked_in);
  if (auto s = store_->tasks().RequeueInterrupted(); !s) return s;
  if (auto s = BackfillTasks(); !s) return s;
  if (auto s = ReloadIndex(); !s) return s;
  runner_alive_ = true;
  runner_ = std::thread([this] { RunnerLoop(); });
  {
    std::lock_guard lock(flush_mu_);
    flush_stopping_ = false;
  }
  flusher_ = std::thread([this] { FlusherLoop(); });
  return {};
}

void Service::Stop() {
  {
    std::lock_guard lock(runner_mu_);
    stopping_ = true;
  }
  stop_now_ = true;
  runner_cv_.notify_all();
  if (runner_.joinable()) runner_.join();
  {
    std::lock_guard lock(flush_mu_);
    flush_stopping_ = true;
  }
  flush_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  // What was counted since the last flush (the HTTP server has stopped by now).
  if (auto s = FlushMisses(); !s) spdlog::error("storing lookup misses failed error=\"{}\"", s.error().ToString());
}

void Service::FlusherLoop() {
  const auto period = std::chrono::duration<double>(std::max(0.01, options_.miss_flush_seconds));
  std::unique_lock lock(flush_mu_);
  while (!flush_stopping_) {
    if (flush_cv_.wait_for(lock, period, [&] { return flush_stopping_; })) break;
    lock.unlock();
    if (auto s = FlushMisses(); !s) spdlog::error("storing lookup misses failed error=\"{}\"", s.error().ToString());
    lock.lock();
  }
}

Status Service::FlushMisses() {
  auto batch = misses_.Take();
  if (batch.empty()) return {};
  if (auto s = store_->misses().Add(batch); !s) {
    return MakeError(s.error().code, s.error().message + " (" + std::to_string(batch.size()) + " buckets of counts lost)");
  }
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
  // the row's ISA): a database written by an older build, or rows pushed before ingest checked
  // them, cannot put an invalid config into a lookup answer or GET /v1/tables. A skipped row is
  // logged the first time this daemon meets it, not on every reload.
  std::vector<std::string> skipped;
  auto base = codegen::Publishable(checked_in_, &skipped);
  auto served = codegen::Publishable(std::move(*rows), &skipped);
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
  spdlog::info("kernels reloaded added={} replaced={} unchanged={} tuned_rows={}", out.added.size(), out.replaced.size(),
               out.unchanged, out.tuned_rows);
  return out;
}

Result<std::vector<store::TaskPlan>> Service::Plan(const tuner::SweepRequest& request,
                                                   const HardwareProfile& hw) const {
  const KernelSpec* spec = FindKernel(request.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + request.kernel + "'", "kernel");
  auto plans = tuner::PlanSweep(request, *spec, hw);
  if (!plans) return std::unexpected(plans.error());
  std::map<std::string, NamedInts> first_shape;
  for (const auto& s : request.shapes) first_shape.emplace(spec->Bucket(Problem{request.dtype, s}).first, s);
  std::vector<store::TaskPlan> tasks;
  int64_t total = 0;
  for (const auto& p : *plans) {
    const int64_t n = static_cast<int64_t>(p.invalid.size()) + p.evaluations;  // tuner::PlannedTotal per bucket
    total += n;
    tasks.push_back({p.bucket, first_shape[p.bucket], n});
  }
  if (total > options_.max_sweep_measurements) {
    return InvalidArgument("sweep plans " + std::to_string(total) + " measurements; the limit is " +
                               std::to_string(options_.max_sweep_measurements) +
                               " (use strategy random with a budget, or fewer shapes)",
                           "shapes");
  }
  return tasks;
}

Status Service::BackfillTasks() {
  // Sweeps queued before migration 0006 have no tasks; plan them now so they run.
  for (auto status : {store::SweepStatus::kQueued, store::SweepStatus::kRunning}) {
    auto sweeps = store_->sweeps().List(status, 1 << 20);
    if (!sweeps) return std::unexpected(sweeps.error());
    for (const auto& s : *sweeps) {
      if (s.imported) continue;  // another machine's sweep, merged in: never run here
      auto tasks = store_->tasks().List(s.id);
      if (!tasks) return std::unexpected(tasks.error());
      if (!tasks->empty()) continue;
      HardwareProfile hw = host_;
      hw.threads = s.request.threads;
      auto plan = Plan(s.request, hw);
      if (!plan) {
        (void)store_->sweeps().SetStatus(s.id, store::SweepStatus::kFailed, plan.error().ToString());
        continue;
      }
      if (auto r = store_->tasks().Add(s.id, *plan); !r) return r;
    }
  }
  return {};
}

bool Service::TakeSweepToken() {
  std::lock_guard lock(rate_mu_);
  const auto now = std::chrono::steady_clock::now();
  const double minutes = std::chrono::duration<double>(now - rate_at_).count() / 60.0;
  rate_at_ = now;
  rate_tokens_ = std::min(options_.sweep_burst, rate_tokens_ + minutes * options_.sweeps_per_minute);
  if (rate_tokens_ < 1) return false;
  rate_tokens_ -= 1;
  return true;
}

Result<store::CreatedSweep> Service::SubmitSweep(const tuner::SweepRequest& request,
                                                 const std::string& idempotency_key,
                                                 const std::string& canonical_request) {
  const KernelSpec* spec = FindKernel(request.kernel);
  if (spec == nullptr) return InvalidArgument("unknown kernel '" + request.kernel + "'", "kernel");
  HardwareProfile hw = host_;
  hw.threads = request.threads;
  if (!request.isa.empty()) {
    // Any level the CPU runs, also above the daemon's own --isa: the workers are started with
    // BLOCKTUNE_ISA set to it (tuner/isolation/worker_evaluator.cc).
    if (tables::IsaRank(request.isa) > tables::IsaRank(NativeIsa())) {
      return InvalidArgument("isa " + request.isa + " cannot run on this CPU (it runs " + NativeIsa() + ")", "isa");
    }
    hw.cpu.isa = request.isa;
  }
  auto tasks = Plan(request, hw);
  if (!tasks) return std::unexpected(tasks.error());
  auto hw_id = store_->hardware().Upsert(hw);
  if (!hw_id) return std::unexpected(hw_id.error());
  // The rate limit applies only when a sweep is about to be created: a replayed
  // Idempotency-Key returns the first sweep without a token, so a client retrying after a lost
  // reply is never throttled by its own retries.
  const auto admit = [this]() -> Status {
    if (TakeSweepToken()) return {};
    return MakeError(ErrorCode::kResourceExhausted,
                     "too many sweeps created; at most " + std::to_string(static_cast<int>(options_.sweeps_per_minute)) +
                         " per minute",
                     "");
  };
  auto created = store_->sweeps().Create(request, *hw_id, spec->bucket_version(), options_.tool_version, *tasks,
                                              idempotency_key, canonical_request, admit);
  if (!created) return std::unexpected(created.error());
  if (created->created && tasks->empty()) {
    // Only a shard can plan nothing (--shard I/N with more shards than this plan has items):
    // done at once, with nothing to run.
    if (auto s = store_->sweeps().SetStatus(created->id, store::SweepStatus::kDone); !s) return std::unexpected(s.error());
    spdlog::info("sweep id={} has nothing in shard {}/{}: done", created->id, request.shard_index, request.shard_count);
    return created;
  }
  if (created->created) {
    spdlog::info("sweep queued id={} kernel={} buckets={} threads={} strategy={}", created->id, request.kernel,
                 tasks->size(), request.threads, tuner::StrategyName(request.strategy));
    {
      std::lock_guard lock(runner_mu_);
      wake_ = true;
    }
    runner_cv_.notify_all();
  }
  return created;
}

Result<SweepView> Service::GetSweep(int64_t id) {
  SweepView v;
  auto sweep = store_->sweeps().Get(id);
  if (!sweep) return std::unexpected(sweep.error());
  v.sweep = std::move(*sweep);
  auto progress = store_->sweeps().Progress(id);
  if (!progress) return std::unexpected(progress.error());
  v.progress = std::move(*progress);
  if (v.sweep.status == store::SweepStatus::kRunning && v.progress.seconds_per_measurement > 0) {
    v.eta_seconds = v.progress.seconds_per_measurement * static_cast<double>(std::max<int64_t>(0, v.progress.total - v.progress.done));
  } else if (v.sweep.status == store::SweepStatus::kDone) {
    v.eta_seconds = 0;
  }
  return v;
}

Result<std::vector<store::SweepRecord>> Service::ListSweeps(std::optional<store::SweepStatus> status,
                                                           int64_t after_id, int64_t limit) {
  return store_->sweeps().ListPage(status, after_id, limit);
}

Result<store::SweepRecord> Service::CancelSweep(int64_t id) {
  auto r = store_->sweeps().Cancel(id);
  if (r && current_sweep_.load() == id) cancel_current_ = true;
  if (r) spdlog::info("sweep cancelled id={}", id);
  return r;
}

Result<std::vector<tuner::Measurement>> Service::ListMeasurements(int64_t sweep_id, int64_t after_id, int64_t limit) {
  if (auto s = store_->sweeps().Get(sweep_id); !s) return std::unexpected(s.error());
  return store_->measurements().ListPage(sweep_id, after_id, limit);
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
  if (!dtype_ok) return InvalidArgument("kernel " + o.kernel + " does not support dtype " + std::string(DTypeName(o.dtype)), "dtype");
  auto problem = spec->ProblemFromBucket(o.dtype, o.bucket);
  if (!problem) return std::unexpected(WithPathPrefix(problem.error(), "bucket"));
  if (spec->Bucket(*problem).first != o.bucket) {
    return InvalidArgument("'" + o.bucket + "' is not a canonical bucket id; use '" + spec->Bucket(*problem).first + "'", "bucket");
  }
  auto full = spec->CompleteConfig(o.config);
  if (!full) return std::unexpected(WithPathPrefix(full.error(), "config"));
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

Result<std::string> Service::Backup() {
  std::filesystem::path dir = options_.backup_dir;
  if (dir.empty()) {
    const std::filesystem::path db(db_path_);
    dir = (db.has_parent_path() ? db.parent_path() : std::filesystem::path(".")) / "backups";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return MakeError(ErrorCode::kFailedPrecondition, "cannot create backup directory " + dir.string());
  std::string stamp = tuner::UtcNow();
  for (char& c : stamp) {
    if (c == ':') c = '-';
  }
  const std::string path = (dir / ("blocktune-" + stamp + ".db")).string();
  if (auto s = store_->maintenance().BackupTo(path); !s) return std::unexpected(s.error());
  spdlog::info("backup written path={}", path);
  return path;
}

void Service::RunnerLoop() {
  // The runner yields the CPU to HTTP threads (nice +10 for this thread only, Linux): lookups
  // must hold their latency while a sweep writes. A measurement disturbed by load shows it in
  // its CV and is judged by the engine's noise checks like any other.
  const id_t tid = static_cast<id_t>(gettid());
  errno = 0;
  const int nice_now = getpriority(PRIO_PROCESS, tid);
  if (errno == 0) (void)setpriority(PRIO_PROCESS, tid, std::min(19, nice_now + 10));
  while (true) {
    {
      std::unique_lock lock(runner_mu_);
      if (stopping_) break;
    }
    auto task = store_->tasks().LeaseNext();
    if (!task) {
      spdlog::error("leasing a task failed error=\"{}\"", task.error().ToString());
    } else if (*task) {
      RunTask(**task);
      continue;
    }
    std::unique_lock lock(runner_mu_);
    // Woken by SubmitSweep; the timeout also picks up sweeps queued by another process.
    runner_cv_.wait_for(lock, std::chrono::seconds(2), [&] { return stopping_ || wake_; });
    wake_ = false;
  }
  runner_alive_ = false;
}

void Service::RunTask(const store::TaskRecord& task) {
  auto sweep = store_->sweeps().Get(task.sweep_id);
  if (!sweep) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, sweep.error().ToString());
    return;
  }
  const KernelSpec* spec = FindKernel(sweep->request.kernel);
  if (spec == nullptr) {
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, "unknown kernel " + sweep->request.kernel);
    return;
  }
  HardwareProfile hw = host_;
  hw.threads = sweep->request.threads;
  // The level the sweep was filed under (its key's second component: x86_64.avx2.amd...): a
  // sweep created with an explicit isa resumes at that level after a restart.
  if (const std::string level(tables::KeyIsa(sweep->hardware_key));
      tables::IsaRank(level) >= 0 && tables::IsaRank(level) <= tables::IsaRank(NativeIsa())) {
    hw.cpu.isa = level;
  }
  // One bucket per task: the engine sees a request with just this bucket's shape, so its
  // planning (and a random strategy's per-bucket seed) is the same as for the whole sweep.
  tuner::SweepRequest request = sweep->request;
  request.shapes = {task.shape};
  // A model-guided shard owns whole buckets, chosen when the sweep was planned: the task's
  // bucket is one of them (a static plan's shard is cut per item, which the engine redoes).
  if (!tuner::ShardsItems(request)) {
    request.shard_index = 0;
    request.shard_count = 1;
  }
  spdlog::info("task started sweep={} task={} bucket={} attempt={}", task.sweep_id, task.id, task.bucket,
               task.attempts);
  current_sweep_ = task.sweep_id;
  cancel_current_ = false;
  store::TaskSink sink(*store_, task, [this] { return cancel_current_.load() || stop_now_.load(); });
  auto winners = tuner::RunSweep(request, task.sweep_id, *spec, hw, sink, options_.sweep);
  current_sweep_ = 0;
  if (stop_now_) {
    // Draining: the task goes back to the queue; the next start resumes it.
    (void)store_->tasks().Release(task.id);
    spdlog::info("task released for the next start sweep={} task={}", task.sweep_id, task.id);
    return;
  }
  if (cancel_current_) return;  // CancelSweep already marked the sweep and its tasks
  if (!winners) {
    spdlog::error("task failed sweep={} task={} error=\"{}\"", task.sweep_id, task.id, winners.error().ToString());
    (void)store_->tasks().Finish(task.id, store::SweepStatus::kFailed, winners.error().ToString());
    return;
  }
  // Winners first: a crash between here and FinishTask re-runs the task, which finds every
  // measurement stored and selects the same winner again.
  for (const auto& w : *winners) {
    if (auto s = store_->tuned().Upsert(w); !s) {
      spdlog::error("storing tuned entry failed sweep={} bucket={} error=\"{}\"", task.sweep_id, w.bucket,
                    s.error().ToString());
    }
  }
  if (auto s = ReloadIndex(); !s) spdlog::error("reloading tuned entries failed error=\"{}\"", s.error().ToString());
  auto finished = store_->tasks().Finish(task.id, store::SweepStatus::kDone, "");
  if (!finished) {
    spdlog::error("finishing task failed task={} error=\"{}\"", task.id, finished.error().ToString());
  } else if (*finished) {
    spdlog::info("sweep done id={}", task.sweep_id);
  }
}

}  // namespace blocktune::server
