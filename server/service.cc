// Service's lifecycle (Start, Stop: the runner and miss-flusher threads) and Backup; the rest of
// Service is one file per job: service_sweeps.cc, service_runner.cc, service_lookup.cc,
// service_misses.cc. See service.h.
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

Service::Service(std::unique_ptr<store::Store> store, std::string db_path, ServiceOptions options)
    : store_(std::move(store)),
      db_path_(std::move(db_path)),
      options_(std::move(options)),
      self_(store::ThisProcess(options_.executor_kind)),
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
  auto checked_in = codegen::ParseJsonl(options_.checked_in_jsonl.empty() ? codegen::CheckedInEntriesJsonl()
                                                                          : options_.checked_in_jsonl);
  if (!checked_in) return std::unexpected(checked_in.error());
  checked_in_ = std::move(*checked_in);
  // Sweeps whose owner is gone (this daemon before a kill -9, a --local process that died) go
  // back to the queue; those a live process runs are left to it.
  auto orphans = store_->tasks().RequeueOrphans();
  if (!orphans) return std::unexpected(orphans.error());
  if (*orphans > 0) spdlog::info("requeued {} sweep(s) whose executor is gone", *orphans);
  spdlog::info("executor {} id={}", store::Describe(self_), self_.id);
  if (auto s = BackfillTasks(); !s) return s;
  if (auto s = ReloadIndex(); !s) return s;
  runner_alive_ = true;
  runner_ = std::thread([this] { RunnerLoop(); });
  leaser_ = std::thread([this] { LeaseLoop(); });
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
  task_cv_.notify_all();
  if (runner_.joinable()) runner_.join();
  if (leaser_.joinable()) {
    leaser_.join();
    // A clean stop hands this process's unfinished sweeps to whoever claims next (another
    // daemon on the file at once; this one's next start otherwise).
    if (auto s = store_->executors().Unregister(self_.id); !s) {
      spdlog::warn("releasing this process's sweeps failed error=\"{}\"", s.error().ToString());
    }
  }
  {
    std::lock_guard lock(flush_mu_);
    flush_stopping_ = true;
  }
  flush_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
  // What was counted since the last flush (the HTTP server has stopped by now).
  if (auto s = FlushMisses(); !s) spdlog::error("storing lookup misses failed error=\"{}\"", s.error().ToString());
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

}  // namespace blocktune::server
