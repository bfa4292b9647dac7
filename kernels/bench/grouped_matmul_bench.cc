// grouped_matmul_bench: GFLOP/s (counted on real rows only) of our GroupedMatmul next to two
// OpenBLAS baselines on skewed MoE group layouts, at 1 and 2 threads:
//   openblas_per_group  one cblas_sgemm per non-empty group on its rows (what a framework
//                       without a grouped kernel does);
//   openblas_padded     every group padded to the largest group's size, G sgemm calls of
//                       max_size x k x n (the dense "capacity" layout; the padding copy is not
//                       timed, it is the layout such a model keeps).
// Both baselines also zero the rows past the groups, as our kernel does.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./grouped_matmul_bench
//       [--shapes=zipf_g8,zipf_g64,heavy_head_g8,small_groups_g64] [--threads=1,2]
//       [--configs=48x256x1024,192x256x1024] [--uniform=1,8,32] [--no_padded] [--no_bf16]
//       [benchmark flags]
//
// Configs are tile_m x tile_k x tile_n. Besides the default and --configs, every case runs the
// checked-in table's config for this host and thread count (from the generated header
// grouped_matmul_tuned_block_sizes.h, as an application would get it), named "_tuned". The two OPENBLAS_* variables
// make OpenBLAS pick a smaller kernel/cache model (about 2x slower here), so unset them to compare.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/grouped_matmul_tuned_block_sizes.h"
#include "kernels/bench/bench_args.h"
#include "kernels/core/dtype.h"
#include "kernels/grouped_matmul/grouped_matmul.h"

