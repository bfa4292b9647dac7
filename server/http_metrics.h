// Requests and latency per route of the API table, counted by the router around every handler
// and rendered in the Prometheus text format for GET /metrics (the service's own gauges are added
// by the metrics handler, server/handlers/operations.cc).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace blocktune::server {

// Requests and latency per route, for /metrics. Lock-free: one atomic add per request.
class HttpMetrics {
 public:
  static constexpr std::array<double, 10> kBucketsSeconds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                             0.005,  0.01,    0.05,   0.25,  1.0};
  explicit HttpMetrics(size_t routes);
  // route == routes: requests that matched no route or were refused before routing.
  void Observe(size_t route, int status, double seconds);
  std::string Render() const;

 private:
  struct PerRoute {
    std::array<std::atomic<uint64_t>, 6> by_class{};  // 1xx..5xx, index = status / 100
    std::array<std::atomic<uint64_t>, kBucketsSeconds.size() + 1> buckets{};
    std::atomic<uint64_t> sum_ns{0};
    std::atomic<uint64_t> count{0};
  };
  std::vector<std::unique_ptr<PerRoute>> routes_;
};

}  // namespace blocktune::server
