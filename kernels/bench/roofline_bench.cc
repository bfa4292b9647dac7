// roofline_bench: this core's FLOP and DRAM-read rooflines, measured with the vector width of
// the ISA level the kernels run at (the CPU's own, or --isa=avx2 / --isa=base), so every kernel
// row of deploy/bench-kernels.sh gets its fraction of what that level can do on this machine.
//
//   ./roofline_bench [--isa=avx512|avx2|base] [benchmark flags]
//
// Registers fma_peak_<isa>/t1 (GFLOPs) and stream_read_<isa>/t1 (GBps); kernels/bench/compare.py
// scales both by the thread count of each row. Probes for levels above the forced one are not
// registered: an AVX2 row on an AVX-512 host is judged against what AVX2 code can reach.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/bench_args.h"
#include "kernels/core/hardware.h"

#if defined(__x86_64__)
#include "kernels/core/simd.h"  // <immintrin.h>
#endif

// GCC 12's AVX-512 headers build some results from _mm512_undefined_*(), which -Wuninitialized
// reports at every inlined use of _mm512_reduce_add_ps (GCC bug 105593); the values are defined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace blocktune::kernels::bench {
namespace {

// Independent accumulator chains per probe: enough to cover FMA latency x ports on every CPU
// seen so far (4-5 cycles x 2 ports = 8-10 in flight), and few enough to stay in registers
// (16 vector registers on AVX2/SSE: 12 chains + 2 constants).
constexpr int kChains = 12;
constexpr int64_t kPeakIters = 1 << 20;
// Far beyond any L3 seen (32 MiB on the Zen 3 and Zen 5 machines, ~100 MiB on large Xeons).
constexpr int64_t kStreamFloats = int64_t{64} << 20;  // 256 MiB

#if defined(__x86_64__)
__attribute__((target("avx512f,fma"), noinline)) float FmaPeakAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(float(i) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999f), b = _mm512_set1_ps(1e-4f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx2,fma"), noinline)) float FmaPeakAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(1e-4f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm256_add_ps(s, acc[i]);
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

// Baseline x86-64 has no FMA: the portable kernels multiply and add separately (two
// instructions, two flops per lane), which is what this probe times.
__attribute__((noinline)) float FmaPeakBase(int64_t iters) {
  __m128 acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = _mm_set1_ps(float(i) * 1e-3f);
  const __m128 a = _mm_set1_ps(0.999f), b = _mm_set1_ps(1e-4f);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kChains; ++i) acc[i] = _mm_add_ps(_mm_mul_ps(acc[i], a), b);
  }
  __m128 s = acc[0];
  for (int i = 1; i < kChains; ++i) s = _mm_add_ps(s, acc[i]);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

// Sums with four independent accumulators of the level's width: the load rate, not the add
// latency, is what limits it once the data comes from DRAM.
__attribute__((target("avx512f"), noinline)) float SumAvx512(const float* x, int64_t n) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 64 <= n; i += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

__attribute__((target("avx2"), noinline)) float SumAvx2(const float* x, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
  }
  const __m256 s = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  return _mm_cvtss_f32(_mm_add_ss(h, _mm_shuffle_ps(h, h, 1)));
}

__attribute__((noinline)) float SumBase(const float* x, int64_t n) {
  __m128 a0 = _mm_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    a0 = _mm_add_ps(a0, _mm_loadu_ps(x + i));
    a1 = _mm_add_ps(a1, _mm_loadu_ps(x + i + 4));
    a2 = _mm_add_ps(a2, _mm_loadu_ps(x + i + 8));
    a3 = _mm_add_ps(a3, _mm_loadu_ps(x + i + 12));
  }
  __m128 s = _mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_shuffle_ps(s, s, 1)));
}

struct Probes {
  float (*peak)(int64_t);
  double flops_per_chain_step;  // lanes x flops per lane of one chain's step
  float (*sum)(const float*, int64_t);
};

Probes ProbesFor(std::string_view isa) {
  if (isa == "avx512") return {&FmaPeakAvx512, 16 * 2, &SumAvx512};
  if (isa == "avx2") return {&FmaPeakAvx2, 8 * 2, &SumAvx2};
  return {&FmaPeakBase, 4 * 2, &SumBase};
}
#endif

int Main(int argc, char** argv) {
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    rest.push_back(argv[i]);
  }
#if defined(__x86_64__)
  const std::string isa = HostHardware().cpu.isa;
  const Probes probes = ProbesFor(isa);
  benchmark::RegisterBenchmark(("fma_peak_" + isa + "/t1").c_str(), [probes](benchmark::State& state) {
    volatile int64_t iters = kPeakIters;  // opaque to the optimiser, so the loop is not folded
    for (auto _ : state) benchmark::DoNotOptimize(probes.peak(iters));
    state.counters["GFLOPs"] = benchmark::Counter(double(kPeakIters) * kChains * probes.flops_per_chain_step * 1e-9,
                                                  benchmark::Counter::kIsIterationInvariantRate);
  })->UseRealTime();
  benchmark::RegisterBenchmark(("stream_read_" + isa + "/t1").c_str(), [probes](benchmark::State& state) {
    std::vector<float> x(static_cast<size_t>(kStreamFloats), 1.0f);
    for (auto _ : state) benchmark::DoNotOptimize(probes.sum(x.data(), kStreamFloats));
    state.counters["GBps"] =
        benchmark::Counter(double(kStreamFloats) * 4 * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  })->UseRealTime();
#else
  std::fprintf(stderr, "roofline_bench: no probes for this architecture\n");
#endif
  return bench::RunRegisteredBenchmarks(rest);
}

}  // namespace
}  // namespace blocktune::kernels::bench

int main(int argc, char** argv) { return blocktune::kernels::bench::Main(argc, argv); }
