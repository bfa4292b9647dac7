// In-process evaluation: verification against cached references, then robust timing on
// rotating input sets, re-timed while too noisy, and checked against the physical floor.
#include "tuner/evaluator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "tuner/search/stored_buckets.h"
#include "tuner/timing/floor.h"
#include "tuner/timing/paired.h"
#include "tuner/verify/watch.h"

namespace blocktune::tuner {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Reference outputs for verification problems, reused across configs that share a problem
// (many configs differ only in a block size the verification shape does not depend on). The
// least recently used ones go past 128 MiB, counted as twice the problem's minimum traffic
// (inputs, outputs and the reference copy of the outputs): the 512^3 matmul bucket's 180
// configs verify on 90 problems (~100 MiB), and a cap of 16 instances recomputed 158
// references (0.5 s) where 90 do.
class ReferenceCache {
 public:
  KernelInstance* Get(const KernelSpec& spec, const Problem& p) {
    const std::string key = Key(spec, p);
    ++tick_;
    auto it = cache_.find(key);
    if (it != cache_.end()) {
      it->second.used = tick_;
      return it->second.instance.get();
    }
    const double bytes = 2.0 * spec.Bytes(p);
    while (!cache_.empty() && bytes_ + bytes > kMaxBytes) {
      auto oldest = cache_.begin();
      for (auto e = cache_.begin(); e != cache_.end(); ++e) {
        if (e->second.used < oldest->second.used) oldest = e;
      }
      Erase(oldest);
    }
    const auto start = std::chrono::steady_clock::now();
    auto inst = spec.MakeInstance(p, /*seed=*/0x5eed);
    inst->RunReference();
    reference_s += SecondsSince(start);
    bytes_ += bytes;
    Entry& e = cache_[key];
    e = Entry{std::move(inst), bytes, tick_};
    return e.instance.get();
  }
  double reference_s = 0;  // spent computing references (the misses), for the breakdown
  // Drops an instance whose inputs a kernel modified: its reference no longer matches them.
  void Evict(const KernelSpec& spec, const Problem& p) {
    if (auto it = cache_.find(Key(spec, p)); it != cache_.end()) Erase(it);
  }

 private:
  static constexpr double kMaxBytes = 128.0 * 1024 * 1024;
  struct Entry {
    std::unique_ptr<KernelInstance> instance;
    double bytes = 0;
    uint64_t used = 0;  // tick_ of the last Get
  };
  static std::string Key(const KernelSpec& spec, const Problem& p) {
    return std::string(spec.name()) + "|" + p.ToString();
  }
  void Erase(std::map<std::string, Entry>::iterator it) {
    bytes_ -= it->second.bytes;
    cache_.erase(it);
  }
  std::map<std::string, Entry> cache_;
  double bytes_ = 0;
  uint64_t tick_ = 0;
};

std::string Describe(const VerifyReport& r) {
  return "elements=" + std::to_string(r.elements) + " mismatches=" + std::to_string(r.mismatches) +
         " non_finite=" + std::to_string(r.non_finite) + " max_abs_err=" + std::to_string(r.max_abs_err) +
         " max_err_over_tolerance=" + std::to_string(r.max_rel_err);
}

bool VerifyChecked(ReferenceCache& cache, const KernelSpec& spec, const Config& config, const Problem& bucket_problem,
                   int threads, Measurement& m) {
  const Problem problem = spec.VerificationProblem(config, bucket_problem);
  KernelInstance* inst = cache.Get(spec, problem);
  inst->PoisonOutputs();
  const verify::RunWatch watch(*inst);  // input checksums and output guard canaries
  if (auto s = inst->Run(config, threads); !s) {
    m.outcome = Outcome::kInvalid;
    m.detail = s.error().message;
    return false;
  }
  if (auto v = watch.Check()) {
    m.outcome = Outcome::kWrongResult;
    m.detail = "verification failed: " + v->detail;
    if (v->inputs_modified) cache.Evict(spec, problem);
    return false;
  }
  const VerifyReport r = inst->Verify();
  m.max_abs_err = r.max_abs_err;
  m.max_rel_err = r.max_rel_err;
  if (r.ok) return true;
  m.outcome = r.non_finite > 0 ? Outcome::kNan : Outcome::kWrongResult;
  m.detail = "verification failed: " + Describe(r);
  return false;
}

// VerifyChecked, with its time added to `costs` (the reference computations it triggered to
// reference_s, the rest to verify_s).
bool VerifyWith(ReferenceCache& cache, const KernelSpec& spec, const Config& config, const Problem& bucket_problem,
                int threads, Measurement& m, EvalCosts* costs = nullptr) {
  const auto start = std::chrono::steady_clock::now();
  const double reference_before = cache.reference_s;
  const bool ok = VerifyChecked(cache, spec, config, bucket_problem, threads, m);
  if (costs != nullptr) {
    const double reference = cache.reference_s - reference_before;
    costs->reference_s += reference;
    costs->verify_s += SecondsSince(start) - reference;
  }
  return ok;
}

void FillTiming(const Result<timing::TimingResult>& t, Measurement& m) {
  if (!t) {
    m.outcome = Outcome::kInvalid;
    m.detail = t.error().message;
    return;
  }
  m.outcome = Outcome::kOk;
  m.samples_ns = t->samples_ns;
  m.iterations = t->iterations;
  m.median_ns = t->median_ns;
  m.cv = t->cv;
}

// The timed problem as `sets` independent instances (same shape, seeds seed, seed + 1, ...);
// Run calls them in turn so consecutive calls never find their inputs warm from the last.
struct Rotation {
  Status Run(const Config& config, int threads) {
    KernelInstance& inst = *sets[next];
    next = (next + 1) % sets.size();
    return inst.Run(config, threads);
  }

