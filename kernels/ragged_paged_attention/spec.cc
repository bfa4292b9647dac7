// RaggedPagedAttentionSpec: how the generic tuner sees ragged_paged_attention — the summary dims
// a ragged batch is generated from and their buckets, the block-size search space, the default
// config, verification problems, and instances with seeded batches.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/ragged_paged_attention/ragged_paged_attention.h"

namespace blocktune::kernels {

// Tolerance for outputs that are softmax-weighted averages of values in [-1, 1).
// Scores: a head_dim-term f32 dot product of values in [-1, 1) scaled by 1/sqrt(head_dim) is off
// by ~sqrt(head_dim) * eps / sqrt(head_dim) ~ 1e-7 (random signs), which perturbs each weight by
// that relative amount; exp adds < 2e-7 relative; the running sum l and the output rows are
// rescaled once per KV block and summed in f32, ~sqrt(keys) * eps relative. Outputs are averages
// of many random values (|o| ~ 0.6 / sqrt(keys), <= 0.11 over the test batches), so the absolute
// error is ~1e-7: observed max 1.3e-7 over kv 1000-16384, head_dim 64-128, f32 and bf16, both
// ISAs and block sizes 1 and 8 pages. atol = 1e-6 + 2 * eps * sqrt(max_kv_len) (1.2e-5 at 2048
// keys) leaves a 10-100x margin, rtol 1e-5. A kernel that drops one 16-key page out of 2048
// moves an output by ~16/2048 * |v - o| ~ 4e-3 and one key of 2048 by ~2.5e-4: both fail.
// bf16 needs nothing extra: the reference reads the same bf16-rounded inputs and the kernel
// computes in f32 after the exact bf16 -> f32 widening.
Tolerance RaggedPagedAttentionTolerance(int64_t max_kv_len) {
  return Tolerance{1e-6 + 2.0 * FLT_EPSILON * std::sqrt(double(std::max<int64_t>(max_kv_len, 1))), 1e-5};
}

RaggedPagedAttentionInputs RaggedPagedAttentionBatch::Inputs() const {
  RaggedPagedAttentionInputs in = F32Inputs();
  in.dtype = dtype;
  if (dtype == DType::kBF16) {
    in.q = q_bf16.data();
    in.k_pages = k_pages_bf16.data();
    in.v_pages = v_pages_bf16.data();
  }
  return in;
}

RaggedPagedAttentionInputs RaggedPagedAttentionBatch::F32Inputs() const {
  RaggedPagedAttentionInputs in;
  in.dtype = DType::kF32;
  in.q = q.data();
  in.k_pages = k_pages.data();
  in.v_pages = v_pages.data();
  in.kv_lens = kv_lens.data();
  in.page_indices = page_indices.data();
  in.cu_q_lens = cu_q_lens.data();
  return in;
}

RaggedPagedAttentionBatch MakeRaggedPagedAttentionBatchFromLens(const std::vector<int32_t>& kv_lens,
                                                                const std::vector<int32_t>& q_lens, int64_t page_size,
                                                                int64_t heads, int64_t kv_heads, int64_t head_dim,
                                                                DType dtype, uint64_t seed) {
  RaggedPagedAttentionBatch b;
  b.dtype = dtype;
  const int64_t n = static_cast<int64_t>(kv_lens.size());
  RaggedPagedAttentionShape& sh = b.shape;
  sh.num_seqs = n;
  sh.page_size = page_size;
  sh.heads = heads;
  sh.kv_heads = kv_heads;
  sh.head_dim = head_dim;
  sh.pages_per_seq = 1;
  int64_t total_pages = 0;
  b.cu_q_lens.assign(1, 0);
  for (int64_t s = 0; s < n; ++s) {
    const int64_t used = (kv_lens[static_cast<size_t>(s)] + page_size - 1) / page_size;
    sh.pages_per_seq = std::max(sh.pages_per_seq, used);
    total_pages += used;
    b.cu_q_lens.push_back(b.cu_q_lens.back() + q_lens[static_cast<size_t>(s)]);
  }
  sh.num_pages = std::max<int64_t>(total_pages, 1);
  sh.total_q_tokens = b.cu_q_lens.back();
  b.kv_lens = kv_lens;

  // Pages: a seeded Fisher-Yates permutation of the whole pool, dealt out in sequence order, so
  // consecutive pages of a sequence are scattered over the pool. Unused table slots hold page 0
  // (valid, never read), as a padded page table would.
  SplitMix64 rng(seed);
  std::vector<int32_t> perm(static_cast<size_t>(sh.num_pages));
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int32_t>(i);
  for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.Below(i)]);
  b.page_indices.assign(static_cast<size_t>(n * sh.pages_per_seq), 0);
  size_t next = 0;
  for (int64_t s = 0; s < n; ++s) {
    const int64_t used = (kv_lens[static_cast<size_t>(s)] + page_size - 1) / page_size;
    for (int64_t j = 0; j < used; ++j) b.page_indices[static_cast<size_t>(s * sh.pages_per_seq + j)] = perm[next++];
  }

  const auto fill = [&](std::vector<float>& f, std::vector<uint16_t>& h, int64_t count) {
    f.resize(static_cast<size_t>(count));
    for (float& x : f) x = rng.NextSigned();
    if (dtype == DType::kBF16) {
      h.resize(f.size());
      for (size_t i = 0; i < f.size(); ++i) {
        h[i] = FloatToBF16(f[i]).bits;
        f[i] = BF16ToFloat(BF16{h[i]});
      }
    }
  };
  fill(b.q, b.q_bf16, sh.total_q_tokens * heads * head_dim);
  const int64_t pool = sh.num_pages * page_size * kv_heads * head_dim;
  fill(b.k_pages, b.k_pages_bf16, pool);
  fill(b.v_pages, b.v_pages_bf16, pool);
  return b;
}

