// fused_cross_entropy_bench: our fused cross-entropy (forward, and forward + backward) next to
// the unfused path on the same shapes and thread counts: OpenBLAS cblas_sgemm into a [B, V]
// logits buffer, a vectorised row logsumexp + label pick, and for the backward the softmax
// gradient written into that buffer and two more sgemm calls (dx = dlogits w^T, dw = x^T
// dlogits). Counters: GFLOPs (nominal: 2bhv forward, 6bhv forward + backward, for both) and
// extra_MiB (memory beyond inputs/outputs: our per-thread scratch summed over threads; the
// unfused [B, V] f32 buffer).
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./fused_cross_entropy_bench
//       [--shapes=4096x1024x32768,1024x512x8192] [--threads=1,2] [--modes=fwd,bwd]
//       [--configs=192x256x512,96x256x1024] [--no_unfused] [--bf16] [benchmark flags]
//
// Shapes are BxHxV; configs block_b x block_h x block_v (the default config always runs, and so
// does the checked-in table's config for this host, thread count and direction, "_tuned").
// Ratios should be read from one process with --benchmark_enable_random_interleaving=true
// (the machine is shared), never from absolute numbers across runs.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/fused_cross_entropy_tuned_block_sizes.h"
#include "kernels/bench/bench_args.h"
#include "kernels/core/parallel.h"
#include "kernels/core/random.h"
#include "kernels/core/vec_math.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"

// GCC 12 false positives, silenced for this file only: the AVX-512 intrinsics' internal
// _mm512_undefined operands (max/min/roundscale/scalef inside vec::Exp) are reported as
// (maybe) uninitialized once inlined, though fully overwritten; and std::string operator+ in the
// benchmark names trips -Wrestrict (GCC bug 105651).
#if defined(__GNUC__) && !defined(__clang__)  // GCC-only warning names
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

namespace blocktune::kernels::bench {
namespace {

using bench::ParseInts;
using bench::ParseTriples;
using bench::SplitList;
using bench::Triple;

constexpr float kZ = 1e-4f;

// Shared inputs per shape (the big shape's w is 128 MiB: built once, not per benchmark).
struct Operands {
  explicit Operands(const FusedCrossEntropyShape& s)
      : x(static_cast<size_t>(s.b * s.h)),
        w(static_cast<size_t>(s.h * s.v)),
        labels(static_cast<size_t>(s.b)),
        dloss(static_cast<size_t>(s.b)) {
    SplitMix64 rng(123);
    for (float& v : x) v = rng.NextSigned();
    for (float& v : w) v = rng.NextSigned() * 0.1f;
    for (auto& l : labels) l = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(s.v)));
    for (float& d : dloss) d = 1.0f / float(s.b);
    for (float v : x) xb.push_back(FloatToBF16(v).bits);
    for (float v : w) wb.push_back(FloatToBF16(v).bits);
  }
  std::vector<float> x, w;
  std::vector<uint16_t> xb, wb;
  std::vector<int32_t> labels;
  std::vector<float> dloss;
};

Operands& OperandsFor(const FusedCrossEntropyShape& s) {
  return bench::Shared<Operands>(std::to_string(s.b) + "x" + std::to_string(s.h) + "x" + std::to_string(s.v), s);
}

// --- The unfused path's row passes (AVX-512 or AVX2 when available, as a production baseline would) ---

__attribute__((target("avx512f"))) float RowLseAvx512(const float* row, int64_t n) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(row + j));
  float m = vec::ReduceMax(mx);
  for (int64_t k = j; k < n; ++k) m = std::max(m, row[k]);
  const __m512 mv = _mm512_set1_ps(m);
  __m512 acc = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) acc = _mm512_add_ps(acc, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j), mv)));
  float s = vec::ReduceAdd(acc);
  for (int64_t k = j; k < n; ++k) s += vec::ExpScalar(row[k] - m);
  return m + std::log(s);
}

__attribute__((target("avx512f"))) void RowDlogitsAvx512(float* row, int64_t n, float lse, float scale) {
  const __m512 l = _mm512_set1_ps(lse);
  const __m512 sc = _mm512_set1_ps(scale);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    _mm512_storeu_ps(row + j, _mm512_mul_ps(sc, vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(row + j), l))));
  }
  for (; j < n; ++j) row[j] = scale * vec::ExpScalar(row[j] - lse);
}

