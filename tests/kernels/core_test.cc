// Tests of the kernel core: NamedInts parsing/printing, typed <-> Config conversion, the
// KernelSpec derived helpers (buckets, config space, completion), the hardware-key fallback
// and row resolution of tables/resolve.h, BF16 conversion, and the thread pool.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "blocktune/tables/resolve.h"
#include "kernels/core/config.h"
#include "kernels/core/dtype.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/parallel.h"
#include "kernels/matmul/matmul.h"

namespace blocktune {
namespace {

// --- NamedInts --------------------------------------------------------------------------------

TEST(NamedInts, ParsePrintRoundTrip) {
  const auto parsed = NamedInts::Parse(" block_m = 128 , block_n=256,block_k=-64 ");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->ToString(), "block_m=128,block_n=256,block_k=-64");
  EXPECT_EQ(parsed->Get("block_n"), 256);
  EXPECT_FALSE(parsed->Get("nope").has_value());
  const auto again = NamedInts::Parse(parsed->ToString());
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *parsed);
}

TEST(NamedInts, EmptyAndSet) {
  const auto empty = NamedInts::Parse("  ");
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  NamedInts n;
  n.Set("a", 1);
  n.Set("b", 2);
  n.Set("a", 3);  // replaces in place, keeps order
  EXPECT_EQ(n.ToString(), "a=3,b=2");
  EXPECT_EQ(n.size(), 2u);
}