namespace {

// The lengths a summary problem stands for (see the header): a fixed seed, so they depend only
// on the dims.
void LensOf(const RaggedPagedAttentionProblem& p, std::vector<int32_t>* kv_lens, std::vector<int32_t>* q_lens) {
  SplitMix64 rng(0x7a6e5d4c3b2a1908ull);
  // Clamped so an out-of-range problem (rejected by ValidateProblem) still yields a batch.
  const int64_t num_seqs = std::clamp<int64_t>(p.num_seqs, 0, 1 << 20);
  const int64_t max_kv = std::clamp<int64_t>(p.max_kv_len, 1, int64_t{1} << 30);
  kv_lens->resize(static_cast<size_t>(num_seqs));
  q_lens->resize(static_cast<size_t>(num_seqs));
  for (int64_t s = 0; s < num_seqs; ++s) {
    const int64_t kv = s == 0 ? max_kv : 1 + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(max_kv)));
    const bool prefill = p.prefill_q_len > 1 && s % 4 == 0;
    (*kv_lens)[static_cast<size_t>(s)] = static_cast<int32_t>(kv);
    (*q_lens)[static_cast<size_t>(s)] = static_cast<int32_t>(prefill ? std::min(p.prefill_q_len, kv) : 1);
  }
}

RaggedPagedAttentionProblem SummaryOf(const Problem& p) {
  RaggedPagedAttentionProblem r;
  r.num_seqs = p.Dim("num_seqs");
  r.max_kv_len = p.Dim("max_kv_len");
  r.prefill_q_len = p.Dim("prefill_q_len");
  r.page_size = p.Dim("page_size");
  r.heads = p.Dim("heads");
  r.kv_heads = p.Dim("kv_heads");
  r.head_dim = p.Dim("head_dim");
  return r;
}

// The call shape of a summary problem without generating its data.
RaggedPagedAttentionShape ShapeOf(const Problem& p, std::vector<int32_t>* kv_lens, std::vector<int32_t>* q_lens) {
  const RaggedPagedAttentionProblem s = SummaryOf(p);
  LensOf(s, kv_lens, q_lens);
  RaggedPagedAttentionShape sh;
  sh.num_seqs = static_cast<int64_t>(kv_lens->size());
  sh.page_size = std::max<int64_t>(s.page_size, 1);
  sh.heads = s.heads;
  sh.kv_heads = s.kv_heads;
  sh.head_dim = s.head_dim;
  sh.pages_per_seq = std::max<int64_t>((std::max<int64_t>(s.max_kv_len, 1) + sh.page_size - 1) / sh.page_size, 1);
  int64_t pages = 0;
  for (int32_t kv : *kv_lens) pages += (kv + sh.page_size - 1) / sh.page_size;
  for (int32_t q : *q_lens) sh.total_q_tokens += q;
  sh.num_pages = std::max<int64_t>(pages, 1);
  return sh;
}

class RaggedPagedAttentionInstance final : public KernelInstance {
 public:
  RaggedPagedAttentionInstance(const RaggedPagedAttentionProblem& p, DType dtype, uint64_t seed)
      : batch_(MakeRaggedPagedAttentionBatch(p, dtype, seed)),
        max_kv_len_(p.max_kv_len),
        out_(static_cast<size_t>(batch_.shape.total_q_tokens * p.heads * p.head_dim + kGuardFloats)),
        ref_(out_.size() - kGuardFloats) {}

  Status Run(const Config& config, int threads) override {
    auto bs = FromConfig<RaggedPagedAttentionBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    return RaggedPagedAttention(*bs, batch_.shape, batch_.Inputs(), out_.data(), threads);
  }

  void RunReference() override { RaggedPagedAttentionReference(batch_.shape, batch_.F32Inputs(), ref_.data()); }

