// The fast lookups (generated headers: constexpr index, host chain computed once; the daemon's
// tuner::Lookup over a tables::RowIndex) against a reference written the slow, obvious way: a
// linear scan of every checked-in row per chain level with string compares. Every row's bucket,
// shapes around it, and keys around every row's key (other thread counts, models, vendors, ISA
// levels, malformed keys) must resolve to the same row, source and fallback level.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/flash_attention_tuned_block_sizes.h"
#include "blocktune/tables/fused_cross_entropy_tuned_block_sizes.h"
#include "blocktune/tables/grouped_matmul_tuned_block_sizes.h"
#include "blocktune/tables/matmul_tuned_block_sizes.h"
#include "blocktune/tables/ragged_paged_attention_tuned_block_sizes.h"
#include "codegen/codegen.h"
#include "kernels/core/kernel_spec.h"
#include "tuner/lookup.h"

namespace blocktune {
namespace {

std::vector<std::string> Split(const std::string& key) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : key) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

std::string Join(const std::vector<std::string>& parts, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out += '.';
    out += parts[i];
  }
  return out;
}

// The rule as docs/tables.md states it: the key; the same CPU model at another thread count
// (the key less its last component); the same vendor and ISA level (arch.isa.vendor).
std::vector<std::string> ReferenceChain(const std::string& key) {
  const auto parts = Split(key);
  std::vector<std::string> chain{key};
  if (parts.size() >= 5) chain.push_back(Join(parts, parts.size() - 1));
  if (parts.size() >= 4) chain.push_back(Join(parts, 3));
  return chain;
}

std::string ReferenceBucket(const tables::BucketDim* dims, size_t n, const std::vector<int64_t>& values) {
  std::string id;
  for (size_t i = 0; i < n; ++i) {
    int64_t v = values[i] < dims[i].min ? dims[i].min : values[i];
    if (dims[i].rounding == tables::Rounding::kPow2Ceil) {
      int64_t p = 1;
      while (p < v && p < dims[i].max) p <<= 1;
      v = p;
    }
    if (v > dims[i].max) v = dims[i].max;
    if (i) id += '_';
    id += dims[i].name;
    id += std::to_string(v);
  }
  return id;
}

template <typename Row>
struct Reference {
  const Row* row = nullptr;
  int level = 0;
};

template <typename Row, size_t N>
Reference<Row> Resolve(const std::array<Row, N>& rows, const std::string& key, const std::string& dtype,
                       const std::string& bucket) {
  const auto chain = ReferenceChain(key);
  for (size_t level = 0; level < chain.size(); ++level) {
    const Row* best = nullptr;
    for (const Row& r : rows) {
      if (r.dtype != dtype || r.bucket != bucket) continue;
      const std::string hw(r.hardware);
      const bool hit = level == 0 ? hw == key : (hw == chain[level] || hw.rfind(chain[level] + ".", 0) == 0);
      if (hit && (best == nullptr || hw < best->hardware)) best = &r;
    }
    if (best != nullptr) return {best, static_cast<int>(level)};
  }
  return {nullptr, static_cast<int>(chain.size())};
}

// Parses a checked-in bucket id back into its dims (names may hold '_', so walk them in order).
std::vector<int64_t> BucketValues(const tables::BucketDim* dims, size_t n, std::string_view bucket) {
  std::vector<int64_t> values;
  for (size_t i = 0; i < n; ++i) {
    const std::string_view name(dims[i].name);
    EXPECT_EQ(bucket.substr(0, name.size()), name) << bucket;
    bucket.remove_prefix(name.size());
    int64_t v = 0;
    while (!bucket.empty() && bucket[0] >= '0' && bucket[0] <= '9') {
      v = v * 10 + (bucket[0] - '0');
      bucket.remove_prefix(1);
    }
    values.push_back(v);
    if (!bucket.empty()) bucket.remove_prefix(1);  // '_'
  }
  return values;
}

