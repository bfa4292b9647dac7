// blocktune/tables/row_index.h: an index built at run time over rows in memory (the daemon's rows from SQLite).
// Part of resolve.h (which includes every part); C++17 standard library only.
#pragma once

#include <iterator>
#include <string_view>
#include <vector>

#include "index.h"

namespace blocktune::tables {

// An index built at run time over any rows with `hardware`, `dtype` and `bucket` members
// convertible to std::string_view (the daemon's rows from SQLite; tests): BuildIndex with bucket
// ids for buckets, searched by the same IndexView as a generated header. It keeps views into the
// rows, which must outlive it and stay where they are.

class RowIndex {
 public:
  RowIndex() = default;
  template <typename Rows>
  explicit RowIndex(const Rows& rows) {
    std::vector<IndexRow<std::string_view>> index_rows;
    for (const auto& r : rows) {
      index_rows.push_back({std::string_view(r.hardware), std::string_view(r.dtype), std::string_view(r.bucket)});
    }
    data_ = BuildIndex(index_rows);
  }
  // Copies would point into another object's vectors only by accident; moves keep the buffers.
  RowIndex(const RowIndex&) = delete;
  RowIndex& operator=(const RowIndex&) = delete;
  RowIndex(RowIndex&&) = default;
  RowIndex& operator=(RowIndex&&) = default;

  IndexView<std::string_view> view() const { return data_.view(); }
  Resolution Resolve(std::string_view hardware_key, std::string_view dtype, std::string_view bucket) const {
    return view().Resolve(hardware_key, dtype, bucket);
  }

 private:
  IndexData<std::string_view> data_;
};

template <typename Row>
struct Match {
  const Row* row = nullptr;  // null: nothing tuned matched, use the default
  Source source = Source::kDefault;
  int fallback_levels = 0;  // as TableLookup::fallback_levels
};

// One-off resolution over a row sequence (indexes it first; hold a RowIndex to resolve many).
template <typename Rows>
auto ResolveRow(const Rows& rows, std::string_view hardware_key, std::string_view dtype, std::string_view bucket)
    -> Match<typename Rows::value_type> {
  const RowIndex index(rows);
  const Resolution r = index.Resolve(hardware_key, dtype, bucket);
  Match<typename Rows::value_type> m;
  m.source = SourceOf(r);
  m.fallback_levels = static_cast<int>(r.level);
  if (r.row != kNoId) m.row = &*(std::begin(rows) + r.row);
  return m;
}

}  // namespace blocktune::tables
