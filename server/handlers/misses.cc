// Handler of lookup misses: the buckets lookups asked for that no row tuned for their hardware
// key answered, most asked first (counted by the lookup handlers, stored by the service).
#include <httplib.h>

#include <cctype>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

void BindMissHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  h[api::Index(api::Op::kListMisses)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    store::MissFilter filter;
    auto kernel = StringParam(req, "kernel", "", 64);
    if (!kernel) return SendError(res, kernel.error());
    if (!kernel->empty() && FindKernel(*kernel) == nullptr) {
      return SendError(res,
                       Error{ErrorCode::kInvalidArgument, "unknown kernel '" + guards::Clip(*kernel) + "'", "kernel"});
    }
    auto hardware = StringParam(req, "hardware", "", 200);
    if (!hardware) return SendError(res, hardware.error());
    for (char c : *hardware) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
        return SendError(res, Error{ErrorCode::kInvalidArgument,
                                    "hardware key may hold only letters, digits, '.', '_' and '-'", "hardware"});
      }
    }
    auto offset = IntParam(req, "offset", 0, 0, INT64_MAX);
    if (!offset) return SendError(res, offset.error());
    auto limit = IntParam(req, "limit", 100, 1, 1000);
    if (!limit) return SendError(res, limit.error());
    filter.kernel = *kernel;
    filter.hardware_prefix = *hardware;
    filter.offset = *offset;
    filter.limit = *limit;
    auto rows = svc.ListMisses(filter);
    if (!rows) return SendError(res, rows.error());
    const int64_t next = static_cast<int64_t>(rows->size()) == *limit ? *offset + *limit : 0;
    SendJson(res, 200, wire::EncodeMissList(*rows, next));
  };
}

}  // namespace blocktune::server::handlers
