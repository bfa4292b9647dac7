// `blocktune import kerneltuner|t4|clblast FILE`: other tuners' results into a local database, as a
// finished exhaustive sweep of an external kernel (external/import.h). The kernel's spec is
// matched by name among the loaded ones (--kernel-dir), widened if it is an imported one that
// lacks some of the file's values or its dtype, or written into the first --kernel-dir.
// `blocktune export kerneltuner|t4|csv --sweep ID`: a stored sweep in those formats.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "client/cli.h"
#include "external/import.h"
#include "external/spec.h"

namespace blocktune::client {

namespace {

struct ImportArgs {
  std::string file;
  std::string db = "var/blocktune.db";
  std::string kernel;
  std::string hardware;
  std::string platform;
  std::string arch;
};

int RunImport(const Common& c, const std::string& format, const ImportArgs& a) {
  auto text = ReadText(a.file);
  if (!text) return Fail(kExitUsage, text.error().message);
  // An architecture that names none (--arch '!!') would make no key: refused by name.
  if (!a.arch.empty() && tuner::NormalizeDeviceText(a.arch).empty()) {
    return Fail(kExitUsage, "--arch '" + a.arch + "' has nothing of [a-z0-9] in it (sm86, gfx1030, v5e, ...)");
  }
  const external::ImportOptions options{a.kernel, a.hardware, a.platform, a.arch};
  auto set = format == "kerneltuner" ? external::ParseKernelTunerCache(*text, options)
             : format == "t4"        ? external::ParseT4(*text, options)
                                     : external::ParseCLBlast(*text, options);
  if (!set) return Fail(kExitFailed, a.file + ": " + set.error().message);
  for (const auto& w : set->warnings) std::fprintf(stderr, "warning: %s: %s\n", a.file.c_str(), w.c_str());
  const KernelSpec* spec = FindKernel(set->kernel);
  std::string spec_note = "matched";
  if (spec == nullptr) {
    if (c.kernel_dirs.empty()) {
      return Fail(kExitUsage,
                  "kernel " + set->kernel + " is not loaded; pass --kernel-dir DIR to have its spec written there");
    }
    const std::string path = (std::filesystem::path(c.kernel_dirs.front()) / (set->kernel + ".json")).string();
    if (std::filesystem::exists(path))
      return Fail(kExitFailed, path + " exists but did not load as kernel " + set->kernel);
    {
      std::ofstream out(path, std::ios::binary);
      out << external::SpecJsonFor(*set);
      if (!out.flush()) return Fail(kExitFailed, "cannot write " + path);
    }
    auto loaded = external::LoadKernelSpecFile(path);
    if (!loaded) return Fail(kExitFailed, loaded.error().message);
    if (auto s = RegisterKernel(std::move(*loaded)); !s) return Fail(kExitFailed, s.error().message);
    spec = FindKernel(set->kernel);
    spec_note = "created " + path;
  } else if (auto match = external::MatchSpec(*spec, *set);
             !match && spec->runner() != nullptr && spec->runner()->command.empty() && !spec->source_file().empty()) {
    // An imported kernel (no runner) of another device or problem: its spec file is widened to
    // the union of the values and dtypes, if that is all that differs.
    const std::string path(spec->source_file());
    std::ifstream sf(path, std::ios::binary);
    std::ostringstream spec_text;
    spec_text << sf.rdbuf();
    auto widened = external::WidenSpecJson(spec_text.str(), *set);
    if (!widened) return Fail(kExitFailed, path + ": " + widened.error().message);
    {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out << *widened;
      if (!out.flush()) return Fail(kExitFailed, "cannot write " + path);
    }
    auto loaded = external::LoadKernelSpecFile(path);
    if (!loaded) {
      std::ofstream(path, std::ios::binary | std::ios::trunc) << spec_text.str();  // put it back as it was
      return Fail(kExitFailed, loaded.error().message);
    }
    if (auto s = ReplaceKernel(std::move(*loaded)); !s) return Fail(kExitFailed, s.error().message);
    spec = FindKernel(set->kernel);
    spec_note = "widened " + path;
  }
  auto store = OpenLocalStore(a.db);
  if (!store) return store.error();
  auto summary = external::StoreImport(**store, *spec, *set);
  if (!summary) return Fail(kExitFailed, summary.error().ToString());
  Json outcomes = Json::object();
  for (const auto& [o, n] : summary->by_outcome) outcomes[o] = n;
  Json out{{"kernel", set->kernel},       {"hardware", set->hardware_key},
           {"device", set->device},       {"dtype", DTypeName(set->dtype)},
           {"bucket", summary->bucket},   {"sweep_id", summary->sweep_id},
           {"created", summary->created}, {"records", summary->records},
           {"outcomes", outcomes},        {"spec", spec_note},
           {"warnings", set->warnings}};
  if (!summary->winner.empty()) {
    out["winner"] = server::wire::EncodeConfig(summary->winner);
    out["winner_median_ns"] = summary->winner_median_ns;
  }
  if (c.json) {
    std::printf("%s\n", out.dump().c_str());
  } else {
    PrintHuman(out);
    if (!summary->created)
      std::printf("already imported as sweep %lld; nothing written\n", static_cast<long long>(summary->sweep_id));
  }
  return 0;
}

struct ExportArgs {
  std::string db = "var/blocktune.db";
  int64_t sweep = 0;
  std::string out;
};

// Kernel Tuner's failure marker for a stored outcome. Rows stored before migration 0012 spell
// compile_failed in an invalid row's detail.
std::string KernelTunerMarker(const tuner::Measurement& m) {
  if (m.outcome == tuner::Outcome::kCompileFailed) return "CompilationFailedConfig";
  if (m.outcome == tuner::Outcome::kInvalid) {
    return m.detail.rfind("compile_failed", 0) == 0 ? "CompilationFailedConfig" : "InvalidConfig";
  }
  return "RuntimeFailedConfig";
}

std::string T4Invalidity(const tuner::Measurement& m) {
  switch (m.outcome) {
    case tuner::Outcome::kOk: return "correct";
    case tuner::Outcome::kCompileFailed: return "compile";
    case tuner::Outcome::kInvalid: return m.detail.rfind("compile_failed", 0) == 0 ? "compile" : "constraints";
    case tuner::Outcome::kWrongResult:
    case tuner::Outcome::kNan: return "correctness";
    case tuner::Outcome::kTimeout: return "timeout";
    default: return "runtime";
  }
}

std::string CsvField(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

int RunExport(const Common& c, const std::string& format, const ExportArgs& a) {
  (void)c;
  if (access(a.db.c_str(), R_OK) != 0) return Fail(kExitDatabase, "cannot read database " + a.db);
  auto store = store::Store::Open(a.db);
  if (!store) return Fail(kExitDatabase, "cannot open " + a.db + ": " + store.error().ToString());
  auto sweep = (*store)->sweeps().Get(a.sweep);
  if (!sweep) return Fail(kExitFailed, sweep.error().ToString());
  std::vector<tuner::Measurement> ms;
  for (int64_t after = 0;;) {
    auto page = (*store)->measurements().ListPage(a.sweep, after, 1000);
    if (!page) return Fail(kExitDatabase, page.error().ToString());
    if (page->empty()) break;
    after = page->back().id;
    for (auto& m : *page) ms.push_back(std::move(m));
  }
  const KernelSpec* spec = FindKernel(sweep->request.kernel);
  std::vector<std::string> names;
  if (spec != nullptr) {
    for (const auto& p : spec->params()) names.push_back(p.name);
  } else if (!ms.empty()) {
    for (const auto& [n, v] : ms.front().config.values()) names.push_back(n);
  }
  std::string text;
  if (format == "csv") {
    text = "sweep_id,hardware,dtype,bucket";
    for (const auto& n : names) text += "," + n;
    text += ",outcome,median_ns,cv,samples_ns,detail\n";
    for (const auto& m : ms) {
      text += std::to_string(a.sweep) + "," + sweep->hardware_key + "," + std::string(DTypeName(sweep->request.dtype)) +
              "," + m.bucket;
      for (const auto& n : names) text += "," + std::to_string(m.config.Get(n).value_or(0));
      std::string samples;
      for (double x : m.samples_ns) samples += (samples.empty() ? "" : " ") + std::to_string(x);
      text += "," + std::string(tuner::OutcomeName(m.outcome)) + "," + std::to_string(m.median_ns) + "," +
              std::to_string(m.cv) + "," + CsvField(samples) + "," + CsvField(m.detail) + "\n";
    }
  } else {
    // One bucket per file in both formats: the sweep's first bucket (an import has one).
    const std::string bucket = ms.empty() ? std::string() : ms.front().bucket;
    Json problem = Json::array();
    Json params = Json::object();
    if (!ms.empty()) {
      for (const auto& [n, v] : ms.front().problem.dims.values()) problem.push_back(v);
    }
    for (const auto& n : names) {
      Json values = Json::array();
      if (spec != nullptr) {
        for (const auto& p : spec->params()) {
          if (p.name == n) values = p.candidates;
        }
      }
      params[n] = values;
    }
    if (format == "kerneltuner") {
      Json cache = Json::object();
      for (const auto& m : ms) {
        if (m.bucket != bucket) continue;
        std::string key;
        Json e = Json::object();
        for (const auto& n : names) {
          const int64_t v = m.config.Get(n).value_or(0);
          key += (key.empty() ? "" : ",") + std::to_string(v);
          e[n] = v;
        }
        Json times = Json::array();
        for (double x : m.samples_ns) times.push_back(x / 1e6);
        if (m.outcome == tuner::Outcome::kOk) {
          e["time"] = m.median_ns / 1e6;
          e["times"] = times;
        } else {
          e["time"] = 1e20;
          e["__error__"] = KernelTunerMarker(m);
        }
        e["timestamp"] = m.created_at;
        e["blocktune_outcome"] = tuner::OutcomeName(m.outcome);
        cache[key] = e;
      }
      Json doc{{"version", "1.1"},        {"device_name", sweep->hardware_key},  {"kernel_name", sweep->request.kernel},
               {"problem_size", problem}, {"tune_params_keys", names},           {"tune_params", params},
               {"objective", "time"},     {"objective_higher_is_better", false}, {"cache", cache}};
      text = doc.dump(1) + "\n";
    } else {
      Json results = Json::array();
      for (const auto& m : ms) {
        if (m.bucket != bucket) continue;
        Json cfg = Json::object();
        for (const auto& n : names) cfg[n] = m.config.Get(n).value_or(0);
        Json times = Json::array();
        for (double x : m.samples_ns) times.push_back(x / 1e6);
        Json meas = Json::array();
        if (m.outcome == tuner::Outcome::kOk) meas.push_back({{"name", "time"}, {"value", times}, {"unit", "ms"}});
        results.push_back({{"timestamp", m.created_at},
                           {"configuration", cfg},
                           {"invalidity", T4Invalidity(m)},
                           {"correctness", m.outcome == tuner::Outcome::kOk ? 1 : 0},
                           {"measurements", meas},
                           {"objectives", {"time"}}});
      }
      Json doc{{"schema_version", "1.0.0"},
               {"metadata", {{"kernel_name", sweep->request.kernel}, {"problem_size", problem}, {"bucket", bucket}}},
               {"environment", {{"device_name", sweep->hardware_key}}},
               {"results", results}};
      text = doc.dump(1) + "\n";
    }
  }
  if (a.out.empty() || a.out == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  std::ofstream out(a.out, std::ios::binary);
  out << text;
  if (!out.flush()) return Fail(kExitFailed, "cannot write " + a.out);
  return 0;
}

}  // namespace

std::function<int()> RegisterImportCommands(CLI::App& app, Common& common) {
  auto* import_cmd = app.add_subcommand(
      "import",
      "file another tuner's results (every record, failures included) into a local database as a finished "
      "exhaustive sweep of an external kernel");
  import_cmd->require_subcommand(1);
  auto args = std::make_shared<ImportArgs>();
  std::vector<std::pair<std::string, CLI::App*>> formats;
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"kerneltuner",
            "a Kernel Tuner cache file (.json; both layouts; a truncated cache is read as far as it is valid)"},
           {"t4", "T4 JSON (results with configuration, invalidity, measurements)"},
           {"clblast",
            "the JSON a CLBlast tuner writes (clblast_xgemm_1_32.json: only configs that passed; the device "
            "key gpu.VENDOR.ARCH.MODEL from its device fields, the dtype from its precision)"}}) {
    auto* cmd = import_cmd->add_subcommand(name, help);
    AddCommon(cmd, common, false);
    cmd->add_option("file", args->file, "the file to import")->required();
    cmd->add_option("--db", args->db, "SQLite database to import into (created if missing)")->capture_default_str();
    cmd->add_option("--kernel", args->kernel, "kernel name in blocktune (default: the file's kernel name)");
    cmd->add_option(
        "--hardware", args->hardware,
        "hardware key to file the results under (default: the device key of the device name, as a runner's: "
        "NVIDIA GeForce RTX 2080 Ti is gpu.nvidia.sm75.rtx_2080_ti; docs/accelerators.md)");
    cmd->add_option("--arch", args->arch,
                    "the device's architecture (sm86, gfx1030, ...) when blocktune does not know its model "
                    "(the key then says 'unknown', with a warning)");
    cmd->add_option("--platform", args->platform,
                    "what measured, kept with the device's identity (default: the format; opencl for CLBlast); "
                    "tpu makes a TPU key (tpu.google.ARCH)");
    formats.emplace_back(name, cmd);
  }
  auto* export_cmd = app.add_subcommand(
      "export", "write a stored sweep's measurements (every outcome) in another tool's format, read from the database");
  export_cmd->require_subcommand(1);
  auto eargs = std::make_shared<ExportArgs>();
  std::vector<std::pair<std::string, CLI::App*>> exports;
  for (const auto& [name, help] : std::vector<std::pair<std::string, std::string>>{
           {"kerneltuner",
            "a Kernel Tuner cache file (1.x layout: failures under __error__) of the sweep's first bucket"},
           {"t4", "T4 JSON of the sweep's first bucket"},
           {"csv", "one row per measurement of every bucket"}}) {
    auto* cmd = export_cmd->add_subcommand(name, help);
    AddCommon(cmd, common, false);
    cmd->add_option("--db", eargs->db, "SQLite database")->capture_default_str();
    cmd->add_option("--sweep", eargs->sweep, "sweep id")->required();
    cmd->add_option("--out", eargs->out, "output file (default: stdout)");
    exports.emplace_back(name, cmd);
  }
  return [formats, args, exports, eargs, &common]() -> int {
    for (const auto& [name, cmd] : formats) {
      if (cmd->parsed()) return RunImport(common, name, *args);
    }
    for (const auto& [name, cmd] : exports) {
      if (cmd->parsed()) return RunExport(common, name, *eargs);
    }
    return -1;
  };
}

}  // namespace blocktune::client
