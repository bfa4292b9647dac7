// FlashAttentionSpec: how the generic tuner sees flash_attention — its dims and buckets, the
// block-size search space, the default config, verification problems and instances with
// seeded random data (f32, or bf16 with the reference reading the same rounded values).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/flash_attention/flash_attention.h"

namespace blocktune::kernels {
namespace {

FlashAttentionShape ShapeOf(const Problem& p) {
  FlashAttentionShape s;
  s.batch = p.Dim("batch");
  s.heads = p.Dim("heads");
  s.kv_heads = p.Dim("kv_heads");
  s.seq_q = p.Dim("seq_q");
  s.seq_kv = p.Dim("seq_kv");
  s.head_dim = p.Dim("head_dim");
  s.causal = p.Dim("causal") != 0;
  return s;
}

}  // namespace

// Tolerance for O and LSE with inputs uniform in [-1, 1] (the instances' data), the same for
// f32 and bf16 because the reference reads the identical bf16-rounded values and the kernel
// computes in f32 either way. Error sources of the kernel, per output element:
//  - a score is a head_dim-term f32 dot product (pre-scaled Q): |error| <~ head_dim * eps *
//    sum|scale*q*k| / sqrt(head_dim)-ish, far below head_dim * eps;
//  - vec::Exp is within 2e-7 relative; p's relative error is that plus the score error;
//  - l and the P*V sums accumulate up to seq_kv f32 terms (blocked, then rescaled):
//    relative error <= seq_kv * eps in the worst case, ~sqrt(seq_kv) * eps typically.
// O is a convex combination of V rows (|O| <= 1), so its absolute error is bounded by these
// relative errors: atol = 2 * eps * (seq_kv + head_dim) + 1e-6 (the 1e-6 covers Exp's 2e-7
// twice over), rtol = 4 * eps (|LSE| ~ log(seq_kv) adds a few eps relative). These are
// worst-case bounds: over the 576 verification problems of the config space (head_dim 64/128/
// 256, causal or not, f32 and bf16) the worst element used 1.7% of its tolerance (4.8e-7).
// Dropping one kv block of b keys out of n moves O by ~ (b/n) * |mean of the block's V - O|
// ~ 1e-2 at the verification sizes (atol ~1e-4) and LSE by ~log(1 - b/n), so a kernel that
// skips a block fails on most elements (checked in the test).
Tolerance FlashAttentionTolerance(const FlashAttentionShape& shape) {
  return Tolerance{2.0 * FLT_EPSILON * double(std::max<int64_t>(shape.seq_kv, 1) + shape.head_dim) + 1e-6,
                   4.0 * FLT_EPSILON};
}

namespace {

class FlashAttentionInstance final : public KernelInstance {
 public:
  FlashAttentionInstance(const FlashAttentionShape& shape, DType dtype, uint64_t seed) : shape_(shape), dtype_(dtype) {
    const int64_t q_elems = shape.batch * shape.heads * shape.seq_q * shape.head_dim;
    const int64_t kv_elems = shape.batch * shape.kv_heads * shape.seq_kv * shape.head_dim;
    const int64_t rows = shape.batch * shape.heads * shape.seq_q;
    q_.resize(size_t(q_elems));
    k_.resize(size_t(kv_elems));
    v_.resize(size_t(kv_elems));
    o_.resize(size_t(q_elems + kGuardFloats));
    o_ref_.resize(size_t(q_elems));
    lse_.resize(size_t(rows + kGuardFloats));
    lse_ref_.resize(size_t(rows));
    SplitMix64 rng(seed);
    for (auto* x : {&q_, &k_, &v_}) {
      for (float& f : *x) f = rng.NextSigned();
    }
    if (dtype == DType::kBF16) {
      // Round to bf16 once; the f32 copies then hold exactly the values the kernel reads.
      for (auto [f, b] : {std::pair{&q_, &q16_}, std::pair{&k_, &k16_}, std::pair{&v_, &v16_}}) {
        b->resize(f->size());
        for (size_t i = 0; i < f->size(); ++i) {
          (*b)[i] = FloatToBF16((*f)[i]).bits;
          (*f)[i] = BF16ToFloat(BF16{(*b)[i]});
        }
      }
    }
  }

  Status Run(const Config& config, int threads) override {
    auto bs = FromConfig<FlashAttentionBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    if (dtype_ == DType::kBF16) {
      return FlashAttention(*bs, shape_, q16_.data(), k16_.data(), v16_.data(), o_.data(), lse_.data(), threads);
    }
    return FlashAttention(*bs, shape_, q_.data(), k_.data(), v_.data(), o_.data(), lse_.data(), threads);
  }

  void RunReference() override {
    FlashAttentionReference(shape_, q_.data(), k_.data(), v_.data(), o_ref_.data(), lse_ref_.data());
  }

