// blocktune/tables/index.h: the index a lookup resolves over (names, choices) and BuildIndex, which builds it.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "bucket.h"
#include "hardware_key.h"
#include "hash_table.h"
#include "host_cpu.h"
#include "source.h"

#ifndef BLOCKTUNE_TABLES_NOINLINE
// Keeps a rarely taken path (resolving a key the first time) out of the lookup it would bloat.
#if defined(__GNUC__) || defined(__clang__)
#define BLOCKTUNE_TABLES_NOINLINE __attribute__((noinline))
#else
#define BLOCKTUNE_TABLES_NOINLINE
#endif
#endif

namespace blocktune::tables {

// Resolution, written once for every row source: a generated header holds its index as
// constexpr arrays computed by the generator, the daemon builds the same index at run time over
// the rows it loaded from SQLite (tuner/lookup.cc); both are built by BuildIndex below and
// searched by IndexView.
//
// Names: every row's hardware key and every prefix of one at a component boundary, sorted and
// unique (a smaller id is a smaller string), with for each name the ids of its own prefixes
// by depth. A queried key is looked up once in a hash table of the names; its fallback levels
// are names too (the key less its last component, its first three), so from then on the
// query is a few integers.
//
// Choices: the fallback chain, precomputed. For each row key and each prefix of one with three
// or more components, per (dtype, bucket), the row an exact lookup of that name takes and the
// row a fallback to it takes (the smallest key equal to it or under it, the first row of that
// key on a tie), in an open-addressing hash table on (name id, dtype id, rounded dims or the
// bucket id string in the daemon). A lookup hashes its bucket once and probes with its key's
// name id (an exact hit), then with each fallback level's name id in order; nothing found: the
// kernel's default. No rows are walked, no strings built and nothing is allocated.

// Where a key's components end: its component count, and the offsets of its third and last
// dots (npos if it has fewer). Eight bytes at a time: a '.' byte is found by a bit trick
// without a branch per character.
struct KeyCuts {
  std::uint32_t depth = 1;
  std::size_t third_dot = std::string_view::npos;
  std::size_t last_dot = std::string_view::npos;
};

inline KeyCuts CutsOf(std::string_view key) {
  KeyCuts c;
  const char* p = key.data();
  const std::size_t n = key.size();
#if defined(__GNUC__) || defined(__clang__)
  if (n >= 8) {
    constexpr std::uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
    // Bit 7 of each byte of the word at `at` that is '.', bytes before `from` cleared.
    auto dots = [&](std::size_t at, unsigned from) {
      const std::uint64_t z = HashLoad64(p + at) ^ 0x2E2E2E2E2E2E2E2Eull;  // '.' bytes become 0
      const std::uint64_t m = ~(((z & kLow7) + kLow7) | z | kLow7);
      return from == 0 ? m : m & (~std::uint64_t{0} << (8 * from));
    };
    auto scan = [&](std::size_t at, std::uint64_t m) {
      for (; m != 0; m &= m - 1) {
        const std::size_t dot = at + static_cast<std::size_t>(__builtin_ctzll(m) >> 3);
        if (++c.depth == 4) c.third_dot = dot;
        c.last_dot = dot;
      }
    };
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) scan(i, dots(i, 0));
    // The tail: the last word again, without the bytes already seen.
    if (i < n) scan(n - 8, dots(n - 8, static_cast<unsigned>(8 - (n - i))));
    return c;
  }
#endif
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] != '.') continue;
    if (++c.depth == 4) c.third_dot = i;
    c.last_dot = i;
  }
  return c;
}

// Component count of a key (dots + 1).
inline std::uint32_t KeyDepth(std::string_view key) { return CutsOf(key).depth; }

// The key's first `depth` components (the whole key if it has no more).
inline std::string_view KeyPrefixAt(std::string_view key, std::uint32_t depth) {
  std::uint32_t d = 1;
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (key[i] == '.' && d++ == depth) return key.substr(0, i);
  }
  return key;
}

// Whether a key has the same-architecture level IndexView::PrepareSameArch adds: a device key of
// four components (gpu.<vendor>.<arch>.<model>) whose arch is not "unknown" (an imported device
// blocktune has no architecture for is no architecture to share).
inline bool HasSameArchLevel(std::string_view key) {
  if (!IsDeviceKey(key) || KeyDepth(key) != 4) return false;
  const std::size_t arch_at = KeyPrefixAt(key, 2).size() + 1;
  return key.substr(arch_at, KeyPrefixAt(key, 3).size() - arch_at) != "unknown";
}

