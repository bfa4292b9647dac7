// Handlers of the dashboard's read-only aggregates (server/dashboard.h): a sweep's landscape and
// best config per bucket, the winners matrix, and why a tuned row holds its config.
#include <httplib.h>

#include "server/dashboard.h"
#include "server/guards/guards.h"
#include "server/handlers/handlers.h"
#include "server/wire/dashboard.h"

namespace blocktune::server::handlers {

using wire::Json;

namespace {

// cpp-httplib 0.11.4 compresses a body whose Content-Type is exactly "application/json" when the
// client accepts it, with brotli at quality 11 when a browser offers "br": ~6 s for the 1.4 MB
// landscape of 20,000 measurements on a loaded 2-core machine, against 0.5 s to build it. The
// same type with its charset parameter is not on the library's list, so these large answers go
// out as they are (over loopback or a LAN that is the fast way).
void SendLargeJson(httplib::Response& res, const Json& body) {
  res.status = 200;
  res.set_content(wire::Dump(body), "application/json; charset=utf-8");
}

}  // namespace

void BindDashboardHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  h[api::Index(api::Op::kGetSweepLandscape)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto bucket = StringParam(req, "bucket", "", 200);
    if (!bucket) return SendError(res, bucket.error());
    auto v = BuildLandscape(svc, *id, *bucket);
    if (!v) return SendError(res, v.error());
    SendLargeJson(res, wire::EncodeLandscape(*v));
  };

  h[api::Index(api::Op::kGetSweepBest)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto v = BuildSweepBest(svc, *id);
    if (!v) return SendError(res, v.error());
    SendLargeJson(res, wire::EncodeSweepBest(*v));
  };

  h[api::Index(api::Op::kListWinners)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto kernel = StringParam(req, "kernel", "", 64);
    if (!kernel) return SendError(res, kernel.error());
    auto dtype = StringParam(req, "dtype", "", 16);
    if (!dtype) return SendError(res, dtype.error());
    auto stale_days = IntParam(req, "stale_days", 90, 1, 36500);
    if (!stale_days) return SendError(res, stale_days.error());
    auto rows = BuildWinners(svc, *kernel, *dtype, *stale_days);
    if (!rows) return SendError(res, rows.error());
    SendLargeJson(res, wire::EncodeWinners(*rows));
  };

  h[api::Index(api::Op::kExplainTuned)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    Result<std::string> args[] = {StringParam(req, "kernel", "", 64), StringParam(req, "hardware", "", 200),
                                  StringParam(req, "dtype", "", 16), StringParam(req, "bucket", "", 200)};
    const char* names[] = {"kernel", "hardware", "dtype", "bucket"};
    for (int i = 0; i < 4; ++i) {
      if (!args[i]) return SendError(res, args[i].error());
      if (args[i]->empty()) {
        return SendError(res, Error{ErrorCode::kInvalidArgument,
                                    std::string("query parameter '") + names[i] + "' is required", names[i]});
      }
    }
    auto top = IntParam(req, "top", 20, 1, 200);
    if (!top) return SendError(res, top.error());
    auto v = BuildExplain(svc, *args[0], *args[1], *args[2], *args[3], *top);
    if (!v) return SendError(res, v.error());
    SendLargeJson(res, wire::EncodeExplain(*v));
  };
}

}  // namespace blocktune::server::handlers
