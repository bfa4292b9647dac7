// Routes and guards of blocktuned; see http.h.
#include "server/http.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>

#include <charconv>

namespace blocktune::server {
namespace {

using wire::Json;

void SendJson(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

void SendError(httplib::Response& res, const Error& e) { SendJson(res, wire::HttpStatus(e.code), wire::EncodeError(e)); }

Result<int64_t> ParseIntParam(const httplib::Request& req, const std::string& name, std::optional<int64_t> fallback) {
  if (!req.has_param(name.c_str())) {
    if (fallback) return *fallback;
    return InvalidArgument("query parameter '" + name + "' is required", name);
  }
  const std::string v = req.get_param_value(name.c_str());
  int64_t out = 0;
  const auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size() || v.empty()) {
    return InvalidArgument("query parameter '" + name + "' must be an integer", name);
  }
  return out;
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
  static const std::vector<Route> kRoutes = {
      {"GET", "/healthz", false, "liveness"},
      {"GET", "/v1/kernels", false, "list kernels with parameters, dims and default config"},
      {"GET", "/v1/lookup", false, "best config for a problem on a hardware key"},
      {"POST", "/v1/sweeps", true, "queue a sweep"},
      {"GET", R"(/v1/sweeps/(\d+))", false, "sweep status and progress"},
  };
  return kRoutes;
}

HttpServer::HttpServer(Service& service, HttpOptions options)
    : service_(service), options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  Install();
}

HttpServer::~HttpServer() = default;

void HttpServer::Install() {
  auto& s = *http_;
  const int workers = options_.worker_threads;
  s.new_task_queue = [workers] { return new httplib::ThreadPool(static_cast<size_t>(workers)); };
  s.set_tcp_nodelay(true);
  s.set_payload_max_length(options_.limits.max_body_bytes);
  s.set_read_timeout(5);
  s.set_write_timeout(5);
  s.set_keep_alive_max_count(10000);

  // Mutating routes need the bearer token; checked before routing so no handler forgets it.
  s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (req.method == "GET" || req.method == "HEAD") return httplib::Server::HandlerResponse::Unhandled;
    const std::string auth = req.get_header_value("Authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (auth.size() <= kBearer.size() || auth.compare(0, kBearer.size(), kBearer) != 0 ||
        !TokenEquals(std::string_view(auth).substr(kBearer.size()), options_.token)) {
      res.set_header("WWW-Authenticate", "Bearer");
      SendJson(res, 401,
               wire::EncodeError(Error{ErrorCode::kInvalidArgument,
                                       "missing or wrong bearer token (Authorization: Bearer <token>)",
                                       "Authorization"}));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });

  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    // Only fill in bodies for statuses the library produced itself (404, 413, 400...).
    if (!res.body.empty()) return;
    std::string message = "request failed";
    ErrorCode code = ErrorCode::kInvalidArgument;
    if (res.status == 404) {
      message = "no route for " + req.method + " " + req.path;
      code = ErrorCode::kNotFound;
    } else if (res.status == 413) {
      message = "request body too large";
    } else if (res.status == 405) {
      message = "method not allowed";
    } else if (res.status >= 500) {
      code = ErrorCode::kInternal;
    }
    res.set_content(wire::EncodeError(Error{code, message, res.status == 413 ? "body" : ""}).dump(),
                    "application/json");
  });

  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr) {
    spdlog::error("unhandled exception method={} path={}", req.method, req.path);
    SendJson(res, 500, wire::EncodeError(Error{ErrorCode::kInternal, "internal error", ""}));
  });

  s.Get("/healthz", [](const httplib::Request&, httplib::Response& res) { SendJson(res, 200, {{"status", "ok"}}); });

  s.Get("/v1/kernels", [](const httplib::Request&, httplib::Response& res) {
    Json list = Json::array();
    for (const KernelSpec* k : AllKernels()) {
      Json params = Json::array();
      for (const auto& p : k->params()) params.push_back({{"name", p.name}, {"candidates", p.candidates}, {"doc", p.doc}});
      Json dims = Json::array();
      for (const auto& d : k->dims()) {
        dims.push_back({{"name", d.bucket.name}, {"max", d.max_value}, {"doc", d.doc}});
      }
      Json dtypes = Json::array();
      for (DType d : k->dtypes()) dtypes.push_back(DTypeName(d));
      list.push_back({{"name", k->name()},
                      {"description", k->description()},
                      {"params", params},
                      {"dims", dims},
                      {"dtypes", dtypes},
                      {"bucket_version", k->bucket_version()},
                      {"default_config", wire::EncodeConfig(k->DefaultConfig())}});
    }
    SendJson(res, 200, {{"kernels", list}});
  });

  s.Get("/v1/lookup", [this](const httplib::Request& req, httplib::Response& res) {
    if (!req.has_param("kernel")) return SendError(res, Error{ErrorCode::kInvalidArgument, "query parameter 'kernel' is required", "kernel"});
    const std::string kernel = req.get_param_value("kernel");
    const KernelSpec* spec = FindKernel(kernel);
    if (spec == nullptr) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown kernel '" + kernel + "'", "kernel"});
    tuner::LookupQuery q;
    const std::string dtype = req.has_param("dtype") ? req.get_param_value("dtype") : "f32";
    auto d = ParseDType(dtype);
    if (!d) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown dtype '" + dtype + "'", "dtype"});
    q.dtype = *d;
    for (const auto& dim : spec->dims()) {
      auto v = ParseIntParam(req, dim.bucket.name, std::nullopt);
      if (!v) return SendError(res, v.error());
      q.dims.Set(dim.bucket.name, *v);
    }
    auto threads = ParseIntParam(req, "threads", 1);
    if (!threads) return SendError(res, threads.error());
    if (*threads < 1 || *threads > 256) return SendError(res, Error{ErrorCode::kInvalidArgument, "threads must be in [1, 256]", "threads"});
    if (req.has_param("hardware")) {
      q.hardware_key = req.get_param_value("hardware");
      if (q.hardware_key.empty() || q.hardware_key.size() > 200) {
        return SendError(res, Error{ErrorCode::kInvalidArgument, "hardware must be 1 to 200 characters", "hardware"});
      }
    }
    for (const auto& [name, value] : req.params) {
      bool known = name == "kernel" || name == "dtype" || name == "threads" || name == "hardware";
      for (const auto& dim : spec->dims()) known |= name == dim.bucket.name;
      if (!known) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown query parameter '" + name + "'", name});
    }
    auto a = service_.Lookup(kernel, std::move(q), static_cast<int>(*threads));
    if (!a) return SendError(res, a.error());
    SendJson(res, 200, wire::EncodeLookup(*a));
  });

  s.Post("/v1/sweeps", [this](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, options_.limits);
    if (!body) return SendError(res, body.error());
    auto request = wire::DecodeSweepRequest(*body, options_.limits);
    if (!request) return SendError(res, request.error());
    auto id = service_.SubmitSweep(*request);
    if (!id) return SendError(res, id.error());
    res.set_header("Location", "/v1/sweeps/" + std::to_string(*id));
    SendJson(res, 202, {{"id", *id}, {"status", "queued"}});
  });

  s.Get(R"(/v1/sweeps/(\d+))", [this](const httplib::Request& req, httplib::Response& res) {
    int64_t id = 0;
    const std::string text = req.matches[1];
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
    if (ec != std::errc()) return SendError(res, Error{ErrorCode::kInvalidArgument, "sweep id out of range", "id"});
    auto sweep = service_.GetSweep(id);
    if (!sweep) return SendError(res, sweep.error());
    SendJson(res, 200, wire::EncodeSweep(*sweep));
  });
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
