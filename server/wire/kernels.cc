// Wire format of kernels (parameters, dimensions, buckets, default config) and hardware
// profiles, and their component schemas.
#include <array>

#include "external/spec.h"
#include "kernels/core/fingerprint.h"

#include "server/wire/internal.h"
#include "server/wire/schema.h"
#include "server/wire/wire.h"

namespace blocktune::server::wire {

namespace internal {

void AddKernelSchemas(Json& s) {
  using namespace schema;
  s["Kernel"] = Object(
      {{"name", Str()},
       {"description", Str()},
       {"params",
        Array(Object({{"name", Str()}, {"candidates", Array(Int())}, {"doc", Str()}}), "block-size parameters")},
       {"dims", Array(Object({{"name", Str()}, {"max", Int()}, {"doc", Str()}}), "problem dimensions")},
       {"dtypes", Array(Ref("DType"))},
       {"bucket_version", Int()},
       {"buckets",
        Array(
            Object(
                {{"dim", Str()}, {"rounding", Enum(std::array{"pow2_ceil", "exact"})}, {"min", Int()}, {"max", Int()}}),
            "how each dimension maps to its bucket")},
       {"config_space_size", Int("configs an exhaustive sweep tries per bucket")},
       {"default_config", Ref("Config")},
       {"fingerprint", Str("this build's kernel fingerprint: a hash of the sources that decide the kernel's speed and "
                           "of the compiler and flags; tuned rows record the one they were measured with")},
       {"external",
        Object(
            {{"source_file", Str("the spec file it was loaded from")},
             {"kernel_dir", Str("the --kernel-dir that holds it (the spec is in it, or in a folder directly in it)")},
             {"restrictions", Array(Str(), "expressions over parameter and dim names that must hold")},
             {"categorical", Array(Str(), "parameters whose values are unordered")},
             {"runner", Object({{"command", Array(Str())}, {"persistent", Bool()}, {"timeout_s", Num()}})}},
            "present for kernels declared in a spec file (--kernel-dir)"),
        false}});
  // An open object: the served document is a JSON Schema of its own (schema/kernel-spec.schema.json).
  s["JsonSchema"] = Json{{"type", "object"}, {"description", "a JSON Schema document (draft 2020-12)"}};
  s["KernelList"] = Object({{"kernels", Array(Ref("Kernel"))}});
  s["KernelReload"] = Object({{"added", Array(Str(), "kernels of new spec files")},
                              {"replaced", Array(Str(), "kernels whose spec file changed")},
                              {"unchanged", Int("spec files as they were")},
                              {"tuned_rows", Int("tuned rows lookups serve now")}});
  s["Hardware"] = Object({{"key", Str("dotted path from general to specific, e.g. x86_64.avx512.intel.fam6_mod167.t1")},
                          {"arch", Str()},
                          {"isa", Str()},
                          {"vendor", Str()},
                          {"family", Int()},
                          {"model", Int()},
                          {"model_name", Str()},
                          {"cores", Int()},
                          {"l1d_bytes", Int()},
                          {"l2_bytes", Int()},
                          {"l3_bytes", Int()},
                          {"threads", Int()},
                          {"id", Int("database id; absent for the host"), false},
                          {"first_seen_at", Str("absent for the host"), false}});
  s["HardwareList"] = Object({{"host", Ref("Hardware")}, {"profiles", Array(Ref("Hardware"))}});
}

}  // namespace internal

Json EncodeKernel(const KernelSpec& k) {
  Json params = Json::array();
  for (const auto& p : k.params()) params.push_back({{"name", p.name}, {"candidates", p.candidates}, {"doc", p.doc}});
  Json dims = Json::array();
  Json buckets = Json::array();
  for (const auto& d : k.dims()) {
    dims.push_back({{"name", d.bucket.name}, {"max", d.max_value}, {"doc", d.doc}});
    buckets.push_back({{"dim", d.bucket.name},
                       {"rounding", d.bucket.rounding == tables::Rounding::kPow2Ceil ? "pow2_ceil" : "exact"},
                       {"min", d.bucket.min},
                       {"max", d.bucket.max}});
  }
  Json dtypes = Json::array();
  for (DType d : k.dtypes()) dtypes.push_back(DTypeName(d));
  // Constraints are per parameter (its doc) plus the kernel's Validate, which a config is run
  // through before anything is launched; the space size says what exhaustive costs.
  Json j{{"name", k.name()},
         {"description", k.description()},
         {"params", params},
         {"dims", dims},
         {"dtypes", dtypes},
         {"bucket_version", k.bucket_version()},
         {"buckets", buckets},
         {"config_space_size", k.ConfigSpace().size()},
         {"default_config", EncodeConfig(k.DefaultConfig())},
         {"fingerprint", KernelFingerprint(k.name())}};
  if (const RunnerSpec* r = k.runner()) {
    Json categorical = Json::array();
    for (const auto& p : k.params()) {
      if (p.categorical) categorical.push_back(p.name);
    }
    const auto* external = dynamic_cast<const external::ExternalKernelSpec*>(&k);
    j["external"] =
        Json{{"source_file", k.source_file()},
             {"kernel_dir", external != nullptr ? external->kernel_dir() : std::string()},
             {"restrictions", k.restriction_texts()},
             {"categorical", categorical},
             {"runner", Json{{"command", r->command}, {"persistent", r->persistent}, {"timeout_s", r->timeout_s}}}};
  }
  return j;
}

Json EncodeKernelList() {
  Json list = Json::array();
  for (const KernelSpec* k : AllKernels()) list.push_back(EncodeKernel(*k));
  return Json{{"kernels", list}};
}

Json EncodeKernelReload(const std::vector<std::string>& added, const std::vector<std::string>& replaced,
                        int64_t unchanged, int64_t tuned_rows) {
  return Json{{"added", added}, {"replaced", replaced}, {"unchanged", unchanged}, {"tuned_rows", tuned_rows}};
}

Json EncodeHardware(const HardwareProfile& hw, int64_t id, const std::string& first_seen_at) {
  Json j{
      {"key", hw.Key()},           {"arch", hw.cpu.arch},     {"isa", hw.cpu.isa},           {"vendor", hw.cpu.vendor},
      {"family", hw.cpu.family},   {"model", hw.cpu.model},   {"model_name", hw.model_name}, {"cores", hw.cores},
      {"l1d_bytes", hw.l1d_bytes}, {"l2_bytes", hw.l2_bytes}, {"l3_bytes", hw.l3_bytes},     {"threads", hw.threads}};
  if (id > 0) j["id"] = id;
  if (!first_seen_at.empty()) j["first_seen_at"] = first_seen_at;
  return j;
}

Json EncodeHardwareList(const std::vector<store::HardwareRecord>& rows, const HardwareProfile& host) {
  Json list = Json::array();
  for (const auto& r : rows) list.push_back(EncodeHardware(r.profile, r.id, r.first_seen_at));
  return Json{{"host", EncodeHardware(host, 0, "")}, {"profiles", list}};
}

}  // namespace blocktune::server::wire