TEST(NamedInts, ParseErrors) {
  for (const char* bad : {"a", "a=1,b", "=3", "a=x", "a=1x", "a=", "a=1,a=2", "a=1,,b=2"}) {
    const auto r = NamedInts::Parse(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_EQ(NamedInts::Parse("a=x").error().path, "a");
  EXPECT_EQ(NamedInts::Parse("a=1,a=2").error().path, "a");
}

// --- Config <-> typed -------------------------------------------------------------------------

TEST(Config, ToAndFromTyped) {
  const kernels::MatmulBlockSizes bs{48, 1024, 384};
  const Config c = ToConfig(bs);
  EXPECT_EQ(c.ToString(), "block_m=48,block_n=1024,block_k=384");
  const auto back = FromConfig<kernels::MatmulBlockSizes>(c);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(*back, bs);
}

TEST(Config, FromConfigKeepsDefaultsAndRejectsUnknown) {
  const auto partial = FromConfig<kernels::MatmulBlockSizes>(*NamedInts::Parse("block_k=64"));
  ASSERT_TRUE(partial.has_value());
  EXPECT_EQ(partial->block_k, 64);
  EXPECT_EQ(partial->block_m, kernels::MatmulBlockSizes{}.block_m);
  const auto bad = FromConfig<kernels::MatmulBlockSizes>(*NamedInts::Parse("block_z=1"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().path, "config.block_z");
}

TEST(Error, ToStringAndPathPrefix) {
  const Error e{ErrorCode::kInvalidArgument, "bad", "config.block_m"};
  EXPECT_EQ(e.ToString(), "invalid_argument: bad [config.block_m]");
  EXPECT_EQ(WithPathPrefix(e, "shapes[2]").path, "shapes[2].config.block_m");
  EXPECT_EQ(WithPathPrefix(Error{ErrorCode::kInternal, "x", "[3]"}, "rows").path, "rows[3]");
  EXPECT_EQ(WithPathPrefix(Error{ErrorCode::kInternal, "x", ""}, "rows").path, "rows");
}

// --- KernelSpec derived helpers (through the matmul spec) -------------------------------------

Problem P(int64_t m, int64_t n, int64_t k) {
  Problem p;
  p.dims = NamedInts({{"m", m}, {"n", n}, {"k", k}});
  return p;
}

TEST(KernelSpec, BucketRoundsUpToPowersOfTwo) {
  const KernelSpec& spec = kernels::MatmulSpec();
  const auto [id, rep] = spec.Bucket(P(1000, 1, 1025));
  EXPECT_EQ(id, "m1024_n1_k2048");
  EXPECT_EQ(rep.Dim("m"), 1024);
  EXPECT_EQ(rep.Dim("k"), 2048);
  EXPECT_EQ(spec.Bucket(P(65536, 65536, 65536)).first, "m65536_n65536_k65536");
  EXPECT_EQ(spec.Bucket(P(0, 3, 4)).first, "m1_n4_k4");  // below min clamps to min
}

TEST(KernelSpec, ProblemFromBucket) {
  const KernelSpec& spec = kernels::MatmulSpec();
  const auto p = spec.ProblemFromBucket(DType::kF32, "m128_n64_k4096");
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(*p, P(128, 64, 4096));
  for (const char* bad : {"m128_n64", "m128_n64_k4096_x1", "n64_m128_k4096", "m100_n64_k4096", "mx_n1_k1", ""}) {
    EXPECT_FALSE(spec.ProblemFromBucket(DType::kF32, bad).has_value()) << bad;
  }
}

TEST(KernelSpec, ValidateProblem) {
  const KernelSpec& spec = kernels::MatmulSpec();
  EXPECT_TRUE(spec.ValidateProblem(P(1, 2, 3)).has_value());
  EXPECT_EQ(spec.ValidateProblem(P(0, 2, 3)).error().path, "m");
  EXPECT_EQ(spec.ValidateProblem(P(1, 70000, 3)).error().path, "n");
  Problem extra = P(1, 2, 3);
  extra.dims.Set("q", 1);
  EXPECT_EQ(spec.ValidateProblem(extra).error().path, "q");
  Problem bf = P(1, 2, 3);
  bf.dtype = DType::kBF16;
  EXPECT_TRUE(spec.ValidateProblem(bf).has_value());
  Problem missing;
  missing.dims = NamedInts({{"m", 1}, {"n", 1}});
  EXPECT_EQ(spec.ValidateProblem(missing).error().path, "k");
}

TEST(KernelSpec, ConfigSpaceIsTheCartesianProductInParamOrder) {
  const KernelSpec& spec = kernels::MatmulSpec();
  const auto space = spec.ConfigSpace();
  size_t expected = 1;
  for (const auto& p : spec.params()) expected *= p.candidates.size();
  ASSERT_EQ(space.size(), expected);
  const auto& ps = spec.params();
  EXPECT_EQ(space.front().values()[0].first, "block_m");
  EXPECT_EQ(space.front().Get("block_m"), ps[0].candidates.front());
  EXPECT_EQ(space.back().Get("block_k"), ps[2].candidates.back());
  EXPECT_EQ(space[1].Get("block_k"), ps[2].candidates[1]);  // last param varies fastest
}

TEST(KernelSpec, CompleteConfig) {
  const KernelSpec& spec = kernels::MatmulSpec();
  const auto full = spec.CompleteConfig(*NamedInts::Parse("block_k=128"));
  ASSERT_TRUE(full.has_value());
  EXPECT_EQ(full->Get("block_k"), 128);
  EXPECT_EQ(full->Get("block_m"), spec.DefaultConfig().Get("block_m"));
  EXPECT_EQ(full->size(), 3u);
  const auto bad = spec.CompleteConfig(*NamedInts::Parse("tile=4"));
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().path, "config.tile");
}

TEST(KernelSpec, Registry) {
  ASSERT_NE(FindKernel("matmul"), nullptr);
  EXPECT_EQ(FindKernel("matmul")->name(), "matmul");
  EXPECT_EQ(FindKernel("nope"), nullptr);
}

TEST(Compare, CountsMismatchesAndNonFinite) {
  const float ref[] = {1, 2, 3, 4};
  const float out[] = {1, 2.5f, NAN, 4.0001f};
  const VerifyReport r = Compare(out, ref, 4, Tolerance{1e-3, 0});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.mismatches, 2);
  EXPECT_EQ(r.non_finite, 1);
  EXPECT_NEAR(r.max_abs_err, 0.5, 1e-9);
  EXPECT_TRUE(Compare(ref, ref, 4, Tolerance{0, 0}).ok);
}

// --- tables/resolve.h -------------------------------------------------------------------------

TEST(Tables, FallbackChainAndPrefix) {
  // The key, the same CPU model at another thread count, the same vendor and ISA level; never
  // the ISA level or the architecture alone.
  const auto chain = tables::FallbackChain("x86_64.avx512.intel.fam6_mod143.t2");
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[0], "x86_64.avx512.intel.fam6_mod143.t2");
  EXPECT_EQ(chain[1], "x86_64.avx512.intel.fam6_mod143");
  EXPECT_EQ(chain[2], "x86_64.avx512.intel");
  // Shorter keys: four components fall back to the first three; three or fewer do not fall back.
  EXPECT_EQ(tables::FallbackChain("x86_64.avx2.amd.fam25_mod1"),
            (std::vector<std::string_view>{"x86_64.avx2.amd.fam25_mod1", "x86_64.avx2.amd"}));
  EXPECT_EQ(tables::FallbackChain("x86_64.avx2.amd"), (std::vector<std::string_view>{"x86_64.avx2.amd"}));
  EXPECT_EQ(tables::FallbackChain("x86_64"), (std::vector<std::string_view>{"x86_64"}));
  EXPECT_EQ(tables::FallbackChain(""), (std::vector<std::string_view>{""}));
  // Overrides still see every prefix.
  EXPECT_EQ(tables::KeyPrefixes("x86_64.avx512.intel.fam6_mod143.t2").size(), 5u);
  EXPECT_EQ(tables::KeyPrefixes("x86_64.avx512.intel.fam6_mod143.t2").back(), "x86_64");
  EXPECT_TRUE(tables::KeyHasPrefix("x86_64.avx512.intel", "x86_64.avx512"));
  EXPECT_TRUE(tables::KeyHasPrefix("x86_64.avx512", "x86_64.avx512"));
  EXPECT_FALSE(tables::KeyHasPrefix("x86_64.avx5120", "x86_64.avx512"));  // not a component boundary
  EXPECT_FALSE(tables::KeyHasPrefix("x86_64", "x86_64.avx512"));
}

