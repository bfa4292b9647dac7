// blocktune/tables/hash_table.h: the hashing and the open-addressing hash table the index is built on.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

namespace blocktune::tables {

inline constexpr std::uint32_t kNoId = 0xffffffffu;

// Hashing. Every value is computed the same way by the generator and at run time, so the
// generated slot arrays work wherever the header is compiled (byte order fixed to little-endian).
// Words are multiplied by per-position constants and summed, so the multiplies of one key run in
// parallel, then mixed once.
inline constexpr std::uint64_t kHashKeys[8] = {
    0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0xD6E8FEB86659FD93ull,
    0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0xBF58476D1CE4E5B9ull, 0x94D049BB133111EBull,
};

inline constexpr std::uint64_t HashWord(std::uint64_t w, std::size_t position) {
  return (w ^ kHashKeys[position & 7]) * kHashKeys[(position + 3) & 7];
}

inline constexpr std::uint64_t HashFinish(std::uint64_t x) {
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  return x ^ (x >> 32);
}

inline std::uint64_t HashLoad64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && defined(__ORDER_BIG_ENDIAN__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

// A name, eight bytes at a time (the last word overlaps the one before it).
inline std::uint64_t HashText(std::string_view s) {
  const char* p = s.data();
  const std::size_t n = s.size();
  std::uint64_t h = n * kHashKeys[0];
  if (n >= 8) {
    std::size_t k = 1;
    for (std::size_t i = 0; i + 8 < n; i += 8, ++k) h += HashWord(HashLoad64(p + i), k);
    return HashFinish(h + HashWord(HashLoad64(p + n - 8), k));
  }
  std::uint64_t w = 0;
  for (std::size_t i = 0; i < n; ++i) w |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return HashFinish(h + HashWord(w, 1));
}

// A bucket's part of a choice's hash (ChoiceHash below): its rounded dims (generated headers)
// or its id (the daemon), computed once per lookup however many chain levels are probed. Dims
// are multiplied by per-position constants and summed (a multiply and an add each); the hash
// table's seed multiply and the generator's choice of seed do the rest, and a probe compares
// the whole key after the hash.
inline std::uint64_t BucketHashBase(const std::int64_t* v, std::size_t n) {
  std::uint64_t h = 0;
  for (std::size_t i = 0; i < n; ++i) h += static_cast<std::uint64_t>(v[i]) * kHashKeys[(i + 1) & 7];
  return h;
}
template <std::size_t N>
std::uint64_t BucketHashBase(const std::array<std::int64_t, N>& v) {
  return BucketHashBase(v.data(), N);
}
inline std::uint64_t BucketHashBase(const std::vector<std::int64_t>& v) { return BucketHashBase(v.data(), v.size()); }
inline std::uint64_t BucketHashBase(std::string_view bucket) { return HashText(bucket); }

// A choice's key: a name id, a dtype id and a bucket (its BucketHashBase). Linear in the dims
// and ids, and left so: the table's seed multiply spreads such keys evenly (on the checked-in
// tables a finishing mix displaced ~20x more choices from their home slots).
inline std::uint64_t ChoiceHash(std::uint64_t bucket_base, std::uint32_t name, std::uint32_t dtype) {
  return bucket_base + ((static_cast<std::uint64_t>(name) << 32) | dtype) * kHashKeys[0];
}

// Bucket equality for the choice check: element by element for rounded dims (std::array's == calls
// memcmp), as text for bucket ids.
template <std::size_t N>
bool BucketEqual(const std::array<std::int64_t, N>& a, const std::array<std::int64_t, N>& b) {
  for (std::size_t i = 0; i < N; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}
inline bool BucketEqual(std::string_view a, std::string_view b) { return SameText(a, b); }

// An open-addressing hash table of ids (linear probing, at most half full). The home slot of a
// hash is the top `bits` bits of hash * seed; the builder (BuildHashTable) tries seeds and keeps
// the one that displaces ids least (none, for every table generated so far: one probe per hit).
struct HashSlot {
  std::uint64_t hash;
  std::uint32_t id;  // kNoId: empty
};

struct HashTableView {
  const HashSlot* slots = nullptr;
  std::uint64_t seed = 1;
  unsigned bits = 0;  // 2^bits slots; 0 with no slots

  // The id whose slot holds `hash` and satisfies `same(id)`; kNoId if none.
  template <typename Same>
  std::uint32_t Find(std::uint64_t hash, Same&& same) const {
    if (bits == 0) return kNoId;
    const std::size_t mask = (std::size_t{1} << bits) - 1;
    for (std::size_t s = static_cast<std::size_t>((hash * seed) >> (64 - bits));; s = (s + 1) & mask) {
      const HashSlot& x = slots[s];
      if (x.id == kNoId) return kNoId;
      if (x.hash == hash && same(x.id)) return x.id;
    }
  }
};

struct HashTableData {
  std::vector<HashSlot> slots;
  std::uint64_t seed = 1;
  unsigned bits = 0;
  std::size_t displaced = 0;  // sum over ids of their distance from their home slot
  HashTableView view() const { return {slots.data(), seed, bits}; }
};

// The table of ids 0..hashes.size()-1. Deterministic: the same hashes give the same table.
// Seeds come from a fixed sequence; the table keeps the one whose farthest id is nearest its
// home slot (then the fewest displaced in all): 256 tries up to 4096 ids, 32 beyond. If no seed
// puts every id in its home slot, a table twice as large is tried the same way and kept if one
// does (every probe for a present id is then one slot).
inline HashTableData BuildHashTable(const std::vector<std::uint64_t>& hashes) {
  HashTableData best;
  if (hashes.empty()) return best;
  unsigned min_bits = 1;
  while ((std::size_t{1} << min_bits) < 2 * hashes.size()) ++min_bits;
  const int attempts = hashes.size() <= 4096 ? 256 : 32;
  for (unsigned bits = min_bits; bits <= min_bits + 1; ++bits) {
    if (bits > min_bits && (best.displaced == 0 || hashes.size() > 4096)) break;
    HashTableData best_here;
    std::size_t best_here_max = 0;
    std::uint64_t state = 0x0123456789ABCDEFull;
    for (int attempt = 0; attempt < attempts && (attempt == 0 || best_here.displaced > 0); ++attempt) {
      // splitmix64: a fixed sequence of odd multipliers.
      state += 0x9E3779B97F4A7C15ull;
      std::uint64_t z = state;
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      const std::uint64_t seed = (z ^ (z >> 31)) | 1;
      HashTableData t;
      t.seed = seed;
      t.bits = bits;
      t.slots.assign(std::size_t{1} << bits, HashSlot{0, kNoId});
      const std::size_t mask = t.slots.size() - 1;
      std::size_t max = 0;
      for (std::size_t id = 0; id < hashes.size(); ++id) {
        std::size_t s = static_cast<std::size_t>((hashes[id] * seed) >> (64 - bits));
        std::size_t d = 0;
        while (t.slots[s].id != kNoId) {
          s = (s + 1) & mask;
          ++d;
        }
        t.slots[s] = {hashes[id], static_cast<std::uint32_t>(id)};
        t.displaced += d;
        max = std::max(max, d);
      }
      if (attempt == 0 || max < best_here_max || (max == best_here_max && t.displaced < best_here.displaced)) {
        best_here = std::move(t);
        best_here_max = max;
      }
    }
    if (bits == min_bits || best_here.displaced == 0) best = std::move(best_here);
  }
  return best;
}

}  // namespace blocktune::tables
