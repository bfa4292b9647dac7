// matmul_bench: GFLOP/s of our Matmul (the default config, the checked-in table's tuned config
// for this host, configs from --configs, or every valid config with --sweep) next to OpenBLAS
// cblas_sgemm on the same shapes and thread counts.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./matmul_bench
//       [--shapes=1024x1024x1024,32x4096x1024] [--threads=1,2]
//       [--configs=96x512x256,144x1024x384] [--sweep] [--no_openblas] [benchmark flags]
//
// Shapes are MxNxK (default: the representative shape of every checked-in matmul bucket);
// configs are block_m x block_n x block_k. The tuned config comes from the generated header
// matmul_tuned_block_sizes.h, exactly as an application embedding the table would get it; its
// row is named "_tuned" ("_default_tuned" when the table says the default). The two OPENBLAS_* variables make
// OpenBLAS pick a smaller kernel/cache model (about 2x slower here), so unset them to compare.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/matmul_tuned_block_sizes.h"
#include "kernels/bench/bench_args.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels::bench {
namespace {

using bench::ParseInts;
using bench::ParseTriples;
using bench::SplitList;
using bench::Triple;

struct Operands {
  explicit Operands(const MatmulShape& s)
      : a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n)), c(static_cast<size_t>(s.m * s.n)) {
    uint32_t x = 12345;
    for (float& v : a) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
    for (float& v : b) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
  }
  std::vector<float> a, b, c;
};

void SetCounters(benchmark::State& state, const MatmulShape& s) {
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

std::string ShapeName(const MatmulShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

void BenchOurs(benchmark::State& state, MatmulShape shape, MatmulBlockSizes bs, int threads) {
  Operands& op = bench::Shared<Operands>(ShapeName(shape), shape);
  // One untimed call: the packing buffers of this config's size are allocated on first use.
  if (auto status = Matmul(bs, shape, op.a.data(), op.b.data(), op.c.data(), threads); !status) {
    state.SkipWithError(status.error().ToString().c_str());
    return;
  }
  for (auto _ : state) {
    auto status = Matmul(bs, shape, op.a.data(), op.b.data(), op.c.data(), threads);
    if (!status) {
      state.SkipWithError(status.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(op.c.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, shape);
}

void BenchOpenBlas(benchmark::State& state, MatmulShape shape, int threads) {
  Operands& op = bench::Shared<Operands>(ShapeName(shape), shape);
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(shape.m), int(shape.n), int(shape.k), 1.0f, op.a.data(),
                int(shape.k), op.b.data(), int(shape.n), 0.0f, op.c.data(), int(shape.n));
    benchmark::DoNotOptimize(op.c.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, shape);
}

int Main(int argc, char** argv) {
  std::vector<Triple> shapes = {{128, 128, 128},    {256, 256, 256},    {512, 512, 512},
                                {1024, 1024, 1024}, {2048, 2048, 2048}, {32, 4096, 1024},
                                {64, 1024, 4096},   {4096, 64, 1024},   {1024, 1024, 64}};
  std::vector<int> thread_counts = {1, 2};
  std::vector<Triple> configs;
  bool sweep = false;
  bool openblas = true;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    if (arg.starts_with("--shapes=")) {
      shapes = ParseTriples(arg.substr(9));
    } else if (arg.starts_with("--threads=")) {
      thread_counts = ParseInts<int>(arg.substr(10));
    } else if (arg.starts_with("--configs=")) {
      configs = ParseTriples(arg.substr(10));
    } else if (arg == "--sweep") {
      sweep = true;
    } else if (arg == "--no_openblas") {
      openblas = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const MatmulBlockSizes default_bs = *FromConfig<MatmulBlockSizes>(MatmulSpec().DefaultConfig());
  std::vector<MatmulBlockSizes> block_sizes = {default_bs};
  for (const Triple& t : configs) block_sizes.push_back(MatmulBlockSizes{t.x, t.y, t.z});
  if (sweep) {
    block_sizes.clear();
    for (const Config& c : MatmulSpec().ConfigSpace()) block_sizes.push_back(*FromConfig<MatmulBlockSizes>(c));
  }
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (const Triple& t : shapes) {
    const MatmulShape shape{t.x, t.y, t.z};
    for (int threads : thread_counts) {
      if (openblas) {
        benchmark::RegisterBenchmark(("openblas/" + ShapeName(shape) + "/t" + std::to_string(threads)).c_str(),
                                     [=](benchmark::State& s) { BenchOpenBlas(s, shape, threads); })
            ->UseRealTime();
      }
      const auto tuned = tables::matmul::LookupForHost(threads, "f32", shape.m, shape.n, shape.k);
      const MatmulBlockSizes tuned_bs{tuned.config.block_m, tuned.config.block_n, tuned.config.block_k};
      std::vector<MatmulBlockSizes> to_run = block_sizes;
      if (std::find(to_run.begin(), to_run.end(), tuned_bs) == to_run.end()) to_run.push_back(tuned_bs);
      for (const MatmulBlockSizes& bs : to_run) {
        if (!Validate(bs, shape, hw)) continue;
        const std::string name = std::string("blocktune_") + MatmulIsa() + "/" + ShapeName(shape) + "/t" +
                                 std::to_string(threads) + "/bm" + std::to_string(bs.block_m) + "_bn" +
                                 std::to_string(bs.block_n) + "_bk" + std::to_string(bs.block_k) +
                                 (bs == default_bs ? "_default" : "") + (bs == tuned_bs ? "_tuned" : "");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          BenchOurs(s, shape, bs, threads);
        })->UseRealTime();
      }
    }
  }
  return bench::RunRegisteredBenchmarks(rest);
}

}  // namespace
}  // namespace blocktune::kernels::bench

int main(int argc, char** argv) { return blocktune::kernels::bench::Main(argc, argv); }
