// GroupedMatmulSpec: how the generic tuner sees grouped_matmul — its dims and buckets, the tile
// search space, the default, verification problems, and instances with seeded inputs and
// seeded skewed group sizes.
//
// Group sizes of an instance (GroupedMatmulSkewedGroupSizes): UsedRows(m) = m - m/16 rows are
// split over the G groups; exactly G/8 groups (chosen by the seed) are empty, and the others get
// rows in proportion to a Zipf law with exponent 1 (weight 1/(rank+1)) over a seeded random
// order of the groups, rounded down, the leftover rows going one each to the heaviest groups.
// With G = 8 the head group holds ~39% of the rows and the tail ~6%; with G = 64 the head ~22%
// and the tail ~0.4% (15 of 3840 rows) — the kind of skew a router without a strong balancing
// loss produces. Only integer arithmetic and SplitMix64 are used, so a seed gives the same
// sizes everywhere. The m/16 rows past the groups exercise the zero fill on every instance.
#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <vector>

#include "kernels/core/dtype.h"
#include "kernels/core/random.h"
#include "kernels/grouped_matmul/grouped_matmul.h"
#include "kernels/matmul/matmul.h"

namespace blocktune::kernels {

int64_t GroupedMatmulUsedRows(int64_t m) { return m - m / 16; }

std::vector<int32_t> GroupedMatmulSkewedGroupSizes(int64_t m, int64_t groups, uint64_t seed) {
  std::vector<int32_t> sizes(static_cast<size_t>(std::max<int64_t>(groups, 0)), 0);
  if (groups <= 0) return sizes;
  SplitMix64 rng(seed);
  std::vector<int64_t> order(static_cast<size_t>(groups));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = groups - 1; i > 0; --i) {  // Fisher-Yates with the specified generator
    std::swap(order[static_cast<size_t>(i)], order[rng.Below(static_cast<uint64_t>(i + 1))]);
  }
  const int64_t empties = groups / 8;
  const int64_t live = groups - empties;
  const int64_t used = GroupedMatmulUsedRows(m);
  // Weights 2^30/(rank+1): used (< 2^17) * weight (<= 2^30) stays far inside int64.
  int64_t total_weight = 0;
  for (int64_t r = 0; r < live; ++r) total_weight += (int64_t{1} << 30) / (r + 1);
  int64_t assigned = 0;
  for (int64_t r = 0; r < live; ++r) {
    const int64_t rows = used * ((int64_t{1} << 30) / (r + 1)) / total_weight;
    sizes[static_cast<size_t>(order[static_cast<size_t>(empties + r)])] = static_cast<int32_t>(rows);
    assigned += rows;
  }
  for (int64_t r = 0; assigned < used; r = (r + 1) % live, ++assigned) {
    ++sizes[static_cast<size_t>(order[static_cast<size_t>(empties + r)])];
  }
  return sizes;
}

// bf16 inputs are exactly representable in f32 and the reference consumes the same rounded
// values, so the only difference is the kernel's f32 accumulation over k terms of products of
// values in [-1, 1]: MatmulTolerance(k) (atol 2*k*eps, rtol 4*eps; see matmul/spec.cc), which a
// dropped k block or a dropped row tile exceeds by orders of magnitude (~sqrt(block)/3 per element).
Tolerance GroupedMatmulTolerance(int64_t k) { return MatmulTolerance(k); }

namespace {

GroupedMatmulShape ShapeOf(const Problem& p) {
  return GroupedMatmulShape{p.Dim("m"), p.Dim("k"), p.Dim("n"), p.Dim("groups")};
}

class GroupedMatmulInstance final : public KernelInstance {
 public:
  GroupedMatmulInstance(DType dtype, const GroupedMatmulShape& shape, uint64_t seed)
      : dtype_(dtype),
        shape_(shape),
        group_sizes_(GroupedMatmulSkewedGroupSizes(shape.m, shape.groups, seed)),
        lhs_(static_cast<size_t>(shape.m * shape.k)),
        rhs_(static_cast<size_t>(shape.groups * shape.k * shape.n)),
        out_(static_cast<size_t>(shape.m * shape.n + kGuardFloats)),
        ref_(static_cast<size_t>(shape.m * shape.n)) {
    // A second stream for the values, so group sizes and data do not share draws.
    SplitMix64 rng(seed ^ 0x6a09e667f3bcc908ull);
    for (float& x : lhs_) x = rng.NextSigned();
    for (float& x : rhs_) x = rng.NextSigned();
    if (dtype_ == DType::kBF16) {
      lhs_bf16_ = Round(&lhs_);
      rhs_bf16_ = Round(&rhs_);
    }
  }

