// FusedCrossEntropySpec: how the generic tuner sees fused_cross_entropy — dims b, h, v and the
// backward flag with their buckets, the block-size search space, the default config,
// verification problems, and instances with seeded random data (z-loss weight 1e-4).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/fused_cross_entropy/fused_cross_entropy.h"

namespace blocktune::kernels {

// Tolerances, for inputs in [-1, 1] (f32, or bf16 values the reference consumes too: the
// kernel's bf16 -> f32 conversion is exact, so bf16 adds no error of its own).
//  - logits: f32 sums of h products; as MatmulTolerance, 2 eps h absolute bounds the blocked
//    summation's error with a wide margin.
//  - lse = m + log(s): lse is 1-Lipschitz in the logits (adds the logit bound); s is summed in
//    f32 in 16 (AVX-512) or 8 (AVX2) lanes of ceil(v / lanes) terms plus a per-tile rescale,
//    so its relative error (= absolute error of log s) is below eps * (v / 8 + 32), plus the
//    exp polynomial's 2e-7 relative error per term (4e-7 with margin).
//  - loss = lse - logit[label] + z lse^2: the errors add, the z term scales the lse error by
//    2 z |lse|; rounding the three-term sum costs eps * (2 |lse| + z lse^2) even when the loss
//    itself is small (the label logit cancels the lse).
//  - dlogits = c * p - dloss * onehot: p = exp(logit - lse) has relative error
//    delta = logit + lse errors + 1e-6 (exp polynomial and the products). dx[b, h] sums v
//    such terms times |w| <= 1, dw[h, v] sums b terms times |x| <= 1; with f32 accumulation
//    each is within mass * (delta + 2 eps n) of the exact value, where mass is the sum of the
//    absolute terms (the reference reports its maximum). Dropping a vocabulary block moves
//    dx rows by about the block's share of the row mass, and dropping a row block moves dw
//    columns by whole label terms (~|dloss| * |x| ~ 0.25): both are orders above these bounds.
FusedCrossEntropyTolerances FusedCrossEntropyTolerance(const FusedCrossEntropyShape& shape, DType /*dtype*/,
                                                       float z_loss_weight, double max_abs_lse, double dx_row_mass,
                                                       double dw_col_mass) {
  const double eps = FLT_EPSILON;
  const double z = std::fabs(double(z_loss_weight));
  const double logit = 2.0 * eps * double(std::max<int64_t>(shape.h, 1));
  const double lse = logit + eps * (double(shape.v) / 8.0 + 32.0) + 4e-7;
  const double loss =
      lse * (1.0 + 2.0 * z * max_abs_lse) + logit + 2.0 * eps * (2.0 * max_abs_lse + z * max_abs_lse * max_abs_lse);
  const double delta = logit + lse + 1e-6;
  FusedCrossEntropyTolerances t;
  t.lse = Tolerance{lse, 4.0 * eps};
  t.loss = Tolerance{loss, 4.0 * eps};
  t.dx = Tolerance{dx_row_mass * (delta + 2.0 * eps * double(shape.v)) + 1e-30, 4.0 * eps};
  t.dw = Tolerance{dw_col_mass * (delta + 2.0 * eps * double(shape.b)) + 1e-30, 4.0 * eps};
  return t;
}

namespace {

constexpr float kSpecZLossWeight = 1e-4f;

FusedCrossEntropyShape ShapeOf(const Problem& p) { return FusedCrossEntropyShape{p.Dim("b"), p.Dim("h"), p.Dim("v")}; }

void Merge(VerifyReport& into, const VerifyReport& r) {
  into.ok = into.ok && r.ok;
  into.elements += r.elements;
  into.mismatches += r.mismatches;
  into.non_finite += r.non_finite;
  into.max_abs_err = std::max(into.max_abs_err, r.max_abs_err);
  into.max_rel_err = std::max(into.max_rel_err, r.max_rel_err);
}

class FusedCrossEntropyInstance final : public KernelInstance {
 public:
  FusedCrossEntropyInstance(const FusedCrossEntropyShape& shape, DType dtype, bool backward, uint64_t seed)
      : shape_(shape), dtype_(dtype), backward_(backward) {
    const auto n = [](int64_t count) { return static_cast<size_t>(count); };
    x_.resize(n(shape.b * shape.h));
    w_.resize(n(shape.h * shape.v));
    labels_.resize(n(shape.b));
    dloss_.resize(n(shape.b));
    SplitMix64 rng(seed);
    for (float& v : x_) v = rng.NextSigned();
    for (float& v : w_) v = rng.NextSigned();
    if (dtype == DType::kBF16) {
      x_bf16_.resize(x_.size());
      w_bf16_.resize(w_.size());
      for (size_t i = 0; i < x_.size(); ++i) {
        x_bf16_[i] = FloatToBF16(x_[i]).bits;
        x_[i] = BF16ToFloat(BF16{x_bf16_[i]});
      }
      for (size_t i = 0; i < w_.size(); ++i) {
        w_bf16_[i] = FloatToBF16(w_[i]).bits;
        w_[i] = BF16ToFloat(BF16{w_bf16_[i]});
      }
    }
    // Every fifth row ignored, row 1 labelled with the last vocabulary index.
    for (int64_t i = 0; i < shape.b; ++i) {
      labels_[n(i)] = static_cast<int32_t>(rng.Below(static_cast<uint64_t>(shape.v)));
      if (i % 5 == 3) labels_[n(i)] = -1;
      if (i == 1) labels_[n(i)] = static_cast<int32_t>(shape.v - 1);
      dloss_[n(i)] = rng.NextSigned();
    }
    loss_.resize(n(shape.b + kGuardFloats));
    lse_.resize(n(shape.b + kGuardFloats));
    ref_loss_.resize(n(shape.b));
    ref_lse_.resize(n(shape.b));
    if (backward) {
      dx_.resize(x_.size() + n(kGuardFloats));
      dw_.resize(w_.size() + n(kGuardFloats));
      ref_dx_.resize(x_.size());
      ref_dw_.resize(w_.size());
    }
  }