TEST(Tables, HardwareKeyAndProfileChain) {
  tables::HostCpu cpu;
  cpu.arch = "x86_64";
  cpu.isa = "avx2";
  cpu.vendor = "amd";
  cpu.family = 25;
  cpu.model = 33;
  EXPECT_EQ(tables::HardwareKey(cpu, 4), "x86_64.avx2.amd.fam25_mod33.t4");
  HardwareProfile hw;
  hw.cpu = cpu;
  hw.threads = 1;
  const auto chain = hw.FallbackChain();
  ASSERT_EQ(chain.size(), 4u);
  EXPECT_EQ(chain.front(), "x86_64.avx2.amd.fam25_mod33.t1");
  EXPECT_EQ(chain.back(), "default");
}

struct Row {
  std::string hardware, dtype, bucket;
  int id;
};

TEST(Tables, ResolveRowPrecedence) {
  const std::vector<Row> rows = {
      {"x86_64.avx512.intel.fam6_mod143.t1", "f32", "m1024_n1024_k1024", 1},
      {"x86_64.avx512.intel.fam6_mod143.t2", "f32", "m1024_n1024_k1024", 2},
      {"x86_64.avx512.intel.fam6_mod85.t1", "f32", "m64_n64_k64", 3},
      {"x86_64.avx512.amd.fam25_mod17.t1", "f32", "m64_n64_k64", 4},
      {"x86_64.avx2.amd.fam25_mod33.t1", "f32", "m8_n8_k8", 5},
      {"x86_64.avx512.intel.fam6_mod143.t1", "bf16", "m1024_n1024_k1024", 6},
      {"x86_64.avx512.intel.fam6_mod106.t1", "f32", "m64_n64_k64", 7},
  };
  const std::string key = "x86_64.avx512.intel.fam6_mod143.t2";
  auto m = tables::ResolveRow(rows, key, "f32", "m1024_n1024_k1024");
  ASSERT_NE(m.row, nullptr);
  EXPECT_EQ(m.row->id, 2);
  EXPECT_EQ(m.source, tables::Source::kTuned);
  EXPECT_EQ(m.fallback_levels, 0);
  // Same CPU, other thread count: falls back to the t1 row at the CPU-model level.
  m = tables::ResolveRow(rows, "x86_64.avx512.intel.fam6_mod143.t4", "f32", "m1024_n1024_k1024");
  ASSERT_NE(m.row, nullptr);
  EXPECT_EQ(m.row->id, 1);
  EXPECT_EQ(m.source, tables::Source::kTunedFallback);
  EXPECT_EQ(m.fallback_levels, 1);
  // Other Intel model, same ISA level: the vendor level; ties resolve to the smallest key
  // ("fam6_mod106" < "fam6_mod85").
  m = tables::ResolveRow(rows, key, "f32", "m64_n64_k64");
  ASSERT_NE(m.row, nullptr);
  EXPECT_EQ(m.row->id, 7);
  EXPECT_EQ(m.fallback_levels, 2);
  // Another vendor at the same ISA level is not borrowed from (the AMD row 4 is there).
  m = tables::ResolveRow(rows, "x86_64.avx512.via.fam7_mod1.t1", "f32", "m64_n64_k64");
  EXPECT_EQ(m.row, nullptr);
  EXPECT_EQ(m.source, tables::Source::kDefault);
  EXPECT_EQ(m.fallback_levels, 3);
  // dtype and bucket must match exactly; nothing matches -> default.
  m = tables::ResolveRow(rows, key, "bf16", "m64_n64_k64");
  EXPECT_EQ(m.row, nullptr);
  EXPECT_EQ(m.source, tables::Source::kDefault);
  // Another ISA level is not borrowed from either: only the AVX2 row has this bucket.
  m = tables::ResolveRow(rows, key, "f32", "m8_n8_k8");
  EXPECT_EQ(m.row, nullptr);
  EXPECT_EQ(tables::SourceName(m.source), "default");
  // An AVX2 AMD host of another model does borrow it (same vendor and ISA level).
  m = tables::ResolveRow(rows, "x86_64.avx2.amd.fam25_mod1.t2", "f32", "m8_n8_k8");
  ASSERT_NE(m.row, nullptr);
  EXPECT_EQ(m.row->id, 5);
  EXPECT_EQ(tables::SourceName(m.source), "tuned_fallback");
}

