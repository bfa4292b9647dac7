// blocktune: the command-line client's entry point: the global flags, the command groups (one
// file per group, each registering its commands and running the one that parsed), external
// kernels loaded, and the exit code. Groups: the service commands that talk to blocktuned over
// HTTP (service_commands.h: sweep, sweeps, lookup, kernels, hardware, tuned, misses, override,
// tables download, backup, health, metrics; `sweep --local` runs the service in-process);
// results_commands.cc (db merge, push); import_commands.cc (import, export); and the local ones
// (local_commands.h: tables generate|check, bench, regret, simulate, sweeps compare).
//
// Exit codes: see client/cli.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include <filesystem>
#include <string>

#include "blocktune/version.h"
#include "client/cli.h"
#include "client/local_commands.h"
#include "external/runner.h"
#include "external/spec.h"
#include "kernels/core/fingerprint.h"
#include "kernels/core/kernel_spec.h"

using namespace blocktune;
using client::Common;
using client::Fail;
using client::kExitUsage;

int main(int argc, char** argv) {
  // The libraries log with spdlog; in the CLI that goes to stderr and only when it matters, so
  // stdout stays clean for --json (sweep --local runs the service in-process).
  spdlog::set_default_logger(spdlog::stderr_color_mt("blocktune"));
  spdlog::set_level(spdlog::level::warn);
  CLI::App app{"blocktune: sweep, look up, benchmark and publish tuned kernel block sizes"};
  app.require_subcommand(1);
  {
    std::string version =
        std::string(kToolVersion) + "\nkernel fingerprints (" + std::string(FingerprintToolchain()) + "):";
    for (const KernelSpec* k : AllKernels())
      version += "\n  " + std::string(k->name()) + " " + std::string(KernelFingerprint(k->name()));
    app.set_version_flag("--version", version, "print the version and this build's kernel fingerprints");
  }
  Common common;
  // Global: external kernel specs for every command that works locally (tables generate,
  // simulate, sweep --local, import, export); accepted before or after the subcommand.
  app.add_option("--kernel-dir", common.kernel_dirs,
                 "folder of external kernel specs (*.json, docs/external-kernels.md), or of kernel folders one level "
                 "down, to load (repeatable)")
      ->envname("BLOCKTUNE_KERNEL_DIR")
      ->allow_extra_args(false);
  app.fallthrough();

  auto* tables_cmd = app.add_subcommand("tables", "generated tuned-block-size tables");
  tables_cmd->require_subcommand(1);
  auto tables_commands = client::RegisterTablesCommands(tables_cmd, common);
  auto service_commands = client::RegisterServiceCommands(app, common, tables_cmd);
  auto results_commands = client::RegisterResultsCommands(app, common);
  auto import_commands = client::RegisterImportCommands(app, common);
  auto bench_commands = client::RegisterBenchCommands(app, common);
  auto simulate_commands = client::RegisterSimulateCommands(app, common);
  auto adapt_command = client::RegisterAdaptCommand(app, common);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  if (auto s = CheckIsaEnvironment(); !s) return Fail(kExitUsage, s.error().message);
  for (std::string& dir : common.kernel_dirs) {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(dir, ec);
    if (!ec) dir = abs.string();
  }
  // The tuner runs external kernels through external/'s runner (installed here, above both).
  tuner::SetRunnerMeasurerFactory(&external::MakeRunnerMeasurer);
  if (auto loaded = external::LoadKernelDirs(common.kernel_dirs); !loaded) {
    return Fail(kExitUsage, loaded.error().message);
  } else if (!app.got_subcommand("import")) {  // import writes its spec into the first folder
    for (const auto& dir : loaded->empty_dirs) {
      std::fprintf(stderr,
                   "warning: --kernel-dir %s holds no kernel spec (*.json in it, or in a folder directly in it)\n",
                   dir.c_str());
    }
  }
  if (const int rc = service_commands(); rc >= 0) return rc;
  if (const int rc = results_commands(); rc >= 0) return rc;
  if (const int rc = import_commands(); rc >= 0) return rc;
  if (const int rc = tables_commands(); rc >= 0) return rc;
  if (const int rc = bench_commands(); rc >= 0) return rc;
  if (const int rc = simulate_commands(); rc >= 0) return rc;
  if (const int rc = adapt_command(); rc >= 0) return rc;
  return kExitUsage;
}