  Status Run(const Config& config, int threads) override {
    auto bs = FromConfig<FusedCrossEntropyBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    const FusedCrossEntropyInputs in = Inputs();
    if (auto s = FusedCrossEntropyForward(*bs, shape_, in, loss_.data(), lse_.data(), threads); !s) return s;
    if (!backward_) return {};
    return FusedCrossEntropyBackward(*bs, shape_, in, lse_.data(), dloss_.data(), dx_.data(), dw_.data(), threads);
  }

  void RunReference() override {
    FusedCrossEntropyReference(shape_, x_.data(), w_.data(), labels_.data(), kSpecZLossWeight, ref_loss_.data(),
                               ref_lse_.data(), backward_ ? dloss_.data() : nullptr,
                               backward_ ? ref_dx_.data() : nullptr, backward_ ? ref_dw_.data() : nullptr,
                               &dx_row_mass_, &dw_col_mass_);
  }

  void PoisonOutputs() override {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (auto* v : {&loss_, &lse_, &dx_, &dw_}) std::fill(v->begin(), v->end(), nan);
  }

  VerifyReport Verify() const override {
    double max_abs_lse = 0;
    for (float l : ref_lse_) max_abs_lse = std::max(max_abs_lse, std::fabs(double(l)));
    const FusedCrossEntropyTolerances tol =
        FusedCrossEntropyTolerance(shape_, dtype_, kSpecZLossWeight, max_abs_lse, dx_row_mass_, dw_col_mass_);
    VerifyReport r;
    r.ok = true;
    const auto b = static_cast<int64_t>(ref_loss_.size());
    Merge(r, Compare(loss_.data(), ref_loss_.data(), b, tol.loss));
    Merge(r, Compare(lse_.data(), ref_lse_.data(), b, tol.lse));
    if (backward_) {
      Merge(r, Compare(dx_.data(), ref_dx_.data(), static_cast<int64_t>(ref_dx_.size()), tol.dx));
      Merge(r, Compare(dw_.data(), ref_dw_.data(), static_cast<int64_t>(ref_dw_.size()), tol.dw));
    }
    return r;
  }

