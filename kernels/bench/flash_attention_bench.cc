// flash_attention_bench: GFLOP/s of our FlashAttention (default config, configs from
// --configs, or every config with --sweep) next to attention materialised with OpenBLAS
// (S = scale * Q K^T by cblas_sgemm, a vectorised row softmax with vec::Exp, O = P V by
// cblas_sgemm) on one head, at 1 and 2 threads, causal and not. Each pair of rows is
// registered back to back so ours and the baseline run interleaved in one process.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE ./flash_attention_bench
//       [--seqs=512,2048,4096] [--head_dim=128] [--threads=1,2] [--causal=0,1] [--dtype=f32|bf16]
//       [--configs=64x128,128x256] [--sweep] [--no_baseline] [benchmark flags]
//
// On a shared machine add --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true
// --benchmark_report_aggregates_only=true and compare the "_min" rows.
//
// Counters: GFLOPs counts 4 * head_dim flops per unmasked (query, key) pair for both (the
// baseline computes the masked half too, but it is charged the same useful work);
// scratch_KiB is the extra memory: our per-thread scratch x threads vs the score matrix.
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/bench/bench_args.h"
#include "kernels/core/parallel.h"
#include "kernels/core/random.h"
#include "kernels/core/vec_math.h"
#include "kernels/flash_attention/flash_attention.h"