  void PoisonOutputs() override {
    std::fill(o_.begin(), o_.end(), std::numeric_limits<float>::quiet_NaN());
    std::fill(lse_.begin(), lse_.end(), std::numeric_limits<float>::quiet_NaN());
  }

  // O and LSE together. A fully masked row has LSE -inf in the reference; where the kernel
  // also gives -inf both are compared as 0 (Compare counts any non-finite output as wrong).
  VerifyReport Verify() const override {
    const Tolerance tol = FlashAttentionTolerance(shape_);
    const VerifyReport ro = Compare(o_.data(), o_ref_.data(), int64_t(o_ref_.size()), tol);
    std::vector<float> lse(lse_.begin(), lse_.begin() + std::ptrdiff_t(lse_ref_.size())), lse_ref = lse_ref_;
    for (size_t i = 0; i < lse.size(); ++i) {
      if (std::isinf(lse[i]) && lse[i] < 0 && std::isinf(lse_ref[i]) && lse_ref[i] < 0) lse[i] = lse_ref[i] = 0;
    }
    const VerifyReport rl = Compare(lse.data(), lse_ref.data(), int64_t(lse.size()), tol);
    VerifyReport r;
    r.elements = ro.elements + rl.elements;
    r.mismatches = ro.mismatches + rl.mismatches;
    r.non_finite = ro.non_finite + rl.non_finite;
    r.max_abs_err = std::max(ro.max_abs_err, rl.max_abs_err);
    r.max_rel_err = std::max(ro.max_rel_err, rl.max_rel_err);
    r.ok = ro.ok && rl.ok;
    return r;
  }

  WatchedMemory Watched() override {
    WatchedMemory w;
    if (dtype_ == DType::kBF16) {
      for (const auto* x : {&q16_, &k16_, &v16_}) w.inputs.push_back(std::as_bytes(std::span<const uint16_t>(*x)));
    } else {
      for (const auto* x : {&q_, &k_, &v_}) w.inputs.push_back(std::as_bytes(std::span<const float>(*x)));
    }
    w.output_guards = {std::as_writable_bytes(std::span<float>(o_).subspan(o_ref_.size())),
                       std::as_writable_bytes(std::span<float>(lse_).subspan(lse_ref_.size()))};
    return w;
  }

