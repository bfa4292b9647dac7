// blocktune tables download, backup, health and metrics: the daemon's operations; see
// service_commands.h.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "client/cli.h"
#include "client/service_commands.h"
#include "server/service.h"
#include "server/timing_flags.h"
#include "tuner/isolation/worker_evaluator.h"

namespace blocktune::client {
namespace {

using server::api::Op;

int RunTablesDownload(const Common& c, const std::string& kernel, const std::string& out) {
  CallOptions o;
  o.raw = true;
  auto got = Call(c, To(Op::kGetTable, {kernel}), o);
  if (!got) return got.error();
  if (out.empty() || out == "-") {
    std::fwrite(got->text.data(), 1, got->text.size(), stdout);
    return 0;
  }
  std::ofstream f(out, std::ios::binary);
  f << got->text;
  if (!f) return Fail(kExitFailed, "cannot write " + out);
  if (!c.json) std::printf("%zu bytes written to %s\n", got->text.size(), out.c_str());
  return 0;
}

int RunBackup(const Common& c, const std::string& db, const std::string& out) {
  if (db.empty()) {
    auto got = Call(c, To(Op::kCreateBackup));
    if (!got) return got.error();
    return PrintReply(c, *got);
  }
  if (out.empty()) return Fail(kExitUsage, "backup --db needs --out FILE");
  if (access(db.c_str(), R_OK) != 0) return Fail(kExitDatabase, "cannot read database " + db);
  auto store = store::Store::Open(db);
  if (!store) return Fail(kExitDatabase, store.error().ToString());
  if (auto s = (*store)->maintenance().BackupTo(out); !s) return Fail(kExitDatabase, s.error().ToString());
  if (c.json) {
    std::printf("%s\n", server::wire::Dump(
                            server::wire::EncodeBackup(out, static_cast<int64_t>(std::filesystem::file_size(out))))
                            .c_str());
  } else {
    std::printf("backup of %s written to %s\n", db.c_str(), out.c_str());
  }
  return 0;
}

int RunHealth(const Common& c) {
  auto live = Call(c, To(Op::kGetHealth));
  if (!live) return live.error();
  auto ready = Call(c, To(Op::kGetReady));
  if (!ready) return ready.error();
  if (c.json) {
    std::printf("%s\n", ready->text.c_str());
  } else {
    std::printf("%s: alive, ready\n", c.server.c_str());
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterOperationsCommands(CLI::App& app, Common& common, CLI::App* tables_cmd) {
  auto download = std::make_shared<std::array<std::string, 2>>();
  auto* download_cmd =
      tables_cmd->add_subcommand("download", "the generated C++ header for a kernel, from blocktuned's rows");
  AddCommon(download_cmd, common, true);
  download_cmd->add_option("kernel", (*download)[0], "kernel name")->required();
  download_cmd->add_option("--out", (*download)[1], "file to write (default: stdout)");

  auto backup = std::make_shared<std::array<std::string, 2>>();
  auto* backup_cmd = app.add_subcommand(
      "backup", "online backup: on the server (into its backup directory), or of a local database with --db/--out");
  AddCommon(backup_cmd, common, true);
  backup_cmd->add_option("--db", (*backup)[0], "back up this local database instead (safe while a daemon writes it)");
  backup_cmd->add_option("--out", (*backup)[1], "destination file for --db (must not exist)");

  auto* health_cmd = app.add_subcommand("health", "is blocktuned alive and ready");
  AddCommon(health_cmd, common, true);
  auto* metrics_cmd = app.add_subcommand("metrics", "blocktuned's Prometheus metrics");
  AddCommon(metrics_cmd, common, true);

  return [=, &common]() -> int {
    if (download_cmd->parsed()) return RunTablesDownload(common, (*download)[0], (*download)[1]);
    if (backup_cmd->parsed()) return RunBackup(common, (*backup)[0], (*backup)[1]);
    if (health_cmd->parsed()) return RunHealth(common);
    if (metrics_cmd->parsed()) {
      CallOptions o;
      o.raw = true;
      auto got = Call(common, To(Op::kGetMetrics), o);
      if (!got) return got.error();
      std::fwrite(got->text.data(), 1, got->text.size(), stdout);
      return 0;
    }
    return -1;
  };
}

}  // namespace blocktune::client