  std::vector<std::unique_ptr<KernelInstance>> sets;
  size_t next = 0;
};

RunnerMeasurerFactory runner_factory = nullptr;

// "config|threads|minimum repetition ns": a count calibrated for another minimum repetition time
// is not this request's. The regression gate verifies with 1 ms repetitions and then times
// 20 ms ones; with the count keyed by config alone its interleaved rounds reused the 1 ms count,
// and on a loaded machine every other one of those short repetitions was preempted.
std::string CalibrationKey(const Config& config, const EvalRequest& request) {
  return config.ToString() + "|" + std::to_string(request.threads) + "|" +
         std::to_string(static_cast<int64_t>(request.timing.min_repetition_ns));
}

}  // namespace

void SetRunnerMeasurerFactory(RunnerMeasurerFactory factory) { runner_factory = factory; }

namespace {

// External kernels: created on first use, so processes that never see one start no runner.
RunnerMeasurer* Runners(std::unique_ptr<RunnerMeasurer>& slot, Measurement* m) {
  if (!slot && runner_factory != nullptr) slot = runner_factory();
  if (!slot && m != nullptr) {
    m->outcome = Outcome::kInvalid;
    m->detail = "external kernel, but this program cannot start runners (no kernel directory loaded)";
  }
  return slot.get();
}

}  // namespace

struct InProcessEvaluator::Cache {
  EvalCosts costs;
  std::unique_ptr<RunnerMeasurer> runners;
  ReferenceCache references;
  std::string timed_key;  // kernel|problem|seed|sets of `timed`
  Rotation timed;
  // Iterations per repetition each config was calibrated to on `timed` (CalibrationKey), so
  // a decision round of configs this process measured before skips their growth batches: at
  // 2048^3 a growth batch is a whole 0.2 s call per config, 21 of a 153 s sweep's seconds.
  std::map<std::string, int64_t> calibrated;

  Rotation& Timed(const EvalRequest& r) {
    const HardwareProfile& host = HostHardware();
    const int sets = r.timing.rotation_sets > 0 ? r.timing.rotation_sets
                                                : timing::RotationSets(r.spec->Bytes(r.problem), host.l2_bytes,
                                                                       host.l3_bytes, host.cores, r.threads);
    const std::string key = std::string(r.spec->name()) + "|" + r.problem.ToString() + "|" + std::to_string(r.seed) +
                            "|" + std::to_string(sets);
    if (timed.sets.empty() || key != timed_key) {
      const auto start = std::chrono::steady_clock::now();
      timed.sets.clear();  // free the previous bucket's buffers before allocating the next
      timed.next = 0;
      calibrated.clear();
      for (int i = 0; i < sets; ++i) timed.sets.push_back(r.spec->MakeInstance(r.problem, r.seed + uint64_t(i)));
      timed_key = key;
      costs.setup_s += SecondsSince(start);
    }
    return timed;
  }
};