// Components joined with '.', appended one by one (GCC 12 reports a false -Wrestrict for
// "literal" + std::string chains).
std::string Dotted(std::initializer_list<std::string_view> parts) {
  std::string out;
  for (std::string_view p : parts) {
    if (!out.empty()) out += '.';
    out.append(p);
  }
  return out;
}

std::vector<std::string> KeysAround(const std::vector<std::string>& row_keys) {
  std::vector<std::string> keys = {"",
                                   "x86_64",
                                   "x86_64.avx2",
                                   "x86_64.avx2.amd",
                                   "riscv64.base.other.fam0_mod0.t1",
                                   tables::HostHardwareKey(1),
                                   tables::HostHardwareKey(3)};
  for (const auto& k : row_keys) {
    const auto p = Split(k);
    keys.push_back(k);
    keys.push_back(Dotted({k, "extra"}));
    if (p.size() != 5) continue;
    for (const char* t : {"t3", "t64", "t1", "t2"}) keys.push_back(Dotted({p[0], p[1], p[2], p[3], t}));
    keys.push_back(Join(p, 4));
    keys.push_back(Dotted({p[0], p[1], p[2], "fam99_mod99", p[4]}));
    keys.push_back(Dotted({p[0], p[1], "via", p[3], p[4]}));
    for (const char* isa : {"avx512", "avx2", "base"}) keys.push_back(Dotted({p[0], isa, p[2], p[3], p[4]}));
    keys.push_back(Dotted({"aarch64", p[1], p[2], p[3], p[4]}));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

// Checks one generated table. `lookup(key, dtype, dims)` is the header's LookupDims.
template <typename Row, size_t NRows, size_t ND, typename LookupFn, typename ForHostFn>
void CheckTable(std::string_view kernel, const std::array<Row, NRows>& rows, const tables::BucketDim (&dims)[ND],
                LookupFn lookup, ForHostFn for_host) {
  SCOPED_TRACE(std::string(kernel));
  const KernelSpec* spec = FindKernel(kernel);
  ASSERT_NE(spec, nullptr);
  auto entries = codegen::ParseJsonl(codegen::CheckedInEntriesJsonl());
  ASSERT_TRUE(entries);
  const tuner::LookupIndex daemon_index(*entries, {});

  std::vector<std::string> row_keys;
  std::vector<std::vector<int64_t>> shapes;
  for (const Row& r : rows) {
    row_keys.emplace_back(r.hardware);
    const auto base = BucketValues(dims, ND, r.bucket);
    shapes.push_back(base);
    for (size_t i = 0; i < ND; ++i) {
      for (int64_t v : {base[i] - 1, base[i] + 1, int64_t{0}, int64_t{1} << 40}) {
        auto s = base;
        s[i] = v;
        shapes.push_back(s);
      }
    }
  }
  std::sort(shapes.begin(), shapes.end());
  shapes.erase(std::unique(shapes.begin(), shapes.end()), shapes.end());
  const auto keys = KeysAround(row_keys);
  size_t checked = 0, tuned = 0, fallback = 0;
  for (const auto& key : keys) {
    for (const std::string dtype : {"f32", "bf16", "f16", ""}) {
      for (const auto& shape : shapes) {
        std::array<std::int64_t, ND> values{};
        for (size_t i = 0; i < ND; ++i) values[i] = shape[i];
        const std::string bucket = ReferenceBucket(dims, ND, shape);
        const auto want = Resolve(rows, key, dtype, bucket);
        const auto got = lookup(key, dtype, values);
        SCOPED_TRACE(key + " " + dtype + " " + bucket);
        ASSERT_EQ(got.row, want.row);
        ASSERT_EQ(got.fallback_levels, want.level);
        ASSERT_EQ(got.bucket.str(), bucket);
        ASSERT_EQ(got.queried_hardware, key);
        if (want.row == nullptr) {
          ASSERT_EQ(got.source, tables::Source::kDefault);
          ASSERT_EQ(got.hardware, "");
        } else {
          ASSERT_EQ(got.source, want.level == 0 ? tables::Source::kTuned : tables::Source::kTunedFallback);
          ASSERT_EQ(got.hardware, want.row->hardware);
          ASSERT_EQ(got.median_ns, want.row->median_ns);
          (want.level == 0 ? tuned : fallback)++;
        }
        ++checked;
        // The daemon's resolver (no nearest step: what a header does) agrees on valid problems.
        tuner::LookupQuery q;
        auto d = ParseDType(dtype);
        if (!d) continue;
        q.dtype = *d;
        for (size_t i = 0; i < ND; ++i) q.dims.Set(dims[i].name, shape[i]);
        q.hardware_key = key;
        auto a = tuner::Lookup(*spec, daemon_index, q, "", /*nearest=*/false);
        if (!a) continue;  // a shape the kernel refuses (dim 0, out of range)
        ASSERT_EQ(a->source, got.source);
        ASSERT_EQ(a->fallback_levels, got.fallback_levels);
        ASSERT_EQ(a->queried_hardware, key);
        ASSERT_EQ(a->bucket, bucket);
        if (want.row != nullptr) {
          ASSERT_EQ(a->hardware, want.row->hardware);
          ASSERT_EQ(a->sweep_id, want.row->sweep_id);
          ASSERT_EQ(a->measurement_id, want.row->measurement_id);
        }
      }
    }
  }
  // The grid exercised every outcome.
  EXPECT_GT(tuned, 0u);
  EXPECT_GT(fallback, 0u);
  EXPECT_GT(checked, tuned + fallback);

  // LookupForHost answers as an explicit lookup with the host's key, at any thread count.
  for (int threads : {1, 2, 3, 256, 257, 0, -1}) {
    const std::string key = tables::HostHardwareKey(threads);
    for (const auto& shape : shapes) {
      std::array<std::int64_t, ND> values{};
      for (size_t i = 0; i < ND; ++i) values[i] = shape[i];
      const auto want = lookup(key, "f32", values);
      const auto got = for_host(threads, "f32", values);
      SCOPED_TRACE(key);
      ASSERT_EQ(got.row, want.row);
      ASSERT_EQ(got.source, want.source);
      ASSERT_EQ(got.fallback_levels, want.fallback_levels);
      ASSERT_EQ(got.queried_hardware, key);
    }
  }
}

// Adapts a header's LookupForHost (one argument per dim) to an array of dims.
template <size_t ND, typename F>
auto ForHost(F f) {
  return [f](int threads, std::string_view dtype, const std::array<std::int64_t, ND>& v) {
    return std::apply([&](auto... d) { return f(threads, dtype, d...); }, v);
  };
}

TEST(LookupReference, Matmul) {
  namespace t = tables::matmul;
  CheckTable("matmul", t::kRows, t::kDims, t::LookupDims,
             ForHost<3>([](int th, std::string_view dt, auto... d) { return t::LookupForHost(th, dt, d...); }));
}

TEST(LookupReference, FlashAttention) {
  namespace t = tables::flash_attention;
  CheckTable("flash_attention", t::kRows, t::kDims, t::LookupDims,
             ForHost<7>([](int th, std::string_view dt, auto... d) { return t::LookupForHost(th, dt, d...); }));
}

TEST(LookupReference, FusedCrossEntropy) {
  namespace t = tables::fused_cross_entropy;
  constexpr size_t kN = std::size(t::kDims);
  CheckTable("fused_cross_entropy", t::kRows, t::kDims, t::LookupDims,
             ForHost<kN>([](int th, std::string_view dt, auto... d) { return t::LookupForHost(th, dt, d...); }));
}

TEST(LookupReference, GroupedMatmul) {
  namespace t = tables::grouped_matmul;
  constexpr size_t kN = std::size(t::kDims);
  CheckTable("grouped_matmul", t::kRows, t::kDims, t::LookupDims,
             ForHost<kN>([](int th, std::string_view dt, auto... d) { return t::LookupForHost(th, dt, d...); }));
}

TEST(LookupReference, RaggedPagedAttention) {
  namespace t = tables::ragged_paged_attention;
  constexpr size_t kN = std::size(t::kDims);
  CheckTable("ragged_paged_attention", t::kRows, t::kDims, t::LookupDims,
             ForHost<kN>([](int th, std::string_view dt, auto... d) { return t::LookupForHost(th, dt, d...); }));
}

// A generated answer's bucket compares with an id and converts to one.
TEST(LookupReference, BucketNameIsTheId) {
  const auto r = tables::matmul::LookupBlockSizes("x86_64.avx2.amd.fam25_mod1.t1", "f32", 1000, 1000, 1000);
  EXPECT_TRUE(r.bucket == "m1024_n1024_k1024");
  EXPECT_FALSE(r.bucket != "m1024_n1024_k1024");
  const std::string id = r.bucket;
  EXPECT_EQ(id, "m1024_n1024_k1024");
  EXPECT_EQ(r.bucket.values, (std::array<std::int64_t, 3>{1024, 1024, 1024}));
}

// The per-thread memo of resolved keys (tables::QueryMemo) answers from the key's text, never
// from where it is stored: a key rewritten in place answers for its new text, keys that share
// a slot take turns, and keys too long for the memo are resolved every time.
TEST(LookupReference, KeyMemoFollowsTheKeysText) {
  namespace mm = tables::matmul;
  std::string key = "x86_64.avx2.amd.fam25_mod1.t1";
  auto at = [&] { return mm::LookupBlockSizes(key, "f32", 1000, 1000, 1000); };
  EXPECT_EQ(at().source, tables::Source::kTuned);
  key.back() = '5';  // same buffer, same length, same slot: another key (t5 has no row)
  auto r = at();
  EXPECT_EQ(r.source, tables::Source::kTunedFallback);
  EXPECT_EQ(r.fallback_levels, 1);
  EXPECT_EQ(r.queried_hardware, "x86_64.avx2.amd.fam25_mod1.t5");
  key.back() = '1';
  EXPECT_EQ(at().source, tables::Source::kTuned);
  key = "x86_64.avx2.amd.fam25_mod33.t1";  // another CPU model of the vendor and ISA level
  r = at();
  EXPECT_EQ(r.source, tables::Source::kTunedFallback);
  EXPECT_EQ(r.fallback_levels, 2);
  // Longer than QueryMemo::kMaxKey: resolved on every call, the same answers.
  key = "x86_64.avx2.amd.fam25_mod1." + std::string(tables::QueryMemo::kMaxKey, 'x');
  for (int i = 0; i < 2; ++i) {
    r = at();
    EXPECT_EQ(r.source, tables::Source::kTunedFallback);
    EXPECT_EQ(r.fallback_levels, 1);
  }
  // One memo per index: the other tables, looked up on this thread in between, keep their own.
  key = "x86_64.avx2.amd.fam25_mod1.t1";
  const auto fa = tables::flash_attention::LookupBlockSizes(key, "f32", 1, 8, 8, 1024, 1024, 128, 0);
  EXPECT_EQ(at().source, tables::Source::kTuned);
  EXPECT_EQ(tables::flash_attention::LookupBlockSizes(key, "f32", 1, 8, 8, 1024, 1024, 128, 0).source, fa.source);
  // A memo asked about another index forgets the first one's ids.
  tables::QueryMemo memo;
  const tables::Query q = memo.Get(mm::kIndex, key);
  EXPECT_NE(q.key, tables::kNoId);
  EXPECT_EQ(memo.Get(tables::flash_attention::kIndex, key).key, tables::flash_attention::kIndex.Prepare(key).key);
  EXPECT_EQ(memo.Get(mm::kIndex, key).key, q.key);
}

}  // namespace
}  // namespace blocktune
