// blocktune tables generate and tables check: the generated tables from the checked-in jsonl and
// a database's rows, and their fingerprints against this build's; see local_commands.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "blocktune/version.h"
#include "client/cli.h"
#include "client/local_commands.h"
#include "codegen/codegen.h"
#include "external/runner.h"
#include "external/spec.h"
#include "kernels/core/fingerprint.h"
#include "kernels/core/kernel_spec.h"
#include "server/wire/wire.h"
#include "store/store.h"
#include "tuner/gate.h"
#include "tuner/isolation/worker_evaluator.h"
#include "tuner/lookup.h"
#include "tuner/regret.h"
#include "tuner/search/simulate.h"
#include "tuner/sweep.h"
#include "tuner/timing/timing.h"

namespace blocktune::client {
namespace {

using namespace blocktune;
using server::wire::Json;

using client::AddCommon;
using client::Common;
using client::Fail;
using client::kExitFailed;
using client::kExitUsage;
using client::ParseShape;

// ---------------------------------------------------------------------------------------------

struct TablesArgs {
  std::string out = "tables";
  std::string db;
  bool check = false;
  // The regression gate (tuner/gate.h): host rows that would replace a checked-in row with
  // another config are re-timed side by side first, unless --force.
  bool force = false;
  int gate_repetitions = 9;
  // The regression gate verifies and times in worker processes (tuner/isolation), so a config
  // that crashes or hangs is refused and generation goes on; empty: blocktune-worker next to
  // this program or in its build tree.
  std::string worker;
  double gate_min_time_ms = 20;
  std::string jsonl;  // tables check: this file instead of <out>/tuned_entries.jsonl
};

Result<std::vector<tuner::TunedEntry>> ReadDbRows(const std::string& db) {
  if (access(db.c_str(), R_OK) != 0) return NotFound("cannot read database " + db);
  auto store = store::Store::Open(db);
  if (!store) return std::unexpected(store.error());
  return (*store)->tuned().List();
}

int RunTablesGenerate(const Common& c, const TablesArgs& a) {
  const std::string jsonl_path = a.out + "/tuned_entries.jsonl";
  auto read = ReadJsonlFile(jsonl_path, /*missing_ok=*/true);
  if (!read) return Fail(kExitFailed, jsonl_path + ": " + read.error().ToString());
  std::vector<tuner::TunedEntry> entries = std::move(*read);
  std::vector<tuner::GateEvent> events;
  // Rows that do not fit their kernel (a database an older build wrote, rows pushed before
  // ingest was checked) are skipped with a warning, never published; the rest are.
  std::vector<std::string> skipped;
  if (!a.db.empty()) {
    auto rows = ReadDbRows(a.db);
    if (!rows) return Fail(kExitFailed, rows.error().ToString());
    *rows = codegen::Publishable(std::move(*rows), &skipped);
    if (a.check) {
      entries = codegen::Merge(std::move(entries), *rows);  // --check times nothing
    } else {
      tuner::GateOptions gate;
      gate.force = a.force;
      gate.timing.repetitions = a.gate_repetitions;
      gate.timing.min_repetition_ns = a.gate_min_time_ms * 1e6;
      std::optional<tuner::isolation::WorkerEvaluator> worker;
      if (!a.force) {  // --force times nothing
        tuner::isolation::WorkerOptions worker_options;
        auto path = tuner::isolation::LocateWorker(a.worker);
        if (!path) return Fail(kExitFailed, "regression gate: " + path.error().ToString() + " (--worker PATH)");
        worker_options.worker_path = *path;
        worker_options.kernel_dirs = c.kernel_dirs;  // the worker loads the same external kernels
        worker.emplace(worker_options);
        gate.evaluator = &*worker;
      }
      auto merged = tuner::GatedMerge(std::move(entries), *rows, gate, &events);
      if (!merged) return Fail(kExitFailed, merged.error().ToString());
      entries = std::move(*merged);
    }
  }
  for (const auto& ev : events) {
    if (c.json || ev.what == "same_config" || ev.what == "other_profile") continue;
    std::fprintf(stderr, "gate %-8s %s %s %s %s: %s\n", ev.what.c_str(), ev.kernel.c_str(), ev.hardware.c_str(),
                 ev.dtype.c_str(), ev.bucket.c_str(), ev.detail.c_str());
    if (ev.record && ev.record->old_ns > 0) {
      std::fprintf(stderr, "         old %s %.0f ns, new %s %.0f ns (%lld interleaved repetitions)\n",
                   ev.record->old_config.ToString().c_str(), ev.record->old_ns,
                   ev.record->new_config.ToString().c_str(), ev.record->new_ns,
                   static_cast<long long>(ev.record->repetitions));
    }
  }
  auto files = codegen::GenerateAll(entries, &skipped);
  if (!files) return Fail(kExitFailed, files.error().ToString());
  for (const auto& why : skipped)
    std::fprintf(stderr, "blocktune: warning: tuned row skipped, not published: %s\n", why.c_str());
  if (a.check) {
    int stale = 0;
    for (const auto& [rel, contents] : *files) {
      std::ifstream in(a.out + "/" + rel, std::ios::binary);
      std::ostringstream cur;
      cur << in.rdbuf();
      if (!in || cur.str() != contents) {
        std::fprintf(stderr, "out of date: %s/%s\n", a.out.c_str(), rel.c_str());
        ++stale;
      }
    }
    if (stale)
      return Fail(kExitFailed, std::to_string(stale) +
                                   " generated file(s) differ; run: " + std::string(codegen::kRegenerateCommand));
    if (!c.json) std::printf("%zu generated files up to date in %s\n", files->size(), a.out.c_str());
    return 0;
  }
  auto written = codegen::WriteFiles(a.out, *files);
  if (!written) return Fail(kExitFailed, written.error().ToString());
  if (c.json) {
    Json gate = Json::array();
    for (const auto& ev : events) {
      Json e{{"kernel", ev.kernel}, {"hardware", ev.hardware}, {"dtype", ev.dtype},
             {"bucket", ev.bucket}, {"what", ev.what},         {"detail", ev.detail}};
      if (ev.record) {
        e["old_config"] = server::wire::EncodeConfig(ev.record->old_config);
        e["new_config"] = server::wire::EncodeConfig(ev.record->new_config);
        e["old_ns"] = ev.record->old_ns;
        e["new_ns"] = ev.record->new_ns;
        e["noise_band"] = ev.record->noise_band;
        e["repetitions"] = ev.record->repetitions;
      }
      gate.push_back(std::move(e));
    }
    std::printf(
        "%s\n",
        Json{{"rows", entries.size()}, {"written", *written}, {"gate", gate}, {"skipped", skipped}}.dump().c_str());
  } else {
    std::printf("%zu tuned rows; %zu file(s) written, %zu unchanged, in %s\n", entries.size(), written->size(),
                files->size() - written->size(), a.out.c_str());
    for (const auto& w : *written) std::printf("  %s\n", w.c_str());
  }
  return 0;
}

// `tables check`: every row's fingerprint against this build's. A stale row that a lookup
// would serve (a registered kernel's row of its current bucket version) fails the check.
int RunTablesCheck(const Common& c, const TablesArgs& a) {
  const std::string path = a.jsonl.empty() ? a.out + "/tuned_entries.jsonl" : a.jsonl;
  auto rows = ReadJsonlFile(path, /*missing_ok=*/false);
  if (!rows) return Fail(kExitFailed, path + ": " + rows.error().ToString());
  if (!a.db.empty()) {  // what blocktuned on this database serves: its rows over the table's
    auto db_rows = ReadDbRows(a.db);
    if (!db_rows) return Fail(kExitFailed, db_rows.error().ToString());
    *rows = codegen::Merge(std::move(*rows), *db_rows);
  }
  int fresh = 0, stale_served = 0;
  Json stale = Json::array(), unknown = Json::array(), ignored = Json::array();
  for (const auto& e : *rows) {
    const KernelSpec* spec = FindKernel(e.kernel);
    const bool served = spec != nullptr && e.bucket_version == spec->bucket_version();
    const Freshness f = FreshnessOf(e.kernel, e.fingerprint);
    if (f == Freshness::kFresh && served) {
      ++fresh;
      continue;
    }
    Json row{{"kernel", e.kernel},
             {"hardware", e.hardware_key},
             {"dtype", DTypeName(e.dtype)},
             {"bucket", e.bucket},
             {"fingerprint", e.fingerprint.empty() ? Json(nullptr) : Json(e.fingerprint)},
             {"build_fingerprint", KernelFingerprint(e.kernel)}};
    if (!served) {
      ignored.push_back(std::move(row));
    } else if (f == Freshness::kStale) {
      ++stale_served;
      stale.push_back(std::move(row));
    } else {
      unknown.push_back(std::move(row));
    }
  }
  if (c.json) {
    std::printf(
        "%s\n",
        Json{{"rows", rows->size()}, {"fresh", fresh}, {"stale", stale}, {"unknown", unknown}, {"not_served", ignored}}
            .dump()
            .c_str());
  } else {
    auto print = [](const char* what, const Json& list) {
      for (const auto& r : list) {
        std::printf("%-8s %s %s %s %s  fingerprint %s, this build %s\n", what, r["kernel"].get<std::string>().c_str(),
                    r["hardware"].get<std::string>().c_str(), r["dtype"].get<std::string>().c_str(),
                    r["bucket"].get<std::string>().c_str(),
                    r["fingerprint"].is_null() ? "unknown" : r["fingerprint"].get<std::string>().c_str(),
                    r["build_fingerprint"].get<std::string>().empty()
                        ? "(no such kernel)"
                        : r["build_fingerprint"].get<std::string>().c_str());
      }
    };
    print("stale", stale);
    print("unknown", unknown);
    print("ignored", ignored);
    std::printf(
        "%zu rows in %s%s: %d fresh, %zu stale, %zu unknown (measured before fingerprints), %zu not served "
        "(unknown kernel or old bucket version)\n",
        rows->size(), path.c_str(), a.db.empty() ? "" : (" over " + a.db).c_str(), fresh, stale.size(), unknown.size(),
        ignored.size());
  }
  if (stale_served > 0) {
    return Fail(kExitFailed, std::to_string(stale_served) +
                                 " stale row(s) would be served: re-tune them on this build (deploy/retune-tables.sh) "
                                 "and regenerate with --db");
  }
  return 0;
}

}  // namespace

std::function<int()> RegisterTablesCommands(CLI::App* tables_cmd, Common& common) {
  auto tables_args_ptr = std::make_shared<TablesArgs>();
  TablesArgs& tables_args = *tables_args_ptr;
  auto* generate_cmd = tables_cmd->add_subcommand(
      "generate",
      "merge DB rows into <out>/tuned_entries.jsonl and regenerate headers, Python and JSON tables; a DB row that "
      "would replace this machine's checked-in row with another config must beat it in a side-by-side re-timing "
      "beyond the noise band (regression gate), and a stale row never replaces a fresh one");
  AddCommon(generate_cmd, common, false);
  generate_cmd->add_option("--out", tables_args.out, "tables directory")->capture_default_str();
  generate_cmd->add_option("--db", tables_args.db, "merge tuned entries from this SQLite database");
  generate_cmd->add_flag("--check", tables_args.check, "write nothing; exit 1 if any generated file is out of date");
  generate_cmd->add_flag("--force", tables_args.force,
                         "skip the regression gate: take every --db row even where the re-timing would keep the "
                         "checked-in row (recorded as 'forced' in the row's gate provenance)");
  generate_cmd
      ->add_option("--gate-repetitions", tables_args.gate_repetitions,
                   "regression gate: interleaved repetitions of the old and the new config")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000));
  generate_cmd
      ->add_option("--gate-min-time-ms", tables_args.gate_min_time_ms, "regression gate: minimum time per repetition")
      ->capture_default_str()
      ->check(CLI::Range(0.1, 10000.0));
  generate_cmd->add_option("--worker", tables_args.worker,
                           "regression gate: worker executable that verifies and times the configs (default: "
                           "blocktune-worker next to this program or in its build tree)");
  auto* check_cmd = tables_cmd->add_subcommand(
      "check",
      "list tuned rows measured by another build of their kernel (stale) or of unknown fingerprint; exit 1 "
      "if any stale row would be served");
  AddCommon(check_cmd, common, false);
  check_cmd->add_option("--out", tables_args.out, "tables directory (reads its tuned_entries.jsonl)")
      ->capture_default_str();
  check_cmd->add_option("--jsonl", tables_args.jsonl, "check this jsonl file instead");
  check_cmd->add_option("--db", tables_args.db,
                        "also this database's tuned rows, merged over the table as blocktuned serves them");

  return [=, &common]() -> int {
    if (generate_cmd->parsed()) return RunTablesGenerate(common, *tables_args_ptr);
    if (check_cmd->parsed()) return RunTablesCheck(common, *tables_args_ptr);
    return -1;
  };
}

}  // namespace blocktune::client
