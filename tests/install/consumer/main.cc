// A program outside the blocktune tree, built against an installed blocktune (find_package or
// pkg-config; see CMakeLists.txt and run.sh): looks up matmul block sizes in the generated
// table, runs the kernel library's matmul with them, and checks C against a plain triple loop.
// Exit 0 only if the table answered as expected and every product matched.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "blocktune/tables/matmul_tuned_block_sizes.h"
#include "kernels/matmul/matmul.h"

namespace {

namespace table = blocktune::tables::matmul;
namespace kern = blocktune::kernels;

// C = A * B in double, row-major, written here rather than taken from the library.
std::vector<float> Reference(int64_t m, int64_t n, int64_t k, const std::vector<float>& a,
                             const std::vector<float>& b) {
  std::vector<float> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += double(a[size_t(i * k + p)]) * double(b[size_t(p * n + j)]);
      c[size_t(i * n + j)] = static_cast<float>(s);
    }
  }
  return c;
}

// Runs matmul with the table's block sizes (the default when this host refuses them, as a
// caller would) and returns the largest absolute error against the reference, or -1.
double RunAndCheck(const table::BlockSizes& looked_up, int64_t m, int64_t n, int64_t k, int threads) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k)), b(static_cast<size_t>(k * n)), c(static_cast<size_t>(m * n), NAN);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  kern::MatmulBlockSizes bs{looked_up.block_m, looked_up.block_n, looked_up.block_k};
  const kern::MatmulShape shape{m, n, k};
  if (auto ok = kern::Validate(bs, shape, blocktune::HardwareProfile::Detect(threads)); !ok) {
    std::printf("  this host refuses %lld/%lld/%lld (%s); using the kernel's default\n", (long long)bs.block_m,
                (long long)bs.block_n, (long long)bs.block_k, ok.error().ToString().c_str());
    bs = kern::MatmulBlockSizes{};
  }
  if (auto run = kern::Matmul(bs, shape, a.data(), b.data(), c.data(), threads); !run) {
    std::printf("  matmul failed: %s\n", run.error().ToString().c_str());
    return -1;
  }
  const std::vector<float> ref = Reference(m, n, k, a, b);
  double worst = 0;
  for (size_t i = 0; i < c.size(); ++i) worst = std::fmax(worst, std::fabs(double(c[i]) - double(ref[i])));
  if (std::isnan(worst)) return -1;
  return worst;
}

}  // namespace

int main() {
  int failures = 0;
  // 1. The generated table answers an explicit key exactly: its first f32 row, looked up by
  //    that row's hardware key and a problem inside its bucket, is a `tuned` hit on that row.
  for (const table::Row& row : table::kRows) {
    if (row.dtype != "f32") continue;
    long long m = 0, n = 0, k = 0;
    if (std::sscanf(std::string(row.bucket).c_str(), "m%lld_n%lld_k%lld", &m, &n, &k) != 3) return 1;
    const auto r = table::LookupBlockSizes(row.hardware, "f32", m - m / 4, n, k);
    const bool same = r.source == blocktune::tables::Source::kTuned && r.bucket == row.bucket &&
                      r.config.block_m == row.config.block_m && r.config.block_n == row.config.block_n &&
                      r.config.block_k == row.config.block_k;
    std::printf("table: %.*s %.*s -> %.*s %lld/%lld/%lld%s\n", int(row.hardware.size()), row.hardware.data(),
                int(row.bucket.size()), row.bucket.data(), int(blocktune::tables::SourceName(r.source).size()),
                blocktune::tables::SourceName(r.source).data(), (long long)r.config.block_m,
                (long long)r.config.block_n, (long long)r.config.block_k, same ? "" : "  MISMATCH");
    failures += same ? 0 : 1;
    break;
  }
  // 2. This host's lookup (whatever the source: tuned here, borrowed, or the default) runs the
  //    kernel library and matches the reference, on shapes with remainders in every dim.
  struct Problem {
    int64_t m, n, k;
    int threads;
  };
  for (const Problem& p : {Problem{100, 70, 45, 1}, Problem{257, 130, 96, 2}}) {
    const auto r = table::LookupForHost(p.threads, "f32", p.m, p.n, p.k);
    const std::string_view source = blocktune::tables::SourceName(r.source);
    std::printf("host: m=%lld n=%lld k=%lld threads=%d -> %.*s bucket %s %lld/%lld/%lld\n", (long long)p.m,
                (long long)p.n, (long long)p.k, p.threads, int(source.size()), source.data(), r.bucket.str().c_str(),
                (long long)r.config.block_m, (long long)r.config.block_n, (long long)r.config.block_k);
    const double err = RunAndCheck(r.config, p.m, p.n, p.k, p.threads);
    // Inputs in [-1, 1], f32 accumulation over k terms: far below 1e-3 for k <= 96.
    const bool ok = err >= 0 && err < 1e-3;
    std::printf("  max abs error vs reference %.3g %s\n", err, ok ? "ok" : "FAILED");
    failures += ok ? 0 : 1;
  }
  std::printf("%s (matmul micro-kernel: %s)\n", failures == 0 ? "consumer ok" : "consumer FAILED", kern::MatmulIsa());
  return failures == 0 ? 0 : 1;
}
