// Handler of the tuned entries lookups serve.
#include <httplib.h>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindTunedHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  h[api::Index(api::Op::kListTuned)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto kernel = StringParam(req, "kernel", "", 64);
    auto hardware = StringParam(req, "hardware", "", 200);
    auto dtype = StringParam(req, "dtype", "", 16);
    for (auto* r : {&kernel, &hardware, &dtype}) {
      if (!*r) return SendError(res, r->error());
    }
    SendJson(res, 200, wire::EncodeTunedList(svc.Tuned(*kernel, *hardware, *dtype)));
  };
}

}  // namespace blocktune::server::handlers
