// blocktuned: the blocktune daemon. Serves best-config lookups, runs sweeps in the background
// and stores everything in one SQLite file.
//
// Exit codes: 0 clean shutdown (SIGTERM/SIGINT drain: the listener closes, in-flight requests
// finish, the config being measured is committed and its task requeued), 2 bad command line,
// 3 database corrupt or not a database (failed its integrity check; left untouched), 4 database
// schema newer than this build, 5 cannot listen, 6 token problem, 7 database cannot be opened
// (permissions, locked) or the service cannot start, 8 worker executable missing. A bad external
// kernel spec (--kernel-dir) is a bad command line (2), named in the log.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "external/runner.h"
#include "external/spec.h"
#include "server/http.h"
#include "server/service.h"
#include "server/timing_flags.h"
#include "server/token.h"
#include "tuner/isolation/worker_evaluator.h"

namespace {

constexpr int kExitUsage = 2;
constexpr int kExitDatabase = 3;
constexpr int kExitSchemaTooNew = 4;
constexpr int kExitListen = 5;
constexpr int kExitToken = 6;
constexpr int kExitOpen = 7;
constexpr int kExitWorker = 8;

}  // namespace

int main(int argc, char** argv) {
  using namespace blocktune;
  CLI::App app{
      "blocktuned: autotuning daemon serving tuned block sizes over HTTP JSON, and a read-only "
      "dashboard at /ui/"};
  std::string host = "127.0.0.1";
  int port = 8787;
  std::string db_path = "var/blocktune.db";
  std::string token_file;
  std::string port_file;
  std::string log_level = "info";
  int http_threads = 64;
  std::vector<std::string> allowed_hosts;
  std::string backup_dir;
  double sweeps_per_minute = 30;
  double miss_flush_seconds = 5;
  int64_t max_sweep_measurements = 100000;
  server::TimingFlags timing;
  app.add_option("--host", host,
                 "address to listen on; a non-loopback address needs --allow-remote (put nginx in front instead: "
                 "deploy/nginx/blocktune.conf)")
      ->capture_default_str();
  bool allow_remote = false;
  app.add_flag("--allow-remote", allow_remote,
               "listen on a non-loopback --host (logged as a warning): blocktuned has no TLS and one thread per "
               "connection, so slow clients can hold every thread; docs/scale.md");
  app.add_option("--port", port, "TCP port; 0 picks a free one (see --port-file)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  app.add_option("--db", db_path, "SQLite database file (created if missing)")->capture_default_str();
  app.add_option("--token-file", token_file,
                 "file holding the bearer token for mutating routes; default: 'token' next to the database, "
                 "created with a random token if missing. BLOCKTUNE_TOKEN overrides both.");
  app.add_option("--port-file", port_file, "write the bound port to this file once listening");
  app.add_option("--http-threads", http_threads,
                 "HTTP worker threads; each keep-alive connection holds one, so this caps concurrent clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--allowed-host", allowed_hosts,
                 "Host header names to serve besides loopback and --host (repeatable; '*' serves any)");
  std::string exchange_log;
  app.add_option("--exchange-log", exchange_log,
                 "debugging and contract tests: append every HTTP request and response (bodies included, the token "
                 "never) to this file as JSON lines; off by default");
  app.add_option("--backup-dir", backup_dir, "where POST /v1/backup writes (default: 'backups' beside the database)");
  app.add_option("--sweeps-per-minute", sweeps_per_minute, "rate limit on sweep creation (burst of 10)")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 100000.0));
  app.add_option("--miss-flush-seconds", miss_flush_seconds,
                 "how often lookup misses counted in memory are added to the database (GET /v1/misses)")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--max-sweep-measurements", max_sweep_measurements, "largest sweep accepted (configs x buckets)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  std::string device_fallback = "none";
  app.add_option("--device-fallback", device_fallback,
                 "none: a device key (gpu.nvidia.sm90.h200) is answered only by its own rows; same-arch: also by "
                 "another model's of its architecture (gpu.nvidia.sm90.h100), as tuned_fallback. Off until "
                 "`blocktune regret --hardware KEY` has measured what it costs (docs/accelerators.md)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "same-arch"}));
  server::AddTimingFlags(&app, timing);
  bool in_process = false;
  tuner::isolation::WorkerOptions worker_options;
  int64_t worker_memory_mb = 0;
  app.add_flag("--in-process", in_process,
               "run configs inside the daemon instead of worker processes (debugging only: a crashing config takes the "
               "daemon down)");
  app.add_option("--worker", worker_options.worker_path,
                 "worker executable; default: blocktune-worker next to blocktuned");
  app.add_option("--worker-timeout-s", worker_options.timeout_s,
                 "per-config time limit in seconds; 0 = derived from the config's expected cost, at least 10 s")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e7));
  std::string worker_sched = "idle";
  app.add_option("--worker-sched", worker_sched,
                 "scheduling class of worker processes: idle (SCHED_IDLE: lookups always preempt measurements; "
                 "disturbed timings are re-timed or recorded unstable) or normal (a dedicated tuning box)")
      ->capture_default_str()
      ->check(CLI::IsMember({"idle", "normal"}));
  app.add_option("--worker-memory-mb", worker_memory_mb,
                 "worker address-space limit (RLIMIT_AS) in MiB; 0 = half the physical memory, -1 = none")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{-1}, int64_t{1} << 40));
  std::string isa;
  app.add_option("--isa", isa,
                 "run every sweep's kernels at this ISA level (avx512, avx2, base; at most the CPU's own) and "
                 "file and look up rows under its hardware key")
      ->check(CLI::IsMember({"avx512", "avx2", "base", "portable"}));
  std::vector<std::string> kernel_dirs;
  app.add_option("--kernel-dir", kernel_dirs,
                 "folder of external kernel specs (*.json, docs/external-kernels.md), or of kernel folders one level "
                 "down, to serve and sweep next to the built-in kernels (repeatable); workers load the same folders")
      ->envname("BLOCKTUNE_KERNEL_DIR");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  // Loopback unless told otherwise: other hosts reach blocktuned through a front (nginx) that
  // terminates TLS and absorbs slow clients.
  const bool loopback = host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
  if (!loopback) {
    if (!allow_remote) {
      spdlog::critical(
          "refusing to listen on non-loopback host={}: serve other hosts through nginx "
          "(deploy/nginx/blocktune.conf), or pass --allow-remote",
          host);
      return kExitUsage;
    }
    spdlog::warn(
        "listening on non-loopback host={} (--allow-remote): no TLS, and slow clients can hold all {} "
        "HTTP threads; put nginx in front (deploy/nginx/blocktune.conf)",
        host, http_threads);
  }
  // Before anything detects the host: the service's hardware key and the workers' environment.
  if (auto s = isa.empty() ? CheckIsaEnvironment() : ForceIsa(isa); !s) {
    spdlog::critical("isa error=\"{}\"", s.error().message);
    return kExitUsage;
  }
  if (HostHardware().cpu.isa != NativeIsa()) {
    spdlog::info("isa forced level={} native={}", HostHardware().cpu.isa, NativeIsa());
  }

  // External kernels join the registry before any thread reads it.
  for (std::string& dir : kernel_dirs) {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(dir, ec);
    if (!ec) dir = abs.string();  // workers resolve it, whatever their working directory
  }
  // The tuner runs external kernels through external/'s runner (installed here, above both).
  tuner::SetRunnerMeasurerFactory(&external::MakeRunnerMeasurer);
  if (auto loaded = external::LoadKernelDirs(kernel_dirs); !loaded) {
    spdlog::critical("kernel spec error=\"{}\"", loaded.error().message);
    return kExitUsage;
  } else {
    for (const auto& k : loaded->kernels) {
      spdlog::info("external kernel loaded name={} spec={} runner=\"{}\"", k.name, k.spec_file, k.runner);
    }
    for (const auto& dir : loaded->empty_dirs) {
      spdlog::warn("--kernel-dir {} holds no kernel spec (*.json in it, or in a folder directly in it)", dir);
    }
    if (!kernel_dirs.empty()) {
      spdlog::info("external kernels loaded count={} dirs={}", loaded->kernels.size(), kernel_dirs.size());
    }
  }
  worker_options.kernel_dirs = kernel_dirs;

  // Block the shutdown signals (and SIGHUP, the reload) before any thread starts; one thread
  // waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::filesystem::path db(db_path);
  if (db.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(db.parent_path(), ec);
  }
  auto store = store::Store::Open(db_path);
  if (!store) {
    spdlog::critical("cannot open database path={} error=\"{}\"", db_path, store.error().ToString());
    if (store.error().code == ErrorCode::kFailedPrecondition) return kExitSchemaTooNew;
    return store.error().code == ErrorCode::kDataLoss ? kExitDatabase : kExitOpen;
  }

  if (token_file.empty())
    token_file = (db.has_parent_path() ? db.parent_path() / "token" : std::filesystem::path("token")).string();
  auto token = server::LoadOrCreateToken(token_file);
  if (!token) {
    spdlog::critical("token error=\"{}\"", token.error().ToString());
    return kExitToken;
  }

  worker_options.memory_limit_bytes = worker_memory_mb < 0 ? -1 : worker_memory_mb << 20;
  worker_options.sched_idle = worker_sched == "idle";
  if (!in_process) {
    auto worker_path = tuner::isolation::LocateWorker(worker_options.worker_path);
    if (!worker_path) {
      spdlog::critical("{} (or pass --in-process)", worker_path.error().message);
      return kExitWorker;
    }
    worker_options.worker_path = *worker_path;
  }
  tuner::isolation::WorkerEvaluator worker(worker_options);  // outlives the service, which uses it

  server::ServiceOptions service_options;
  if (!in_process) service_options.sweep.evaluator = &worker;
  timing.ApplyTo(service_options.sweep.timing);
  service_options.backup_dir = backup_dir;
  service_options.sweeps_per_minute = sweeps_per_minute;
  service_options.miss_flush_seconds = miss_flush_seconds;
  service_options.max_sweep_measurements = max_sweep_measurements;
  service_options.kernel_dirs = kernel_dirs;
  service_options.device_same_arch = device_fallback == "same-arch";
  if (!in_process) service_options.on_kernels_changed = [&worker] { worker.RestartBeforeNextRequest(); };
  server::Service service(std::move(*store), db_path, service_options);
  if (auto s = service.Start(); !s) {
    spdlog::critical("cannot start service error=\"{}\"", s.error().ToString());
    return kExitOpen;
  }

  server::HttpOptions http_options;
  http_options.host = host;
  http_options.port = port;
  http_options.token = *token;
  http_options.worker_threads = http_threads;
  http_options.allowed_hosts = allowed_hosts;
  http_options.exchange_log = exchange_log;
  server::HttpServer http(service, http_options);
  auto bound = http.Bind();
  if (!bound) {
    spdlog::critical("{}", bound.error().ToString());
    return kExitListen;
  }
  if (!port_file.empty()) {
    std::ofstream(port_file) << *bound << "\n";
  }
  const std::string url_host = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  std::printf("blocktuned serving http://%s:%d (db=%s, token file=%s)\n", url_host.c_str(), *bound, db_path.c_str(),
              token_file.c_str());
  std::fflush(stdout);

  std::thread waiter([&] {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0 && sig == SIGHUP) {
      // Like POST /v1/kernels/reload; its outcome is logged there.
      (void)service.ReloadKernels();
    }
    spdlog::info("shutting down signal={}", sig);
    http.Stop();
  });
  http.Run();
  service.Stop();
  // Run() can also return on a listener error; wake the waiter so it can be joined.
  kill(getpid(), SIGTERM);
  waiter.join();
  spdlog::info("stopped");
  return 0;
}