namespace blocktune::kernels::bench {
namespace {

using bench::ParseInts;
using bench::ParseTriples;
using bench::SplitList;
using bench::Triple;

std::vector<FlashAttentionBlockSizes> ParsePairs(std::string_view text) {
  std::vector<FlashAttentionBlockSizes> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string item(text.substr(0, comma));
    FlashAttentionBlockSizes bs;
    if (std::sscanf(item.c_str(), "%ldx%ld", &bs.block_q, &bs.block_kv) == 2) out.push_back(bs);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

struct Operands {
  explicit Operands(const FlashAttentionShape& s) {
    const size_t nq = size_t(s.batch * s.heads * s.seq_q * s.head_dim);
    const size_t nkv = size_t(s.batch * s.kv_heads * s.seq_kv * s.head_dim);
    SplitMix64 rng(12345);
    for (auto [vec, n] : {std::pair{&q, nq}, std::pair{&k, nkv}, std::pair{&v, nkv}}) {
      vec->resize(n);
      for (float& x : *vec) x = rng.NextSigned();
    }
    for (auto [f, b] : {std::pair{&q, &q16}, std::pair{&k, &k16}, std::pair{&v, &v16}}) {
      b->resize(f->size());
      vec::F32ToBf16(f->data(), b->data(), int64_t(f->size()));
    }
    o.resize(nq);
    lse.resize(size_t(s.batch * s.heads * s.seq_q));
  }
  std::vector<float> q, k, v, o, lse;
  std::vector<uint16_t> q16, k16, v16;
};

// Operands depend on the sizes only (causal or not reads the same inputs).
Operands& OperandsFor(const FlashAttentionShape& s) {
  std::string key;
  for (int64_t d : {s.batch, s.heads, s.kv_heads, s.seq_q, s.seq_kv, s.head_dim}) key += std::to_string(d) + "x";
  return bench::Shared<Operands>(key, s);
}

void SetCounters(benchmark::State& state, const FlashAttentionShape& s, int64_t scratch_bytes) {
  state.counters["GFLOPs"] =
      benchmark::Counter(4.0 * double(FlashAttentionPairs(s)) * double(s.head_dim) * double(s.batch * s.heads) * 1e-9,
                         benchmark::Counter::kIsIterationInvariantRate);
  state.counters["scratch_KiB"] = double(scratch_bytes) / 1024.0;
}

void BenchOurs(benchmark::State& state, FlashAttentionShape shape, FlashAttentionBlockSizes bs, DType dtype,
               int threads) {
  Operands& op = OperandsFor(shape);
  for (auto _ : state) {
    const auto status = dtype == DType::kF32 ? FlashAttention(bs, shape, op.q.data(), op.k.data(), op.v.data(),
                                                              op.o.data(), op.lse.data(), threads)
                                             : FlashAttention(bs, shape, op.q16.data(), op.k16.data(), op.v16.data(),
                                                              op.o.data(), op.lse.data(), threads);
    if (!status) {
      state.SkipWithError(status.error().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(op.o.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, shape, FlashAttentionScratchBytes(bs, shape, dtype, FlashAttentionIsa()) * threads);
}

// Row softmax of the materialised baseline: p = exp(s - max) / sum over the row's n unmasked
// keys (zeros beyond), and the row's logsumexp.
#if defined(__x86_64__)
__attribute__((target("avx512f"))) void SoftmaxRowAvx512(float* s, int64_t n, int64_t len, float* lse) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) mx = _mm512_max_ps(mx, _mm512_loadu_ps(s + j));
  float m = vec::ReduceMax(mx);
  for (; j < n; ++j) m = std::max(m, s[j]);
  const __m512 mv = _mm512_set1_ps(m);
  __m512 sum = _mm512_setzero_ps();
  for (j = 0; j + 16 <= n; j += 16) {
    const __m512 p = vec::Exp(_mm512_sub_ps(_mm512_loadu_ps(s + j), mv));
    _mm512_storeu_ps(s + j, p);
    sum = _mm512_add_ps(sum, p);
  }
  float total = vec::ReduceAdd(sum);
  for (; j < n; ++j) total += (s[j] = vec::ExpScalar(s[j] - m));
  const __m512 inv = _mm512_set1_ps(1.0f / total);
  for (j = 0; j + 16 <= n; j += 16) _mm512_storeu_ps(s + j, _mm512_mul_ps(_mm512_loadu_ps(s + j), inv));
  for (; j < n; ++j) s[j] /= total;
  std::fill(s + n, s + len, 0.0f);
  *lse = m + std::log(total);
}
#endif

void SoftmaxRowScalar(float* s, int64_t n, int64_t len, float* lse) {
  float m = -INFINITY;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, s[j]);
  float total = 0;
  for (int64_t j = 0; j < n; ++j) total += (s[j] = vec::ExpScalar(s[j] - m));
  for (int64_t j = 0; j < n; ++j) s[j] /= total;
  std::fill(s + n, s + len, 0.0f);
  *lse = m + std::log(total);
}

// One head (batch = heads = kv_heads = 1), f32.
void Materialised(const FlashAttentionShape& s, const float* q, const float* k, const float* v, float* scores, float* o,
                  float* lse, int threads, bool avx512) {
  const int sq = int(s.seq_q), skv = int(s.seq_kv), d = int(s.head_dim);
  const float scale = FlashAttentionDefaultScale(s.head_dim);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, sq, skv, d, scale, q, d, k, d, 0.0f, scores, skv);
  const int64_t diag = s.seq_kv - s.seq_q;
  ParallelFor(threads, s.seq_q, [&](int64_t i, int) {
    const int64_t n = s.causal ? std::clamp<int64_t>(i + diag + 1, 0, s.seq_kv) : s.seq_kv;
    float* row = scores + i * s.seq_kv;
#if defined(__x86_64__)
    if (avx512) {
      SoftmaxRowAvx512(row, n, s.seq_kv, lse + i);
      return;
    }
#endif
    SoftmaxRowScalar(row, n, s.seq_kv, lse + i);
  });
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, sq, d, skv, 1.0f, scores, skv, v, d, 0.0f, o, d);
}

void BenchMaterialised(benchmark::State& state, FlashAttentionShape shape, int threads) {
  Operands& op = OperandsFor(shape);
  std::vector<float> scores(size_t(shape.seq_q * shape.seq_kv));
  openblas_set_num_threads(threads);
  const bool avx512 = std::string_view(FlashAttentionIsa()) == "avx512";
  for (auto _ : state) {
    Materialised(shape, op.q.data(), op.k.data(), op.v.data(), scores.data(), op.o.data(), op.lse.data(), threads,
                 avx512);
    benchmark::DoNotOptimize(op.o.data());
    benchmark::ClobberMemory();
  }
  SetCounters(state, shape, int64_t(scores.size()) * 4);
}

// Min over repetitions: on a shared machine the fastest repetition is the least disturbed one.
double MinOf(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }

std::string BsName(const FlashAttentionBlockSizes& bs) {
  return "bq" + std::to_string(bs.block_q) + "_bkv" + std::to_string(bs.block_kv);
}

int Main(int argc, char** argv) {
  std::vector<int64_t> seqs = {512, 2048, 4096};
  std::vector<int64_t> thread_counts = {1, 2};
  std::vector<int64_t> causals = {0, 1};
  int64_t head_dim = 128;
  DType dtype = DType::kF32;
  std::vector<FlashAttentionBlockSizes> configs;
  bool sweep = false;
  bool baseline = true;
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (bench::ApplyIsaFlag(arg)) continue;
    if (arg.starts_with("--seqs=")) {
      seqs = ParseInts(arg.substr(7));
    } else if (arg.starts_with("--threads=")) {
      thread_counts = ParseInts(arg.substr(10));
    } else if (arg.starts_with("--causal=")) {
      causals = ParseInts(arg.substr(9));
    } else if (arg.starts_with("--head_dim=")) {
      head_dim = std::atoll(std::string(arg.substr(11)).c_str());
    } else if (arg.starts_with("--dtype=")) {
      dtype = arg.substr(8) == "bf16" ? DType::kBF16 : DType::kF32;
    } else if (arg.starts_with("--configs=")) {
      configs = ParsePairs(arg.substr(10));
    } else if (arg == "--sweep") {
      sweep = true;
    } else if (arg == "--no_baseline") {
      baseline = false;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const FlashAttentionBlockSizes default_bs =
      *FromConfig<FlashAttentionBlockSizes>(FlashAttentionSpec().DefaultConfig());
  std::vector<FlashAttentionBlockSizes> block_sizes = {default_bs};
  for (const auto& bs : configs) block_sizes.push_back(bs);
  if (sweep) {
    block_sizes.clear();
    for (const Config& c : FlashAttentionSpec().ConfigSpace()) {
      block_sizes.push_back(*FromConfig<FlashAttentionBlockSizes>(c));
    }
  }
  const HardwareProfile hw = HardwareProfile::Detect(1);
  for (int64_t seq : seqs) {
    for (int64_t causal : causals) {
      FlashAttentionShape shape;
      shape.seq_q = shape.seq_kv = seq;
      shape.head_dim = head_dim;
      shape.causal = causal != 0;
      const std::string sname =
          "s" + std::to_string(seq) + "_d" + std::to_string(head_dim) + (shape.causal ? "_causal" : "_full");
      for (int64_t t : thread_counts) {
        const int threads = int(t);
        if (baseline) {
          benchmark::RegisterBenchmark(("materialised_openblas/" + sname + "/t" + std::to_string(t)).c_str(),
                                       [=](benchmark::State& s) { BenchMaterialised(s, shape, threads); })
              ->UseRealTime()
              ->ComputeStatistics("min", MinOf);
        }
        for (const auto& bs : block_sizes) {
          if (!Validate(bs, shape, hw)) continue;
          const std::string name = std::string("flash_") + FlashAttentionIsa() + "_" + std::string(DTypeName(dtype)) +
                                   "/" + sname + "/t" + std::to_string(t) + "/" + BsName(bs) +
                                   (bs == default_bs ? "_default" : "");
          benchmark::RegisterBenchmark(name.c_str(),
                                       [=](benchmark::State& s) { BenchOurs(s, shape, bs, dtype, threads); })
              ->UseRealTime()
              ->ComputeStatistics("min", MinOf);
        }
      }
    }
  }
  return bench::RunRegisteredBenchmarks(rest);
}

}  // namespace
}  // namespace blocktune::kernels::bench

int main(int argc, char** argv) { return blocktune::kernels::bench::Main(argc, argv); }
