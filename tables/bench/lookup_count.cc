// lookup_count: N lookups of one lookup_bench case in a plain loop, for counting instructions
// with callgrind (docs/performance.md#lookup-cost): the count at N = 20000 minus the count at
// N = 10000, divided by 10000, is what one lookup costs, start-up and CPU detection cancelled.
//
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null build/tables/bench/lookup_count CASE N
//
// CASE: exact_hit, fallback_threads, fallback_model, default, for_host (the keys and dims of
// lookup_bench.cc; a keyed case checks its answer's source first, as lookup_bench does). The
// dims are read through a volatile variable so no lookup is folded into a constant, and two
// fields of every answer are summed into the checksum printed at the end.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "blocktune/tables/matmul_tuned_block_sizes.h"

namespace {

namespace mm = blocktune::tables::matmul;

struct Case {
  std::string_view name;
  std::string_view key;  // empty: LookupForHost(1, ...)
  std::int64_t dim;
  blocktune::tables::Source expected;  // checked once before counting (any source for for_host)
};

constexpr Case kCases[] = {
    {"exact_hit", "x86_64.avx2.amd.fam25_mod1.t1", 1000, blocktune::tables::Source::kTuned},
    {"fallback_threads", "x86_64.avx2.amd.fam25_mod1.t4", 1000, blocktune::tables::Source::kTunedFallback},
    {"fallback_model", "x86_64.avx2.amd.fam25_mod33.t1", 1000, blocktune::tables::Source::kTunedFallback},
    {"default", "x86_64.avx2.amd.fam25_mod1.t1", 3, blocktune::tables::Source::kDefault},
    {"for_host", "", 1000, blocktune::tables::Source::kDefault},
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: lookup_count CASE N\n");
    return 2;
  }
  const Case* c = nullptr;
  for (const Case& k : kCases) {
    if (k.name == argv[1]) c = &k;
  }
  if (c == nullptr) {
    std::fprintf(stderr, "lookup_count: unknown case %s\n", argv[1]);
    return 2;
  }
  const long n = std::atol(argv[2]);
  const std::string key(c->key);  // a runtime string, as an application would hold it
  volatile std::int64_t dim = c->dim;
  if (!key.empty()) {
    const auto first = mm::LookupBlockSizes(key, "f32", c->dim, c->dim, c->dim);
    if (first.source != c->expected) {
      std::fprintf(stderr, "lookup_count: %s answered %s, expected %s\n", argv[1],
                   std::string(blocktune::tables::SourceName(first.source)).c_str(),
                   std::string(blocktune::tables::SourceName(c->expected)).c_str());
      return 1;
    }
  }
  std::int64_t sum = 0;
  for (long i = 0; i < n; ++i) {
    const std::int64_t d = dim;
    const auto r = key.empty() ? mm::LookupForHost(1, "f32", d, d, d) : mm::LookupBlockSizes(key, "f32", d, d, d);
    sum += r.config.block_m + r.fallback_levels;
  }
  std::printf("%s %ld %lld\n", c->name.data(), n, static_cast<long long>(sum));
  return 0;
}
