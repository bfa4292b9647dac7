// The sweep's checks on results from elsewhere; see check.h.
#include "tuner/check.h"

#include <cmath>
#include <string>

#include "blocktune/tables/resolve.h"

namespace blocktune::tuner {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool TimeOk(double v) { return std::isfinite(v) && v >= kMinTimeNs && v <= kMaxTimeNs; }

Status NonNegative(double v, const char* field) {
  if (!std::isfinite(v) || v < 0)
    return InvalidArgument(std::string(field) + " must be finite and >= 0, got " + Num(v), field);
  return {};
}

}  // namespace

Status CheckInSpace(const KernelSpec& spec, const Config& config) {
  for (const auto& [name, value] : config.values()) {
    const ParamSpec* param = nullptr;
    for (const auto& p : spec.params()) {
      if (p.name == name) param = &p;
    }
    if (param == nullptr) {
      return InvalidArgument("'" + name + "' is not a parameter of kernel " + std::string(spec.name()),
                             "config." + name);
    }
    bool candidate = false;
    for (int64_t c : param->candidates) candidate |= c == value;
    if (!candidate) {
      std::string list;
      for (size_t i = 0; i < param->candidates.size() && i < 16; ++i) {
        list += (i ? ", " : "") + std::to_string(param->candidates[i]);
      }
      if (param->candidates.size() > 16) list += ", ...";
      return InvalidArgument(
          name + " = " + std::to_string(value) + " is not one of the kernel's candidates (" + list + ")",
          "config." + name);
    }
  }
  for (const auto& p : spec.params()) {
    if (!config.Get(p.name)) return InvalidArgument("config lacks " + p.name, "config." + p.name);
  }
  return {};
}

Status CheckConfig(const KernelSpec& spec, const Config& config, const Problem& bucket_problem,
                   const HardwareProfile& hw) {
  if (auto s = CheckInSpace(spec, config); !s) return s;
  return spec.ValidateConfig(config, bucket_problem, hw);
}

Status CheckMeasurement(const KernelSpec& spec, const Measurement& m, const HardwareProfile& hw) {
  if (auto s = spec.ValidateProblem(m.problem); !s) return std::unexpected(WithPathPrefix(s.error(), "problem"));
  const auto [bucket, rep] = spec.Bucket(m.problem);
  if (m.bucket != bucket) {
    return InvalidArgument("bucket '" + m.bucket + "' is not the bucket of its problem (" + bucket + ")", "bucket");
  }
  if (auto s = CheckInSpace(spec, m.config); !s) return s;
  // A config recorded as invalid was refused before it ran (by this validation, or by an
  // external runner); every other outcome says it passed validation and ran.
  if (m.outcome != Outcome::kInvalid) {
    if (auto s = spec.ValidateConfig(m.config, rep, hw); !s) {
      Error e = s.error();
      e.message = "config " + m.config.ToString() + " is not valid for bucket " + bucket + " on " + hw.cpu.isa + ": " +
                  e.message + " (only an `invalid` outcome may hold such a config)";
      if (e.path.empty()) e.path = "config";
      return std::unexpected(std::move(e));
    }
  }
  if (m.iterations < 0)
    return InvalidArgument("iterations must be >= 0, got " + std::to_string(m.iterations), "iterations");
  for (const auto& [v, field] :
       {std::pair{m.cv, "cv"}, {m.max_abs_err, "max_abs_err"}, {m.max_rel_err, "max_rel_err"}}) {
    if (auto s = NonNegative(v, field); !s) return s;
  }
  for (size_t i = 0; i < m.samples_ns.size(); ++i) {
    if (!TimeOk(m.samples_ns[i])) {
      return InvalidArgument("a sample must be a time in [" + Num(kMinTimeNs) + ", " + Num(kMaxTimeNs) + "] ns, got " +
                                 Num(m.samples_ns[i]),
                             "samples_ns[" + std::to_string(i) + "]");
    }
  }
  const std::string outcome(OutcomeName(m.outcome));
  if (m.outcome == Outcome::kOk) {
    if (!TimeOk(m.median_ns)) {
      return InvalidArgument("an ok measurement's median must be a time in [" + Num(kMinTimeNs) + ", " +
                                 Num(kMaxTimeNs) + "] ns, got " + Num(m.median_ns),
                             "median_ns");
    }
    if (m.max_rel_err > 1) {
      return InvalidArgument("an ok measurement passed verification (max_rel_err <= 1), got " + Num(m.max_rel_err),
                             "max_rel_err");
    }
  } else if (m.median_ns != 0 && !TimeOk(m.median_ns)) {
    return InvalidArgument("median_ns must be 0 or a time in [" + Num(kMinTimeNs) + ", " + Num(kMaxTimeNs) +
                               "] ns, got " + Num(m.median_ns),
                           "median_ns");
  }
  if ((m.outcome == Outcome::kInvalid || m.outcome == Outcome::kCompileFailed) && !m.samples_ns.empty()) {
    return InvalidArgument("an " + outcome + " config never ran, so it has no samples", "samples_ns");
  }
  return {};
}

HardwareProfile ProfileOfKey(std::string_view key) {
  HardwareProfile hw;
  hw.cpu.arch = std::string(key.substr(0, key.find('.')));
  hw.cpu.isa = std::string(tables::KeyIsa(key));
  return hw;
}

Status CheckTunedEntry(const KernelSpec& spec, const TunedEntry& e) {
  if (e.bucket_version != spec.bucket_version()) {
    return InvalidArgument("bucket_version " + std::to_string(e.bucket_version) + " but the kernel uses " +
                               std::to_string(spec.bucket_version()) + "; re-tune or drop the row",
                           "bucket_version");
  }
  auto problem = spec.ProblemFromBucket(e.dtype, e.bucket);
  if (!problem) return InvalidArgument("bucket '" + e.bucket + "': " + problem.error().message, "bucket");
  if (e.hardware_key.empty() || e.hardware_key.find_first_of(" \"\\\n") != std::string::npos) {
    return InvalidArgument("malformed hardware key", "hardware_key");
  }
  // What an ingested measurement would be refused for (CheckMeasurement): a winner is an ok
  // measurement, so its median is a time and it has samples.
  if (!TimeOk(e.median_ns)) {
    return InvalidArgument(
        "median_ns must be a time in [" + Num(kMinTimeNs) + ", " + Num(kMaxTimeNs) + "] ns, got " + Num(e.median_ns),
        "median_ns");
  }
  if (e.samples < 1) return InvalidArgument("samples must be at least 1, got " + std::to_string(e.samples), "samples");
  if (auto s = CheckConfig(spec, e.config, *problem, ProfileOfKey(e.hardware_key)); !s) {
    Error err = s.error();
    err.message = "config " + e.config.ToString() + ": " + err.message;
    return std::unexpected(std::move(err));
  }
  return {};
}

}  // namespace blocktune::tuner
