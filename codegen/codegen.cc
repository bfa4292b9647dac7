// The generator as a whole: which rows may be published, every file it owns with its contents,
// and writing the changed ones atomically; see codegen.h. The jsonl form is jsonl.cc, the three
// per-kernel tables cpp_header.cc, python_table.cc and json_table.cc.
#include "codegen/codegen.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tuner/check.h"

namespace blocktune::codegen {

std::vector<tuner::TunedEntry> Publishable(std::vector<tuner::TunedEntry> rows, std::vector<std::string>* skipped) {
  std::vector<tuner::TunedEntry> out;
  out.reserve(rows.size());
  for (auto& e : rows) {
    if (const KernelSpec* spec = FindKernel(e.kernel)) {
      if (auto s = tuner::CheckTunedEntry(*spec, e); !s) {
        if (skipped != nullptr) {
          skipped->push_back(e.kernel + " " + e.hardware_key + " " + std::string(DTypeName(e.dtype)) + " " + e.bucket +
                             " " + e.config.ToString() + ": " + s.error().message + " [" + s.error().path + "]");
        }
        continue;
      }
    }
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::map<std::string, std::string>> GenerateAll(const std::vector<tuner::TunedEntry>& all,
                                                       std::vector<std::string>* skipped) {
  for (size_t i = 0; i < all.size(); ++i) {
    if (FindKernel(all[i].kernel) == nullptr) {
      return InvalidArgument("entry " + std::to_string(i) + ": unknown kernel '" + all[i].kernel + "'");
    }
  }
  const std::vector<tuner::TunedEntry> entries = Publishable(all, skipped);
  std::map<std::string, std::string> files;
  files["tuned_entries.jsonl"] = ExportJsonl(entries);
  for (const auto& [name, text] : ResolveHeaderFiles())
    files["include/blocktune/tables/" + std::string(name)] = std::string(text);
  files["python/blocktune_resolve.py"] = std::string(PythonResolveSource());
  for (const KernelSpec* spec : AllKernels()) {
    const std::string base = std::string(spec->name()) + "_tuned_block_sizes";
    files["include/blocktune/tables/" + base + ".h"] = GenerateHeader(*spec, entries);
    files["python/" + base + ".py"] = GeneratePython(*spec, entries);
    files["json/" + base + ".json"] = GenerateJson(*spec, entries);
  }
  return files;
}

Result<std::vector<std::string>> WriteFiles(const std::string& out_dir,
                                            const std::map<std::string, std::string>& files) {
  namespace fs = std::filesystem;
  std::vector<std::string> written;
  for (const auto& [rel, contents] : files) {
    const fs::path path = fs::path(out_dir) / rel;
    {
      std::ifstream in(path, std::ios::binary);
      if (in) {
        std::ostringstream cur;
        cur << in.rdbuf();
        if (cur.str() == contents) continue;
      }
    }
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec)
      return MakeError(ErrorCode::kFailedPrecondition,
                       "cannot create " + path.parent_path().string() + ": " + ec.message());
    const fs::path tmp = path.string() + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << contents;
      if (!out.flush()) return MakeError(ErrorCode::kFailedPrecondition, "cannot write " + tmp.string());
    }
    fs::rename(tmp, path, ec);
    if (ec) return MakeError(ErrorCode::kFailedPrecondition, "cannot rename " + tmp.string() + ": " + ec.message());
    written.push_back(path.string());
  }
  return written;
}

}  // namespace blocktune::codegen
