// Routes and guards of blocktuned; see http.h.
#include "server/http.h"

#include <httplib.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <charconv>
#include <chrono>
#include <functional>
#include <map>
#include <set>

#include "server/guards.h"

namespace blocktune::server {
namespace {

using wire::Json;
using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(wire::Dump(body), "application/json");
}

void SendError(httplib::Response& res, const Error& e) { SendJson(res, wire::HttpStatus(e.code), wire::EncodeError(e)); }

void SendVerdict(httplib::Response& res, const guards::Verdict& v) {
  res.status = v.status;
  res.set_content(wire::Dump(Json{{"error", {{"code", v.code}, {"message", v.message}, {"path", v.path}}}}),
                  "application/json");
}

Result<int64_t> IntParam(const httplib::Request& req, const char* name, std::optional<int64_t> fallback, int64_t lo,
                         int64_t hi) {
  if (!req.has_param(name)) {
    if (fallback) return *fallback;
    return InvalidArgument(std::string("query parameter '") + name + "' is required", name);
  }
  if (req.get_param_value_count(name) > 1) {
    return InvalidArgument(std::string("query parameter '") + name + "' given more than once", name);
  }
  const std::string v = req.get_param_value(name);
  int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
    return InvalidArgument(std::string("query parameter '") + name + "' must be an integer", name);
  }
  if (out < lo || out > hi) {
    return InvalidArgument(std::string("query parameter '") + name + "' must be in [" + std::to_string(lo) + ", " +
                               std::to_string(hi) + "]",
                           name);
  }
  return out;
}

Result<std::string> StringParam(const httplib::Request& req, const char* name, std::string fallback,
                                size_t max_len = 200) {
  if (!req.has_param(name)) return fallback;
  if (req.get_param_value_count(name) > 1) {
    return InvalidArgument(std::string("query parameter '") + name + "' given more than once", name);
  }
  std::string v = req.get_param_value(name);
  if (v.size() > max_len) {
    return InvalidArgument(std::string("query parameter '") + name + "' is longer than " + std::to_string(max_len),
                           name);
  }
  return v;
}

Status OnlyParams(const httplib::Request& req, const std::set<std::string, std::less<>>& allowed) {
  if (req.method != "GET") {
    // A form-encoded body lands in req.params too (curl -d sends that Content-Type), so for
    // body-carrying methods only the URL itself is checked; none of them take parameters.
    if (req.target.find('?') != std::string::npos) return InvalidArgument("this route takes no query parameters", "query");
    return {};
  }
  for (const auto& [name, value] : req.params) {
    if (!allowed.count(name)) {
      return InvalidArgument("unknown query parameter '" + guards::Clip(name) + "'", guards::Clip(name));
    }
  }
  return {};
}

