// Importing other tuners' results (docs/external-kernels.md#import): Kernel Tuner cache files
// (both layouts: failure markers in the objective field, as releases before 1.0 write them, and
// under "__error__"; a truncated cache is read as far as it is valid), T4 JSON and the JSON the
// CLBlast tuners write (clblast_xgemm_1_32.json). Every record
// is kept: failures become outcomes, times become samples; the device becomes a device key, as
// a runner's would (gpu.nvidia.sm75.rtx_2080_ti), and the problem size a bucket of a spec that is created
// (written to a kernel folder) or matched. Storing is idempotent: the same records again find
// the sweep they made the first time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kernels/core/kernel_spec.h"
#include "store/store.h"
#include "tuner/device_key.h"
#include "tuner/measurement.h"

namespace blocktune::external {

struct ImportedParam {
  std::string name;
  std::vector<int64_t> values;      // integer codes, sorted for ordered parameters
  std::vector<std::string> labels;  // non-integer values of the source (code = index); empty if none
};

struct ImportedRecord {
  Config config;
  tuner::Outcome outcome = tuner::Outcome::kOk;
  std::string detail;
  std::vector<double> samples_ns;
};

struct ImportedSet {
  std::string format;         // "kerneltuner", "t4", "clblast"
  std::string kernel;         // blocktune kernel name
  DType dtype = DType::kF32;  // CLBlast files name their precision; the others are f32
  std::string device;         // as the file names it
  std::string hardware_key;   // DeviceHardwareKey(device) unless given
  // The device as a runner would announce it (ImportedDevice), kept as the import sweep's
  // provenance; platform is the --platform given, else the format.
  tuner::DeviceIdentity identity;
  std::vector<ImportedParam> params;
  NamedInts problem;  // dims: size_x, size_y, ... from the problem size
  std::vector<ImportedRecord> records;
  std::vector<std::string> warnings;  // truncated file, duplicate records, ...
  std::string context;                // more about the source for a created spec's description
};

// The identity of a device another tuner's file names: kind gpu (tpu if `platform` is tpu), the
// vendor from `vendor` when the source names it apart from the device ("Advanced Micro Devices,
// Inc.", "NVIDIA Corporation") else from the device name, the name as the model, and the
// architecture `arch` if given, else the gfx target an AMD device is named by (OpenCL on ROCm:
// "gfx906:sramecc+:xnack-", then also the model), else the known model's
// (tuner::KnownDeviceArch: "NVIDIA A100-PCIE-40GB" is sm80), else tuner::kUnknownArch.
tuner::DeviceIdentity ImportedDevice(const std::string& device, const std::string& platform = {},
                                     const std::string& vendor = {}, const std::string& arch = {});
// The device key of that identity, as a runner's would be: "NVIDIA GeForce RTX 2080 Ti" ->
// gpu.nvidia.sm75.rtx_2080_ti, "AMD Instinct MI250X" -> gpu.amd.gfx90a.mi250x, ("v5e", "tpu")
// -> tpu.google.v5e. A name that is already a key (what `blocktune export` writes) is kept, a
// key of the scheme before device keys (cuda.nvidia.geforce_rtx_2080_ti) mapped
// (tuner::LegacyDeviceKey).
std::string DeviceHardwareKey(const std::string& device, const std::string& platform = {},
                              const std::string& vendor = {}, const std::string& arch = {});

struct ImportOptions {
  std::string kernel;        // override the file's kernel name
  std::string hardware_key;  // override the device's key
  std::string platform;      // provenance (cuda, hip, opencl, ...); tpu makes a TPU key
  std::string arch;          // the device's architecture (sm86, gfx1030) when blocktune does not know it
};

Result<ImportedSet> ParseKernelTunerCache(const std::string& text, const ImportOptions& options);
Result<ImportedSet> ParseT4(const std::string& text, const ImportOptions& options);
// The JSON a CLBlast tuner writes: device fields, kernel_family, precision, arg_m/arg_n/arg_k/
// arg_batch_count (the dims), and "results" [{"kernel", "time" (ms, the best of its runs),
// "parameters"}]. CLBlast writes only configs that compiled, ran and matched its reference:
// every record is ok, and the configs it skipped are not in the file.
Result<ImportedSet> ParseCLBlast(const std::string& text, const ImportOptions& options);

// A spec for an imported kernel: its parameters and values, one exact-rounded dim per problem
// size component, no runner (add one to sweep it here).
std::string SpecJsonFor(const ImportedSet& set);
// Checks that `spec` can hold the set's records (same parameters, dims, values).
Status MatchSpec(const KernelSpec& spec, const ImportedSet& set);
// The text of an imported kernel's spec file (one without a runner) widened to hold the set as
// well: each parameter's values and the dtypes become the unions. The same CLBlast kernel tuned
// on a second device usually passes other values (its limits differ), and a Kernel Tuner cache of
// another problem size other configs. An error if the spec has a runner (its values are the
// author's), or the parameters differ in names or are categorical labels, or the dims differ.
Result<std::string> WidenSpecJson(const std::string& spec_text, const ImportedSet& set);

struct ImportSummary {
  int64_t sweep_id = 0;
  bool created = true;  // false: these records were imported before (idempotent)
  std::string bucket;
  int64_t records = 0;
  std::vector<std::pair<std::string, int64_t>> by_outcome;
  Config winner;
  double winner_median_ns = 0;
};

// Files the set as a finished exhaustive sweep of `spec` on the set's hardware key: its
// measurements with samples and the winner as the tuned row.
Result<ImportSummary> StoreImport(store::Store& db, const KernelSpec& spec, const ImportedSet& set);

}  // namespace blocktune::external