namespace {

// Times the config; while the kept repetitions spread more than the limit, times more of them
// one at a time and keeps the quietest window of `repetitions` consecutive ones, up to
// `max_retries` attempts' worth of extra repetitions. A window of consecutive repetitions at a
// fixed iteration count is what a fresh attempt would be, so this keeps the old rule (the
// quietest attempt; interference only adds time and spread) at a fraction of its cost: one
// preempted stretch used to cost a whole attempt (5 x 20 ms plus a warm-up and growth), and is
// usually over after a repetition or two. `attempts` counts attempts' worth of repetitions.
Result<timing::TimingResult> TimeStable(Rotation& rot, const Config& config, const EvalRequest& r, int& attempts,
                                        EvalCosts& costs) {
  const auto run = [&] { return rot.Run(config, r.threads); };
  auto t = timing::TimeRepeated(run, r.timing);
  attempts = 1;
  if (!t) return t;
  costs.calibrate_s += t->calibrate_ns * 1e-9;
  const size_t window = t->samples_ns.size();
  std::vector<double> all = t->samples_ns;
  size_t best = 0;  // start of the quietest window so far
  double best_cv = timing::RobustCv(t->samples_ns);
  const int64_t extra_max = static_cast<int64_t>(std::max(r.timing.max_retries, 0)) * static_cast<int64_t>(window);
  int64_t extra = 0;
  while (window > 0 && !t->stopped && best_cv > r.timing.max_cv && extra < extra_max) {
    auto one = timing::TimeFixed(run, t->iterations, r.timing.clock_ns);
    if (!one) return std::unexpected(one.error());
    all.push_back(*one);
    ++extra;
    const size_t start = all.size() - window;
    const double cv =
        timing::RobustCv(std::vector<double>(all.begin() + static_cast<std::ptrdiff_t>(start), all.end()));
    if (cv < best_cv) {
      best_cv = cv;
      best = start;
    }
  }
  if (extra > 0) {
    attempts = 1 + static_cast<int>((extra + static_cast<int64_t>(window) - 1) / static_cast<int64_t>(window));
    costs.retries += extra;
    t->samples_ns.assign(all.begin() + static_cast<std::ptrdiff_t>(best),
                         all.begin() + static_cast<std::ptrdiff_t>(best + window));
    t->median_ns = timing::Median(t->samples_ns);
    t->cv = timing::CoefficientOfVariation(t->samples_ns);
    double kept = 0, total = 0;
    for (double ns : t->samples_ns) kept += ns;
    for (double ns : all) total += ns;
    const double per_rep = static_cast<double>(t->iterations) * 1e-9;
    t->timed_ns = kept * static_cast<double>(t->iterations);
    costs.retry_s += (total - kept) * per_rep;
  }
  costs.timed_s += t->timed_ns * 1e-9;
  return t;
}

// Turns an ok timing into `unstable` or `invalid` (below the floor) where it must. A timing
// stopped behind (TimingOptions::stop_above_ns) is not judged by its spread: two repetitions
// both past the line say it is behind however they spread, and `unstable` would tell the search
// it failed rather than that it is slow.
void JudgeTiming(const EvalRequest& r, int attempts, bool stopped, Measurement& m) {
  if (m.outcome != Outcome::kOk) return;
  char buf[256];
  if (r.timing.check_floor) {
    const double floor_ns = timing::PhysicalFloorNs(
        *r.spec, r.problem, timing::PeaksFor(HostHardware().cpu.isa, r.problem.dtype, r.threads));
    if (m.median_ns < floor_ns) {
      std::snprintf(buf, sizeof buf, ": median %.0f ns < %.0f ns (flops at peak FMA rate, bytes at 1 TB/s per thread)",
                    m.median_ns, floor_ns);
      m.outcome = Outcome::kInvalid;
      m.detail = std::string(search::kBelowFloorDetail) + buf;
      return;
    }
  }
  if (const double spread = timing::RobustCv(m.samples_ns); !stopped && spread > r.timing.max_cv) {
    std::snprintf(buf, sizeof buf,
                  "robust cv %.3f (cv %.3f) above %.3f after %d timing attempts (quietest window of %zu consecutive "
                  "repetitions kept)",
                  spread, m.cv, r.timing.max_cv, attempts, m.samples_ns.size());
    m.outcome = Outcome::kUnstable;
    m.detail = buf;
  }
}

}  // namespace

InProcessEvaluator::InProcessEvaluator() : cache_(std::make_unique<Cache>()) {}
InProcessEvaluator::~InProcessEvaluator() = default;

