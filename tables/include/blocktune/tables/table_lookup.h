// blocktune/tables/table_lookup.h: the lookup every generated header exposes, over its constexpr tables.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "bucket.h"
#include "index.h"
#include "query_memo.h"
#include "source.h"

namespace blocktune::tables {

// The lookup every generated header exposes, written once: bucket the problem, resolve over the
// header's index, fall back to the kernel's default (the steps of source.h's precedence a
// header has). Row needs `hardware`, `config` and
// `median_ns` members.

template <typename Row, std::size_t NDims>
struct TableLookup {
  decltype(Row::config) config;
  Source source;
  std::string_view hardware;  // the key of the row that answered; empty for the default
  // The key looked up: for LookupForHost the host's (storage as HostKeys::Key), for
  // LookupBlockSizes a view of the caller's argument, valid as long as that is.
  std::string_view queried_hardware;
  // Levels fallen down the queried key's chain: 0 the key itself, 1 the same CPU model at
  // another thread count, 2 the same vendor and ISA level; for the default, the length of the
  // chain (every level was tried).
  int fallback_levels;
  BucketName<NDims> bucket;  // the problem's bucket; .str() gives its id
  double median_ns;          // 0 for the default
  const Row* row;            // provenance (sweep and measurement ids); null for the default
  // The row's kernel fingerprint (empty: unknown, or the default), and whether it differs from
  // the fingerprint of the build the header is compiled with (MarkStale): a stale row was
  // measured by another build of the kernel. Unknown fingerprints are never stale.
  std::string_view fingerprint = {};
  bool stale = false;
};

// Sets `fingerprint` and `stale` of a lookup answered by a row with a `fingerprint` member.
// `build` empty (fingerprints unavailable): nothing is reported stale. The generated headers
// answer with StaleFlags below instead, computed by the compiler; this is the same rule.
template <typename Lookup>
Lookup MarkStale(Lookup r, std::string_view build) {
  if (r.row != nullptr) {
    r.fingerprint = r.row->fingerprint;
    r.stale = !build.empty() && !r.fingerprint.empty() && !SameText(r.fingerprint, build);
  }
  return r;
}

// Per row, whether it is stale in a build of fingerprint `build` (MarkStale's rule): a
// generated header's kStale, evaluated at compile time, so a lookup reads a flag instead of
// comparing fingerprints.
template <typename Row, std::size_t NRows>
constexpr std::array<bool, NRows> StaleFlags(const std::array<Row, NRows>& rows, std::string_view build) {
  std::array<bool, NRows> stale{};
  for (std::size_t i = 0; i < NRows; ++i) {
    stale[i] = !build.empty() && !rows[i].fingerprint.empty() && rows[i].fingerprint != build;
  }
  return stale;
}

// Inlined where the lookup is (BLOCKTUNE_TABLES_ALWAYS_INLINE, source.h): lookup_bench then
// measures the same per lookup as before the steps went through ByPrecedence (~25 ns).
template <typename Row, std::size_t NRows, std::size_t NDims>
BLOCKTUNE_TABLES_ALWAYS_INLINE TableLookup<Row, NDims> AnswerFrom(
    const std::array<Row, NRows>& rows, const std::array<bool, NRows>& stale, const Resolution& r,
    const decltype(Row::config)& default_config, const BucketName<NDims>& bucket, std::string_view queried) {
  using Answer = TableLookup<Row, NDims>;
  const int levels = static_cast<int>(r.level);
  // A header has no explicit config, overrides or nearest step (source.h): the index's row or
  // the default, each setting every field (ByPrecedence does not zero the answer).
  auto common = [&](Answer& a) {
    a.queried_hardware = queried;
    a.fallback_levels = levels;
    a.bucket = bucket;
  };
  auto tuned = [&](Answer& a) {
    if (r.row == kNoId) return false;
    const Row& row = rows[r.row];
    common(a);
    a.config = row.config;
    a.source = SourceOf(r);
    a.hardware = row.hardware;
    a.median_ns = row.median_ns;
    a.row = &row;
    a.fingerprint = row.fingerprint;
    a.stale = stale[r.row];
    return true;
  };
  auto kernel_default = [&](Answer& a) {
    common(a);
    a.config = default_config;
    a.source = Source::kDefault;
    a.hardware = {};
    a.median_ns = 0.0;
    a.row = nullptr;
    a.fingerprint = {};
    a.stale = false;
    return true;
  };
  return ByPrecedence<Answer>(NoStep{}, NoStep{}, tuned, NoStep{}, kernel_default);
}

template <std::size_t NDims>
BucketName<NDims> RoundBucket(const BucketDim (&dims)[NDims], const std::array<std::int64_t, NDims>& values) {
  BucketName<NDims> b;
  b.dims = dims;
  for (std::size_t i = 0; i < NDims; ++i) b.values[i] = RoundDim(dims[i], values[i]);
  return b;
}

// The lookups of a generated header take its constexpr tables as template arguments (Rows: its
// kRows, Stale: kStale, Index: kIndex, Default: kDefault, Dims: kDims), so each header gets its
// own copy of this code with the tables' sizes, seeds, dtype names and bucket rounding folded
// into it by the compiler: the same code as for any index, without loading what is constant.
template <const auto& Rows, const auto& Dims>
using LookupOf = TableLookup<typename std::remove_cv_t<std::remove_reference_t<decltype(Rows)>>::value_type,
                             std::extent_v<std::remove_reference_t<decltype(Dims)>>>;

template <const auto& Dims, std::size_t NDims = std::extent_v<std::remove_reference_t<decltype(Dims)>>>
BucketName<NDims> RoundBucketOf(const std::array<std::int64_t, NDims>& values) {
  return RoundBucket(Dims, values);
}

// `memo` holds the keys this caller resolved before over `Index` (the headers pass one per
// thread); `dtype` is an index into Index.dtypes (kNoId: none has it).
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableById(
    QueryMemo& memo, const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values,
    std::string_view hardware_key, std::uint32_t dtype) {
  const auto bucket = RoundBucketOf<Dims>(values);
  const Resolution r = Index.Choose(memo.Get(Index, hardware_key), dtype, bucket.values);
  return AnswerFrom(Rows, Stale, r, Default, bucket, hardware_key);
}

// LookupInTable with the same-architecture level (IndexView::PrepareSameArch): a device key
// with no row of its own is answered by another model's row of its architecture, as
// `blocktuned --device-fallback same-arch` answers. Explicit, never the default, and without
// the memo: an application asks for it once per device, not before every launch.
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableSameArch(
    const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values,
    std::string_view hardware_key, std::string_view dtype) {
  const auto bucket = RoundBucketOf<Dims>(values);
  const Resolution r = Index.Choose(Index.PrepareSameArch(hardware_key), Index.DtypeId(dtype), bucket.values);
  return AnswerFrom(Rows, Stale, r, Default, bucket, hardware_key);
}

// The dtype is found among the table's (a few compares, folded away for a literal where this
// is inlined), then LookupInTableById.
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTable(
    QueryMemo& memo, const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values,
    std::string_view hardware_key, std::string_view dtype) {
  return LookupInTableById<Rows, Stale, Index, Default, Dims>(memo, values, hardware_key, Index.DtypeId(dtype));
}

// `host` is Index.ForHost(), kept by the caller.
template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableForHostById(
    const HostChain& host,
    const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values, int threads,
    std::uint32_t dtype) {
  const auto bucket = RoundBucketOf<Dims>(values);
  const Resolution r = Index.ResolveForHost(host, threads, dtype, bucket.values);
  return AnswerFrom(Rows, Stale, r, Default, bucket, HostKeys::Get().Key(threads));
}

template <const auto& Rows, const auto& Stale, const auto& Index, const auto& Default, const auto& Dims>
LookupOf<Rows, Dims> LookupInTableForHost(
    const HostChain& host,
    const std::array<std::int64_t, std::extent_v<std::remove_reference_t<decltype(Dims)>>>& values, int threads,
    std::string_view dtype) {
  return LookupInTableForHostById<Rows, Stale, Index, Default, Dims>(host, values, threads, Index.DtypeId(dtype));
}

}  // namespace blocktune::tables
