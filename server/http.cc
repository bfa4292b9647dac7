// Routing, guards and the exchange log of blocktuned; see http.h.
#include "server/http.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <functional>
#include <set>

#include "server/api/paths.h"
#include "server/guards/guards.h"
#include "server/handlers/handlers.h"
#include "server/ui.h"

namespace blocktune::server {
namespace {

using wire::Json;

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(wire::Dump(body), "application/json");
}

void SendVerdict(httplib::Response& res, const guards::Verdict& v) {
  res.status = v.status;
  res.set_content(wire::Dump(Json{{"error", {{"code", v.code}, {"message", v.message}, {"path", v.path}}}}),
                  "application/json");
}

// What every route checks before its handler, from its table row: no body unless the route
// takes one, no unnamed query parameter ("?=x" parses as a name-less pair), and, unless the
// route's handler checks names itself, only declared query parameters.
Status CheckShape(const httplib::Request& req, const api::Route& route,
                  const std::set<std::string, std::less<>>& allowed) {
  if (route.request.empty() && !req.body.empty()) return InvalidArgument("this route takes no request body", "body");
  const size_t q = req.target.find('?');
  if (q != std::string::npos) {
    std::string_view query = std::string_view(req.target).substr(q + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      if (query.front() == '=') return InvalidArgument("query parameter without a name", "query");
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
  }
  if (route.kernel_dims_in_query) return {};
  if (req.method != "GET") {
    // A form-encoded body lands in req.params too (curl -d sends that Content-Type), so for
    // body-carrying methods only the URL itself is checked; none of them take parameters.
    if (req.target.find('?') != std::string::npos)
      return InvalidArgument("this route takes no query parameters", "query");
    return {};
  }
  for (const auto& [name, value] : req.params) {
    if (!allowed.count(name)) {
      return InvalidArgument("unknown query parameter '" + guards::Clip(name) + "'", guards::Clip(name));
    }
  }
  return {};
}

// The route's pattern for cpp-httplib: {id} -> (\d{1,18}), other {name} -> ([A-Za-z0-9_]{1,64}),
// the same segments api::MatchRoute accepts.
std::string RoutePattern(const api::Route& r) {
  return api::ExpandPath(r.path, [](std::string_view name) -> std::string_view {
    return name == "id" ? R"((\d{1,18}))" : R"(([A-Za-z0-9_]{1,64}))";
  });
}

}  // namespace

bool TokenEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

HttpServer::HttpServer(Service& service, HttpOptions options)
    : service_(service),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      metrics_(api::Routes().size()) {
  for (const char* name : {"127.0.0.1", "localhost", "::1"}) options_.allowed_hosts.emplace_back(name);
  if (options_.host != "0.0.0.0" && options_.host != "::" && !options_.host.empty()) {
    options_.allowed_hosts.push_back(
        guards::HostName(options_.host.find(':') != std::string::npos ? "[" + options_.host + "]" : options_.host));
  }
  for (auto& h : options_.allowed_hosts) {
    if (h != "*") h = guards::HostName(h.find(':') != std::string::npos && h.front() != '[' ? "[" + h + "]" : h);
  }
  Install();
}

HttpServer::~HttpServer() {
  if (log_ != nullptr) std::fclose(log_);
}

void HttpServer::Install() {
  auto& s = *http_;
  const int workers = options_.worker_threads;
  s.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  // Without TCP_NODELAY a keep-alive client waits out the peer's delayed ACK (~40 ms) on every
  // small response: ~300 req/s instead of tens of thousands.
  s.set_tcp_nodelay(true);
  s.set_payload_max_length(options_.limits.max_body_bytes);
  s.set_read_timeout(5);
  s.set_write_timeout(5);
  s.set_keep_alive_max_count(100000);
  // An idle keep-alive connection holds a worker thread (cpp-httplib), so idle ones are
  // dropped after 5 s; a busy client (a benchmark, a CLI polling progress) never idles that long.
  s.set_keep_alive_timeout(5);

  const size_t unmatched = api::Routes().size();

  s.set_pre_routing_handler([this, unmatched](const httplib::Request& req, httplib::Response& res) {
    // Views into the request's own header map: no copies on the hot path.
    auto header = [&req](const char* name) -> std::string_view {
      const auto it = req.headers.find(name);
      return it == req.headers.end() ? std::string_view() : std::string_view(it->second);
    };
    guards::Head head;
    head.method = req.method;
    head.host = header("Host");
    head.has_content_length = req.headers.find("Content-Length") != req.headers.end();
    head.content_length = header("Content-Length");
    head.transfer_encoding = header("Transfer-Encoding");
    head.content_encoding = header("Content-Encoding");
    guards::Verdict v = guards::CheckHead(head, options_.allowed_hosts, options_.limits);
    // The route's own flag decides; a path no route has needs the token for anything but a
    // read, so probing for unpublished mutating routes without it learns nothing.
    const api::Route* route = api::MatchRoute(req.method, req.path);
    const bool needs_token =
        route != nullptr ? route->auth == api::Auth::kBearer : req.method != "GET" && req.method != "HEAD";
    if (v.ok() && needs_token) {
      const std::string_view auth = header("Authorization");
      constexpr std::string_view kBearer = "Bearer ";
      if (auth.size() <= kBearer.size() || auth.substr(0, kBearer.size()) != kBearer ||
          !TokenEquals(auth.substr(kBearer.size()), options_.token)) {
        res.set_header("WWW-Authenticate", "Bearer");
        v = guards::Verdict{401, "unauthenticated", "missing or wrong bearer token (Authorization: Bearer <token>)",
                            "Authorization"};
      }
    }
    if (v.ok()) return httplib::Server::HandlerResponse::Unhandled;
    // The body (if any) is never read. Ask the client to close: cpp-httplib 0.11.4 does not
    // close on a response header, so a client that keeps sending has its leftover body bytes
    // parsed as the next request line (a 400, never a handler call without these guards).
    res.set_header("Connection", "close");
    SendVerdict(res, v);
    metrics_.Observe(unmatched, v.status, 0);
    return httplib::Server::HandlerResponse::Handled;
  });

  s.set_error_handler([this, unmatched](const httplib::Request& req, httplib::Response& res) {
    // Only fill in bodies for statuses the library produced itself (404, 413, 400...).
    if (!res.body.empty()) return;
    std::string message = "request failed";
    std::string code = "invalid_argument";
    std::string path;
    if (res.status == 404) {
      message = "no route for " + guards::Clip(req.method, 16) + " " + guards::Clip(req.path);
      code = "not_found";
    } else if (res.status == 413) {
      message = "request body too large";
      path = "body";
    } else if (res.status == 414) {
      message = "request URI too long";
    } else if (res.status == 405) {
      message = "method not allowed";
    } else if (res.status >= 500) {
      code = "internal";
    }
    res.set_content(wire::Dump(Json{{"error", {{"code", code}, {"message", message}, {"path", path}}}}),
                    "application/json");
    metrics_.Observe(unmatched, res.status, 0);
  });

  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    spdlog::error("unhandled exception method={} path={}", guards::Clip(req.method, 16), guards::Clip(req.path));
    SendJson(res, 500, wire::EncodeError(Error{ErrorCode::kInternal, "internal error", ""}));
  });

  handlers::Handlers bound = handlers::BindAllHandlers(handlers::HandlerContext{service_, options_.limits, metrics_});

  // Install exactly the route table, in its order, each route with its operation's handler;
  // an operation without one is a programming error caught at start (and by http_test).
  const auto& routes = api::Routes();
  for (size_t i = 0; i < routes.size(); ++i) {
    const api::Route& r = routes[i];
    handlers::Handler h = std::move(bound[api::Index(r.op)]);
    if (!h) {
      spdlog::critical("route without handler operation={}", r.operation_id);
      std::abort();
    }
    std::set<std::string, std::less<>> allowed;
    for (const api::Param& q : r.query) allowed.emplace(q.name);
    handlers::Handler wrapped = [this, i, &r, h = std::move(h), allowed = std::move(allowed)](
                                    const httplib::Request& req, httplib::Response& res) {
      const auto start = std::chrono::steady_clock::now();
      if (auto s = CheckShape(req, r, allowed); !s) {
        SendJson(res, wire::HttpStatus(s.error().code), wire::EncodeError(s.error()));
      } else {
        h(req, res);
      }
      metrics_.Observe(i, res.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    };
    const std::string pattern = RoutePattern(r);
    if (r.method == "GET") {
      s.Get(pattern, std::move(wrapped));
    } else if (r.method == "POST") {
      s.Post(pattern, std::move(wrapped));
    } else if (r.method == "DELETE") {
      s.Delete(pattern, std::move(wrapped));
    } else if (r.method == "PUT") {
      s.Put(pattern, std::move(wrapped));
    } else {
      spdlog::critical("unsupported method {} operation={}", r.method, r.operation_id);
      std::abort();
    }
  }

  // The dashboard's pages and assets (not routes of the API: see server/ui.h).
  InstallUi(s);

  if (!options_.exchange_log.empty()) {
    log_ = std::fopen(options_.exchange_log.c_str(), "a");
    if (log_ == nullptr) {
      spdlog::error("cannot open exchange log path={}", options_.exchange_log);
    } else {
      s.set_logger([this](const httplib::Request& req, const httplib::Response& res) { LogExchange(req, res); });
    }
  }
}