  Status Run(const Config& config, int threads) override {
    auto bs = FromConfig<GroupedMatmulBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    if (dtype_ == DType::kBF16) {
      return GroupedMatmul(*bs, shape_, group_sizes_.data(), lhs_bf16_.data(), rhs_bf16_.data(), out_.data(), threads);
    }
    return GroupedMatmul(*bs, shape_, group_sizes_.data(), lhs_.data(), rhs_.data(), out_.data(), threads);
  }

  void RunReference() override {
    GroupedMatmulReference(shape_, group_sizes_.data(), lhs_.data(), rhs_.data(), ref_.data());
  }

  void PoisonOutputs() override { std::fill(out_.begin(), out_.end(), std::numeric_limits<float>::quiet_NaN()); }

  VerifyReport Verify() const override {
    return Compare(out_.data(), ref_.data(), static_cast<int64_t>(ref_.size()), GroupedMatmulTolerance(shape_.k));
  }

  WatchedMemory Watched() override {
    WatchedMemory w;
    w.inputs = {std::as_bytes(std::span<const int32_t>(group_sizes_))};
    if (dtype_ == DType::kBF16) {
      w.inputs.push_back(std::as_bytes(std::span<const uint16_t>(lhs_bf16_)));
      w.inputs.push_back(std::as_bytes(std::span<const uint16_t>(rhs_bf16_)));
    } else {
      w.inputs.push_back(std::as_bytes(std::span<const float>(lhs_)));
      w.inputs.push_back(std::as_bytes(std::span<const float>(rhs_)));
    }
    w.output_guards = {std::as_writable_bytes(std::span<float>(out_).subspan(ref_.size()))};
    return w;
  }

 private:
  // Rounds the f32 values to bf16 in place (the reference then sees exactly the kernel's
  // inputs) and returns the bf16 bits.
  static std::vector<uint16_t> Round(std::vector<float>* values) {
    std::vector<uint16_t> bits(values->size());
    for (size_t i = 0; i < values->size(); ++i) {
      const BF16 b = FloatToBF16((*values)[i]);
      bits[i] = b.bits;
      (*values)[i] = BF16ToFloat(b);
    }
    return bits;
  }

  DType dtype_;
  GroupedMatmulShape shape_;
  std::vector<int32_t> group_sizes_;
  // 64 bytes after the output for the verifier's canary (see matmul's MatmulInstance).
  static constexpr int64_t kGuardFloats = 16;
  std::vector<float> lhs_, rhs_, out_, ref_;  // out_ ends with the guard
  std::vector<uint16_t> lhs_bf16_, rhs_bf16_;
};

// All tile_m values are multiples of every ISA's micro-tile rows (12/6/4) and all tile_n values
// of every ISA's columns (32/16/16), so the whole space validates on every host. tile_m 24-192:
// small groups gain nothing from a tall A block, large ones want 96-192 (A block <= 384 KiB in
// the 2 MiB L2); tile_k 128-512 keeps a 12x32 micro-panel of B (tile_k*128 B) in L1 up to 384;
// tile_n 128-2048 trades B-panel reuse (wider) against work-item granularity for the thread
// split (narrower: N=1024 with tile_n 2048 is one column item per group).
const std::vector<ParamSpec>& Params() {
  static const std::vector<ParamSpec> kParams = {
      {"tile_m", {24, 48, 96, 192}, "rows of one group per packed A block (multiple of the micro-tile rows)"},
      {"tile_k", {128, 256, 384, 512}, "reduction depth per packed panel"},
      {"tile_n", {128, 256, 512, 1024, 2048}, "columns per packed B panel and work item (multiple of tile columns)"},
  };
  return kParams;
}

// Maxima: rhs is groups*k*n elements, so k and n stop at 16384 and groups at 256 (MoE layers
// have 8-256 experts).
const std::vector<DimSpec>& Dims() {
  static const std::vector<DimSpec> kDims = {
      {{"m", tables::Rounding::kPow2Ceil, 1, 65536}, 65536, "total rows of lhs and out (tokens x top-k)"},
      {{"k", tables::Rounding::kPow2Ceil, 1, 16384}, 16384, "reduction length (model dim)"},
      {{"n", tables::Rounding::kPow2Ceil, 1, 16384}, 16384, "columns of each rhs[g] and of out"},
      {{"groups", tables::Rounding::kPow2Ceil, 1, 256}, 256, "number of groups (experts)"},
  };
  return kDims;
}

class GroupedMatmulSpecImpl final : public KernelSpec {
 public:
  std::string_view name() const override { return "grouped_matmul"; }
  std::string_view description() const override {
    return "MoE grouped matmul (megablox gmm): out[rows of g] = lhs[rows of g] * rhs[g], ragged groups, "
           "f32/bf16 inputs, f32 out, rows past the groups zeroed";
  }
  const std::vector<ParamSpec>& params() const override { return Params(); }
  const std::vector<DimSpec>& dims() const override { return Dims(); }
  std::vector<DType> dtypes() const override { return {DType::kF32, DType::kBF16}; }

