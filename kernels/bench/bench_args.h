// Command-line list parsing shared by the benchmark programs: "--shapes=1024x1024x1024,32x4096x4096",
// "--threads=1,2", "--modes=fwd,bwd". Malformed items are skipped (these are tools for people,
// and Google Benchmark owns the rest of the command line).
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/core/hardware.h"

namespace blocktune::kernels::bench {

// One set of operands per key for the whole process, shared by our rows and the baseline rows
// of a case. Allocating per benchmark run (Google Benchmark re-enters the function for every
// repetition when repetitions are interleaved) put fresh page faults and a different memory
// layout into every repetition: 10-15% CV at 2048^3 matmul instead of ~1% with shared buffers.
template <typename T, typename... Args>
T& Shared(const std::string& key, Args&&... args) {
  static std::map<std::string, std::unique_ptr<T>> cache;
  auto& slot = cache[key];
  if (!slot) slot = std::make_unique<T>(std::forward<Args>(args)...);
  return *slot;
}

// "--isa=avx2": runs this program's kernels at that ISA level (kernels/core/hardware.h ForceIsa),
// so an AVX-512 host measures its AVX2 path. Returns whether `arg` was the flag; exits with 2 on
// a level the CPU cannot run. Call it before any kernel runs (first thing in the argv loop).
inline bool ApplyIsaFlag(std::string_view arg) {
  if (!arg.starts_with("--isa=")) return false;
  if (auto s = ForceIsa(arg.substr(6)); !s) {
    std::fprintf(stderr, "%s\n", s.error().message.c_str());
    std::exit(2);
  }
  return true;
}

// Hands the arguments this program did not take to Google Benchmark, runs what was
// registered and returns main's exit code.
inline int RunRegisteredBenchmarks(std::vector<char*>& rest) {
  int rest_argc = static_cast<int>(rest.size());
  benchmark::Initialize(&rest_argc, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

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
