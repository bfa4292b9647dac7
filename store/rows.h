// Row-reading helpers the table groups share (internal to store/): every remaining row of a
// statement turned into a value, and (label, count) pairs from a GROUP BY.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernels/core/result.h"
#include "store/sqlite.h"

namespace blocktune::store {

// Every remaining row of `st`, each turned into a T by `read` (which may reject a row).
template <typename Read, typename T = typename std::invoke_result_t<Read, const Statement&>::value_type>
Result<std::vector<T>> ReadRows(Statement& st, Read read) {
  std::vector<T> out;
  while (true) {
    auto row = st.Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    auto item = read(st);
    if (!item) return std::unexpected(item.error());
    out.push_back(std::move(*item));
  }
  return out;
}

// (text, count) rows of `sql`, which selects two columns and takes at most one int parameter.
inline Result<std::vector<std::pair<std::string, int64_t>>> ReadCounts(Connection& conn, const char* sql,
                                                                       std::optional<int64_t> bind) {
  auto st = conn.Prepare(sql);
  if (!st) return std::unexpected(st.error());
  if (bind) st->Bind(1, *bind);
  std::vector<std::pair<std::string, int64_t>> out;
  while (true) {
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row) break;
    out.emplace_back(st->Text(0), st->Int(1));
  }
  return out;
}

}  // namespace blocktune::store
