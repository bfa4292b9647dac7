// table_lookups: answers lookups with the generated C++ headers, for python/tests/test_tables.py,
// which asks blocktune.tables the same queries and compares every answer. One query per stdin
// line, "KERNEL HARDWARE_KEY DTYPE DIM..." (dims in the header's kDims order); one answer per
// line on stdout, "SOURCE MATCHED_KEY BUCKET name=value,..." ("-" for the default's key).
#include <array>
#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>

#include "blocktune/tables/flash_attention_tuned_block_sizes.h"
#include "blocktune/tables/fused_cross_entropy_tuned_block_sizes.h"
#include "blocktune/tables/grouped_matmul_tuned_block_sizes.h"
#include "blocktune/tables/matmul_tuned_block_sizes.h"
#include "blocktune/tables/ragged_paged_attention_tuned_block_sizes.h"

namespace {

namespace t = blocktune::tables;

template <std::size_t N>
bool ReadDims(std::istream& in, std::array<std::int64_t, N>& dims) {
  for (auto& d : dims) {
    if (!(in >> d)) return false;
  }
  return true;
}

template <typename Lookup>
std::string Head(const Lookup& r) {
  std::string out(t::SourceName(r.source));
  out += ' ';
  out += r.hardware.empty() ? std::string("-") : std::string(r.hardware);
  out += ' ';
  out += r.bucket.str();
  out += ' ';
  return out;
}

std::string Field(const char* name, std::int64_t v, bool last = false) {
  return std::string(name) + "=" + std::to_string(v) + (last ? "" : ",");
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string kernel, hw, dtype;
    if (!(in >> kernel >> hw >> dtype)) continue;
    std::string answer;
    if (kernel == "matmul") {
      std::array<std::int64_t, 3> d{};
      if (!ReadDims(in, d)) return 2;
      const auto r = t::matmul::LookupDims(hw, dtype, d);
      answer = Head(r) + Field("block_m", r.config.block_m) + Field("block_n", r.config.block_n) +
               Field("block_k", r.config.block_k, true);
    } else if (kernel == "flash_attention") {
      std::array<std::int64_t, 7> d{};
      if (!ReadDims(in, d)) return 2;
      const auto r = t::flash_attention::LookupDims(hw, dtype, d);
      answer = Head(r) + Field("block_q", r.config.block_q) + Field("block_kv", r.config.block_kv, true);
    } else if (kernel == "fused_cross_entropy") {
      std::array<std::int64_t, 4> d{};
      if (!ReadDims(in, d)) return 2;
      const auto r = t::fused_cross_entropy::LookupDims(hw, dtype, d);
      answer = Head(r) + Field("block_b", r.config.block_b) + Field("block_h", r.config.block_h) +
               Field("block_v", r.config.block_v, true);
    } else if (kernel == "grouped_matmul") {
      std::array<std::int64_t, 4> d{};
      if (!ReadDims(in, d)) return 2;
      const auto r = t::grouped_matmul::LookupDims(hw, dtype, d);
      answer = Head(r) + Field("tile_m", r.config.tile_m) + Field("tile_k", r.config.tile_k) +
               Field("tile_n", r.config.tile_n, true);
    } else if (kernel == "ragged_paged_attention") {
      std::array<std::int64_t, 7> d{};
      if (!ReadDims(in, d)) return 2;
      const auto r = t::ragged_paged_attention::LookupDims(hw, dtype, d);
      answer = Head(r) + Field("kv_pages_per_block", r.config.kv_pages_per_block) +
               Field("queries_per_block", r.config.queries_per_block, true);
    } else {
      std::cerr << "unknown kernel " << kernel << "\n";
      return 2;
    }
    std::cout << answer << '\n';
  }
  return 0;
}
