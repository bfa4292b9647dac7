// ragged_paged_attention_bench: our RaggedPagedAttention (default config and a few others) next
// to the baseline "gather each sequence's pages into contiguous K/V, then FlashAttention per
// sequence" on the same ragged batches, f32 and bf16, 1 and 2 threads.
//
//   ./ragged_paged_attention_bench [--threads=1,2] [--dtypes=f32,bf16] [--sweep]
//       [--benchmark_repetitions=3 --benchmark_enable_random_interleaving=true] [benchmark flags]
//
// Batches (summary dims as in the spec; every 4th sequence is a prefill):
//   decode:  32 sequences, kv up to 2048, all decode, page 16, 8 heads, 2 KV heads, head_dim 128
//   mixed:   16 sequences, kv up to 2048, prefill q_len 256 (4 prefills), otherwise as decode
//   prefill: 4 whole prompts (q_len = kv_len = 1024, 768, 512, 256), otherwise as decode
// The baseline's gather and layout change (pages -> [kv_heads, kv_len, head_dim], q tokens ->
// [heads, q_len, head_dim] and back) are timed, as they would be in a server using a contiguous
// kernel; its buffers are allocated once outside the timed loop. Before timing, both sides run
// once per batch and their outputs are compared (stderr: "agree"). The rooflines are
// roofline_bench's (deploy/bench-kernels.sh runs it at the same ISA level).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/bench_args.h"
#include "kernels/core/parallel.h"
#include "kernels/flash_attention/flash_attention.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune::kernels::bench {
namespace {

using bench::SplitList;

struct NamedProblem {
  std::string name;
  RaggedPagedAttentionProblem p;
  // Explicit lengths (both non-empty) instead of the spec's batch of p; p gives the other dims.
  std::vector<int32_t> kv_lens, q_lens;
};

RaggedPagedAttentionBatch MakeBatch(const NamedProblem& np, DType dtype) {
  if (np.kv_lens.empty()) return MakeRaggedPagedAttentionBatch(np.p, dtype, 1);
  return MakeRaggedPagedAttentionBatchFromLens(np.kv_lens, np.q_lens, np.p.page_size, np.p.heads, np.p.kv_heads,
                                               np.p.head_dim, dtype, 1);
}

void SetCounters(benchmark::State& state, const RaggedPagedAttentionBatch& b) {
  const double pairs = double(RaggedPagedAttentionPairs(b.shape, b.kv_lens.data(), b.cu_q_lens.data()));
  const double flops = 4.0 * double(b.shape.heads) * double(b.shape.head_dim) * pairs;
  double keys = 0;
  for (int32_t k : b.kv_lens) keys += k;
  const double bytes = 2.0 * keys * double(b.shape.kv_heads * b.shape.head_dim) * DTypeBytes(b.dtype) +
                       double(b.shape.total_q_tokens * b.shape.heads * b.shape.head_dim) * (DTypeBytes(b.dtype) + 4);
  state.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["GBps"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BenchOurs(benchmark::State& state, const RaggedPagedAttentionBatch* b, RaggedPagedAttentionBlockSizes bs,
               int threads) {
  std::vector<float> out(static_cast<size_t>(b->shape.total_q_tokens * b->shape.heads * b->shape.head_dim));
  const RaggedPagedAttentionInputs in = b->Inputs();
  for (auto _ : state) {
    auto st = RaggedPagedAttention(bs, b->shape, in, out.data(), threads);
    if (!st) {
      state.SkipWithError(st.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, *b);
}

// Gather + FlashAttention per sequence, with its buffers allocated once. Element type T is
// float or uint16_t (bf16 bits).
template <typename T>
class GatherFlash {
 public:
  explicit GatherFlash(const RaggedPagedAttentionBatch* b) : b_(b) {
    const RaggedPagedAttentionShape& sh = b->shape;
    const int64_t max_kv = *std::max_element(b->kv_lens.begin(), b->kv_lens.end());
    int64_t max_q = 0;
    for (int64_t s = 0; s < sh.num_seqs; ++s) max_q = std::max<int64_t>(max_q, b->cu_q_lens[s + 1] - b->cu_q_lens[s]);
    k_.resize(static_cast<size_t>(sh.kv_heads * max_kv * sh.head_dim));
    v_.resize(k_.size());
    q_.resize(static_cast<size_t>(sh.heads * max_q * sh.head_dim));
    o_.resize(q_.size());
  }

  Status Run(float* out, int threads) {
    const RaggedPagedAttentionShape& sh = b_->shape;
    const int64_t d = sh.head_dim;
    const T* kp = static_cast<const T*>(b_->Inputs().k_pages);
    const T* vp = static_cast<const T*>(b_->Inputs().v_pages);
    const T* qp = static_cast<const T*>(b_->Inputs().q);
    const FlashAttentionBlockSizes fbs;  // FlashAttention's defaults
    for (int64_t s = 0; s < sh.num_seqs; ++s) {
      const int64_t kv_len = b_->kv_lens[static_cast<size_t>(s)];
      const int64_t q0 = b_->cu_q_lens[static_cast<size_t>(s)];
      const int64_t q_len = b_->cu_q_lens[static_cast<size_t>(s + 1)] - q0;
      if (q_len == 0) continue;
      // Gather: page rows [page_size, kv_heads, d] -> [kv_heads, kv_len, d], split over the
      // threads by KV head and token half.
      ParallelFor(threads, sh.kv_heads * 2, [&](int64_t task, int) {
        const int64_t g = task / 2;
        const int64_t t_begin = kv_len * (task % 2) / 2, t_end = kv_len * (task % 2 + 1) / 2;
        for (int64_t t = t_begin; t < t_end; ++t) {
          const int64_t page = b_->page_indices[static_cast<size_t>(s * sh.pages_per_seq + t / sh.page_size)];
          const int64_t src = ((page * sh.page_size + t % sh.page_size) * sh.kv_heads + g) * d;
          std::memcpy(&k_[static_cast<size_t>((g * kv_len + t) * d)], kp + src, sizeof(T) * static_cast<size_t>(d));
          std::memcpy(&v_[static_cast<size_t>((g * kv_len + t) * d)], vp + src, sizeof(T) * static_cast<size_t>(d));
        }
      });
      for (int64_t i = 0; i < q_len; ++i) {
        for (int64_t h = 0; h < sh.heads; ++h) {
          std::memcpy(&q_[static_cast<size_t>((h * q_len + i) * d)], qp + ((q0 + i) * sh.heads + h) * d,
                      sizeof(T) * static_cast<size_t>(d));
        }
      }
      FlashAttentionShape fs;
      fs.batch = 1;
      fs.heads = sh.heads;
      fs.kv_heads = sh.kv_heads;
      fs.seq_q = q_len;
      fs.seq_kv = kv_len;
      fs.head_dim = d;
      fs.causal = true;  // bottom-right aligned: query i sees keys <= i + kv_len - q_len, as here
      if (auto st = FlashAttention(fbs, fs, q_.data(), k_.data(), v_.data(), o_.data(), nullptr, threads); !st) {
        return st;
      }
      for (int64_t i = 0; i < q_len; ++i) {
        for (int64_t h = 0; h < sh.heads; ++h) {
          std::memcpy(out + ((q0 + i) * sh.heads + h) * d, &o_[static_cast<size_t>((h * q_len + i) * d)],
                      sizeof(float) * static_cast<size_t>(d));
        }
      }
    }
    return {};
  }

 private:
  const RaggedPagedAttentionBatch* b_;
  std::vector<T> k_, v_, q_;
  std::vector<float> o_;
};

Status RunBaseline(const RaggedPagedAttentionBatch* b, float* out, int threads) {
  if (b->dtype == DType::kF32) return GatherFlash<float>(b).Run(out, threads);
  return GatherFlash<uint16_t>(b).Run(out, threads);
}

template <typename T>
void BenchGatherFlashT(benchmark::State& state, const RaggedPagedAttentionBatch* b, int threads) {
  GatherFlash<T> baseline(b);
  std::vector<float> out(static_cast<size_t>(b->shape.total_q_tokens * b->shape.heads * b->shape.head_dim));
  for (auto _ : state) {
    if (auto st = baseline.Run(out.data(), threads); !st) {
      state.SkipWithError(st.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, *b);
}

void BenchGatherFlash(benchmark::State& state, const RaggedPagedAttentionBatch* b, int threads) {
  if (b->dtype == DType::kF32) {
    BenchGatherFlashT<float>(state, b, threads);
  } else {
    BenchGatherFlashT<uint16_t>(state, b, threads);
  }
}

// Both sides must compute the same thing: checked once per batch before timing.
void CheckAgreement(const RaggedPagedAttentionBatch* b, const std::string& tag) {
  const size_t n = static_cast<size_t>(b->shape.total_q_tokens * b->shape.heads * b->shape.head_dim);
  std::vector<float> ours(n), base(n);
  const auto a = RaggedPagedAttention(RaggedPagedAttentionBlockSizes{}, b->shape, b->Inputs(), ours.data(), 2);
  const auto c = RunBaseline(b, base.data(), 2);
  const int64_t max_kv = *std::max_element(b->kv_lens.begin(), b->kv_lens.end());
  const VerifyReport r =
      Compare(ours.data(), base.data(), static_cast<int64_t>(n), RaggedPagedAttentionTolerance(max_kv));
  std::fprintf(stderr, "%s: ours vs baseline %s (max abs diff %.3g)\n", tag.c_str(),
               a && c && r.ok ? "agree" : "DISAGREE", r.max_abs_err);
}

int Main(int argc, char** argv) {
  std::vector<int> thread_counts = {1, 2};
  std::vector<DType> dtypes = {DType::kF32, DType::kBF16};
  bool sweep = false;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    if (arg.starts_with("--threads=")) {
      thread_counts.clear();
      for (const auto& t : SplitList(arg.substr(10))) thread_counts.push_back(std::atoi(t.c_str()));
    } else if (arg.starts_with("--dtypes=")) {
      dtypes.clear();
      for (const auto& t : SplitList(arg.substr(9))) {
        if (auto d = ParseDType(t)) dtypes.push_back(*d);
      }
    } else if (arg == "--sweep") {
      sweep = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const std::vector<NamedProblem> problems = {
      {"decode", {32, 2048, 0, 16, 8, 2, 128}, {}, {}},
      {"mixed", {16, 2048, 256, 16, 8, 2, 128}, {}, {}},
      {"prefill", {4, 1024, 1024, 16, 8, 2, 128}, {1024, 768, 512, 256}, {1024, 768, 512, 256}},
  };
  const RaggedPagedAttentionBlockSizes default_bs =
      *FromConfig<RaggedPagedAttentionBlockSizes>(RaggedPagedAttentionSpec().DefaultConfig());
  std::vector<RaggedPagedAttentionBlockSizes> configs = {default_bs, {2, 16}, {4, 16}, {16, 16}, {8, 4},
                                                         {8, 32},    {8, 64}, {4, 64}, {16, 64}, {32, 32}};
  if (sweep) {
    configs.clear();
    for (const Config& c : RaggedPagedAttentionSpec().ConfigSpace()) {
      configs.push_back(*FromConfig<RaggedPagedAttentionBlockSizes>(c));
    }
  }
  // Batches live for the whole run (benchmarks hold pointers).
  static std::vector<std::unique_ptr<RaggedPagedAttentionBatch>> batches;
  for (const NamedProblem& np : problems) {
    for (DType dtype : dtypes) {
      batches.push_back(std::make_unique<RaggedPagedAttentionBatch>(MakeBatch(np, dtype)));
      const RaggedPagedAttentionBatch* b = batches.back().get();
      const std::string tag = np.name + "/" + std::string(DTypeName(dtype));
      CheckAgreement(b, tag);
      for (int threads : thread_counts) {
        const std::string t = "/t" + std::to_string(threads);
        benchmark::RegisterBenchmark(("gather_flash/" + tag + t).c_str(), [=](benchmark::State& s) {
          BenchGatherFlash(s, b, threads);
        })->UseRealTime();
        for (const auto& bs : configs) {
          const std::string name = std::string("rpa_") + RaggedPagedAttentionIsa() + "/" + tag + t + "/p" +
                                   std::to_string(bs.kv_pages_per_block) + "_q" + std::to_string(bs.queries_per_block) +
                                   (bs == default_bs ? "_default" : "");
          benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& s) {
            BenchOurs(s, b, bs, threads);
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
