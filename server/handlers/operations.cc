// Handlers for operating the daemon: liveness, readiness, Prometheus metrics, this API's OpenAPI document, online
// backup.
#include <httplib.h>
#include <sys/stat.h>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"
#include "server/openapi.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindOperationHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  // A storage fault (the last write of the runner, the lease renewal or the miss flusher was
  // refused: disk full, I/O error) in words: "storage: <error> (since <UTC>)".
  const auto storage_error = [&svc]() -> std::string {
    const auto fault = svc.storage().Current();
    return fault ? "storage: " + fault->error + " (since " + fault->since + ")" : "";
  };
  // Alive either way (a restart would not bring the space back): degraded, with the error.
  h[api::Index(api::Op::kGetHealth)] = [storage_error](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, wire::EncodeHealth(storage_error()));
  };

  h[api::Index(api::Op::kGetReady)] = [&svc, storage_error](const httplib::Request&, httplib::Response& res) {
    if (!svc.Ready()) return SendJson(res, 503, wire::EncodeReady(false, "job runner not running"));
    auto stats = svc.Stats();
    if (!stats) return SendJson(res, 503, wire::EncodeReady(false, "database: " + stats.error().message));
    if (const std::string e = storage_error(); !e.empty()) return SendJson(res, 503, wire::EncodeReady(false, e));
    SendJson(res, 200, wire::EncodeReady(true, ""));
  };

  h[api::Index(api::Op::kGetMetrics)] = [&svc, &metrics = ctx.metrics](const httplib::Request&,
                                                                       httplib::Response& res) {
    std::string out = metrics.Render();
    auto stats = svc.Stats();
    if (stats) {
      out += "# HELP blocktune_sweeps Sweeps by state.\n# TYPE blocktune_sweeps gauge\n";
      for (auto st : {store::SweepStatus::kQueued, store::SweepStatus::kRunning, store::SweepStatus::kDone,
                      store::SweepStatus::kFailed, store::SweepStatus::kCancelled}) {
        int64_t n = 0;
        for (const auto& [name, count] : stats->sweeps_by_status) {
          if (name == store::SweepStatusName(st)) n = count;
        }
        out +=
            "blocktune_sweeps{state=\"" + std::string(store::SweepStatusName(st)) + "\"} " + std::to_string(n) + "\n";
      }
      out += "# HELP blocktune_measurements Stored measurements by outcome.\n# TYPE blocktune_measurements gauge\n";
      for (std::string_view o : tuner::kOutcomeNames) {
        int64_t n = 0;
        for (const auto& [name, count] : stats->measurements_by_outcome) {
          if (name == o) n = count;
        }
        out += "blocktune_measurements{outcome=\"" + std::string(o) + "\"} " + std::to_string(n) + "\n";
      }
      out += "# HELP blocktune_db_bytes Size of the SQLite database (pages x page size).\n";
      out += "# TYPE blocktune_db_bytes gauge\nblocktune_db_bytes " + std::to_string(stats->db_bytes) + "\n";
    }
    out +=
        "# HELP blocktune_lookup_misses_dropped_total Missed lookups not counted: too many distinct buckets "
        "between two flushes.\n# TYPE blocktune_lookup_misses_dropped_total counter\n";
    out += "blocktune_lookup_misses_dropped_total " + std::to_string(svc.MissesDropped()) + "\n";
    out +=
        "# HELP blocktune_storage_ok 1 while the database takes this process's writes; 0 while the last write of "
        "the job runner, the lease renewal or the miss flusher was refused (disk full, I/O error, read-only).\n"
        "# TYPE blocktune_storage_ok gauge\n";
    out += "blocktune_storage_ok " + std::string(svc.storage().Current() ? "0" : "1") + "\n";
    out +=
        "# HELP blocktune_storage_write_failures_total Writes the database refused with a storage fault.\n"
        "# TYPE blocktune_storage_write_failures_total counter\n";
    out += "blocktune_storage_write_failures_total " + std::to_string(svc.storage().failures_total()) + "\n";
    res.status = 200;
    res.set_content(out, "text/plain; version=0.0.4");
  };

  h[api::Index(api::Op::kGetOpenApi)] = [](const httplib::Request&, httplib::Response& res) {
    static const std::string kDoc = wire::Dump(OpenApiDocument());
    res.status = 200;
    res.set_content(kDoc, "application/json");
  };

  h[api::Index(api::Op::kCreateBackup)] = [&svc](const httplib::Request&, httplib::Response& res) {
    auto path = svc.Backup();
    if (!path) return SendError(res, path.error());
    struct stat st {};
    const int64_t bytes = ::stat(path->c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
    SendJson(res, 201, wire::EncodeBackup(*path, bytes));
  };
}

}  // namespace blocktune::server::handlers