void HttpServer::LogExchange(const httplib::Request& req, const httplib::Response& res) {
  // One JSON line per exchange. The Authorization header is reduced to whether it was sent:
  // the token never reaches a file.
  const size_t q = req.target.find('?');
  Json line{{"method", req.method},
            {"path", req.path},
            {"query", q == std::string::npos ? std::string() : req.target.substr(q + 1)},
            {"authorization", req.has_header("Authorization")},
            {"request_content_type", req.get_header_value("Content-Type")},
            {"request_body", req.body},
            {"status", res.status},
            {"response_content_type", res.get_header_value("Content-Type")},
            {"response_body", res.body}};
  const std::string text = wire::Dump(line) + "\n";
  std::lock_guard lock(log_mu_);
  std::fwrite(text.data(), 1, text.size(), log_);
  std::fflush(log_);
}

Result<int> HttpServer::Bind() {
  if (options_.port == 0) {
    const int port = http_->bind_to_any_port(options_.host);
    if (port <= 0) return MakeError(ErrorCode::kUnavailable, "cannot bind " + options_.host);
    return port;
  }
  if (!http_->bind_to_port(options_.host, options_.port)) {
    return MakeError(ErrorCode::kUnavailable,
                     "cannot bind " + options_.host + ":" + std::to_string(options_.port) + " (in use?)");
  }
  return options_.port;
}

void HttpServer::Run() { http_->listen_after_bind(); }
void HttpServer::Stop() { http_->stop(); }

}  // namespace blocktune::server
