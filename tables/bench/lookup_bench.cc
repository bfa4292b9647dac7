// lookup_bench: the cost of one lookup in the generated matmul header, the call an application
// makes before every kernel launch.
//
//   build/tables/bench/lookup_bench [benchmark flags]
//
// Cases, all on the checked-in rows (keys named below must stay in tables/tuned_entries.jsonl):
//   exact_hit         a row for exactly this key, dtype and bucket          (source tuned)
//   fallback_threads  same CPU model at an untuned thread count              (tuned_fallback)
//   fallback_model    another CPU model of the same vendor and ISA level     (tuned_fallback)
//   default           a bucket no row of the chain has                       (default)
//   for_host          LookupForHost: this machine's key, detected by the header
// Each case checks its answer's source once before timing and fails the run on a mismatch, so
// a table change that turns a hit into a miss cannot pass as a speed-up.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "blocktune/tables/matmul_tuned_block_sizes.h"

namespace {

namespace mm = blocktune::tables::matmul;
using blocktune::tables::Source;

// The dims pass through benchmark::DoNotOptimize every iteration, so the compiler cannot fold
// the lookup into a constant.
struct Dims {
  std::int64_t m, n, k;
};

void RunKeyed(benchmark::State& state, std::string_view key, Dims d, Source expected) {
  const std::string hardware(key);  // a runtime string, as an application would hold it
  const auto first = mm::LookupBlockSizes(hardware, "f32", d.m, d.n, d.k);
  if (first.source != expected) {
    state.SkipWithError(("source " + std::string(blocktune::tables::SourceName(first.source)) + ", expected " +
                         std::string(blocktune::tables::SourceName(expected)))
                            .c_str());
    return;
  }
  for (auto _ : state) {
    benchmark::DoNotOptimize(d);
    auto r = mm::LookupBlockSizes(hardware, "f32", d.m, d.n, d.k);
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(std::string(blocktune::tables::SourceName(expected)));
}

void BM_ExactHit(benchmark::State& state) {
  RunKeyed(state, "x86_64.avx2.amd.fam25_mod1.t1", {1000, 1000, 1000}, Source::kTuned);
}
void BM_FallbackThreads(benchmark::State& state) {
  RunKeyed(state, "x86_64.avx2.amd.fam25_mod1.t4", {1000, 1000, 1000}, Source::kTunedFallback);
}
void BM_FallbackModel(benchmark::State& state) {
  RunKeyed(state, "x86_64.avx2.amd.fam25_mod33.t1", {1000, 1000, 1000}, Source::kTunedFallback);
}
void BM_Default(benchmark::State& state) {
  RunKeyed(state, "x86_64.avx2.amd.fam25_mod1.t1", {3, 3, 3}, Source::kDefault);
}

void BM_ForHost(benchmark::State& state) {
  Dims d{1000, 1000, 1000};
  const auto first = mm::LookupForHost(1, "f32", d.m, d.n, d.k);  // the first call may detect the CPU
  state.SetLabel(std::string(blocktune::tables::SourceName(first.source)));
  for (auto _ : state) {
    benchmark::DoNotOptimize(d);
    auto r = mm::LookupForHost(1, "f32", d.m, d.n, d.k);
    benchmark::DoNotOptimize(r);
  }
}

BENCHMARK(BM_ExactHit);
BENCHMARK(BM_FallbackThreads);
BENCHMARK(BM_FallbackModel);
BENCHMARK(BM_Default);
BENCHMARK(BM_ForHost);

}  // namespace

BENCHMARK_MAIN();
