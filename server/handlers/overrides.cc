// Handlers of overrides (pinned configs): list, create, delete.
#include <httplib.h>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindOverrideHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  const wire::Limits limits = ctx.limits;
  h[api::Index(api::Op::kListOverrides)] = [&svc](const httplib::Request&, httplib::Response& res) {
    auto rows = svc.ListOverrides();
    if (!rows) return SendError(res, rows.error());
    SendJson(res, 200, wire::EncodeOverrideList(*rows));
  };

  h[api::Index(api::Op::kCreateOverride)] = [&svc, limits](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto o = wire::DecodeOverride(*body, limits);
    if (!o) return SendError(res, o.error());
    auto stored = svc.PutOverride(*o);
    if (!stored) return SendError(res, stored.error());
    SendJson(res, 201, wire::EncodeOverride(*stored));
  };

  h[api::Index(api::Op::kDeleteOverride)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    if (auto s = svc.DeleteOverride(*id); !s) return SendError(res, s.error());
    SendJson(res, 200, wire::EncodeStatus("deleted"));
  };
}

}  // namespace blocktune::server::handlers
