// blocktune runner for cpp_transpose (docs/external-kernels.md): out[c][r] = in[r][c] tile by
// tile. Reads JSON requests on stdin (one per line), answers on file descriptor 3. The spec sets
// runner.persistent: false, so blocktune starts this program once per config and closes stdin
// after the one request; the loop below serves any number of requests either way.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

void Transpose(const float* in, float* out, int64_t rows, int64_t cols, int64_t tr, int64_t tc) {
  for (int64_t r0 = 0; r0 < rows; r0 += tr) {
    for (int64_t c0 = 0; c0 < cols; c0 += tc) {
      const int64_t r1 = std::min(rows, r0 + tr), c1 = std::min(cols, c0 + tc);
      for (int64_t r = r0; r < r1; ++r) {
        for (int64_t c = c0; c < c1; ++c) out[c * rows + r] = in[r * cols + c];
      }
    }
  }
}

void Answer(const nlohmann::json& j) {
  const std::string line = j.dump() + "\n";
  if (write(3, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::exit(1);
}

}  // namespace

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto req = nlohmann::json::parse(line);
    const int64_t rows = req["shape"]["rows"], cols = req["shape"]["cols"];
    const int64_t tr = req["config"]["tile_rows"], tc = req["config"]["tile_cols"];
    std::vector<float> in(static_cast<size_t>(rows * cols)), out(in.size(), NAN);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i % 1000);
    Transpose(in.data(), out.data(), rows, cols, tr, tc);
    bool ok = true;  // correctness is the runner's to check
    for (int64_t r = 0; r < rows && ok; ++r) {
      for (int64_t c = 0; c < cols && ok; ++c) ok = out[c * rows + r] == in[r * cols + c];
    }
    if (!ok) {
      Answer({{"outcome", "wrong_result"}, {"message", "transposed element differs"}});
      continue;
    }
    using Clock = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    Transpose(in.data(), out.data(), rows, cols, tr, tc);
    const double once = std::max(std::chrono::duration<double, std::milli>(Clock::now() - t0).count(), 1e-6);
    const int64_t iters =
        std::max<int64_t>(1, static_cast<int64_t>(std::ceil(req["min_time_ms"].get<double>() / once)));
    nlohmann::json times = nlohmann::json::array();
    for (int rep = 0; rep < req["repetitions"].get<int>(); ++rep) {
      const auto s = Clock::now();
      for (int64_t i = 0; i < iters; ++i) Transpose(in.data(), out.data(), rows, cols, tr, tc);
      times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count() / double(iters));
    }
    Answer({{"times_ms", times}});
  }
  return 0;
}
