// MatmulSpec: how the generic tuner sees matmul — its dims and buckets, the block-size search
// space, the default config, verification problems and instances with seeded random data.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "kernels/core/random.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {
namespace {

MatmulShape ShapeOf(const Problem& p) { return MatmulShape{p.Dim("m"), p.Dim("n"), p.Dim("k")}; }

}  // namespace

// Tolerance for f32 products of values in [-1, 1] summed over k terms. Each of the k
// accumulation steps rounds by at most eps/2 of a partial sum whose size grows like
// sqrt(k)/3 (random signs), and the kernel's blocked order differs from any other order by a
// few such roundings; k * eps bounds the accumulated error with a wide margin (the observed
// worst error over ~10^6 elements at k = 1000 is ~1e-5 against atol ~1.2e-4), while dropping a
// single k term moves an element by ~|a*b| ~ 0.25 and dropping a k block by ~sqrt(block_k)/3.
Tolerance MatmulTolerance(int64_t k) {
  return Tolerance{2.0 * FLT_EPSILON * double(std::max<int64_t>(k, 1)), 4.0 * FLT_EPSILON};
}

namespace {

// Inputs are drawn in f32 and, for bf16, rounded to bf16; the reference always consumes the
// f32 values of exactly what the kernel reads, so both dtypes share one tolerance (the kernel
// accumulates in f32 either way).
class MatmulInstance final : public KernelInstance {
 public:
  MatmulInstance(const MatmulShape& shape, DType dtype, uint64_t seed)
      : shape_(shape),
        dtype_(dtype),
        a_(static_cast<size_t>(shape.m * shape.k)),
        b_(static_cast<size_t>(shape.k * shape.n)),
        c_(static_cast<size_t>(shape.m * shape.n + kGuardFloats)),
        ref_(static_cast<size_t>(shape.m * shape.n)) {
    SplitMix64 rng(seed);
    for (float& x : a_) x = rng.NextSigned();
    for (float& x : b_) x = rng.NextSigned();
    if (dtype_ == DType::kBF16) {
      a16_.resize(a_.size());
      b16_.resize(b_.size());
      for (size_t i = 0; i < a_.size(); ++i) a_[i] = BF16ToFloat(a16_[i] = FloatToBF16(a_[i]));
      for (size_t i = 0; i < b_.size(); ++i) b_[i] = BF16ToFloat(b16_[i] = FloatToBF16(b_[i]));
    }
  }

  Status Run(const Config& config, int threads) override {
    auto bs = FromConfig<MatmulBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    if (dtype_ == DType::kBF16) return Matmul(*bs, shape_, a16_.data(), b16_.data(), c_.data(), threads);
    return Matmul(*bs, shape_, a_.data(), b_.data(), c_.data(), threads);
  }

  void RunReference() override { MatmulReference(shape_, a_.data(), b_.data(), ref_.data()); }

  void PoisonOutputs() override { std::fill(c_.begin(), c_.end(), std::numeric_limits<float>::quiet_NaN()); }

  VerifyReport Verify() const override {
    return Compare(c_.data(), ref_.data(), static_cast<int64_t>(ref_.size()), MatmulTolerance(shape_.k));
  }

  WatchedMemory Watched() override {
    WatchedMemory w;
    if (dtype_ == DType::kBF16) {
      w.inputs = {std::as_bytes(std::span<const BF16>(a16_)), std::as_bytes(std::span<const BF16>(b16_))};
    } else {
      w.inputs = {std::as_bytes(std::span<const float>(a_)), std::as_bytes(std::span<const float>(b_))};
    }
    w.output_guards = {std::as_writable_bytes(std::span<float>(c_).subspan(ref_.size()))};
    return w;
  }