// AVX2 versions, so that on a host (or a forced --isa=avx2 level) without AVX-512 the baseline's
// row passes are vectorised too: the portable scalar exp made the unfused backward ~1.1 s slower
// at 4096 x 32768 (two exp passes over 134M logits), flattering our ratio.
__attribute__((target("avx2,fma"))) float RowLseAvx2(const float* row, int64_t n) {
  __m256 mx = _mm256_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(row + j));
  float m = vec::ReduceMax(mx);
  for (int64_t k = j; k < n; ++k) m = std::max(m, row[k]);
  const __m256 mv = _mm256_set1_ps(m);
  __m256 acc = _mm256_setzero_ps();
  for (j = 0; j + 8 <= n; j += 8) acc = _mm256_add_ps(acc, vec::Exp(_mm256_sub_ps(_mm256_loadu_ps(row + j), mv)));
  float s = vec::ReduceAdd(acc);
  for (int64_t k = j; k < n; ++k) s += vec::ExpScalar(row[k] - m);
  return m + std::log(s);
}

__attribute__((target("avx2,fma"))) void RowDlogitsAvx2(float* row, int64_t n, float lse, float scale) {
  const __m256 l = _mm256_set1_ps(lse);
  const __m256 sc = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    _mm256_storeu_ps(row + j, _mm256_mul_ps(sc, vec::Exp(_mm256_sub_ps(_mm256_loadu_ps(row + j), l))));
  }
  for (; j < n; ++j) row[j] = scale * vec::ExpScalar(row[j] - lse);
}

float RowLsePortable(const float* row, int64_t n) {
  float m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, row[j]);
  float s = 0;
  for (int64_t j = 0; j < n; ++j) s += vec::ExpScalar(row[j] - m);
  return m + std::log(s);
}

void RowDlogitsPortable(float* row, int64_t n, float lse, float scale) {
  for (int64_t j = 0; j < n; ++j) row[j] = scale * vec::ExpScalar(row[j] - lse);
}

// The row-pass level: the host's (or the forced --isa level's) widest of avx512 / avx2 / base.
int RowLevel() {
  static const int kLevel = [] {
    const std::string isa = HardwareProfile::Detect(1).cpu.isa;
    return isa == "avx512" ? 2 : isa == "avx2" ? 1 : 0;
  }();
  return kLevel;
}

void Unfused(const FusedCrossEntropyShape& s, const Operands& op, bool backward, int threads, float* logits,
             float* loss, float* lse, float* dx, float* dw) {
  const int B = int(s.b), H = int(s.h), V = int(s.v);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, B, V, H, 1.0f, op.x.data(), H, op.w.data(), V, 0.0f, logits,
              V);
  ParallelFor(threads, s.b, [&](int64_t i, int) {
    float* row = logits + i * s.v;
    const float l = RowLevel() == 2   ? RowLseAvx512(row, s.v)
                    : RowLevel() == 1 ? RowLseAvx2(row, s.v)
                                      : RowLsePortable(row, s.v);
    const int32_t lab = op.labels[static_cast<size_t>(i)];
    lse[i] = l;
    loss[i] = l - row[lab] + kZ * l * l;
    if (backward) {
      const float d = op.dloss[static_cast<size_t>(i)];
      const float scale = d * (1.0f + 2.0f * kZ * l);
      if (RowLevel() == 2) {
        RowDlogitsAvx512(row, s.v, l, scale);
      } else if (RowLevel() == 1) {
        RowDlogitsAvx2(row, s.v, l, scale);
      } else {
        RowDlogitsPortable(row, s.v, l, scale);
      }
      row[lab] -= d;
    }
  });
  if (!backward) return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, B, H, V, 1.0f, logits, V, op.w.data(), V, 0.0f, dx, H);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, H, V, B, 1.0f, op.x.data(), H, logits, V, 0.0f, dw, V);
}

double NominalFlops(const FusedCrossEntropyShape& s, bool backward) {
  return (backward ? 6.0 : 2.0) * double(s.b) * double(s.h) * double(s.v);
}

