// The table generator. Deterministic: the same entries give byte-identical files (rows sorted,
// fixed key order, no generation timestamps), so regenerating unchanged data is a no-op diff.
//
//   tuned entries (DB) --ExportJsonl--> tables/tuned_entries.jsonl   (checked in)
//   tuned_entries.jsonl --Generate*--> include/blocktune/tables/<kernel>_tuned_block_sizes.h
//                                      python/<kernel>_tuned_block_sizes.py
//                                      json/<kernel>_tuned_block_sizes.json
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"
#include "tuner/measurement.h"

namespace blocktune::codegen {

// The command printed in every banner.
inline constexpr std::string_view kRegenerateCommand = "blocktune tables generate --out tables [--db var/blocktune.db]";

std::string_view ResolveHeaderSource();
// resolve.h and every part it includes (hardware_key.h, bucket.h, ...), as {file name, text}:
// the generator writes them all beside the generated headers, which need nothing else.
const std::vector<std::pair<std::string_view, std::string_view>>& ResolveHeaderFiles();
// tables/python/blocktune_resolve.py, the Python twin of resolve.h, embedded the same way: the
// generator writes it back beside the per-kernel modules.
std::string_view PythonResolveSource();
// tables/tuned_entries.jsonl as it was when this binary was built (the checked-in table).
std::string_view CheckedInEntriesJsonl();

// Sorts by (kernel, hardware_key, dtype, bucket) and prints one JSON object per line.
std::string ExportJsonl(std::vector<tuner::TunedEntry> entries);
// Parses jsonl; errors name the line ("line 3: missing field 'config'").
Result<std::vector<tuner::TunedEntry>> ParseJsonl(std::string_view text);
// Entries of `update` replace those of `base` with the same (kernel, hardware, dtype, bucket),
// except that a stale entry (kernels/core/fingerprint.h) never replaces a fresh one. `tables
// generate --db` merges through tuner::GatedMerge instead, which adds the regression gate.
std::vector<tuner::TunedEntry> Merge(std::vector<tuner::TunedEntry> base, const std::vector<tuner::TunedEntry>& update);

std::string GenerateHeader(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries);
std::string GeneratePython(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries);
std::string GenerateJson(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries);

// The rows that may be published or served: those of a kernel this build knows that pass the
// sweep's checks (tuner::CheckTunedEntry: current bucket version, canonical bucket, a config of
// the kernel's space that it validates for the bucket on the row's ISA). Rows of an unknown
// kernel are kept (the caller decides); every other row is dropped and described in `skipped`
// ("matmul x86_64.avx2.amd.fam25_mod1.t1 f32 m999_n1_k1 block_m=48,...: bucket ...").
std::vector<tuner::TunedEntry> Publishable(std::vector<tuner::TunedEntry> rows,
                                           std::vector<std::string>* skipped = nullptr);

// Every file the generator owns, relative to the output directory, with its contents: the
// jsonl, resolve.h, and the three tables of every registered kernel, over the Publishable rows
// (a row that does not fit its kernel, e.g. from a database an older build wrote, is skipped and
// described in `skipped`, never published). Error: a row of a kernel this build does not know.
Result<std::map<std::string, std::string>> GenerateAll(const std::vector<tuner::TunedEntry>& entries,
                                                       std::vector<std::string>* skipped = nullptr);

// Writes files whose contents changed (atomically: temp file + rename); returns the paths written.
Result<std::vector<std::string>> WriteFiles(const std::string& out_dir,
                                            const std::map<std::string, std::string>& files);

}  // namespace blocktune::codegen