 private:
  MatmulShape shape_;
  DType dtype_;
  // 16 floats (64 bytes, one store of the widest vector) after C for the verifier's canary: an
  // edge tile that stores a full vector past the last column is caught without faulting.
  static constexpr int64_t kGuardFloats = 16;
  std::vector<float> a_, b_, c_, ref_;  // a_, b_: f32 values of the kernel's inputs; c_ has the guard at its end
  std::vector<BF16> a16_, b16_;         // bf16 storage when dtype_ is bf16
};

// Candidates measured on a 2-core Xeon (AVX-512, 48 KiB L1d, 2 MiB L2): the fast configs for
// 128..2048 squares use block_m 96-192 (packed A block_m x block_k ~ 100-400 KiB, in L2),
// block_k 256-512 (a 12x32 tile's B micro-panel block_k*128 B stays in L1 up to 384) and
// block_n 512-2048; skinny shapes (m or n of 16-64) prefer small block_m or wide block_n.
// All values are multiples of every ISA's tile (rows 12/6/4, columns 32/16/16).
const std::vector<ParamSpec>& Params() {
  static const std::vector<ParamSpec> kParams = {
      {"block_m", {48, 96, 144, 192, 288, 384}, "rows of A per packed block (multiple of the micro-tile rows)"},
      {"block_n", {128, 256, 512, 1024, 2048, 4096}, "columns of B per packed panel (multiple of the tile columns)"},
      {"block_k", {128, 192, 256, 384, 512}, "reduction depth per packed panel"},
  };
  return kParams;
}

const std::vector<DimSpec>& Dims() {
  static const std::vector<DimSpec> kDims = {
      {{"m", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "rows of A and C"},
      {{"n", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "columns of B and C"},
      {{"k", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "columns of A = rows of B (reduction length)"},
  };
  return kDims;
}

class MatmulSpecImpl final : public KernelSpec {
 public:
  std::string_view name() const override { return "matmul"; }
  std::string_view description() const override {
    return "C[m,n] = A[m,k] * B[k,n], row-major, f32 or bf16 inputs with f32 accumulation and output; packed panels "
           "around a register-tiled micro-kernel";
  }
  const std::vector<ParamSpec>& params() const override { return Params(); }
  const std::vector<DimSpec>& dims() const override { return Dims(); }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kBF16}; }

  // 96 x 512 x 256: multiples of every ISA's tile (96 = 8*12 = 16*6 = 24*4; 512 = 16*32), so the
  // default validates everywhere; A block 96 KiB and B panel 512 KiB sit in a 1-2 MiB L2, and
  // it is within ~10% of the best config on most buckets measured.
  Config DefaultConfig() const override { return ToConfig(MatmulBlockSizes{96, 512, 256}); }

  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override {
    auto bs = FromConfig<MatmulBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    return Validate(*bs, ShapeOf(problem), hw);
  }

  // Each dim is one full block plus 13 (not a multiple of any tile, so both the micro-tile and
  // the block remainders run), capped at the bucket. n is also capped at 1024 + 13 (and m, k at
  // 512 + 13) so the reference stays under ~50 ms: the widest candidate, 397 x 4109 x 525, would
  // be 0.86 G multiply-adds (~190 ms); configs with block_n >= 2048 still run one partial jc
  // panel with full k blocks and a 13-column micro-tile remainder.
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override {
    MatmulBlockSizes bs;
    if (auto parsed = FromConfig<MatmulBlockSizes>(config)) bs = *parsed;
    Problem p;
    p.dtype = bucket_problem.dtype;
    const auto dim = [&](const char* name, int64_t block, int64_t cap) {
      const int64_t v = std::min({bucket_problem.Dim(name), block + 13, cap});
      p.dims.Set(name, std::max<int64_t>(v, 1));
    };
    dim("m", bs.block_m, 512 + 13);
    dim("n", bs.block_n, 1024 + 13);
    dim("k", bs.block_k, 512 + 13);
    return p;
  }

  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override {
    return std::make_unique<MatmulInstance>(ShapeOf(problem), problem.dtype, seed);
  }

  double Flops(const Problem& problem) const override {
    const MatmulShape s = ShapeOf(problem);
    return 2.0 * double(s.m) * double(s.n) * double(s.k);
  }

  double Bytes(const Problem& problem) const override {
    const MatmulShape s = ShapeOf(problem);
    const double in_bytes = DTypeBytes(problem.dtype);
    return in_bytes * (double(s.m) * double(s.k) + double(s.k) * double(s.n)) + 4.0 * double(s.m) * double(s.n);
  }
};

}  // namespace

const KernelSpec& MatmulSpec() {
  static const MatmulSpecImpl kSpec;
  return kSpec;
}

}  // namespace blocktune::kernels
