// The HTTP front of blocktuned: a route table over cpp-httplib, bearer-token checks on mutating
// routes, JSON error bodies for every failure (including unknown routes and oversized bodies).
#pragma once

#include <memory>
#include <string>

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
  int worker_threads = 8;
};

struct Route {
  const char* method;
  const char* pattern;   // cpp-httplib regex pattern
  bool mutating;         // needs the bearer token
  const char* summary;
};

// Every route the daemon serves, for docs and for tests that walk them.
const std::vector<Route>& Routes();

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
};

// Constant-time comparison, so the token cannot be guessed byte by byte from response times.
bool TokenEquals(std::string_view a, std::string_view b);

}  // namespace blocktune::server
