// Handlers of kernels and hardware profiles: the registry and what the database has seen.
#include <httplib.h>

#include "external/spec.h"
#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindKernelHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  // Encoded per request: POST /v1/kernels/reload can change the list.
  h[api::Index(api::Op::kListKernels)] = [](const httplib::Request&, httplib::Response& res) {
    SendJson(res, 200, wire::EncodeKernelList());
  };

  h[api::Index(api::Op::kReloadKernels)] = [&svc](const httplib::Request&, httplib::Response& res) {
    auto r = svc.ReloadKernels();
    if (!r) return SendError(res, r.error());
    SendJson(res, 200, wire::EncodeKernelReload(r->added, r->replaced, r->unchanged, r->tuned_rows));
  };

  h[api::Index(api::Op::kGetKernel)] = [](const httplib::Request& req, httplib::Response& res) {
    auto spec = PathKernel(req);
    if (!spec) return SendError(res, spec.error());
    SendJson(res, 200, wire::EncodeKernel(**spec));
  };

  h[api::Index(api::Op::kGetKernelSpecSchema)] = [](const httplib::Request&, httplib::Response& res) {
    res.status = 200;
    res.set_content(std::string(external::KernelSpecSchema()), "application/json");
  };

  h[api::Index(api::Op::kListHardware)] = [&svc](const httplib::Request&, httplib::Response& res) {
    auto rows = svc.ListHardware();
    if (!rows) return SendError(res, rows.error());
    SendJson(res, 200, wire::EncodeHardwareList(*rows, svc.host()));
  };

  h[api::Index(api::Op::kGetHostHardware)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto threads = IntParam(req, "threads", 1, 1, 256);
    if (!threads) return SendError(res, threads.error());
    HardwareProfile hw = svc.host();
    hw.threads = static_cast<int>(*threads);
    SendJson(res, 200, wire::EncodeHardware(hw, 0, ""));
  };
}

}  // namespace blocktune::server::handlers