  void PoisonOutputs() override { std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN()); }

  VerifyReport Verify() const override {
    return Compare(out_.data(), ref_.data(), static_cast<int64_t>(ref_.size()),
                   RaggedPagedAttentionTolerance(max_kv_len_));
  }

  // The inputs the kernel reads (the bf16 copies for bf16 problems, the metadata arrays either
  // way) must come back unchanged, and nothing may be written past the output.
  WatchedMemory Watched() override {
    WatchedMemory w;
    const auto in = [&](const auto& v) { w.inputs.push_back(std::as_bytes(std::span(v))); };
    if (batch_.dtype == DType::kBF16) {
      in(batch_.q_bf16);
      in(batch_.k_pages_bf16);
      in(batch_.v_pages_bf16);
    } else {
      in(batch_.q);
      in(batch_.k_pages);
      in(batch_.v_pages);
    }
    in(batch_.kv_lens);
    in(batch_.cu_q_lens);
    in(batch_.page_indices);
    w.output_guards = {std::as_writable_bytes(std::span<float>(out_).subspan(ref_.size()))};
    return w;
  }

 private:
  // One widest vector store (16 floats) after the output for the verifier's canary.
  static constexpr int64_t kGuardFloats = 16;
  RaggedPagedAttentionBatch batch_;
  int64_t max_kv_len_;
  std::vector<float> out_, ref_;  // out_ ends in the guard
};

// kv_pages_per_block: 1-64 pages (16-1024 keys at page_size 16): small blocks keep the K/V block
// and the score rows in L1 (8 pages x 16 keys x 128 x 4 B = 64 KiB of K per block), large ones
// cut the per-block softmax bookkeeping. queries_per_block: 1-128 (x heads/kv_heads score rows):
// large blocks reuse each K/V row for more queries (prefill), small ones make more work items
// for the threads when a batch has few long prefills. 7 x 8 = 56 configs.
const std::vector<ParamSpec>& Params() {
  static const std::vector<ParamSpec> kParams = {
      {"kv_pages_per_block", {1, 2, 4, 8, 16, 32, 64}, "KV pages per online-softmax step"},
      {"queries_per_block", {1, 2, 4, 8, 16, 32, 64, 128}, "query tokens per work item"},
  };
  return kParams;
}

// num_seqs, max_kv_len and prefill_q_len are sizes (pow2 buckets; prefill_q_len 0 rounds to 1,
// which is the same all-decode batch). page_size, heads, kv_heads and head_dim are exact: they
// are a model's architecture constants (few distinct values per deployment), and they set the
// score-row count per KV head, the head_dim remainder chunk and the keys per page, which pow2
// rounding would blur (head_dim 80 and 128 take different register tilings).
const std::vector<DimSpec>& Dims() {
  static const std::vector<DimSpec> kDims = {
      {{"num_seqs", tables::Rounding::kPow2Ceil, 1, 1024}, 1024, "sequences in the batch"},
      {{"max_kv_len", tables::Rounding::kPow2Ceil, 1, 131072}, 131072, "longest context (tokens in the KV cache)"},
      {{"prefill_q_len", tables::Rounding::kPow2Ceil, 0, 8192},
       8192,
       "query tokens of the prefill sequences (every 4th); 0 = all decode"},
      {{"page_size", tables::Rounding::kExact, 1, 512}, 512, "tokens per KV page"},
      {{"heads", tables::Rounding::kExact, 1, 128}, 128, "query heads"},
      {{"kv_heads", tables::Rounding::kExact, 1, 128}, 128, "KV heads (heads must be a multiple)"},
      {{"head_dim", tables::Rounding::kExact, 1, 256}, 256, "features per head"},
  };
  return kDims;
}

// Reference cost budget for a verification problem: the double-precision oracle runs at ~1-2
// GFLOP/s here, so 4e7 flops keeps it under ~40 ms.
constexpr double kVerificationFlops = 4e7;

