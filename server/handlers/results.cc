// Handler of POST /v1/results: a batch of another database's results (blocktune push), applied
// through the same store::ResultsTable as `blocktune db merge`.
#include <httplib.h>

#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

void BindResultsHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  const wire::Limits limits = ctx.limits;
  h[api::Index(api::Op::kIngestResults)] = [&svc, limits](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto batch = wire::DecodeResultsBatch(*body, limits);
    if (!batch) return SendError(res, batch.error());
    auto applied = svc.IngestResults(*batch);
    if (!applied) return SendError(res, applied.error());
    SendJson(res, 200, wire::EncodeIngestResult(batch->batch_id, *applied));
  };
}

}  // namespace blocktune::server::handlers