// The depths of a key's fallback levels (ChainOf): the key less its last component if that
// still has more than three, then its first three; none for a key of three or fewer (and none
// for a device key: IndexView::Prepare checks IsDeviceKey before asking).
struct ChainDepths {
  std::uint32_t depth[kMaxChainLevels - 1] = {};
  std::uint32_t size = 0;  // fallback levels (the chain has size + 1)
};
inline ChainDepths ChainDepthsOf(std::uint32_t depth) {
  ChainDepths c;
  if (depth >= 5) c.depth[c.size++] = depth - 1;
  if (depth >= 4) c.depth[c.size++] = 3;
  return c;
}

// A queried key resolved against an index's names: its own name id (kNoId if no row has that
// key), the chain length, and the fallback levels that name some row key's prefix.
struct Query {
  std::uint32_t key = kNoId;
  std::uint32_t levels = 1;  // the key's chain length (ChainOf(key).size)
  std::uint32_t n = 0;       // entries of level/name in use
  std::uint32_t level[kMaxChainLevels - 1] = {};
  std::uint32_t name[kMaxChainLevels - 1] = {};
};

// Which row answers and from how far: `level` is the chain level of the row's key (0: the key
// itself); with no row (kNoId) it is the number of levels the chain has, all of them missed.
struct Resolution {
  std::uint32_t row = kNoId;
  std::uint32_t level = 0;
};

inline Source SourceOf(const Resolution& r) {
  if (r.row == kNoId) return Source::kDefault;
  return r.level == 0 ? Source::kTuned : Source::kTunedFallback;
}

// The precomputed answers for one (name, dtype, bucket): the row a lookup takes when the name
// is the queried key itself (`exact`: a row with exactly that key) and when it is one of the
// key's fallback levels (`under`: the row of the smallest key that equals the name or continues
// it at a component boundary, as ChainLevel ranks rows). Ties between rows of one key go to the
// first row. kNoId where there is none. Every row key has its choices (for `exact`), and so has
// every prefix of one with at least three components (for `under`: the only depths a fallback
// level has).
template <typename Bucket>
struct Choice {
  std::uint32_t name;   // name id
  std::uint32_t dtype;  // index into the dtype list
  Bucket bucket;
  std::uint32_t exact;
  std::uint32_t under;
};

// The host's queries, one per thread count 1..HostKeys::kMaxThreads, resolved once per process
// and index (LookupForHost).
struct HostChain {
  Query query[HostKeys::kMaxThreads + 1];
};

template <typename Bucket>
struct IndexView {
  const std::string_view* names;  // sorted, unique
  std::size_t num_names;
  const std::uint32_t* name_depth;  // per name, its component count
  const std::uint32_t* prefix;      // prefix[name * prefix_width + d - 1]: the name's first d components
  std::size_t prefix_width;         //   (kNoId past its depth)
  HashTableView name_table;
  const std::string_view* dtypes;  // sorted, unique
  std::size_t num_dtypes;
  const Choice<Bucket>* choices;  // sorted by (dtype, bucket, name)
  std::size_t num_choices;
  HashTableView choice_table;  // on ChoiceHash(BucketHashBase(bucket), name, dtype)

  std::uint32_t NameId(std::string_view name) const {
    return name_table.Find(HashText(name), [&](std::uint32_t id) { return SameText(names[id], name); });
  }

  std::uint32_t DtypeId(std::string_view dtype) const {
    for (std::size_t i = 0; i < num_dtypes; ++i) {
      if (SameText(dtypes[i], dtype)) return static_cast<std::uint32_t>(i);
    }
    return kNoId;
  }

  // The choices of (name, dtype, bucket); null if no row has them. `base` is the bucket's
  // BucketHashBase.
  template <typename B>
  const Choice<Bucket>* FindChoice(std::uint64_t base, std::uint32_t name, std::uint32_t dtype, const B& bucket) const {
    const std::uint32_t id = choice_table.Find(ChoiceHash(base, name, dtype), [&](std::uint32_t c) {
      const Choice<Bucket>& x = choices[c];
      return x.name == name && x.dtype == dtype && BucketEqual(x.bucket, bucket);
    });
    return id == kNoId ? nullptr : &choices[id];
  }

  // The key's chain over this index's names. A key that is a name has its levels' ids in the
  // prefix table; any other key is split at its dots and its levels looked up by hash
  // (PrepareLevels).
  Query Prepare(std::string_view key) const {
    Query q;
    q.key = NameId(key);
    if (IsDeviceKey(key)) return q;  // a device key's chain is the key alone (hardware_key.h)
    if (q.key == kNoId) return PrepareLevels(key);
    const ChainDepths c = ChainDepthsOf(name_depth[q.key]);
    q.levels = c.size + 1;
    for (std::uint32_t i = 0; i < c.size; ++i) {
      q.level[q.n] = i + 1;
      q.name[q.n] = prefix[q.key * prefix_width + c.depth[i] - 1];
      ++q.n;
    }
    return q;
  }

