// The fixture of the HTTP tests (tests/server/http_*_test.cc): blocktuned in-process on a free
// port over a fresh database, with a client, raw-socket sends and a tiny sweep; and the helpers
// the route-table tests share. Defined inline: every http_*_test.cc of the one http_test
// binary includes it.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <utility>

#include "server/api/routes.h"
#include "server/http.h"
#include "server/service.h"
#include "server/wire/wire.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::server {

inline bool Bearer(const api::Route& r) { return r.auth == api::Auth::kBearer; }

inline constexpr char kToken[] = "test-token-0123456789abcdef";

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    const ServiceOptions options;  // named: g++ 12 warns (maybe-uninitialized) on a temporary here
    StartDaemon(options);
  }

  void StartDaemon(ServiceOptions options) {
    auto store = store::Store::Open(dir_.File("db.sqlite"));
    ASSERT_TRUE(store) << store.error().ToString();
    options.sweep.timing.min_repetition_ns = 1e5;  // 0.1 ms: tests check flow, not speed
    options.sweep.timing.repetitions = 2;
    // Two samples on a loaded core can spread past any CV limit and leave a sweep with no
    // stable config, hence no tuned row; the unstable verdict has its own tests (evaluator_test).
    options.sweep.timing.max_cv = 1e9;
    service_ = std::make_unique<Service>(std::move(*store), dir_.File("db.sqlite"), options);
    ASSERT_TRUE(service_->Start());
    HttpOptions http;
    http.port = 0;
    http.token = kToken;
    http.worker_threads = 8;
    server_ = std::make_unique<HttpServer>(*service_, http);
    auto port = server_->Bind();
    ASSERT_TRUE(port) << port.error().ToString();
    port_ = *port;
    thread_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    if (service_) service_->Stop();
    server_.reset();
    service_.reset();
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(30);
    return c;
  }

  httplib::Headers Auth(const std::string& token = kToken) { return {{"Authorization", "Bearer " + token}}; }

  // Sends `method path` with `body` and returns (status, parsed body or null).
  std::pair<int, wire::Json> Send(const std::string& method, const std::string& path, const std::string& body = "",
                                  httplib::Headers headers = {}) {
    auto c = Client();
    httplib::Result r = method == "GET"    ? c.Get(path.c_str(), headers)
                        : method == "POST" ? c.Post(path.c_str(), headers, body, "application/json")
                                           : c.Delete(path.c_str(), headers, body, "application/json");
    if (!r) {
      ADD_FAILURE() << method << " " << path << ": " << httplib::to_string(r.error());
      return {0, wire::Json()};
    }
    return {r->status, wire::Json::parse(r->body, nullptr, false)};
  }

  // Sends raw bytes and returns the status of the first response line (0 if none).
  int RawStatus(const std::string& raw) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return 0;
    }
    (void)!::write(fd, raw.data(), raw.size());
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[64] = {};
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    int status = 0;
    if (n > 12) std::sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
  }

  int64_t CreateTinySweep(const std::string& key = "", int m = 8) {
    httplib::Headers h = Auth();
    if (!key.empty()) h.emplace("Idempotency-Key", key);
    auto [status, body] = Send("POST", "/v1/sweeps",
                               R"({"kernel":"matmul","shapes":[{"m":)" + std::to_string(m) +
                                   R"(,"n":8,"k":8}],"strategy":"random","budget":1})",
                               h);
    EXPECT_TRUE(status == 202 || status == 200) << status << " " << body.dump();
    return body.value("id", int64_t{0});
  }

  test::ScratchDir dir_{"http_test"};
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// Fills a route's path parameters with plausible values.
inline std::string ExamplePath(const api::Route& r, const std::string& id = "1") {
  std::string p(r.path);
  p = std::regex_replace(p, std::regex(R"(\{id\})"), id);
  p = std::regex_replace(p, std::regex(R"(\{kernel\})"), "matmul");
  return p;
}

}  // namespace blocktune::server
