// The C++ table writer: include/blocktune/tables/<kernel>_tuned_block_sizes.h, a header-only
// table of one kernel's rows with its lookup index precomputed as constexpr arrays (the same
// tables::BuildIndex the daemon runs), resolved by resolve.h beside it.
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/common.h"

namespace blocktune::codegen {
namespace {

std::string CppString(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string ConfigValues(const KernelSpec& spec, const Config& c) {
  std::string out = "{";
  for (size_t i = 0; i < spec.params().size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(c.Get(spec.params()[i].name).value_or(0));
  }
  return out + "}";
}

// kBuildFingerprint: the kernel's fingerprint in the build the header is compiled with.
std::string FingerprintSource(const KernelSpec& spec) {
  std::ostringstream o;
  o << "// The kernel's fingerprint in this build (empty if blocktune/kernel_fingerprints.h is not on the\n"
       "// include path: then no row is reported stale). A row whose fingerprint differs is stale.\n"
       "#ifdef BLOCKTUNE_TABLES_HAVE_FINGERPRINTS\n"
       "inline constexpr std::string_view kBuildFingerprint = ::blocktune::kernel_fingerprint::"
    << spec.name()
    << ";\n"
       "#else\n"
       "inline constexpr std::string_view kBuildFingerprint = {};\n"
       "#endif\n\n";
  return o.str();
}

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016llxull", static_cast<unsigned long long>(v));
  return buf;
}

std::string Id(uint32_t v) { return v == tables::kNoId ? std::string("kNoId") : std::to_string(v); }

std::string SlotsSource(const char* name, const tables::HashTableData& t) {
  std::ostringstream o;
  o << "inline constexpr std::array<HashSlot, " << t.slots.size() << "> " << name << "{{\n";
  // Four slots a line.
  for (size_t i = 0; i < t.slots.size(); ++i) {
    const auto& slot = t.slots[i];
    o << (i % 4 == 0 ? "    " : " ");
    if (slot.id == tables::kNoId) {
      o << "{0, kNoId},";
    } else {
      o << "{" << Hex(slot.hash) << ", " << slot.id << "},";
    }
    if (i % 4 == 3 || i + 1 == t.slots.size()) o << "\n";
  }
  o << "}};\n";
  return o.str();
}

// The header's index (resolve.h's IndexView), computed here by the same tables::BuildIndex the
// daemon runs over its rows, with rounded dims for buckets, and printed as constexpr arrays.
std::string IndexSource(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& rows) {
  std::vector<std::string> dtype_names;
  for (const auto& e : rows) dtype_names.emplace_back(DTypeName(e.dtype));
  std::vector<tables::IndexRow<std::vector<int64_t>>> index_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& e = rows[i];
    std::vector<int64_t> dims;
    const auto problem = spec.ProblemFromBucket(e.dtype, e.bucket);  // checked by Publishable
    for (const auto& d : spec.dims()) dims.push_back(problem ? problem->Dim(d.bucket.name) : 0);
    index_rows.push_back({e.hardware_key, dtype_names[i], std::move(dims)});
  }
  const auto x = tables::BuildIndex(index_rows);
  const size_t nd = spec.dims().size();
  auto list = [](const auto& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out;
  };
  std::ostringstream o;
  o << "// The index the lookups search (IndexView in resolve.h, built by tables::BuildIndex): names\n"
       "// (every row key and its prefixes at component boundaries, sorted) with their depths, the\n"
       "// ids of their prefixes and a hash table of them; dtypes; choices (for each row key and each\n"
       "// prefix of one with three or more components, per dtype and bucket: the row an exact lookup\n"
       "// of that name takes, and the row a fallback to it takes) with a hash table on name, dtype and\n"
       "// rounded dims.\n";
  o << "inline constexpr std::array<std::string_view, " << x.names.size() << "> kNames{{\n";
  for (const auto& k : x.names) o << "    " << CppString(k) << ",\n";
  o << "}};\n";
  o << "inline constexpr std::array<std::uint32_t, " << x.name_depth.size() << "> kNameDepth{{" << list(x.name_depth)
    << "}};\n";
  o << "inline constexpr std::size_t kPrefixWidth = " << x.prefix_width << ";\n";
  o << "inline constexpr std::array<std::uint32_t, " << x.prefix.size() << "> kPrefix{{\n";
  for (size_t id = 0; id < x.names.size(); ++id) {
    o << "   ";
    for (size_t d = 0; d < x.prefix_width; ++d) {
      const uint32_t v = x.prefix[id * x.prefix_width + d];
      o << " " << Id(v) << ",";
    }
    o << "\n";
  }
  o << "}};\n";
  o << SlotsSource("kNameSlots", x.name_table);
  o << "inline constexpr std::array<std::string_view, " << x.dtypes.size() << "> kDtypes{{";
  for (size_t i = 0; i < x.dtypes.size(); ++i) o << (i ? ", " : "") << CppString(x.dtypes[i]);
  o << "}};\n";
  o << "using Bucket = std::array<std::int64_t, " << nd << ">;\n";
  o << "// {name, dtype, rounded dims, exact row, fallback row}\n";
  o << "inline constexpr std::array<Choice<Bucket>, " << x.choices.size() << "> kChoices{{\n";
  for (const auto& c : x.choices) {
    o << "    {" << c.name << ", " << c.dtype << ", {{" << list(c.bucket) << "}}, " << Id(c.exact) << ", "
      << Id(c.under) << "},\n";
  }
  o << "}};\n";
  o << SlotsSource("kChoiceSlots", x.choice_table);
  o << "inline constexpr IndexView<Bucket> kIndex{\n"
       "    kNames.data(), kNames.size(), kNameDepth.data(), kPrefix.data(), kPrefixWidth,\n"
       "    {kNameSlots.data(), "
    << Hex(x.name_table.seed) << ", " << x.name_table.bits
    << "},\n"
       "    kDtypes.data(), kDtypes.size(), kChoices.data(), kChoices.size(),\n"
       "    {kChoiceSlots.data(), "
    << Hex(x.choice_table.seed) << ", " << x.choice_table.bits << "}};\n\n";
  return o.str();
}

}  // namespace

