// Handlers of sweeps: create (idempotent with a key, rate limited), list, show with progress, cancel, and measurement
// pages.
#include <httplib.h>

#include "server/guards/guards.h"
#include "server/handlers/handlers.h"

namespace blocktune::server::handlers {

using wire::Json;

void BindSweepHandlers(Handlers& h, const HandlerContext& ctx) {
  Service& svc = ctx.service;
  const wire::Limits limits = ctx.limits;
  h[api::Index(api::Op::kCreateSweep)] = [&svc, limits](const httplib::Request& req, httplib::Response& res) {
    const std::string key = req.get_header_value("Idempotency-Key");
    if (key.size() > 128)
      return SendError(
          res, Error{ErrorCode::kInvalidArgument, "Idempotency-Key is longer than 128 characters", "Idempotency-Key"});
    for (char c : key) {
      if (c < 0x21 || c > 0x7e)
        return SendError(
            res, Error{ErrorCode::kInvalidArgument, "Idempotency-Key must be printable ASCII", "Idempotency-Key"});
    }
    auto body = wire::ParseBody(req.body, limits);
    if (!body) return SendError(res, body.error());
    auto submission = wire::DecodeSweepSubmission(*body, limits);
    if (!submission) return SendError(res, submission.error());
    auto created = svc.SubmitSweep(*submission->spec, submission->request, key, submission->canonical);
    if (!created) {
      if (created.error().code == ErrorCode::kResourceExhausted) res.set_header("Retry-After", "2");
      return SendError(res, created.error());
    }
    res.set_header("Location", "/v1/sweeps/" + std::to_string(created->id));
    SendJson(res, created->created ? 202 : 200, wire::EncodeCreatedSweep(created->id, created->created));
  };

  h[api::Index(api::Op::kListSweeps)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto status_text = StringParam(req, "status", "", 16);
    if (!status_text) return SendError(res, status_text.error());
    std::optional<store::SweepStatus> status;
    if (!status_text->empty()) {
      status = store::ParseSweepStatus(*status_text);
      if (!status)
        return SendError(res, Error{ErrorCode::kInvalidArgument,
                                    "status must be queued, running, done, failed or cancelled", "status"});
    }
    auto after = IntParam(req, "after_id", 0, 0, INT64_MAX);
    if (!after) return SendError(res, after.error());
    auto limit = IntParam(req, "limit", 100, 1, 1000);
    if (!limit) return SendError(res, limit.error());
    auto rows = svc.ListSweeps(status, *after, *limit);
    if (!rows) return SendError(res, rows.error());
    const int64_t next = static_cast<int64_t>(rows->size()) == *limit ? rows->back().id : 0;
    SendJson(res, 200, wire::EncodeSweepList(*rows, next));
  };

  h[api::Index(api::Op::kGetSweep)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto v = svc.GetSweep(*id);
    if (!v) return SendError(res, v.error());
    const wire::SweepStall stall{v->stalled ? v->stalled->error : "", v->stalled ? v->stalled->since : ""};
    SendJson(res, 200, wire::EncodeSweep(v->sweep, &v->progress, v->eta_seconds, v->stalled ? &stall : nullptr));
  };

  h[api::Index(api::Op::kCancelSweep)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto r = svc.CancelSweep(*id);
    if (!r) return SendError(res, r.error());
    SendJson(res, 200, wire::EncodeSweep(*r));
  };

  h[api::Index(api::Op::kListMeasurements)] = [&svc](const httplib::Request& req, httplib::Response& res) {
    auto id = PathId(req);
    if (!id) return SendError(res, id.error());
    auto after = IntParam(req, "after_id", 0, 0, INT64_MAX);
    if (!after) return SendError(res, after.error());
    auto limit = IntParam(req, "limit", 100, 1, 1000);
    if (!limit) return SendError(res, limit.error());
    auto rows = svc.ListMeasurements(*id, *after, *limit);
    if (!rows) return SendError(res, rows.error());
    const int64_t next = static_cast<int64_t>(rows->size()) == *limit ? rows->back().id : 0;
    SendJson(res, 200, wire::EncodeMeasurementPage(*rows, next));
  };
}

}  // namespace blocktune::server::handlers