  // 96 x 256 x 512: multiples of every ISA's tile, so it validates everywhere; tiles larger than
  // a dim are clamped by the kernel, so it is valid for every problem. Like matmul's default, an
  // A block of 96 KiB and a B panel of 512 KiB sit in the L2.
  Config DefaultConfig() const override { return ToConfig(GroupedMatmulBlockSizes{96, 256, 512}); }

  Status ValidateConfig(const Config& config, const Problem& problem, const HardwareProfile& hw) const override {
    auto bs = FromConfig<GroupedMatmulBlockSizes>(config);
    if (!bs) return std::unexpected(bs.error());
    return Validate(*bs, ShapeOf(problem), hw);
  }

  // m = 3 * tile_m + 13 over min(groups, 8) groups: the Zipf head group then has >= 38% of the
  // used rows (> tile_m: a full tile plus a partial one), the tail groups partial tiles and, for
  // 8 groups, one empty group. k is one tile_k plus 13 (a full block, then an accumulating
  // remainder block that is not a multiple of any micro-tile), capped at 512 + 13. n is tile_n
  // + 13 capped at 256 + 13: wider tile_n run one partial column tile (8 micro-panels and a
  // 13-column remainder), which keeps the worst reference at 553 x 525 x 269 multiply-adds,
  // ~20 ms here (~40 ms with the machine shared), instead of ~35-75 ms with n up to 525.
  Problem VerificationProblem(const Config& config, const Problem& bucket_problem) const override {
    GroupedMatmulBlockSizes bs;
    if (auto parsed = FromConfig<GroupedMatmulBlockSizes>(config)) bs = *parsed;
    Problem p;
    p.dtype = bucket_problem.dtype;
    const auto dim = [&](const char* name, int64_t value, int64_t cap) {
      p.dims.Set(name, std::max<int64_t>(std::min({bucket_problem.Dim(name), value, cap}), 1));
    };
    dim("m", 3 * bs.tile_m + 13, 3 * 192 + 13);
    dim("k", bs.tile_k + 13, 512 + 13);
    dim("n", bs.tile_n + 13, 256 + 13);
    dim("groups", 8, 8);
    return p;
  }

  std::unique_ptr<KernelInstance> MakeInstance(const Problem& problem, uint64_t seed) const override {
    return std::make_unique<GroupedMatmulInstance>(problem.dtype, ShapeOf(problem), seed);
  }

  // Exact for every instance: the generator always assigns UsedRows(m) rows.
  double Flops(const Problem& problem) const override {
    const GroupedMatmulShape s = ShapeOf(problem);
    return 2.0 * double(GroupedMatmulUsedRows(s.m)) * double(s.k) * double(s.n);
  }

  // The used lhs rows and the rhs of the non-empty groups (G - G/8) read once, out written once.
  double Bytes(const Problem& problem) const override {
    const GroupedMatmulShape s = ShapeOf(problem);
    const double in_bytes = DTypeBytes(problem.dtype);
    const double live = double(s.groups - s.groups / 8);
    return in_bytes * (double(GroupedMatmulUsedRows(s.m)) * double(s.k) + live * double(s.k) * double(s.n)) +
           4.0 * double(s.m) * double(s.n);
  }
};

}  // namespace

const KernelSpec& GroupedMatmulSpec() {
  static const GroupedMatmulSpecImpl kSpec;
  return kSpec;
}

}  // namespace blocktune::kernels
