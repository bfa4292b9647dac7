// Per-route request counts and latency histograms for /metrics; see http_metrics.h.
#include "server/http_metrics.h"

#include <spdlog/fmt/fmt.h>

#include <algorithm>

#include "server/api/routes.h"

namespace blocktune::server {

HttpMetrics::HttpMetrics(size_t routes) {
  for (size_t i = 0; i <= routes; ++i) routes_.push_back(std::make_unique<PerRoute>());
}

void HttpMetrics::Observe(size_t route, int status, double seconds) {
  PerRoute& r = *routes_[std::min(route, routes_.size() - 1)];
  r.by_class[std::clamp(status / 100, 0, 5)].fetch_add(1, std::memory_order_relaxed);
  size_t b = 0;
  while (b < kBucketsSeconds.size() && seconds > kBucketsSeconds[b]) ++b;
  r.buckets[b].fetch_add(1, std::memory_order_relaxed);
  r.sum_ns.fetch_add(static_cast<uint64_t>(seconds * 1e9), std::memory_order_relaxed);
  r.count.fetch_add(1, std::memory_order_relaxed);
}

std::string HttpMetrics::Render() const {
  const std::vector<api::Route>& routes = api::Routes();
  std::string out;
  out += "# HELP blocktune_http_requests_total HTTP requests by route and status class.\n";
  out += "# TYPE blocktune_http_requests_total counter\n";
  auto label = [&](size_t i) {
    if (i >= routes.size()) return std::string("route=\"unmatched\"");
    return "method=\"" + std::string(routes[i].method) + "\",route=\"" + std::string(routes[i].path) + "\"";
  };
  for (size_t i = 0; i < routes_.size(); ++i) {
    for (int c = 1; c <= 5; ++c) {
      const uint64_t n = routes_[i]->by_class[c].load(std::memory_order_relaxed);
      if (n == 0) continue;
      out += "blocktune_http_requests_total{" + label(i) + ",code=\"" + std::to_string(c) + "xx\"} " +
             std::to_string(n) + "\n";
    }
  }
  out += "# HELP blocktune_http_request_duration_seconds Handler time by route.\n";
  out += "# TYPE blocktune_http_request_duration_seconds histogram\n";
  for (size_t i = 0; i < routes_.size(); ++i) {
    const PerRoute& r = *routes_[i];
    const uint64_t count = r.count.load(std::memory_order_relaxed);
    if (count == 0) continue;
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= kBucketsSeconds.size(); ++b) {
      cumulative += r.buckets[b].load(std::memory_order_relaxed);
      const std::string le = b < kBucketsSeconds.size() ? fmt::format("{}", kBucketsSeconds[b]) : "+Inf";
      out += "blocktune_http_request_duration_seconds_bucket{" + label(i) + ",le=\"" + le + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "blocktune_http_request_duration_seconds_sum{" + label(i) + "} " +
           fmt::format("{:.9f}", static_cast<double>(r.sum_ns.load(std::memory_order_relaxed)) / 1e9) + "\n";
    out += "blocktune_http_request_duration_seconds_count{" + label(i) + "} " + std::to_string(count) + "\n";
  }
  return out;
}

}  // namespace blocktune::server