std::string GenerateHeader(const KernelSpec& spec, const std::vector<tuner::TunedEntry>& entries) {
  const auto rows = RowsFor(spec, entries);
  const std::string ns(spec.name());
  std::ostringstream o;
  o << Banner("//", spec, rows.size());
  o << "//\n"
       "// Header-only; needs only the C++17 standard library and resolve.h (with its parts) next to it. Usage:\n"
       "//   auto r = blocktune::tables::"
    << ns << "::LookupForHost(/*threads=*/1, \"f32\"";
  for (const auto& d : spec.dims()) o << ", " << d.bucket.name;
  o << ");\n"
       "//   r.config holds the block sizes; r.source says whether they were tuned for this key, borrowed\n"
       "//   from the same CPU at another thread count or another CPU of the same vendor and ISA level\n"
       "//   (tuned_fallback, r.fallback_levels 1 or 2), or the kernel's default.\n"
       "#pragma once\n\n"
       "#include <array>\n#include <cstdint>\n#include <string>\n#include <string_view>\n\n"
       "#include \"resolve.h\"\n\n"
       "// This build's kernel fingerprints (generated with the kernel library, installed beside\n"
       "// this folder): rows of another fingerprint are reported stale. Without it nothing is.\n"
       "#if __has_include(<blocktune/kernel_fingerprints.h>)\n"
       "#include <blocktune/kernel_fingerprints.h>\n"
       "#define BLOCKTUNE_TABLES_HAVE_FINGERPRINTS 1\n"
       "#endif\n\n"
       "namespace blocktune::tables::"
    << ns << " {\n\n";
  o << "struct BlockSizes {\n";
  for (const auto& p : spec.params()) o << "  std::int64_t " << p.name << ";\n";
  o << "};\n\n";
  o << "struct Row {\n"
       "  std::string_view hardware;\n  std::string_view dtype;\n  std::string_view bucket;\n"
       "  BlockSizes config;\n  double median_ns;\n  std::int64_t samples;\n"
       "  std::int64_t sweep_id;        // provenance: the sweep and measurement in the tuning DB\n"
       "  std::int64_t measurement_id;\n"
       "  std::string_view fingerprint;  // the kernel's fingerprint in the build that measured it; \"\": "
       "unknown\n};\n\n";
  o << "inline constexpr int kBucketVersion = " << spec.bucket_version() << ";\n";
  o << "inline constexpr BlockSizes kDefault" << ConfigValues(spec, spec.DefaultConfig()) << ";\n";
  o << "inline constexpr BucketDim kDims[] = {\n";
  for (const auto& d : spec.dims()) {
    o << "    {" << CppString(d.bucket.name) << ", "
      << (d.bucket.rounding == tables::Rounding::kPow2Ceil ? "Rounding::kPow2Ceil" : "Rounding::kExact") << ", "
      << d.bucket.min << ", " << d.bucket.max << "},\n";
  }
  o << "};\n\n";
  o << FingerprintSource(spec);
  o << "inline constexpr std::array<Row, " << rows.size() << "> kRows{{\n";
  for (const auto& e : rows) {
    if (e.gate) o << "    // " << GateSummary(*e.gate) << "\n";
    if (!e.device.empty()) o << "    // device: " << DeviceSummary(e) << "\n";
    o << "    {" << CppString(e.hardware_key) << ", " << CppString(DTypeName(e.dtype)) << ", " << CppString(e.bucket)
      << ", " << ConfigValues(spec, e.config) << ", " << Num(e.median_ns) << ", " << e.samples << ", " << e.sweep_id
      << ", " << e.measurement_id << ", " << CppString(e.fingerprint) << "},\n";
  }
  o << "}};\n\n";
  o << "// Per row, whether its fingerprint is known and not this build's (StaleFlags in resolve.h,\n"
       "// evaluated by the compiler): the answer's `stale`.\n"
       "inline constexpr std::array<bool, "
    << rows.size() << "> kStale = StaleFlags(kRows, kBuildFingerprint);\n\n";
  o << IndexSource(spec, rows);
  const size_t nd = spec.dims().size();
  std::string params, braced = "{{";
  for (size_t i = 0; i < nd; ++i) {
    params += std::string(", std::int64_t ") + spec.dims()[i].bucket.name;
    braced += std::string(i ? ", " : "") + spec.dims()[i].bucket.name;
  }
  braced += "}}";
  o << "// config, source (kTuned, kTunedFallback, kDefault), hardware, queried_hardware,\n"
       "// fallback_levels, bucket, median_ns, row, fingerprint (the row's), stale.\n"
       "using Lookup = TableLookup<Row, "
    << nd << ">;\n\n";
  o << "// Dims in kDims order.\n"
       "inline Lookup LookupDims(std::string_view hardware_key, std::string_view dtype,\n"
       "                         const std::array<std::int64_t, "
    << nd
    << ">& dims) {\n"
       "  // The keys this thread looked up before, resolved (QueryMemo in resolve.h).\n"
       "  thread_local QueryMemo memo;\n"
       "  return LookupInTable<kRows, kStale, kIndex, kDefault, kDims>(memo, dims, hardware_key, dtype);\n}\n\n";
  o << "inline Lookup LookupBlockSizes(std::string_view hardware_key, std::string_view dtype" << params << ") {\n"
    << "  return LookupDims(hardware_key, dtype, " << braced << ");\n}\n\n";
  o << "// A device key (gpu.<vendor>.<arch>.<model>) without rows of its own answered by another\n"
       "// model's row of the same architecture (source kTunedFallback, fallback_levels 1), as\n"
       "// `blocktuned --device-fallback same-arch` answers; LookupDims never does (off until\n"
       "// `blocktune regret` has measured what it costs). Other keys: as LookupDims.\n"
       "inline Lookup LookupDimsSameArch(std::string_view hardware_key, std::string_view dtype,\n"
       "                                 const std::array<std::int64_t, "
    << nd
    << ">& dims) {\n"
       "  return LookupInTableSameArch<kRows, kStale, kIndex, kDefault, kDims>(dims, hardware_key, dtype);\n}\n\n";
  o << "// Looks up with this machine's hardware key for the given thread count. The first call detects\n"
       "// the CPU (CPUID and BLOCKTUNE_ISA, once per process: see HostKeys in resolve.h) and resolves\n"
       "// the host's key at every thread count against kNames; later calls start from those.\n";
  o << "inline Lookup LookupForHost(int threads, std::string_view dtype" << params << ") {\n"
    << "  static const HostChain host = kIndex.ForHost();\n"
    << "  return LookupInTableForHost<kRows, kStale, kIndex, kDefault, kDims>(host, " << braced
    << ", threads, dtype);\n"
    << "}\n\n}  // namespace blocktune::tables::" << ns << "\n";
  return o.str();
}

}  // namespace blocktune::codegen
