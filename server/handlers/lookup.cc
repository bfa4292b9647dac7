// Handlers of lookups: one problem from the query string (the hot path) and a batch from a JSON
// body. Each answer's source is counted as a miss or not here (Service::CountLookup, in memory),
// on the answer the resolver gave, whatever chain it walked.
#include <httplib.h>

#include "server/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server {

using namespace http_util;
using wire::Json;

void BindLookupHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  const wire::Limits limits = ctx.limits;
  h[api::Index(api::Op::kGetLookup)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto kernel = StringParam(req, "kernel", "", 64);
    if (!kernel) return SendError(res, kernel.error());
    if (kernel->empty()) return SendError(res, Error{ErrorCode::kInvalidArgument, "query parameter 'kernel' is required", "kernel"});
    const KernelSpec* spec = FindKernel(*kernel);
    if (spec == nullptr) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown kernel '" + guards::Clip(*kernel) + "'", "kernel"});
    for (const auto& [name, value] : req.params) {
      bool known = name == "kernel" || name == "dtype" || name == "threads" || name == "hardware" || name == "config";
      for (const auto& dim : spec->dims()) known |= name == dim.bucket.name;
      if (!known) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown query parameter '" + guards::Clip(name) + "'", guards::Clip(name)});
    }
    tuner::LookupQuery q;
    auto dtype = StringParam(req, "dtype", "f32", 16);
    if (!dtype) return SendError(res, dtype.error());
    auto d = ParseDType(*dtype);
    if (!d) return SendError(res, Error{ErrorCode::kInvalidArgument, "unknown dtype '" + guards::Clip(*dtype) + "'", "dtype"});
    q.dtype = *d;
    for (const auto& dim : spec->dims()) {
      auto v = IntParam(req, dim.bucket.name, std::nullopt, INT64_MIN, INT64_MAX);
      if (!v) return SendError(res, v.error());
      q.dims.Set(dim.bucket.name, *v);
    }
    auto threads = IntParam(req, "threads", 1, 1, 256);
    if (!threads) return SendError(res, threads.error());
    auto hardware = StringParam(req, "hardware", "", 200);
    if (!hardware) return SendError(res, hardware.error());
    for (char c : *hardware) {
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
        return SendError(res, Error{ErrorCode::kInvalidArgument, "hardware key may hold only letters, digits, '.', '_' and '-'", "hardware"});
      }
    }
    q.hardware_key = *hardware;
    if (req.has_param("config")) {
      auto text = StringParam(req, "config", "", 512);
      if (!text) return SendError(res, text.error());
      auto cfg = NamedInts::Parse(*text);
      if (!cfg) return SendError(res, WithPathPrefix(cfg.error(), "config"));
      q.explicit_config = std::move(*cfg);
    }
    if (q.hardware_key.empty()) q.hardware_key = svc.HostKey(static_cast<int>(*threads));
    auto a = svc.Lookup(*spec, q);
    if (!a) return SendError(res, a.error());
    svc.CountLookup(*spec, q, *a);
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
    for (size_t i = 0; i < queries->size(); ++i) {
      auto& q = (*queries)[i];
      const KernelSpec& spec = *FindKernel(q.kernel);
      if (q.query.hardware_key.empty()) q.query.hardware_key = svc.HostKey(q.threads);
      auto a = svc.Lookup(spec, q.query);
      if (a) svc.CountLookup(spec, q.query, *a);
      if (!a) a = std::unexpected(WithPathPrefix(a.error(), "queries[" + std::to_string(i) + "]"));
      answers.push_back(std::move(a));
    }
    SendJson(res, 200, wire::EncodeBatchLookup(answers));
  };
}

}  // namespace blocktune::server