TEST(Tables, RoundDim) {
  const tables::BucketDim d{"m", tables::Rounding::kPow2Ceil, 1, 4096};
  EXPECT_EQ(tables::RoundDim(d, 0), 1);
  EXPECT_EQ(tables::RoundDim(d, 3), 4);
  EXPECT_EQ(tables::RoundDim(d, 4), 4);
  EXPECT_EQ(tables::RoundDim(d, 5000), 4096);
  const tables::BucketDim e{"k", tables::Rounding::kExact, 2, 10};
  EXPECT_EQ(tables::RoundDim(e, 7), 7);
  EXPECT_EQ(tables::RoundDim(e, 11), 10);
}

// --- dtype ------------------------------------------------------------------------------------

TEST(DType, NamesAndBF16RoundTrip) {
  EXPECT_EQ(DTypeName(DType::kBF16), "bf16");
  EXPECT_EQ(ParseDType("f32"), DType::kF32);
  EXPECT_FALSE(ParseDType("f8").has_value());
  EXPECT_FALSE(ParseDType("F32").has_value());
  // The names external kernels and imports use (CLBlast's precisions), each with its size.
  for (const auto& [d, name, bytes] : std::vector<std::tuple<DType, std::string_view, int>>{
           {DType::kF16, "f16", 2}, {DType::kF64, "f64", 8}, {DType::kC64, "c64", 8}, {DType::kC128, "c128", 16}}) {
    EXPECT_EQ(ParseDType(name), d) << name;
    EXPECT_EQ(DTypeName(d), name);
    EXPECT_EQ(DTypeBytes(d), bytes) << name;
  }
  EXPECT_EQ(DTypeBytes(DType::kBF16), 2);
  EXPECT_EQ(DTypeBytes(DType::kF32), 4);
  for (float f : {0.0f, 1.0f, -2.5f, 3.140625f, 1e30f, -1e-30f}) {
    const float once = BF16ToFloat(FloatToBF16(f));
    EXPECT_EQ(BF16ToFloat(FloatToBF16(once)), once);              // bf16 values round-trip exactly
    EXPECT_LE(std::fabs(once - f), std::fabs(f) * (1.0f / 256));  // 8-bit mantissa
  }
  EXPECT_EQ(BF16ToFloat(FloatToBF16(1.0f)), 1.0f);
  EXPECT_EQ(FloatToBF16(1.0f + 1.0f / 256).bits, FloatToBF16(1.0f).bits);  // tie rounds to even
  EXPECT_TRUE(std::isnan(BF16ToFloat(FloatToBF16(NAN))));
  EXPECT_TRUE(std::isinf(BF16ToFloat(FloatToBF16(INFINITY))));
}

