// blocktune/tables/query_memo.h: the per-thread memo of queried keys resolved against one index.
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "index.h"

namespace blocktune::tables {

// Queried keys of one index and their resolved chains (Query), so that a process that looks up
// with the same few keys over and over (an application before every kernel launch) resolves
// each key once instead of cutting it at its dots and hashing its levels on every call: on the
// matmul table that was ~500 of a fallback lookup's ~850 instructions (callgrind,
// docs/performance.md#lookup-cost). A hit costs comparing the key with the copy kept here,
// eight bytes at a time. Four slots, picked by the key's length and last byte (keys of one CPU
// at different thread counts differ there), each replaced by the next key that maps to it; keys
// longer than kMaxKey bytes are resolved on every call. Name ids belong to one index, so a memo
// serves one: it forgets everything when asked about another. Not thread-safe: the generated
// headers keep one per thread (thread_local). Constant-initialised, so a thread_local memo
// needs no guard on access.
class QueryMemo {
 public:
  static constexpr std::size_t kSlots = 4;
  static constexpr std::size_t kMaxKey = 60;

  constexpr QueryMemo() = default;

  // The key's Query; valid until the next call of Get on this memo. The hit is inline; a miss
  // (resolving and storing the key) is a call.
  template <typename B>
  const Query& Get(const IndexView<B>& index, std::string_view key) {
    if (owner_ == index.names && key.size() <= kMaxKey) {
      const std::size_t last = key.empty() ? 0 : static_cast<unsigned char>(key.back());
      const Slot& s = slots_[(key.size() + last) & (kSlots - 1)];
      if (s.size == key.size() && SameText(std::string_view(s.text, s.size), key)) return s.query;
    }
    return Miss(index, key);
  }

 private:
  template <typename B>
  BLOCKTUNE_TABLES_NOINLINE const Query& Miss(const IndexView<B>& index, std::string_view key) {
    if (owner_ != index.names) {
      for (Slot& s : slots_) s.size = kEmpty;
      owner_ = index.names;
    }
    if (key.size() > kMaxKey) {
      long_ = index.Prepare(key);
      return long_;
    }
    const std::size_t last = key.empty() ? 0 : static_cast<unsigned char>(key.back());
    Slot& s = slots_[(key.size() + last) & (kSlots - 1)];
    s.query = index.Prepare(key);
    std::copy(key.begin(), key.end(), s.text);
    s.size = static_cast<std::uint32_t>(key.size());
    return s.query;
  }

  static constexpr std::uint32_t kEmpty = 0xffffffffu;
  struct Slot {
    std::uint32_t size = kEmpty;  // of `text`; kEmpty: unused
    char text[kMaxKey] = {};
    Query query = {};
  };
  const void* owner_ = nullptr;  // the index's names array
  Slot slots_[kSlots] = {};
  Query long_ = {};  // the last key longer than kMaxKey
};

}  // namespace blocktune::tables
