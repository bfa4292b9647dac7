// Replies and parameter parsing shared by the handlers, and BindAllHandlers; see handlers.h.
#include <httplib.h>

#include <charconv>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

Handlers BindAllHandlers(const HandlerContext& ctx) {
  Handlers h;
  BindLookupHandlers(h, ctx);
  BindSweepHandlers(h, ctx);
  BindOverrideHandlers(h, ctx);
  BindKernelHandlers(h, ctx);
  BindTunedHandlers(h, ctx);
  BindMissHandlers(h, ctx);
  BindTableHandlers(h, ctx);
  BindOperationHandlers(h, ctx);
  BindDashboardHandlers(h, ctx);
  BindResultsHandlers(h, ctx);
  return h;
}

void SendJson(httplib::Response& res, int status, const wire::Json& body) {
  res.status = status;
  res.set_content(wire::Dump(body), "application/json");
}

void SendError(httplib::Response& res, const Error& e) {
  SendJson(res, wire::HttpStatus(e.code), wire::EncodeError(e));
}

Result<int64_t> IntParam(const httplib::Request& req, const char* name, std::optional<int64_t> fallback, int64_t lo,
                         int64_t hi) {
  return wire::QueryInt(req.params, name, fallback, lo, hi);
}

Result<std::string> StringParam(const httplib::Request& req, const char* name, std::string fallback, size_t max_len) {
  return wire::QueryString(req.params, name, std::move(fallback), max_len);
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

}  // namespace blocktune::server::handlers