std::set<std::string, std::less<>> SplitList(std::string_view s) {
  std::set<std::string, std::less<>> out;
  while (!s.empty()) {
    const size_t comma = s.find(',');
    out.emplace(s.substr(0, comma));
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

Result<int64_t> PathId(const httplib::Request& req) {
  int64_t id = 0;
  const std::string text = req.matches[1];
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || ptr != text.data() + text.size()) return InvalidArgument("id out of range", "id");
  return id;
}

Result<const KernelSpec*> PathKernel(const httplib::Request& req) {
  const std::string name = req.matches[1];
  const KernelSpec* spec = FindKernel(name);
  if (spec == nullptr) return NotFound("unknown kernel '" + guards::Clip(name) + "'", "kernel");
  return spec;
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

const std::vector<Route>& Routes() {
  // Lookups first: cpp-httplib tries a method's patterns in order, and lookups are the hot path.
  static const std::vector<Route> kRoutes = {
      {"GET", "/v1/lookup", false, "best config for one problem (always answers, says where from)",
       "kernel,dtype,threads,hardware,config,<dims of the kernel>", "", "LookupAnswer", 200},
      {"POST", "/v1/lookup", false, "best configs for a batch of problems", "", "BatchLookupRequest",
       "BatchLookupResponse", 200},
      {"GET", "/healthz", false, "liveness", "", "", "Status", 200},
      {"GET", "/readyz", false, "readiness: database reachable and job runner alive", "", "", "Ready", 200},
      {"GET", "/metrics", false, "Prometheus text: requests and latency by route, sweeps, measurements, DB size", "",
       "", "", 200},
      {"GET", "/v1/openapi.json", false, "this API as an OpenAPI 3 document", "", "", "OpenApi", 200},
      {"GET", "/v1/kernels", false, "list kernels", "", "", "KernelList", 200},
      {"GET", "/v1/kernels/{kernel}", false, "describe a kernel: parameters, constraints, buckets, default config", "",
       "", "Kernel", 200},
      {"GET", "/v1/hardware", false, "hardware profiles known to the database, and this host's", "", "",
       "HardwareList", 200},
      {"GET", "/v1/hardware/host", false, "this host's hardware profile", "threads", "", "Hardware", 200},
      {"POST", "/v1/sweeps", true, "create a sweep (Idempotency-Key header: a retry returns the same sweep)", "",
       "SweepRequest", "CreatedSweep", 202},
      {"GET", "/v1/sweeps", false, "list sweeps, oldest first", "status,after_id,limit", "", "SweepList", 200},
      {"GET", "/v1/sweeps/{id}", false, "a sweep with progress, ETA and counts by outcome", "", "", "Sweep", 200},
      {"POST", "/v1/sweeps/{id}/cancel", true, "cancel a queued or running sweep", "", "", "Sweep", 200},
      {"GET", "/v1/sweeps/{id}/measurements", false, "a sweep's measurements, paginated by id", "after_id,limit", "",
       "MeasurementPage", 200},
      {"GET", "/v1/tuned", false, "tuned entries lookups serve (checked-in table overlaid with this database)",
       "kernel,hardware,dtype", "", "TunedList", 200},
      {"GET", "/v1/overrides", false, "overrides (pinned configs)", "", "", "OverrideList", 200},
      {"POST", "/v1/overrides", true, "pin a config for (kernel, hardware, dtype, bucket) with a reason and expiry",
       "", "OverrideRequest", "Override", 201},
      {"DELETE", "/v1/overrides/{id}", true, "remove an override", "", "", "Status", 200},
      {"GET", "/v1/tables/{kernel}", false, "the generated C++ header for a kernel over the rows lookups serve", "",
       "", "", 200},
      {"POST", "/v1/backup", true, "online backup of the database into the backup directory", "", "", "Backup", 201},
  };
  return kRoutes;
}

std::string RoutePattern(const Route& r) {
  std::string out;
  std::string_view p = r.path;
  while (!p.empty()) {
    const size_t open = p.find('{');
    if (open == std::string_view::npos) {
      out += p;
      break;
    }
    out += p.substr(0, open);
    const size_t close = p.find('}', open);
    const std::string_view name = p.substr(open + 1, close - open - 1);
    out += name == "id" ? R"((\d{1,18}))" : R"(([A-Za-z0-9_]{1,64}))";
    p.remove_prefix(close + 1);
  }
  return out;
}

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

std::string HttpMetrics::Render(const std::vector<Route>& routes) const {
  std::string out;
  out += "# HELP blocktune_http_requests_total HTTP requests by route and status class.\n";
  out += "# TYPE blocktune_http_requests_total counter\n";
  auto label = [&](size_t i) {
    if (i >= routes.size()) return std::string("route=\"unmatched\"");
    return std::string("method=\"") + routes[i].method + "\",route=\"" + routes[i].path + "\"";
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

HttpServer::HttpServer(Service& service, HttpOptions options)
    : service_(service),
      options_(std::move(options)),
      http_(std::make_unique<httplib::Server>()),
      metrics_(Routes().size()) {
  for (const char* name : {"127.0.0.1", "localhost", "::1"}) options_.allowed_hosts.emplace_back(name);
  if (options_.host != "0.0.0.0" && options_.host != "::" && !options_.host.empty()) {
    options_.allowed_hosts.push_back(guards::HostName(options_.host.find(':') != std::string::npos
                                                           ? "[" + options_.host + "]"
                                                           : options_.host));
  }
  for (auto& h : options_.allowed_hosts) {
    if (h != "*") h = guards::HostName(h.find(':') != std::string::npos && h.front() != '[' ? "[" + h + "]" : h);
  }
  Install();
}

HttpServer::~HttpServer() = default;

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

  std::set<std::string> open_posts;  // non-GET routes that need no token (batch lookup)
  for (const Route& r : Routes()) {
    if (!r.mutating && std::string_view(r.method) != "GET") open_posts.insert(r.path);
  }
  const size_t unmatched = Routes().size();

  s.set_pre_routing_handler([this, open_posts, unmatched](const httplib::Request& req, httplib::Response& res) {
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
    if (v.ok() && req.method != "GET" && req.method != "HEAD" && !open_posts.count(req.path)) {
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

  const wire::Limits limits = options_.limits;
  std::map<std::string, Handler> handlers;
  auto on = [&](const char* method, const char* path, Handler h) { handlers[std::string(method) + " " + path] = std::move(h); };

  on("GET", "/healthz", [](const httplib::Request&, httplib::Response& res) { SendJson(res, 200, wire::EncodeStatus("ok")); });

  on("GET", "/readyz", [this](const httplib::Request&, httplib::Response& res) {
    if (!service_.Ready()) return SendJson(res, 503, wire::EncodeReady(false, "job runner not running"));
    auto stats = service_.Stats();
    if (!stats) return SendJson(res, 503, wire::EncodeReady(false, "database: " + stats.error().message));
    SendJson(res, 200, wire::EncodeReady(true, ""));
  });

  on("GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
    std::string out = metrics_.Render(Routes());
    auto stats = service_.Stats();
    if (stats) {
      out += "# HELP blocktune_sweeps Sweeps by state.\n# TYPE blocktune_sweeps gauge\n";
      for (auto st : {store::SweepStatus::kQueued, store::SweepStatus::kRunning, store::SweepStatus::kDone,
                      store::SweepStatus::kFailed, store::SweepStatus::kCancelled}) {
        int64_t n = 0;
        for (const auto& [name, count] : stats->sweeps_by_status) {
          if (name == store::SweepStatusName(st)) n = count;
        }
        out += "blocktune_sweeps{state=\"" + std::string(store::SweepStatusName(st)) + "\"} " + std::to_string(n) + "\n";
      }
      out += "# HELP blocktune_measurements Stored measurements by outcome.\n# TYPE blocktune_measurements gauge\n";
      for (std::string_view o : tuner::kOutcomeNames) {
        int64_t n = 0;
        for (const auto& [name, count] : stats->measurements_by_outcome) {
          if (name == o) n = count;
        }
        out += "blocktune_measurements{outcome=\"" + std::string(o) + "\"} " + std::to_string(n) + "\n";
      }
      out += "# HELP blocktune_db_bytes Size of the SQLite database (pages x page size).\n";
      out += "# TYPE blocktune_db_bytes gauge\nblocktune_db_bytes " + std::to_string(stats->db_bytes) + "\n";
    }
    res.status = 200;
    res.set_content(out, "text/plain; version=0.0.4");
  });

  on("GET", "/v1/openapi.json", [](const httplib::Request&, httplib::Response& res) {
    static const std::string kDoc = wire::Dump(OpenApiDocument());
    res.status = 200;
    res.set_content(kDoc, "application/json");
  });

  on("GET", "/v1/kernels", [](const httplib::Request&, httplib::Response& res) {
    static const std::string kList = wire::Dump(wire::EncodeKernelList());
    res.status = 200;
    res.set_content(kList, "application/json");
  });

  on("GET", "/v1/kernels/{kernel}", [](const httplib::Request& req, httplib::Response& res) {
    auto spec = PathKernel(req);
    if (!spec) return SendError(res, spec.error());
    SendJson(res, 200, wire::EncodeKernel(**spec));
  });

  on("GET", "/v1/hardware", [this](const httplib::Request&, httplib::Response& res) {
    auto rows = service_.ListHardware();
    if (!rows) return SendError(res, rows.error());
    SendJson(res, 200, wire::EncodeHardwareList(*rows, service_.host()));
  });

  on("GET", "/v1/hardware/host", [this](const httplib::Request& req, httplib::Response& res) {
    auto threads = IntParam(req, "threads", 1, 1, 256);
    if (!threads) return SendError(res, threads.error());
    HardwareProfile hw = service_.host();
    hw.threads = static_cast<int>(*threads);
    SendJson(res, 200, wire::EncodeHardware(hw, 0, ""));
  });

  on("GET", "/v1/lookup", [this](const httplib::Request& req, httplib::Response& res) {
    auto kernel = StringParam(req, "kernel", "", 64);
    if (!kernel) return SendError(res, kernel.error());
    if (kernel->empty()) return SendError(res, Error{ErrorCode::kInvalidArgument, "query parameter 'kernel' is required", "kernel"});
    const KernelSpec* spec = FindKernel(*kernel);
    if (spec == nullptr) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown kernel '" + guards::Clip(*kernel) + "'", "kernel"});
    for (const auto& [name, value] : req.params) {
      bool known = name == "kernel" || name == "dtype" || name == "threads" || name == "hardware" || name == "config";
      for (const auto& dim : spec->dims()) known |= name == dim.bucket.name;
      if (!known) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown query parameter '" + guards::Clip(name) + "'", guards::Clip(name)});
    }
    tuner::LookupQuery q;
    auto dtype = StringParam(req, "dtype", "f32", 16);
    if (!dtype) return SendError(res, dtype.error());
    auto d = ParseDType(*dtype);
    if (!d) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown dtype '" + guards::Clip(*dtype) + "'", "dtype"});
    q.dtype = *d;
    for (const auto& dim : spec->dims()) {
      auto v = IntParam(req, dim.bucket.name, std::nullopt, INT64_MIN, INT64_MAX);
      if (!v) return SendError(res, v.error());
      q.dims.Set(dim.bucket.name, *v);
    }
    auto threads = IntParam(req, "threads", 1, 1, 256);
    if (!threads) return SendError(res, threads.error());
    auto hardware = StringParam(req, "hardware", "", 200);
    if (!hardware) return SendError(res, hardware.error());
    for (char c : *hardware) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
        return SendError(res, Error{ErrorCode::kInvalidArgument, "hardware key may hold only letters, digits, '.', '_' and '-'", "hardware"});
      }
    }
    q.hardware_key = *hardware;
    if (req.has_param("config")) {
      auto text = StringParam(req, "config", "", 512);
      if (!text) return SendError(res, text.error());
      auto cfg = NamedInts::Parse(*text);
      if (!cfg) return SendError(res, WithPathPrefix(cfg.error(), "config"));
      q.explicit_config = std::move(*cfg);
    }
    auto a = service_.Lookup(*spec, std::move(q), static_cast<int>(*threads));
    if (!a) return SendError(res, a.error());
    res.status = 200;
    res.set_content(wire::EncodeLookupText(*a), "application/json");
  });

  on("POST", "/v1/lookup", [this, limits](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto queries = wire::DecodeBatchLookup(*body, limits);
    if (!queries) return SendError(res, queries.error());
    std::vector<Result<tuner::LookupAnswer>> answers;
    answers.reserve(queries->size());
    for (size_t i = 0; i < queries->size(); ++i) {
      auto& q = (*queries)[i];
      auto a = service_.Lookup(*FindKernel(q.kernel), std::move(q.query), q.threads);
      if (!a) a = std::unexpected(WithPathPrefix(a.error(), "queries[" + std::to_string(i) + "]"));
      answers.push_back(std::move(a));
    }
    SendJson(res, 200, wire::EncodeBatchLookup(answers));
  });

  on("POST", "/v1/sweeps", [this, limits](const httplib::Request& req, httplib::Response& res) {
    const std::string key = req.get_header_value("Idempotency-Key");
    if (key.size() > 128) return SendError(res, Error{ErrorCode::kInvalidArgument, "Idempotency-Key is longer than 128 characters", "Idempotency-Key"});
    for (char c : key) {
      if (c < 0x21 || c > 0x7e) return SendError(res, Error{ErrorCode::kInvalidArgument, "Idempotency-Key must be printable ASCII", "Idempotency-Key"});
    }
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto request = wire::DecodeSweepRequest(*body, limits);
    if (!request) return SendError(res, request.error());
    auto created = service_.SubmitSweep(*request, key, wire::Dump(wire::EncodeSweepRequest(*request)));
    if (!created) {
      if (created.error().code == ErrorCode::kResourceExhausted) res.set_header("Retry-After", "2");
      return SendError(res, created.error());
    }
    res.set_header("Location", "/v1/sweeps/" + std::to_string(created->id));
    SendJson(res, created->created ? 202 : 200, wire::EncodeCreatedSweep(created->id, created->created));
  });

  on("GET", "/v1/sweeps", [this](const httplib::Request& req, httplib::Response& res) {
    auto status_text = StringParam(req, "status", "", 16);
    if (!status_text) return SendError(res, status_text.error());
    std::optional<store::SweepStatus> status;
    if (!status_text->empty()) {
      status = store::ParseSweepStatus(*status_text);
      if (!status) return SendError(res, Error{ErrorCode::kInvalidArgument, "status must be queued, running, done, failed or cancelled", "status"});
    }
    auto after = IntParam(req, "after_id", 0, 0, INT64_MAX);
    if (!after) return SendError(res, after.error());
    auto limit = IntParam(req, "limit", 100, 1, 1000);
    if (!limit) return SendError(res, limit.error());
    auto rows = service_.ListSweeps(status, *after, *limit);
    if (!rows) return SendError(res, rows.error());
    const int64_t next = static_cast<int64_t>(rows->size()) == *limit ? rows->back().id : 0;
    SendJson(res, 200, wire::EncodeSweepList(*rows, next));
  });

  on("GET", "/v1/sweeps/{id}", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto v = service_.GetSweep(*id);
    if (!v) return SendError(res, v.error());
    SendJson(res, 200, wire::EncodeSweep(v->sweep, &v->progress, v->eta_seconds));
  });

  on("POST", "/v1/sweeps/{id}/cancel", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto r = service_.CancelSweep(*id);
    if (!r) return SendError(res, r.error());
    SendJson(res, 200, wire::EncodeSweep(*r));
  });

  on("GET", "/v1/sweeps/{id}/measurements", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto after = IntParam(req, "after_id", 0, 0, INT64_MAX);
    if (!after) return SendError(res, after.error());
    auto limit = IntParam(req, "limit", 100, 1, 1000);
    if (!limit) return SendError(res, limit.error());
    auto rows = service_.ListMeasurements(*id, *after, *limit);
    if (!rows) return SendError(res, rows.error());
    const int64_t next = static_cast<int64_t>(rows->size()) == *limit ? rows->back().id : 0;
    SendJson(res, 200, wire::EncodeMeasurementPage(*rows, next));
  });

  on("GET", "/v1/tuned", [this](const httplib::Request& req, httplib::Response& res) {
    auto kernel = StringParam(req, "kernel", "", 64);
    auto hardware = StringParam(req, "hardware", "", 200);
    auto dtype = StringParam(req, "dtype", "", 16);
    for (auto* r : {&kernel, &hardware, &dtype}) {
      if (!*r) return SendError(res, r->error());
    }
    SendJson(res, 200, wire::EncodeTunedList(service_.Tuned(*kernel, *hardware, *dtype)));
  });

  on("GET", "/v1/overrides", [this](const httplib::Request&, httplib::Response& res) {
    auto rows = service_.ListOverrides();
    if (!rows) return SendError(res, rows.error());
    SendJson(res, 200, wire::EncodeOverrideList(*rows));
  });

  on("POST", "/v1/overrides", [this, limits](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto o = wire::DecodeOverride(*body, limits);
    if (!o) return SendError(res, o.error());
    auto stored = service_.PutOverride(*o);
    if (!stored) return SendError(res, stored.error());
    SendJson(res, 201, wire::EncodeOverride(*stored));
  });

  on("DELETE", "/v1/overrides/{id}", [this](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    if (auto s = service_.DeleteOverride(*id); !s) return SendError(res, s.error());
    SendJson(res, 200, wire::EncodeStatus("deleted"));
  });

  on("GET", "/v1/tables/{kernel}", [this](const httplib::Request& req, httplib::Response& res) {
    auto spec = PathKernel(req);
    if (!spec) return SendError(res, spec.error());
    auto header = service_.TableHeader(**spec);
    if (!header) return SendError(res, header.error());
    res.status = 200;
    res.set_header("Content-Disposition",
                   "attachment; filename=\"" + std::string((*spec)->name()) + "_tuned_block_sizes.h\"");
    res.set_content(*header, "text/x-c++hdr");
  });

  on("POST", "/v1/backup", [this](const httplib::Request&, httplib::Response& res) {
    auto path = service_.Backup();
    if (!path) return SendError(res, path.error());
    struct stat st{};
    const int64_t bytes = ::stat(path->c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
    SendJson(res, 201, wire::EncodeBackup(*path, bytes));
  });

  // Install exactly the route table, in its order; a route without a handler (or a handler
  // without a route) is a programming error caught at start.
  const auto& routes = Routes();
  for (size_t i = 0; i < routes.size(); ++i) {
    const Route& r = routes[i];
    auto it = handlers.find(std::string(r.method) + " " + r.path);
    if (it == handlers.end()) {
      spdlog::critical("route without handler method={} path={}", r.method, r.path);
      std::abort();
    }
    const std::set<std::string, std::less<>> allowed = SplitList(r.query);
    const bool check_params = std::string_view(r.path) != "/v1/lookup" || std::string_view(r.method) != "GET";
    Handler wrapped = [this, i, h = std::move(it->second), allowed, check_params](const httplib::Request& req,
                                                                                 httplib::Response& res) {
      const auto start = std::chrono::steady_clock::now();
      if (check_params) {
        if (auto s = OnlyParams(req, allowed); !s) {
          SendError(res, s.error());
        } else {
          h(req, res);
        }
      } else {
        h(req, res);
      }
      metrics_.Observe(i, res.status, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    };
    handlers.erase(it);
    const std::string pattern = RoutePattern(r);
    const std::string_view m = r.method;
    if (m == "GET") {
      s.Get(pattern, std::move(wrapped));
    } else if (m == "POST") {
      s.Post(pattern, std::move(wrapped));
    } else if (m == "DELETE") {
      s.Delete(pattern, std::move(wrapped));
    } else if (m == "PUT") {
      s.Put(pattern, std::move(wrapped));
    }
  }
  if (!handlers.empty()) {
    spdlog::critical("handler without route: {}", handlers.begin()->first);
    std::abort();
  }
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