namespace blocktune::kernels::bench {
namespace {

using bench::ParseInts;
using bench::ParseTriples;
using bench::SplitList;
using bench::Triple;

struct Layout {
  std::string name;
  GroupedMatmulShape shape;
  std::vector<int32_t> sizes;
};

std::vector<Layout> AllLayouts(const std::vector<int>& uniform_sizes) {
  std::vector<Layout> out;
  // Zipf skew from the spec's generator (G/8 empty groups, m/16 rows past the groups).
  out.push_back({"zipf_g8", {4096, 1024, 1024, 8}, GroupedMatmulSkewedGroupSizes(4096, 8, 1)});
  out.push_back({"zipf_g64", {4096, 1024, 1024, 64}, GroupedMatmulSkewedGroupSizes(4096, 64, 1)});
  // A heavy head: one expert takes 75% of the tokens, one expert none.
  out.push_back({"heavy_head_g8", {4096, 1024, 1024, 8}, {3072, 0, 256, 200, 180, 150, 130, 108}});
  // Decode-like: 480 tokens over 64 experts, most groups 1-16 rows (the direct-kernel regime).
  out.push_back({"small_groups_g64", {512, 1024, 1024, 64}, GroupedMatmulSkewedGroupSizes(512, 64, 1)});
  // --uniform=1,8,32: 64 groups of exactly that many rows (per-group-size efficiency).
  for (int rows : uniform_sizes) {
    out.push_back(
        {"uniform_g64_s" + std::to_string(rows), {64 * rows, 1024, 1024, 64}, std::vector<int32_t>(64, rows)});
  }
  return out;
}

// Operands of one layout, built on first use and freed when the next layout starts (the G = 64
// layouts hold 256 MiB of rhs, and the padded copies as much again).
struct Data {
  Layout layout;
  int64_t used = 0;
  int64_t max_size = 0;
  std::vector<float> lhs, rhs, out;
  std::vector<uint16_t> lhs16, rhs16;
  std::vector<float> lhs_pad, out_pad;  // [G, max_size, k] and [G, max_size, n]
};

Data& DataFor(const Layout& l, bool padded, bool bf16) {
  static std::unique_ptr<Data> current;
  if (!current || current->layout.name != l.name) {
    current.reset();
    current = std::make_unique<Data>();
    Data& d = *current;
    d.layout = l;
    const GroupedMatmulShape& s = l.shape;
    d.used = std::accumulate(l.sizes.begin(), l.sizes.end(), int64_t{0});
    d.max_size = *std::max_element(l.sizes.begin(), l.sizes.end());
    d.lhs.resize(static_cast<size_t>(s.m * s.k));
    d.rhs.resize(static_cast<size_t>(s.groups * s.k * s.n));
    d.out.resize(static_cast<size_t>(s.m * s.n));
    uint32_t x = 12345;
    for (float& v : d.lhs) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
    for (float& v : d.rhs) v = float((x = x * 1664525u + 1013904223u) >> 8) / float(1 << 24) - 0.5f;
  }
  Data& d = *current;
  const GroupedMatmulShape& s = l.shape;
  if (padded && d.lhs_pad.empty()) {
    d.lhs_pad.assign(static_cast<size_t>(s.groups * d.max_size * s.k), 0.0f);
    d.out_pad.assign(static_cast<size_t>(s.groups * d.max_size * s.n), 0.0f);
    int64_t row = 0;
    for (int64_t g = 0; g < s.groups; ++g) {
      std::memcpy(d.lhs_pad.data() + g * d.max_size * s.k, d.lhs.data() + row * s.k,
                  sizeof(float) * static_cast<size_t>(l.sizes[static_cast<size_t>(g)] * s.k));
      row += l.sizes[static_cast<size_t>(g)];
    }
  }
  if (bf16 && d.lhs16.empty()) {
    d.lhs16.resize(d.lhs.size());
    d.rhs16.resize(d.rhs.size());
    for (size_t i = 0; i < d.lhs.size(); ++i) d.lhs16[i] = FloatToBF16(d.lhs[i]).bits;
    for (size_t i = 0; i < d.rhs.size(); ++i) d.rhs16[i] = FloatToBF16(d.rhs[i]).bits;
  }
  return d;
}

void SetCounters(benchmark::State& state, const Data& d) {
  const GroupedMatmulShape& s = d.layout.shape;
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * double(d.used) * double(s.k) * double(s.n) * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void BenchOurs(benchmark::State& state, const Layout& l, GroupedMatmulBlockSizes bs, int threads, bool bf16) {
  Data& d = DataFor(l, false, bf16);
  for (auto _ : state) {
    auto status =
        bf16 ? GroupedMatmul(bs, l.shape, l.sizes.data(), d.lhs16.data(), d.rhs16.data(), d.out.data(), threads)
             : GroupedMatmul(bs, l.shape, l.sizes.data(), d.lhs.data(), d.rhs.data(), d.out.data(), threads);
    if (!status) {
      state.SkipWithError(status.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, d);
}

void BenchPerGroup(benchmark::State& state, const Layout& l, int threads) {
  Data& d = DataFor(l, false, false);
  const GroupedMatmulShape& s = l.shape;
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    int64_t row = 0;
    for (int64_t g = 0; g < s.groups; ++g) {
      const int64_t rows = l.sizes[static_cast<size_t>(g)];
      if (rows > 0) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(rows), int(s.n), int(s.k), 1.0f,
                    d.lhs.data() + row * s.k, int(s.k), d.rhs.data() + g * s.k * s.n, int(s.n), 0.0f,
                    d.out.data() + row * s.n, int(s.n));
      }
      row += rows;
    }
    std::memset(d.out.data() + row * s.n, 0, sizeof(float) * static_cast<size_t>((s.m - row) * s.n));
    benchmark::DoNotOptimize(d.out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, d);
}

void BenchPadded(benchmark::State& state, const Layout& l, int threads) {
  Data& d = DataFor(l, true, false);
  const GroupedMatmulShape& s = l.shape;
  openblas_set_num_threads(threads);
  for (auto _ : state) {
    for (int64_t g = 0; g < s.groups; ++g) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(d.max_size), int(s.n), int(s.k), 1.0f,
                  d.lhs_pad.data() + g * d.max_size * s.k, int(s.k), d.rhs.data() + g * s.k * s.n, int(s.n), 0.0f,
                  d.out_pad.data() + g * d.max_size * s.n, int(s.n));
    }
    std::memset(d.out.data() + d.used * s.n, 0, sizeof(float) * static_cast<size_t>((s.m - d.used) * s.n));
    benchmark::DoNotOptimize(d.out_pad.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, d);
}

std::string ConfigName(const GroupedMatmulBlockSizes& bs) {
  return "tm" + std::to_string(bs.tile_m) + "_tk" + std::to_string(bs.tile_k) + "_tn" + std::to_string(bs.tile_n);
}

int Main(int argc, char** argv) {
  std::vector<std::string> shape_names;
  std::vector<int> thread_counts = {1, 2};
  std::vector<Triple> configs;
  bool padded = true;
  bool bf16 = true;
  std::vector<int> uniform_sizes;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    if (arg.starts_with("--shapes=")) {
      shape_names = SplitList(arg.substr(9));
    } else if (arg.starts_with("--threads=")) {
      thread_counts.clear();
      for (const std::string& t : SplitList(arg.substr(10))) thread_counts.push_back(std::atoi(t.c_str()));
    } else if (arg.starts_with("--configs=")) {
      configs = ParseTriples(arg.substr(10));
    } else if (arg.starts_with("--uniform=")) {
      for (const std::string& t : SplitList(arg.substr(10))) uniform_sizes.push_back(std::atoi(t.c_str()));
    } else if (arg == "--no_padded") {
      padded = false;
    } else if (arg == "--no_bf16") {
      bf16 = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const GroupedMatmulBlockSizes default_bs = *FromConfig<GroupedMatmulBlockSizes>(GroupedMatmulSpec().DefaultConfig());
  std::vector<GroupedMatmulBlockSizes> block_sizes = {default_bs};
  for (const Triple& t : configs) block_sizes.push_back(GroupedMatmulBlockSizes{t.x, t.y, t.z});
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (const Layout& l : AllLayouts(uniform_sizes)) {
    if (!shape_names.empty() && std::find(shape_names.begin(), shape_names.end(), l.name) == shape_names.end()) {
      continue;
    }
    for (int threads : thread_counts) {
      const std::string suffix = "/" + l.name + "/t" + std::to_string(threads);
      benchmark::RegisterBenchmark(("openblas_per_group" + suffix).c_str(), [=](benchmark::State& s) {
        BenchPerGroup(s, l, threads);
      })->UseRealTime();
      if (padded) {
        benchmark::RegisterBenchmark(("openblas_padded" + suffix).c_str(), [=](benchmark::State& s) {
          BenchPadded(s, l, threads);
        })->UseRealTime();
      }
      // The checked-in table's row for this host (at the forced ISA level, if any) and thread
      // count, looked up through the generated header as an application embedding it would.
      const auto tuned_for = [&](const char* dtype) {
        const auto r =
            tables::grouped_matmul::LookupForHost(threads, dtype, l.shape.m, l.shape.k, l.shape.n, l.shape.groups);
        return GroupedMatmulBlockSizes{r.config.tile_m, r.config.tile_k, r.config.tile_n};
      };
      const GroupedMatmulBlockSizes tuned_f32 = tuned_for("f32");
      std::vector<GroupedMatmulBlockSizes> to_run = block_sizes;
      if (std::find(to_run.begin(), to_run.end(), tuned_f32) == to_run.end()) to_run.push_back(tuned_f32);
      for (const GroupedMatmulBlockSizes& bs : to_run) {
        if (!Validate(bs, l.shape, hw)) continue;
        const std::string name = "blocktune_f32" + suffix + "/" + ConfigName(bs) +
                                 (bs == default_bs ? "_default" : "") + (bs == tuned_f32 ? "_tuned" : "");
        benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
          BenchOurs(s, l, bs, threads, false);
        })->UseRealTime();
      }
      if (bf16) {
        const GroupedMatmulBlockSizes tuned_bf16 = tuned_for("bf16");
        std::vector<GroupedMatmulBlockSizes> bf16_runs = {default_bs};
        if (tuned_bf16 != default_bs) bf16_runs.push_back(tuned_bf16);
        for (const GroupedMatmulBlockSizes& bs : bf16_runs) {
          if (!Validate(bs, l.shape, hw)) continue;
          const std::string name = "blocktune_bf16" + suffix + "/" + ConfigName(bs) +
                                   (bs == default_bs ? "_default" : "") + (bs == tuned_bf16 ? "_tuned" : "");
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
            BenchOurs(s, l, bs, threads, true);
          })->UseRealTime();
        }
      }
    }
  }
  return bench::RunRegisteredBenchmarks(rest);
}

}  // namespace
}  // namespace blocktune::kernels::bench

int main(int argc, char** argv) { return blocktune::kernels::bench::Main(argc, argv); }