  // x and w (the bf16 copies for bf16 problems), the labels and, for the backward, dloss must
  // come back unchanged; a guard follows each output (loss, lse, and dx, dw for the backward).
  WatchedMemory Watched() override {
    WatchedMemory w;
    const auto in = [&](const auto& v) { w.inputs.push_back(std::as_bytes(std::span(v))); };
    const auto guard = [&](std::vector<float>& out, size_t used) {
      w.output_guards.push_back(std::as_writable_bytes(std::span<float>(out).subspan(used)));
    };
    if (dtype_ == DType::kBF16) {
      in(x_bf16_);
      in(w_bf16_);
    } else {
      in(x_);
      in(w_);
    }
    in(labels_);
    guard(loss_, ref_loss_.size());
    guard(lse_, ref_lse_.size());
    if (backward_) {
      in(dloss_);
      guard(dx_, ref_dx_.size());
      guard(dw_, ref_dw_.size());
    }
    return w;
  }

 private:
  FusedCrossEntropyInputs Inputs() const {
    FusedCrossEntropyInputs in;
    in.dtype = dtype_;
    in.x = dtype_ == DType::kF32 ? static_cast<const void*>(x_.data()) : x_bf16_.data();
    in.w = dtype_ == DType::kF32 ? static_cast<const void*>(w_.data()) : w_bf16_.data();
    in.labels = labels_.data();
    in.z_loss_weight = kSpecZLossWeight;
    return in;
  }

  // One widest vector store (16 floats) after each output for the verifier's canaries.
  static constexpr int64_t kGuardFloats = 16;
  FusedCrossEntropyShape shape_;
  DType dtype_;
  bool backward_;
  std::vector<float> x_, w_;  // f32 values (bf16-rounded for bf16 problems)
  std::vector<uint16_t> x_bf16_, w_bf16_;
  std::vector<int32_t> labels_;
  std::vector<float> dloss_;
  std::vector<float> loss_, lse_, dx_, dw_;  // each ends in a guard
  std::vector<float> ref_loss_, ref_lse_, ref_dx_, ref_dw_;
  double dx_row_mass_ = 0, dw_col_mass_ = 0;
};

// Candidates (multiples of every ISA's tile: block_b of 12/6/4 rows, block_v of 32/16 columns).
// On the 2-core Xeon (48 KiB L1d, 2 MiB L2): an x chunk block_b x block_h and a w chunk
// block_h x block_v should share L2 (192 x 256 and 256 x 512 floats: 192 + 512 KiB), and the
// logits tile block_b x block_v (384 KiB) is reread once per h chunk. w is read from memory
// once per thread whatever the blocks; larger block_v amortises the per-vocabulary-block
// repacking of x (forward and backward) and x^T (backward) over more columns, larger block_b
// the per-row-block reuse of the packed w panel from L2.
const std::vector<ParamSpec>& Params() {
  static const std::vector<ParamSpec> kParams = {
      {"block_b", {48, 96, 192, 288, 384}, "rows per block (multiple of the micro-tile rows)"},
      {"block_h", {64, 128, 256, 512, 1024}, "GEMM depth per packed x / w chunk (multiple of 16)"},
      {"block_v", {128, 256, 512, 1024, 2048}, "vocabulary columns per logits tile (multiple of the tile columns)"},
  };
  return kParams;
}

const std::vector<DimSpec>& Dims() {
  static const std::vector<DimSpec> kDims = {
      {{"b", tables::Rounding::kPow2Ceil, 1, 1 << 20}, 1 << 20, "rows (tokens)"},
      {{"h", tables::Rounding::kPow2Ceil, 1, 16384}, 16384, "hidden size (reduction length of the logits GEMM)"},
      {{"v", tables::Rounding::kPow2Ceil, 1, 1 << 19}, 1 << 19, "vocabulary size"},
      {{"backward", tables::Rounding::kExact, 0, 1}, 1, "0 = forward only, 1 = forward + backward"},
  };
  return kDims;
}

class FusedCrossEntropySpecImpl final : public KernelSpec {
 public:
  std::string_view name() const override { return "fused_cross_entropy"; }
  std::string_view description() const override {
    return "softmax cross-entropy with z-loss of logits = x[b,h] w[h,v] without materialising [b,v]; "
           "forward (loss, lse) and backward (dx, dw) blocked over rows and vocabulary";
  }
  const std::vector<ParamSpec>& params() const override { return Params(); }
  const std::vector<DimSpec>& dims() const override { return Dims(); }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kBF16}; }

