// Handlers of lookups: one problem from the query string (the hot path) and a batch from a JSON
// body, both decoded by the codec (server/wire/lookup.cc). Each answer's source is counted as a
// miss or not here (Service::CountLookup, in memory), on the answer the resolver gave, whatever
// chain it walked.
#include <httplib.h>

#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindLookupHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  const wire::Limits limits = ctx.limits;
  h[api::Index(api::Op::kGetLookup)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto r = wire::DecodeLookupQuery(req.params);
    if (!r) return SendError(res, r.error());
    if (r->query.hardware_key.empty()) r->query.hardware_key = svc.HostKey(r->threads);
    auto a = svc.Lookup(*r->spec, r->query);
    if (!a) return SendError(res, a.error());
    svc.CountLookup(*r->spec, r->query, *a);
    res.status = 200;
    res.set_content(wire::EncodeLookupText(*a), "application/json");
  };

  h[api::Index(api::Op::kBatchLookup)] = [&svc, limits](const httplib::Request& req, httplib::Response& res) {
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto queries = wire::DecodeBatchLookup(*body, limits);
    if (!queries) return SendError(res, queries.error());
    std::vector<Result<tuner::LookupAnswer>> answers;
    answers.reserve(queries->size());
    for (auto& q : *queries) {
      const KernelSpec& spec = *q.spec;
      if (q.query.hardware_key.empty()) q.query.hardware_key = svc.HostKey(q.threads);
      auto a = svc.Lookup(spec, q.query);
      if (a) svc.CountLookup(spec, q.query, *a);
      answers.push_back(std::move(a));
    }
    SendJson(res, 200, wire::EncodeBatchLookup(*queries, answers));
  };
}

}  // namespace blocktune::server::handlers
