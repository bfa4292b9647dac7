// The regression gate; see gate.h.
#include "tuner/gate.h"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <optional>
#include <tuple>

#include "kernels/core/fingerprint.h"
#include "kernels/core/hardware.h"
#include "tuner/lookup.h"
#include "tuner/timing/paired.h"

namespace blocktune::tuner {
namespace {

auto Key(const TunedEntry& e) { return std::make_tuple(e.kernel, e.hardware_key, e.dtype, e.bucket); }

}  // namespace

int KeyThreads(std::string_view key) {
  const size_t dot = key.rfind('.');
  if (dot == std::string_view::npos || dot + 2 > key.size() || key[dot + 1] != 't') return 0;
  int t = 0;
  for (char c : key.substr(dot + 2)) {
    if (c < '0' || c > '9' || t > 100000) return 0;
    t = t * 10 + (c - '0');
  }
  return t;
}

bool IsHostKey(std::string_view key) {
  const int threads = KeyThreads(key);
  if (threads <= 0) return false;
  // This CPU at any level it can run: the gate times a row in a worker started at the row's
  // level (EvalRequest::isa), so an AVX2 row of an AVX-512 host is this machine's to judge.
  const std::string level(tables::KeyIsa(key));
  if (!HostCanRun(level)) return false;
  HardwareProfile hw = HardwareProfile::Detect(threads);
  hw.cpu.isa = level;
  return hw.Key() == key;
}

Result<std::vector<TunedEntry>> GatedMerge(std::vector<TunedEntry> base, const std::vector<TunedEntry>& update,
                                           const GateOptions& options, std::vector<GateEvent>* events) {
  const auto find_kernel = options.find_kernel ? options.find_kernel : [](std::string_view n) { return FindKernel(n); };
  const auto is_host = options.is_host_key ? options.is_host_key : [](std::string_view k) { return IsHostKey(k); };
  std::unique_ptr<InProcessEvaluator> own;
  Evaluator* evaluator = options.evaluator;
  for (const TunedEntry& u : update) {
    auto it = std::find_if(base.begin(), base.end(), [&](const TunedEntry& b) { return Key(b) == Key(u); });
    if (it == base.end()) {
      base.push_back(u);
      continue;
    }
    TunedEntry& b = *it;
    GateEvent ev{u.kernel, u.hardware_key, std::string(DTypeName(u.dtype)), u.bucket, "", std::nullopt, ""};
    auto note = [&](std::string what, std::string detail) {
      ev.what = std::move(what);
      ev.detail = std::move(detail);
      if (events != nullptr) events->push_back(ev);
    };
    // Staleness first: a row measured by another build of the kernel never replaces a fresh one.
    if (FreshnessOf(u.kernel, u.fingerprint) == Freshness::kStale &&
        FreshnessOf(b.kernel, b.fingerprint) == Freshness::kFresh) {
      note("stale_db_row",
           "the database row's fingerprint " + u.fingerprint + " is not this build's; kept the fresh row");
      continue;
    }
    // A device's row (gpu.nvidia.sm90.h200) is this machine's to judge where the kernel's runner
    // measures on that device, which only its answers tell (below).
    const bool device_row = tables::IsDeviceKey(u.hardware_key);
    if (!is_host(u.hardware_key) && !device_row) {
      b = u;
      note("other_profile", "not this machine's key: merged as it is");
      continue;
    }
    if (b.config == u.config) {
      b = u;
      note("same_config", "same config: the database row's measurement replaces the old one");
      continue;
    }
    const KernelSpec* spec = find_kernel(u.kernel);
    if (spec == nullptr) return InvalidArgument("unknown kernel '" + u.kernel + "'", "kernel");
    if (device_row && spec->runner() == nullptr) {
      b = u;
      note("other_profile", "a device's row of a kernel without a runner here: merged as it is");
      continue;
    }
    // Where the runner answered from: a device row is judged only on its own device.
    auto elsewhere = [&](std::initializer_list<const Measurement*> ms) -> std::optional<std::string> {
      if (!device_row) return std::nullopt;
      bool seen = false;
      for (const Measurement* m : ms) {
        if (m->device_key.empty()) continue;
        if (m->device_key != u.hardware_key) {
          return "the runner measures on " + m->device_key + ", not " + u.hardware_key + ": merged as it is";
        }
        seen = true;
      }
      if (!seen) return "the runner did not answer from " + u.hardware_key + ": merged as it is";
      return std::nullopt;
    };
    if (b.bucket_version != spec->bucket_version()) {
      b = u;
      note("old_row_invalid", "the checked-in row is of another bucket version");
      continue;
    }
    GateRecord rec;
    rec.old_config = b.config;
    rec.new_config = u.config;
    rec.at = options.now.empty() ? UtcNow() : options.now;
    if (options.force) {
      rec.decision = "forced";
      b = u;
      b.gate = rec;
      ev.record = rec;
      note("forced", "--force: replaced without timing");
      continue;
    }
    auto problem = spec->ProblemFromBucket(u.dtype, u.bucket);
    if (!problem) return std::unexpected(WithPathPrefix(problem.error(), "bucket"));
    const int threads = std::max(1, KeyThreads(u.hardware_key));
    if (evaluator == nullptr) {
      own = std::make_unique<InProcessEvaluator>();
      evaluator = own.get();
    }
    // Both must pass verification on this build before either is timed. Through the evaluator,
    // like the timing: with a WorkerEvaluator (the CLI's) a config that crashes, hangs or eats
    // memory is an outcome of its worker process, and the merge goes on. Measure verifies and
    // then times once; one repetition of at least 1 ms, not retried, keeps that cheap (the
    // decision rests on the interleaved timing below).
    const HardwareProfile hw = HardwareProfile::Detect(threads);
    const std::string isa = device_row ? std::string() : std::string(tables::KeyIsa(u.hardware_key));
    EvalRequest verify{spec, *problem, threads, 1, options.timing, isa};
    verify.timing.repetitions = 1;
    verify.timing.min_repetition_ns = 1e6;
    verify.timing.max_retries = 0;
    auto check = [&](const Config& c, Measurement& m) {
      if (auto s = spec->ValidateConfig(c, *problem, hw); !s) {
        m.detail = "invalid here: " + s.error().message;
        return false;
      }
      evaluator->Measure(verify, c, m);
      if (m.outcome == Outcome::kOk) return true;
      m.detail = std::string(OutcomeName(m.outcome)) + (m.detail.empty() ? "" : ": " + m.detail);
      return false;
    };
    Measurement vo, vn;
    const bool old_ok = check(b.config, vo);
    const bool new_ok = check(u.config, vn);
    if (auto why = elsewhere({&vo, &vn})) {
      b = u;
      note("other_device", *why);
      continue;
    }
    if (!new_ok) {
      rec.decision = "kept";
      b.gate = rec;
      ev.record = rec;
      note("kept", "the new config failed verification: " + vn.detail);
      continue;
    }
    if (!old_ok) {
      rec.decision = "replaced";
      b = u;
      b.gate = rec;
      ev.record = rec;
      note("replaced", "the old config failed verification: " + vo.detail);
      continue;
    }
    const EvalRequest req{spec, *problem, threads, 1, options.timing, isa};
    const std::vector<Measurement> t = evaluator->MeasureInterleaved(req, {b.config, u.config});
    const Measurement& old_m = t.at(0);
    const Measurement& new_m = t.at(1);
    if (auto why = elsewhere({&old_m, &new_m})) {
      b = u;
      note("other_device", *why);
      continue;
    }
    rec.old_ns = old_m.median_ns;
    rec.new_ns = new_m.median_ns;
    rec.repetitions = static_cast<int64_t>(std::min(old_m.samples_ns.size(), new_m.samples_ns.size()));
    char buf[200];
    if (old_m.outcome != Outcome::kOk || new_m.outcome != Outcome::kOk) {
      const bool take_new = old_m.outcome != Outcome::kOk && new_m.outcome == Outcome::kOk;
      rec.decision = take_new ? "replaced" : "kept";
      std::snprintf(buf, sizeof buf, "re-timing: old %s, new %s", std::string(OutcomeName(old_m.outcome)).c_str(),
                    std::string(OutcomeName(new_m.outcome)).c_str());
    } else {
      // Paired, as the decision round judges a pair (tuner/decision.h): the per-cycle ratios of
      // the two configs' interleaved repetitions and the band of their spread.
      const timing::PairedComparison c =
          timing::ComparePaired(new_m.samples_ns, old_m.samples_ns, options.min_noise_band);
      rec.noise_band = c.band;
      rec.decision = c.Beats() ? "replaced" : "kept";
      std::snprintf(buf, sizeof buf, "new config %.1f%% %s than the old, noise band %.1f%% (%lld paired repetitions)",
                    100 * std::abs(c.gain), c.gain >= 0 ? "faster" : "slower", 100 * rec.noise_band,
                    static_cast<long long>(c.cycles));
    }
    ev.record = rec;
    if (rec.decision == "replaced") {
      b = u;
      b.gate = rec;
    } else {
      b.gate = rec;
      // The old config was just timed by this build and won: a stale row is re-stamped (its
      // median is this timing); an unknown one stays unknown (nothing re-measured its sweep).
      if (FreshnessOf(b.kernel, b.fingerprint) == Freshness::kStale && old_m.outcome == Outcome::kOk) {
        b.fingerprint = std::string(KernelFingerprint(b.kernel));
        b.median_ns = old_m.median_ns;
        b.samples = rec.repetitions;
      }
    }
    note(rec.decision, buf);
  }
  std::sort(base.begin(), base.end(), [](const TunedEntry& a, const TunedEntry& b) {
    return std::make_tuple(a.kernel, a.hardware_key, std::string(DTypeName(a.dtype)), a.bucket) <
           std::make_tuple(b.kernel, b.hardware_key, std::string(DTypeName(b.dtype)), b.bucket);
  });
  return base;
}

}  // namespace blocktune::tuner