void SetCounters(benchmark::State& state, const FusedCrossEntropyShape& s, bool backward, double extra_bytes) {
  state.counters["GFLOPs"] =
      benchmark::Counter(NominalFlops(s, backward) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["extra_MiB"] = extra_bytes / double(1 << 20);
}

void BenchUnfused(benchmark::State& state, FusedCrossEntropyShape s, bool backward, int threads) {
  const Operands& op = OperandsFor(s);
  openblas_set_num_threads(threads);
  std::vector<float> logits(static_cast<size_t>(s.b * s.v)), loss(static_cast<size_t>(s.b)),
      lse(static_cast<size_t>(s.b));
  std::vector<float> dx(backward ? static_cast<size_t>(s.b * s.h) : 0),
      dw(backward ? static_cast<size_t>(s.h * s.v) : 0);
  for (auto _ : state) {
    Unfused(s, op, backward, threads, logits.data(), loss.data(), lse.data(), dx.data(), dw.data());
    benchmark::DoNotOptimize(loss.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, s, backward, 4.0 * double(s.b) * double(s.v));
}

void BenchOurs(benchmark::State& state, FusedCrossEntropyShape s, FusedCrossEntropyBlockSizes bs, bool backward,
               bool bf16, int threads) {
  const Operands& op = OperandsFor(s);
  FusedCrossEntropyInputs in;
  in.dtype = bf16 ? DType::kBF16 : DType::kF32;
  in.x = bf16 ? static_cast<const void*>(op.xb.data()) : op.x.data();
  in.w = bf16 ? static_cast<const void*>(op.wb.data()) : op.w.data();
  in.labels = op.labels.data();
  in.z_loss_weight = kZ;
  std::vector<float> loss(static_cast<size_t>(s.b)), lse(static_cast<size_t>(s.b));
  std::vector<float> dx(backward ? static_cast<size_t>(s.b * s.h) : 0),
      dw(backward ? static_cast<size_t>(s.h * s.v) : 0);
  for (auto _ : state) {
    auto st = FusedCrossEntropyForward(bs, s, in, loss.data(), lse.data(), threads);
    if (st && backward) {
      st = FusedCrossEntropyBackward(bs, s, in, lse.data(), op.dloss.data(), dx.data(), dw.data(), threads);
    }
    if (!st) {
      state.SkipWithError(st.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(loss.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, s, backward, double(FusedCrossEntropyScratchBytes(bs, s, backward, threads)));
}

std::string ShapeName(const FusedCrossEntropyShape& s) {
  return std::to_string(s.b) + "x" + std::to_string(s.h) + "x" + std::to_string(s.v);
}

int Main(int argc, char** argv) {
  std::vector<Triple> shapes = {{1024, 512, 8192}, {4096, 1024, 32768}};
  std::vector<std::string> thread_counts = {"1", "2"};
  std::vector<std::string> modes = {"fwd", "bwd"};
  std::vector<Triple> configs;
  bool unfused = true;
  bool bf16 = false;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    if (arg.starts_with("--shapes=")) {
      shapes = ParseTriples(arg.substr(9));
    } else if (arg.starts_with("--threads=")) {
      thread_counts = SplitList(arg.substr(10));
    } else if (arg.starts_with("--modes=")) {
      modes = SplitList(arg.substr(8));
    } else if (arg.starts_with("--configs=")) {
      configs = ParseTriples(arg.substr(10));
    } else if (arg == "--no_unfused") {
      unfused = false;
    } else if (arg == "--bf16") {
      bf16 = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const auto default_bs = *FromConfig<FusedCrossEntropyBlockSizes>(FusedCrossEntropySpec().DefaultConfig());
  std::vector<FusedCrossEntropyBlockSizes> block_sizes = {default_bs};
  for (const Triple& t : configs) block_sizes.push_back({t.x, t.y, t.z});
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (const Triple& t : shapes) {
    const FusedCrossEntropyShape shape{t.x, t.y, t.z};
    for (const std::string& mode : modes) {
      const bool backward = mode == "bwd";
      for (const std::string& ts : thread_counts) {
        const int threads = std::atoi(ts.c_str());
        const std::string suffix = "/" + ShapeName(shape) + "/" + mode + "/t" + std::to_string(threads);
        if (unfused) {
          benchmark::RegisterBenchmark(("unfused_openblas" + suffix).c_str(),
                                       [=](benchmark::State& s) { BenchUnfused(s, shape, backward, threads); })
              ->UseRealTime()
              ->Unit(benchmark::kMillisecond);
        }
        for (bool use_bf16 : {false, true}) {
          if (use_bf16 && !bf16) continue;
          // The checked-in table's row for this host (at the forced ISA level, if any), thread
          // count and direction, looked up through the generated header as an application would.
          const auto r = tables::fused_cross_entropy::LookupForHost(threads, use_bf16 ? "bf16" : "f32", shape.b,
                                                                    shape.h, shape.v, backward ? 1 : 0);
          const FusedCrossEntropyBlockSizes tuned{r.config.block_b, r.config.block_h, r.config.block_v};
          std::vector<FusedCrossEntropyBlockSizes> to_run = block_sizes;
          if (std::find(to_run.begin(), to_run.end(), tuned) == to_run.end()) to_run.push_back(tuned);
          for (const auto& bs : to_run) {
            if (!Validate(bs, shape, hw)) continue;
            const std::string name = std::string("fused") + (use_bf16 ? "_bf16" : "") + suffix + "/bb" +
                                     std::to_string(bs.block_b) + "_bh" + std::to_string(bs.block_h) + "_bv" +
                                     std::to_string(bs.block_v) + (bs == default_bs ? "_default" : "") +
                                     (bs == tuned ? "_tuned" : "");
            benchmark::RegisterBenchmark(
                name.c_str(), [=](benchmark::State& s) { BenchOurs(s, shape, bs, backward, use_bf16, threads); })
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
          }
        }
      }
    }
  }
  return bench::RunRegisteredBenchmarks(rest);
}

}  // namespace
}  // namespace blocktune::kernels::bench

int main(int argc, char** argv) { return blocktune::kernels::bench::Main(argc, argv); }