  // The fallback levels of `key` only (q.key stays kNoId): as ChainOf, the key less its last
  // component if that is below arch.isa.vendor, then arch.isa.vendor, each looked up by hash.
  Query PrepareLevels(std::string_view key) const {
    Query q;
    if (IsDeviceKey(key)) return q;
    const KeyCuts cuts = CutsOf(key);
    const ChainDepths c = ChainDepthsOf(cuts.depth);
    q.levels = c.size + 1;
    for (std::uint32_t i = 0; i < c.size; ++i) {
      const std::uint32_t id = NameId(key.substr(0, c.depth[i] == 3 ? cuts.third_dot : cuts.last_dot));
      if (id == kNoId) continue;  // no row key is under this level
      q.level[q.n] = i + 1;
      q.name[q.n] = id;
      ++q.n;
    }
    return q;
  }

  // The row for query `q`: the key's own choice if it has an exact row, else the first fallback
  // level that has a choice; a probe of the choice table each, the bucket hashed once.
  template <typename B>
  Resolution Choose(const Query& q, std::uint32_t dtype, const B& bucket) const {
    if (dtype == kNoId) return {kNoId, q.levels};
    const std::uint64_t base = BucketHashBase(bucket);
    if (q.key != kNoId) {
      const Choice<Bucket>* c = FindChoice(base, q.key, dtype, bucket);
      if (c != nullptr && c->exact != kNoId) return {c->exact, 0};
    }
    for (std::uint32_t i = 0; i < q.n; ++i) {
      const Choice<Bucket>* c = FindChoice(base, q.name[i], dtype, bucket);
      if (c != nullptr && c->under != kNoId) return {c->under, q.level[i]};
    }
    return {kNoId, q.levels};
  }

  // Prepare, plus the architecture of a four-part device key (HasSameArchLevel) as its one
  // fallback level: the explicit option under which another model's row of the same
  // architecture serves (hardware_key.h IsDeviceKey). Other keys: Prepare.
  Query PrepareSameArch(std::string_view key) const {
    Query q = Prepare(key);
    if (!HasSameArchLevel(key)) return q;
    q.levels = 2;
    if (const std::uint32_t id = NameId(KeyPrefixAt(key, 3)); id != kNoId) {
      q.level[q.n] = 1;
      q.name[q.n] = id;
      ++q.n;
    }
    return q;
  }

  // Resolution for any key, given as a string (the daemon): the key is resolved against the
  // names (Prepare), then chosen for as below.
  template <typename B>
  Resolution Resolve(std::string_view key, std::string_view dtype, const B& bucket) const {
    return Choose(Prepare(key), DtypeId(dtype), bucket);
  }

  // Resolution for a key already resolved against this index (Prepare, or a QueryMemo of this
  // index): integers and the bucket only.
  template <typename B>
  Resolution ResolveQuery(const Query& q, std::string_view dtype, const B& bucket) const {
    return Choose(q, DtypeId(dtype), bucket);
  }

  // The host's queries over this index (see HostChain); detects the CPU on first use.
  HostChain ForHost() const {
    const HostKeys& host = HostKeys::Get();
    HostChain h;
    h.query[0] = Query{};
    for (int t = 1; t <= HostKeys::kMaxThreads; ++t) h.query[t] = Prepare(host.Key(t));
    return h;
  }

  // Resolution for the host key at `threads` threads (`dtype` an index into `dtypes`), from the
  // host's queries resolved before.
  template <typename B>
  Resolution ResolveForHost(const HostChain& host, int threads, std::uint32_t dtype, const B& bucket) const {
    if (threads < 1 || threads > HostKeys::kMaxThreads) return ResolveForHostSlow(threads, dtype, bucket);
    return Choose(host.query[threads], dtype, bucket);
  }
  template <typename B>
  Resolution ResolveForHost(const HostChain& host, int threads, std::string_view dtype, const B& bucket) const {
    return ResolveForHost(host, threads, DtypeId(dtype), bucket);
  }

  // A thread count HostChain does not hold: the key is formatted and resolved on every call.
  template <typename B>
  BLOCKTUNE_TABLES_NOINLINE Resolution ResolveForHostSlow(int threads, std::uint32_t dtype, const B& bucket) const {
    return Choose(Prepare(HostKeys::Get().Key(threads)), dtype, bucket);
  }
};

