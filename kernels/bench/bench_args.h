// Command-line list parsing shared by the benchmark programs: "--shapes=1024x1024x1024,32x4096x4096",
// "--threads=1,2", "--modes=fwd,bwd". Malformed items are skipped (these are tools for people,
// and Google Benchmark owns the rest of the command line).
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace blocktune::kernels::bench {

inline std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

template <typename T = int64_t>
std::vector<T> ParseInts(std::string_view text) {
  std::vector<T> out;
  for (const std::string& item : SplitList(text)) out.push_back(static_cast<T>(std::atoll(item.c_str())));
  return out;
}

struct Triple {
  int64_t x = 0, y = 0, z = 0;
};

// "AxBxC" items.
inline std::vector<Triple> ParseTriples(std::string_view text) {
  std::vector<Triple> out;
  for (const std::string& item : SplitList(text)) {
    Triple t;
    if (std::sscanf(item.c_str(), "%ldx%ldx%ld", &t.x, &t.y, &t.z) == 3) out.push_back(t);
  }
  return out;
}

}  // namespace blocktune::kernels::bench
