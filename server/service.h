// Service: the daemon's state behind the HTTP routes. It owns the store, an in-memory snapshot
// of tuned entries that lookups read (the checked-in table overlaid with this database's rows,
// so a fresh daemon already serves what the project ships; and a lookup never waits on SQLite or on a sweep's write
// transaction), and the job runner: one background thread that takes queued sweeps from the
// database oldest first and runs them. Sweeps never run on an HTTP thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "schema/store.h"
#include "tuner/lookup.h"
#include "tuner/sweep.h"

namespace blocktune::server {

struct ServiceOptions {
  tuner::SweepOptions sweep;
  std::string tool_version = "blocktune 0.1.0";
};

class Service {
 public:
  Service(std::unique_ptr<store::Store> store, ServiceOptions options);
  ~Service();  // stops the runner after the config it is measuring

  // Requeues sweeps a previous process left running and starts the runner thread.
  Status Start();
  void Stop();

  // Validates the request fully (kernel, dims, threads, space) before anything is stored.
  Result<int64_t> SubmitSweep(const tuner::SweepRequest& request);
  Result<store::SweepRecord> GetSweep(int64_t id) { return store_->GetSweep(id); }

  // Resolves against the snapshot. An empty hardware key means this host at `threads`.
  Result<tuner::LookupAnswer> Lookup(const std::string& kernel, tuner::LookupQuery query, int threads);

  std::string HostKey(int threads) const;
  store::Store& store() { return *store_; }

 private:
  Status ReloadSnapshot();
  void RunnerLoop();
  void RunOne(const store::SweepRecord& sweep);

  std::unique_ptr<store::Store> store_;
  ServiceOptions options_;
  HardwareProfile host_;  // detected once at start; threads set per sweep

  std::vector<tuner::TunedEntry> checked_in_;  // tables/tuned_entries.jsonl as built in
  std::shared_mutex snapshot_mu_;
  std::shared_ptr<const std::vector<tuner::TunedEntry>> snapshot_;

  std::mutex runner_mu_;
  std::condition_variable runner_cv_;
  bool stopping_ = false;
  bool wake_ = false;  // set by SubmitSweep so a notification between polls is not lost
  std::atomic<bool> cancel_current_{false};
  std::thread runner_;
};

}  // namespace blocktune::server
