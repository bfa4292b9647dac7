// Handler that generates a kernel's C++ header over the rows lookups serve.
#include <httplib.h>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindTableHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  h[api::Index(api::Op::kGetTable)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto spec = PathKernel(req);
    if (!spec) return SendError(res, spec.error());
    auto header = svc.TableHeader(**spec);
    if (!header) return SendError(res, header.error());
    res.status = 200;
    res.set_header("Content-Disposition",
                   "attachment; filename=\"" + std::string((*spec)->name()) + "_tuned_block_sizes.h\"");
    res.set_content(*header, "text/x-c++hdr");
  };
}

}  // namespace blocktune::server::handlers