// What the index is made of, as vectors: built by BuildIndex for the daemon's rows (RowIndex)
// and by the generator, which prints it as the arrays of a generated header.
template <typename Bucket>
struct IndexData {
  std::vector<std::string_view> names;  // views into the rows' keys
  std::vector<std::uint32_t> name_depth;
  std::vector<std::uint32_t> prefix;
  std::size_t prefix_width = 0;
  HashTableData name_table;
  std::vector<std::string_view> dtypes;  // views into the rows' dtypes
  std::vector<Choice<Bucket>> choices;
  HashTableData choice_table;

  IndexView<Bucket> view() const {
    return {names.data(),  names.size(),  name_depth.data(), prefix.data(),  prefix_width,       name_table.view(),
            dtypes.data(), dtypes.size(), choices.data(),    choices.size(), choice_table.view()};
  }
};

// One row as the index sees it.
template <typename Bucket>
struct IndexRow {
  std::string_view hardware;
  std::string_view dtype;
  Bucket bucket;
};

template <typename Bucket>
IndexData<Bucket> BuildIndex(const std::vector<IndexRow<Bucket>>& rows) {
  IndexData<Bucket> x;
  // Names: each key and its prefixes at component boundaries.
  for (const auto& r : rows) {
    const std::uint32_t depth = KeyDepth(r.hardware);
    for (std::uint32_t d = 1; d <= depth; ++d) x.names.push_back(KeyPrefixAt(r.hardware, d));
    x.dtypes.push_back(r.dtype);
  }
  for (auto* v : {&x.names, &x.dtypes}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  auto name_id = [&](std::string_view s) {
    return static_cast<std::uint32_t>(std::lower_bound(x.names.begin(), x.names.end(), s) - x.names.begin());
  };
  for (std::string_view n : x.names) {
    x.name_depth.push_back(KeyDepth(n));
    x.prefix_width = std::max<std::size_t>(x.prefix_width, x.name_depth.back());
  }
  x.prefix.assign(x.names.size() * x.prefix_width, kNoId);
  std::vector<std::uint64_t> hashes;
  for (std::size_t id = 0; id < x.names.size(); ++id) {
    for (std::uint32_t d = 1; d <= x.name_depth[id]; ++d) {
      x.prefix[id * x.prefix_width + d - 1] = name_id(KeyPrefixAt(x.names[id], d));
    }
    hashes.push_back(HashText(x.names[id]));
  }
  x.name_table = BuildHashTable(hashes);

  // Choices: every row offers itself to its key (exact) and to each prefix of its key with at
  // least three components (under). Sorted by (dtype, bucket, name, row key, row), the first
  // offer of a (dtype, bucket, name) is its `under` (smallest key, then first row) and the first
  // whose key is the name itself its `exact`.
  struct Offer {
    std::uint32_t dtype;
    const Bucket* bucket;
    std::uint32_t name;
    std::uint32_t key;
    std::uint32_t row;
  };
  std::vector<Offer> offers;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto dtype =
        static_cast<std::uint32_t>(std::lower_bound(x.dtypes.begin(), x.dtypes.end(), r.dtype) - x.dtypes.begin());
    const std::uint32_t key = name_id(r.hardware);
    const std::uint32_t depth = x.name_depth[key];
    for (std::uint32_t d = 1; d <= depth; ++d) {
      if (d == depth || d >= 3) {
        offers.push_back(
            {dtype, &r.bucket, x.prefix[key * x.prefix_width + d - 1], key, static_cast<std::uint32_t>(i)});
      }
    }
  }
  std::sort(offers.begin(), offers.end(), [](const Offer& a, const Offer& b) {
    if (a.dtype != b.dtype) return a.dtype < b.dtype;
    if (*a.bucket < *b.bucket) return true;
    if (*b.bucket < *a.bucket) return false;
    if (a.name != b.name) return a.name < b.name;
    if (a.key != b.key) return a.key < b.key;
    return a.row < b.row;
  });
  hashes.clear();
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const Offer& o = offers[i];
    if (i == 0 || o.dtype != x.choices.back().dtype || o.name != x.choices.back().name ||
        !(*o.bucket == x.choices.back().bucket)) {
      const bool under = x.name_depth[o.name] >= 3;
      x.choices.push_back({o.name, o.dtype, *o.bucket, kNoId, under ? o.row : kNoId});
      hashes.push_back(ChoiceHash(BucketHashBase(*o.bucket), o.name, o.dtype));
    }
    if (o.key == o.name && x.choices.back().exact == kNoId) x.choices.back().exact = o.row;
  }
  x.choice_table = BuildHashTable(hashes);
  return x;
}

}  // namespace blocktune::tables