// --- Thread pool ------------------------------------------------------------------------------

TEST(Parallel, RunCoversEveryThreadOnce) {
  for (int threads : {1, 2, 3, 8}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(threads));
    kernels::ParallelRun(threads, [&](int t) { hits[static_cast<size_t>(t)].fetch_add(1); });
    for (int t = 0; t < threads; ++t) EXPECT_EQ(hits[static_cast<size_t>(t)].load(), 1) << threads;
  }
}

TEST(Parallel, SingleThreadRunsInline) {
  const auto caller = std::this_thread::get_id();
  std::thread::id seen;
  kernels::ParallelRun(1, [&](int) { seen = std::this_thread::get_id(); });
  EXPECT_EQ(seen, caller);
}

TEST(Parallel, ForCoversEveryTaskOnceAndNeverMoreThreadsThanTasks) {
  for (int64_t tasks : {0, 1, 2, 5, 1000}) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
    std::atomic<int> max_thread{0};
    kernels::ParallelFor(3, tasks, [&](int64_t task, int thread) {
      hits[static_cast<size_t>(task)].fetch_add(1);
      int cur = max_thread.load();
      while (thread > cur && !max_thread.compare_exchange_weak(cur, thread)) {
      }
    });
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    EXPECT_LT(max_thread.load(), std::max<int64_t>(tasks, 1));
  }
}

TEST(Parallel, ManyBackToBackCalls) {
  std::atomic<int64_t> sum{0};
  for (int i = 0; i < 20000; ++i) kernels::ParallelRun(2, [&](int t) { sum.fetch_add(t + 1); });
  EXPECT_EQ(sum.load(), 20000 * 3);
}

TEST(Parallel, ConcurrentCallersAndNesting) {
  std::atomic<int64_t> sum{0};
  auto caller = [&] {
    for (int i = 0; i < 2000; ++i) {
      kernels::ParallelRun(2, [&](int) {
        kernels::ParallelRun(2, [&](int) { sum.fetch_add(1); });  // nested: runs inline
      });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(sum.load(), 2 * 2000 * 4);
}

TEST(Parallel, WorksInForkedChild) {
  kernels::ParallelRun(2, [](int) {});  // make sure the parent's pool exists
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10);  // a deadlock kills the child with SIGALRM instead of hanging the suite
    std::atomic<int> n{0};
    kernels::ParallelRun(2, [&](int) { n.fetch_add(1); });
    std::vector<float> a(64 * 64, 1.0f), b(64 * 64, 1.0f), c(64 * 64);
    const bool ok = kernels::Matmul({96, 512, 256}, {64, 64, 64}, a.data(), b.data(), c.data(), 2).has_value();
    _exit(n.load() == 2 && ok && c[0] == 64.0f ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "child did not exit normally (deadlock?)";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace blocktune
