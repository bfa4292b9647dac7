// The HTTP front of blocktuned: one route table (Routes()) that is both what the server
// installs and what the OpenAPI document at /v1/openapi.json is generated from; guards before
// routing (Host allow-list, body framing, bearer token on mutating routes, compared in
// constant time and never logged); JSON error bodies for every failure, including unknown
// routes and the library's own 4xx; per-route request counts and latency for /metrics.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "server/codec.h"
#include "server/service.h"

namespace httplib {
class Server;
}

namespace blocktune::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8787;  // 0: any free port
  std::string token;  // required on mutating routes; never logged
  wire::Limits limits;
  // Each keep-alive connection holds a worker for its lifetime (cpp-httplib's thread pool), so
  // this bounds concurrent connections: 16 wrk connections need at least 16.
  int worker_threads = 64;
  // Host header names served (lower case, no port); "*" serves any. Loopback names are always
  // allowed; the listen address is added when it is not a wildcard.
  std::vector<std::string> allowed_hosts;
};

struct Route {
  const char* method;
  const char* path;      // OpenAPI path template, e.g. "/v1/sweeps/{id}"
  bool mutating;         // needs the bearer token
  const char* summary;
  const char* query;     // documented query parameters, comma-separated ("" = none)
  const char* request;   // component schema of the JSON body ("" = none)
  const char* response;  // component schema of the success body ("" = not JSON)
  int success;           // success status
};

// Every route the daemon serves, in the order they are matched.
const std::vector<Route>& Routes();
// The route's regex for cpp-httplib: {id} -> (\d+), other {name} -> ([A-Za-z0-9_.*-]+).
std::string RoutePattern(const Route& r);
// OpenAPI 3.0 document generated from Routes().
wire::Json OpenApiDocument();

// Requests and latency per route, for /metrics. Lock-free: one atomic add per request.
class HttpMetrics {
 public:
  static constexpr std::array<double, 10> kBucketsSeconds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                             0.005,  0.01,    0.05,   0.25,  1.0};
  explicit HttpMetrics(size_t routes);
  // route == routes: requests that matched no route or were refused before routing.
  void Observe(size_t route, int status, double seconds);
  std::string Render(const std::vector<Route>& routes) const;

 private:
  struct PerRoute {
    std::array<std::atomic<uint64_t>, 6> by_class{};  // 1xx..5xx, index = status / 100
    std::array<std::atomic<uint64_t>, kBucketsSeconds.size() + 1> buckets{};
    std::atomic<uint64_t> sum_ns{0};
    std::atomic<uint64_t> count{0};
  };
  std::vector<std::unique_ptr<PerRoute>> routes_;
};

class HttpServer {
 public:
  HttpServer(Service& service, HttpOptions options);
  ~HttpServer();
  // Binds and returns the port (useful when options.port == 0).
  Result<int> Bind();
  // Serves until Stop(); returns when the listener is closed.
  void Run();
  void Stop();

 private:
  void Install();
  Service& service_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  HttpMetrics metrics_;
};

// Constant-time comparison, so the token cannot be guessed byte by byte from response times.
bool TokenEquals(std::string_view a, std::string_view b);

}  // namespace blocktune::server