void InProcessEvaluator::Measure(const EvalRequest& request, const Config& config, Measurement& m) {
  if (!request.isa.empty() && request.isa != HostHardware().cpu.isa) {
    // Kernels here dispatch on this process's level; measuring them under another level's name
    // would file AVX-512 timings where AVX2 hosts look (or the reverse).
    m.outcome = Outcome::kInvalid;
    m.detail = "this process runs the " + HostHardware().cpu.isa + " kernels, not " + request.isa +
               " (start it with --isa " + request.isa + ", or measure in worker processes)";
    return;
  }
  if (request.spec->runner() != nullptr) {
    // A runner's phases are what its answers report (RunnerMeasurer::TakeCosts).
    if (RunnerMeasurer* r = Runners(cache_->runners, &m)) {
      r->Measure(request, config, m);
      cache_->costs += r->TakeCosts();
    }
    return;
  }
  if (!VerifyWith(cache_->references, *request.spec, config, request.problem, request.threads, m, &cache_->costs)) {
    return;
  }
  Rotation& rot = cache_->Timed(request);
  int attempts = 0;
  auto t = TimeStable(rot, config, request, attempts, cache_->costs);
  const bool stopped = t && t->stopped;
  FillTiming(t, m);
  if (m.outcome == Outcome::kOk && m.iterations > 0) {
    cache_->calibrated[CalibrationKey(config, request)] = m.iterations;
  }
  JudgeTiming(request, attempts, stopped, m);
  if (stopped && m.outcome == Outcome::kOk) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "stopped after %zu of %d repetitions: each slower than %.0f ns, behind the bucket's best",
                  m.samples_ns.size(), request.timing.repetitions, request.timing.stop_above_ns);
    m.detail = buf;
  }
}

EvalCosts InProcessEvaluator::costs() const { return cache_->costs; }

std::vector<Measurement> InProcessEvaluator::MeasureInterleaved(const EvalRequest& request,
                                                                const std::vector<Config>& configs) {
  if (request.spec->runner() != nullptr) {
    if (RunnerMeasurer* r = Runners(cache_->runners, nullptr)) {
      auto out = r->MeasureInterleaved(request, configs);
      cache_->costs += r->TakeCosts();
      return out;
    }
    std::vector<Measurement> out(configs.size());
    for (Measurement& m : out) Runners(cache_->runners, &m);
    return out;
  }
  Rotation& rot = cache_->Timed(request);
  std::vector<Measurement> out(configs.size());
  // Calibrate each config's iteration count first (no repetitions), then take repetition r
  // of every config before repetition r + 1 of any, in the order timing::CycleOrder gives
  // cycle r. A config this process calibrated on this problem already keeps its count.
  timing::TimingOptions calibrate = request.timing;
  calibrate.repetitions = 0;
  std::vector<int64_t> iterations(configs.size(), 0);
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto run = [&] { return rot.Run(configs[i], request.threads); };
    if (auto known = cache_->calibrated.find(CalibrationKey(configs[i], request)); known != cache_->calibrated.end()) {
      iterations[i] = known->second;
      out[i].outcome = Outcome::kOk;
      out[i].iterations = known->second;
      continue;
    }
    auto t = timing::TimeRepeated(run, calibrate);
    if (!t) {
      FillTiming(t, out[i]);
      continue;
    }
    cache_->costs.calibrate_s += t->calibrate_ns * 1e-9;
    iterations[i] = t->iterations;
    out[i].outcome = Outcome::kOk;
    out[i].iterations = t->iterations;
  }
  for (int r = 0; r < request.timing.repetitions; ++r) {
    for (size_t i : timing::CycleOrder(configs.size(), r)) {
      if (out[i].outcome != Outcome::kOk) continue;
      const auto run = [&] { return rot.Run(configs[i], request.threads); };
      if (r == 0) {
        // One warm call right before each config's first repetition, whether it was calibrated
        // just now or earlier in this process: otherwise the first repetition of whichever
        // config was calibrated longest ago started colder than the others (the decision round
        // reuses the search's counts; regret calibrates everything fresh).
        auto warm = timing::TimeFixed(run, 1, request.timing.clock_ns);
        if (!warm) {
          FillTiming(std::unexpected(warm.error()), out[i]);
          continue;
        }
        cache_->costs.calibrate_s += *warm * 1e-9;
      }
      auto t = timing::TimeFixed(run, iterations[i], request.timing.clock_ns);
      if (!t) {
        FillTiming(std::unexpected(t.error()), out[i]);
        continue;
      }
      out[i].samples_ns.push_back(*t);
      cache_->costs.timed_s += *t * static_cast<double>(iterations[i]) * 1e-9;
    }
  }
  for (Measurement& m : out) {
    if (m.outcome != Outcome::kOk) continue;
    m.median_ns = timing::Median(m.samples_ns);
    m.cv = timing::CoefficientOfVariation(m.samples_ns);
  }
  return out;
}

bool VerifyConfig(const KernelSpec& spec, const Config& config, const Problem& bucket_problem, int threads,
                  Measurement& m) {
  ReferenceCache local;
  return VerifyWith(local, spec, config, bucket_problem, threads, m);
}

}  // namespace blocktune::tuner
