// The handlers of blocktuned, one file per resource (lookup, misses, sweeps, overrides, kernels
// and hardware, tuned, tables, operations), each binding a handler to the operations of the route
// table (server/api/routes.h) it serves. The router installs them by Op; an Op without a handler
// is refused at start and by a test. Shared here: replies and query/path parameter parsing.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "server/api/routes.h"
#include "server/http_metrics.h"
#include "server/service.h"
#include "server/wire/wire.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace blocktune::server::handlers {

using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
using Handlers = std::array<Handler, api::kOpCount>;

struct HandlerContext {
  Service& service;
  wire::Limits limits;
  const HttpMetrics& metrics;
};

void BindLookupHandlers(Handlers& h, const HandlerContext& ctx);
void BindSweepHandlers(Handlers& h, const HandlerContext& ctx);
void BindOverrideHandlers(Handlers& h, const HandlerContext& ctx);
void BindKernelHandlers(Handlers& h, const HandlerContext& ctx);  // kernels and hardware
void BindTunedHandlers(Handlers& h, const HandlerContext& ctx);
void BindMissHandlers(Handlers& h, const HandlerContext& ctx);  // lookup misses
void BindTableHandlers(Handlers& h, const HandlerContext& ctx);
void BindOperationHandlers(Handlers& h, const HandlerContext& ctx);  // health, ready, metrics, openapi, backup
void BindDashboardHandlers(Handlers& h, const HandlerContext& ctx);  // the aggregates /ui/ draws
void BindResultsHandlers(Handlers& h, const HandlerContext& ctx);    // POST /v1/results

// Every handler, indexed by Op.
Handlers BindAllHandlers(const HandlerContext& ctx);

void SendJson(httplib::Response& res, int status, const wire::Json& body);
void SendError(httplib::Response& res, const Error& e);
// An integer query parameter in [lo, hi]; `fallback` when absent (absent without one: error).
Result<int64_t> IntParam(const httplib::Request& req, const char* name, std::optional<int64_t> fallback, int64_t lo,
                         int64_t hi);
Result<std::string> StringParam(const httplib::Request& req, const char* name, std::string fallback,
                                size_t max_len = 200);
// The route's {id} (the first path parameter).
Result<int64_t> PathId(const httplib::Request& req);
// The route's {kernel}: a registered kernel, or not_found.
Result<const KernelSpec*> PathKernel(const httplib::Request& req);

}  // namespace blocktune::server::handlers