class RaggedPagedAttentionSpecImpl final : public KernelSpec {
 public:
  std::string_view name() const override { return "ragged_paged_attention"; }
  std::string_view description() const override {
    return "causal attention of a ragged decode/prefill batch over a paged KV cache, online softmax per "
           "(sequence, KV head, query block)";
  }
  const std::vector<ParamSpec>& params() const override { return Params(); }
  const std::vector<DimSpec>& dims() const override { return Dims(); }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kBF16}; }

  // 8 pages (128 keys at page_size 16) x 16 queries: valid for every page_size up to the dim's
  // 512 (8 * 512 = 4096 keys, the block bound) and any batch (blocks clamp to the sequence).
  Config DefaultConfig() const override { return ToConfig(RaggedPagedAttentionBlockSizes{8, 16}); }

  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override {
    auto bs = FromConfig<RaggedPagedAttentionBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    std::vector<int32_t> kv, q;
    return Validate(*bs, ShapeOf(problem, &kv, &q), hw);
  }

  // At most 5 sequences (one prefill, four decode: both kinds of work item), a longest context of
  // two full KV blocks plus half a page plus one key (a partial block and a partial page), and a
  // prefill of one query block plus 3 (a full and a partial query block), each capped at the
  // bucket; then cut (sequences to 2 = one prefill and one decode, then the context halved, then
  // the prefill, then 1 sequence) until the reference costs at most kVerificationFlops.
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override {
    RaggedPagedAttentionBlockSizes bs;
    if (auto parsed = FromConfig<RaggedPagedAttentionBlockSizes>(config)) bs = *parsed;
    const RaggedPagedAttentionProblem b = SummaryOf(bucket_problem);
    RaggedPagedAttentionProblem v = b;
    const int64_t page = std::max<int64_t>(b.page_size, 1);
    v.num_seqs = std::clamp<int64_t>(b.num_seqs, 1, 5);
    v.max_kv_len = std::clamp<int64_t>(std::max<int64_t>(bs.kv_pages_per_block, 1) * page * 2 + page / 2 + 1, 1,
                                       std::max<int64_t>(b.max_kv_len, 1));
    v.prefill_q_len = b.prefill_q_len > 1 ? std::min(b.prefill_q_len, std::max<int64_t>(bs.queries_per_block, 1) + 3)
                                          : b.prefill_q_len;
    const auto to_problem = [&](const RaggedPagedAttentionProblem& x) {
      Problem p;
      p.dtype = bucket_problem.dtype;
      p.dims = NamedInts({{"num_seqs", x.num_seqs},
                          {"max_kv_len", x.max_kv_len},
                          {"prefill_q_len", x.prefill_q_len},
                          {"page_size", x.page_size},
                          {"heads", x.heads},
                          {"kv_heads", x.kv_heads},
                          {"head_dim", x.head_dim}});
      return p;
    };
    for (int guard = 0; guard < 64 && Flops(to_problem(v)) > kVerificationFlops; ++guard) {
      if (v.num_seqs > 2) {
        v.num_seqs = 2;  // still one prefill (s = 0) and one decode
      } else if (v.max_kv_len > page + 1) {
        v.max_kv_len = std::max(page + 1, v.max_kv_len / 2);
      } else if (v.prefill_q_len > 2) {
        v.prefill_q_len /= 2;
      } else if (v.num_seqs > 1) {
        v.num_seqs = (v.num_seqs + 1) / 2;
      } else if (v.max_kv_len > 1) {
        v.max_kv_len /= 2;
      } else {
        break;
      }
    }
    return to_problem(v);
  }

  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override {
    return std::make_unique<RaggedPagedAttentionInstance>(SummaryOf(problem), problem.dtype, seed);
  }

  double Flops(const Problem& problem) const override {
    std::vector<int32_t> kv, q;
    const RaggedPagedAttentionShape sh = ShapeOf(problem, &kv, &q);
    std::vector<int32_t> cu(1, 0);
    for (int32_t x : q) cu.push_back(cu.back() + x);
    return 4.0 * double(sh.heads) * double(sh.head_dim) * double(RaggedPagedAttentionPairs(sh, kv.data(), cu.data()));
  }

  // q read once, each sequence's kv_len K and V rows read once, the output written once, plus the
  // metadata arrays.
  double Bytes(const Problem& problem) const override {
    std::vector<int32_t> kv, q;
    const RaggedPagedAttentionShape sh = ShapeOf(problem, &kv, &q);
    const double elem = DTypeBytes(problem.dtype);
    double keys = 0;
    for (int32_t x : kv) keys += x;
    const double q_elems = double(sh.total_q_tokens) * double(sh.heads) * double(sh.head_dim);
    return q_elems * (elem + 4.0) + 2.0 * keys * double(sh.kv_heads) * double(sh.head_dim) * elem +
           4.0 * double(2 * sh.num_seqs + 1 + sh.num_seqs * sh.pages_per_seq);
  }
};

}  // namespace

RaggedPagedAttentionBatch MakeRaggedPagedAttentionBatch(const RaggedPagedAttentionProblem& p, DType dtype,
                                                        uint64_t seed) {
  std::vector<int32_t> kv, q;
  LensOf(p, &kv, &q);
  return MakeRaggedPagedAttentionBatchFromLens(kv, q, std::max<int64_t>(p.page_size, 1), p.heads, p.kv_heads,
                                               p.head_dim, dtype, seed);
}

const KernelSpec& RaggedPagedAttentionSpec() {
  static const RaggedPagedAttentionSpecImpl kSpec;
  return kSpec;
}

}  // namespace blocktune::kernels