 private:
  FlashAttentionShape shape_;
  DType dtype_;
  // 16 floats (one widest vector store) after O and after LSE for the verifier's canaries.
  static constexpr int64_t kGuardFloats = 16;
  std::vector<float> q_, k_, v_, o_, o_ref_, lse_, lse_ref_;  // o_, lse_ end in the guard
  std::vector<uint16_t> q16_, k16_, v16_;
};

// Candidates: block_q in whole AVX-512 panels (32 queries; 32-256, i.e. 1-8 panels, the Q
// and O^T panels 2 * block_q * head_dim * 4 B = 32-256 KiB at head_dim 128, in L2), block_kv
// from 32 (more rescaling, finer causal skipping) to 512 (a 64 KiB score panel, past L1).
// 6 x 8 = 48 configs, all valid on every ISA (multiples of 16).
const std::vector<ParamSpec>& Params() {
  static const std::vector<ParamSpec> kParams = {
      {"block_q", {32, 64, 96, 128, 192, 256}, "queries per work item (multiple of 16)"},
      {"block_kv", {32, 64, 96, 128, 192, 256, 384, 512}, "keys/values per streamed block (multiple of 16)"},
  };
  return kParams;
}

const std::vector<DimSpec>& Dims() {
  static const std::vector<DimSpec> kDims = {
      {{"batch", tables::Rounding::kPow2Ceil, 1, 256}, 256, "batch size"},
      {{"heads", tables::Rounding::kPow2Ceil, 1, 256}, 256, "query heads"},
      {{"kv_heads", tables::Rounding::kPow2Ceil, 1, 256}, 256, "key/value heads (heads must be a multiple)"},
      {{"seq_q", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "query sequence length"},
      {{"seq_kv", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "key/value sequence length"},
      {{"head_dim", tables::Rounding::kExact, 1, 256}, 256, "head dimension (64/128 typical)"},
      {{"causal", tables::Rounding::kExact, 0, 1}, 1, "1 for a bottom-right aligned causal mask"},
  };
  return kDims;
}

// Reference multiply-adds allowed for one verification problem (2 per query, key and d: the
// scores and the P*V sum). Measured on the shared 2-core Xeon: the slowest verification
// problem of the whole config space at head_dim 64/128/256 takes 13-19 ms, under the ~50 ms
// budget with room for a slower machine.
constexpr double kVerifyBudgetMacs = 24e6;

class FlashAttentionSpecImpl final : public KernelSpec {
 public:
  std::string_view name() const override { return "flash_attention"; }
  std::string_view description() const override {
    return "softmax(scale * Q K^T [causal]) V with logsumexp, FlashAttention-style blocked online softmax, "
           "GQA/MQA, f32 or bf16 inputs";
  }
  const std::vector<ParamSpec>& params() const override { return Params(); }
  const std::vector<DimSpec>& dims() const override { return Dims(); }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kBF16}; }

  // 128 x 128: multiples of 16 (valid on every ISA and any problem: blocks larger than the
  // sequence are clamped). Every query block streams its head's whole K and V, so a larger
  // block_q cuts that traffic: at seq 4096 (K+V = 4 MiB, past the 2 MiB L2) 128 ran ~5-10%
  // faster than 64 and within ~5% of 256, while at seq 512-2048 all of 64-256 were within
  // noise; 128 still leaves 4 items for 2 threads at seq 512 with one head. block_kv 128
  // amortises the O rescale over 128 keys with a 16 KiB score panel (in L1).
  Config DefaultConfig() const override { return ToConfig(FlashAttentionBlockSizes{128, 128}); }

  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override {
    auto bs = FromConfig<FlashAttentionBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    return Validate(*bs, ShapeOf(problem), hw);
  }

  // seq_q and seq_kv are one full block plus 13 (not a multiple of 16, so the last block and
  // the last micro-tile are partial), capped at the bucket; the different lengths also move
  // the causal diagonal off the block boundaries. Heads keep the bucket's GQA shape with at
  // most 2 kv heads x 2 q heads per group, one batch; then heads, then seq_q shrink until the
  // reference fits kVerifyBudgetMacs.
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override {
    FlashAttentionBlockSizes bs;
    if (auto parsed = FromConfig<FlashAttentionBlockSizes>(config)) bs = *parsed;
    const FlashAttentionShape b = ShapeOf(bucket_problem);
    FlashAttentionShape s;
    s.batch = 1;
    s.kv_heads = std::clamp<int64_t>(b.kv_heads, 1, 2);
    const int64_t group = b.kv_heads > 0 && b.heads % b.kv_heads == 0 ? b.heads / b.kv_heads : 1;
    s.heads = s.kv_heads * std::clamp<int64_t>(group, 1, 2);
    s.seq_q = std::clamp<int64_t>(b.seq_q, 1, std::max<int64_t>(bs.block_q, 16) + 13);
    s.seq_kv = std::clamp<int64_t>(b.seq_kv, 1, std::max<int64_t>(bs.block_kv, 16) + 13);
    s.head_dim = std::clamp<int64_t>(b.head_dim, 1, 256);
    s.causal = b.causal;
    const auto macs = [&] { return 2.0 * double(s.heads) * double(s.seq_q) * double(s.seq_kv) * double(s.head_dim); };
    if (macs() > kVerifyBudgetMacs) {
      s.kv_heads = 1;
      s.heads = std::min<int64_t>(group, 2);
    }
    if (macs() > kVerifyBudgetMacs) s.heads = 1;
    if (macs() > kVerifyBudgetMacs) {
      s.seq_q = std::max<int64_t>(
          16, static_cast<int64_t>(kVerifyBudgetMacs / (2.0 * double(s.seq_kv) * double(s.head_dim))));
    }
    Problem p;
    p.dtype = bucket_problem.dtype;
    p.dims = NamedInts({{"batch", s.batch},
                        {"heads", s.heads},
                        {"kv_heads", s.kv_heads},
                        {"seq_q", s.seq_q},
                        {"seq_kv", s.seq_kv},
                        {"head_dim", s.head_dim},
                        {"causal", s.causal ? 1 : 0}});
    return p;
  }

  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override {
    return std::make_unique<FlashAttentionInstance>(ShapeOf(problem), problem.dtype, seed);
  }

  // 4 flops per unmasked (query, key, d): a multiply-add in Q K^T and one in P V.
  double Flops(const Problem& problem) const override {
    const FlashAttentionShape s = ShapeOf(problem);
    return 4.0 * double(s.batch) * double(s.heads) * double(FlashAttentionPairs(s)) * double(s.head_dim);
  }

  // Q, K, V read once in their dtype; O and LSE written once in f32.
  double Bytes(const Problem& problem) const override {
    const FlashAttentionShape s = ShapeOf(problem);
    const double in = double(DTypeBytes(problem.dtype));
    const double q = double(s.batch) * double(s.heads) * double(s.seq_q) * double(s.head_dim);
    const double kv = double(s.batch) * double(s.kv_heads) * double(s.seq_kv) * double(s.head_dim);
    const double rows = double(s.batch) * double(s.heads) * double(s.seq_q);
    return in * (q + 2.0 * kv) + 4.0 * (q + rows);
  }
};

}  // namespace

const KernelSpec& FlashAttentionSpec() {
  static const FlashAttentionSpecImpl kSpec;
  return kSpec;
}

}  // namespace blocktune::kernels