  // 192 x 256 x 512: multiples of every ISA's tile; x chunk 192 KiB + w chunk 512 KiB + tile
  // 384 KiB fit the 2 MiB L2. Scratch at h = 16384 (the largest h) is at most (backward)
  // 2*h*512*4 + 2*192*h*4 = 88 MiB per thread, inside the 256 MiB bound, so the default
  // validates for every problem.
  Config DefaultConfig() const override { return ToConfig(FusedCrossEntropyBlockSizes{192, 256, 512}); }

  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override {
    auto bs = FromConfig<FusedCrossEntropyBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    return Validate(*bs, ShapeOf(problem), hw);
  }

  // Each dim is one full block plus a remainder (b + 5, h + 3, v + 7: not multiples of any tile
  // or of 16), capped at the bucket and at 197 x 259 x 519 (forward: the double reference takes
  // ~10-30 ms here) or 197 x 131 x 519 (backward: three reference passes; h is halved because
  // h chunking is the forward's code path, verified by the forward buckets, while the backward's
  // own loops run over row and vocabulary blocks). Configs with blocks beyond the caps run one
  // partial block in that dim (still with micro-tile remainders).
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override {
    FusedCrossEntropyBlockSizes bs;
    if (auto parsed = FromConfig<FusedCrossEntropyBlockSizes>(config)) bs = *parsed;
    Problem p;
    p.dtype = bucket_problem.dtype;
    const auto dim = [&](const char* name, int64_t block, int64_t extra, int64_t cap) {
      const int64_t v = std::min({bucket_problem.Dim(name), block + extra, cap});
      p.dims.Set(name, std::max<int64_t>(v, 1));
    };
    dim("b", bs.block_b, 5, 192 + 5);
    const bool backward = bucket_problem.Dim("backward") != 0;
    dim("h", bs.block_h, 3, backward ? 128 + 3 : 256 + 3);
    dim("v", bs.block_v, 7, 512 + 7);
    p.dims.Set("backward", backward ? 1 : 0);
    return p;
  }

  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override {
    return std::make_unique<FusedCrossEntropyInstance>(ShapeOf(problem), problem.dtype, problem.Dim("backward") != 0,
                                                       seed);
  }

  // Nominal flops: 2bhv for the logits; the backward adds dx and dw (4bhv). The kernel also
  // recomputes the logits in the backward (8bhv executed), which the ratio to the unfused
  // path (6bhv) shows, so GFLOP/s here are comparable between the two.
  double Flops(const Problem& problem) const override {
    const FusedCrossEntropyShape s = ShapeOf(problem);
    const double bhv = double(s.b) * double(s.h) * double(s.v);
    return (problem.Dim("backward") != 0 ? 6.0 : 2.0) * bhv;
  }

  // x and w read once, labels, loss and lse; the backward also reads dloss and writes dx, dw.
  double Bytes(const Problem& problem) const override {
    const FusedCrossEntropyShape s = ShapeOf(problem);
    const double es = DTypeBytes(problem.dtype);
    double bytes = es * (double(s.b) * double(s.h) + double(s.h) * double(s.v)) + 12.0 * double(s.b);
    if (problem.Dim("backward") != 0)
      bytes += 4.0 * (double(s.b) + double(s.b) * double(s.h) + double(s.h) * double(s.v));
    return bytes;
  }
};

}  // namespace

const KernelSpec& FusedCrossEntropySpec() {
  static const FusedCrossEntropySpecImpl kSpec;
  return kSpec;
}

}  // namespace blocktune::kernels
