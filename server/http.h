// The HTTP front of blocktuned: installs the route table (server/api/routes.h) in its order with
// the handler bound to each operation (server/handlers/); guards before routing (Host
// allow-list, body framing, and the bearer token on the routes whose table row says so,
// compared in constant time and never logged); JSON error bodies for every failure, including
// unknown routes and the library's own 4xx; per-route request counts and latency for /metrics
// (http_metrics.h); and, for the contract test, an optional log of every exchange.
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "server/api/routes.h"
#include "server/http_metrics.h"
#include "server/service.h"
#include "server/wire/wire.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace blocktune::server {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8787;    // 0: any free port
  std::string token;  // required on mutating routes; never logged
  wire::Limits limits;
  // Each keep-alive connection holds a worker for its lifetime (cpp-httplib's thread pool), so
  // this bounds concurrent connections: 16 wrk connections need at least 16.
  int worker_threads = 64;
  // Host header names served (lower case, no port); "*" serves any. Loopback names are always
  // allowed; the listen address is added when it is not a wildcard.
  std::vector<std::string> allowed_hosts;
  // When set, every request and response (bodies included, the token never) is appended to
  // this file as one JSON line: a debugging aid and the record tests/contract validates
  // against the served OpenAPI document. Off by default; it costs a write per request.
  std::string exchange_log;
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
  void LogExchange(const httplib::Request& req, const httplib::Response& res);
  Service& service_;
  HttpOptions options_;
  std::unique_ptr<httplib::Server> http_;
  HttpMetrics metrics_;
  std::mutex log_mu_;
  std::FILE* log_ = nullptr;
};

// Constant-time comparison, so the token cannot be guessed byte by byte from response times.
bool TokenEquals(std::string_view a, std::string_view b);

}  // namespace blocktune::server
