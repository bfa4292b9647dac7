// The wire format of blocktune's HTTP API: the only place that spells JSON keys, one file per
// resource under server/wire/ (sweeps, lookup, kernels and hardware, tuned, overrides, misses,
// and common), each with the JSON Schema of its bodies. Decoders never throw (nlohmann is used with
// allow_exceptions=false and type checks before every get) and name the offending field in
// Error::path, e.g. "shapes[1].k".
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kernels/core/hardware.h"
#include "kernels/core/kernel_spec.h"
#include "kernels/core/result.h"
#include "server/guards/guards.h"
#include "server/misses.h"
#include "store/store.h"
#include "tuner/lookup.h"
#include "tuner/measurement.h"

namespace blocktune::server::wire {

using Json = nlohmann::ordered_json;  // keys keep insertion order: config keys in parameter order

using Limits = server::guards::Limits;

// Serialises for the wire. Invalid UTF-8 (which can only come from echoed request input) is
// replaced with U+FFFD instead of throwing, so an error message can never become a 500.
std::string Dump(const Json& j);

// ErrorCode -> HTTP status, in exactly one place.
int HttpStatus(ErrorCode code);

// {"error": {"code": "...", "message": "...", "path": "..."}}
Json EncodeError(const Error& e);

// Parses a request body: size and nesting depth are checked before nlohmann sees the text
// (deeply nested input can exhaust its recursive parser).
Result<Json> ParseBody(std::string_view body, const Limits& limits);

Result<tuner::SweepRequest> DecodeSweepRequest(const Json& j, const Limits& limits);
Json EncodeSweepRequest(const tuner::SweepRequest& r);
// POST /v1/sweeps decoded once: the request, its kernel (found here, the one lookup of it on
// the way to the store) and its canonical text (Dump(EncodeSweepRequest(request)): what an
// Idempotency-Key replay is compared by).
struct SweepSubmission {
  tuner::SweepRequest request;
  const KernelSpec* spec = nullptr;
  std::string canonical;
};
Result<SweepSubmission> DecodeSweepSubmission(const Json& j, const Limits& limits);

// Why an unfinished sweep does not advance: the process serving it cannot write the database
// (server/storage_health.h). "stalled": {"reason": "storage", "error", "since"}.
struct SweepStall {
  std::string error;
  std::string since;
};
// A sweep; with progress, also "progress": {"done", "total", "tasks_done", "tasks_total",
// "by_outcome": {...}} and "eta_seconds" (null when unknown); "stalled" when `stalled` is given;
// "executor" (the process that owns it) while it is unfinished and owned.
Json EncodeSweep(const store::SweepRecord& s, const store::SweepProgress* progress = nullptr, double eta_seconds = -1,
                 const SweepStall* stalled = nullptr);
Json EncodeSweepList(const std::vector<store::SweepRecord>& sweeps, int64_t next_after_id);
struct SweepStatusView {
  int64_t id = 0;
  std::string kernel;
  std::string status;
  int64_t done = 0;
  int64_t total = 0;
  std::vector<std::pair<std::string, int64_t>> by_outcome;
  double eta_seconds = -1;
  std::string error;
  std::string created_at;
  int64_t buckets = 0;
  std::optional<tuner::SweepBreakdown> breakdown;  // once a task has run
  std::string stalled;                             // "storage: <error> (since <UTC>)"; empty: not stalled
};
Result<SweepStatusView> DecodeSweepStatus(const Json& j);
// A sweep's time breakdown with its efficiency (the Breakdown schema).
Json EncodeBreakdown(const tuner::SweepBreakdown& b);
// {"sweeps": [...], "next_after_id"}
Result<std::vector<SweepStatusView>> DecodeSweepList(const Json& j);
// {"created": true} for a new sweep, false for an idempotent replay
Json EncodeCreatedSweep(int64_t id, bool created);

Json EncodeMeasurement(const tuner::Measurement& m);
Json EncodeMeasurementPage(const std::vector<tuner::Measurement>& ms, int64_t next_after_id);
Result<std::vector<tuner::Measurement>> DecodeMeasurementPage(const Json& j, int64_t* next_after_id);

Json EncodeLookup(const tuner::LookupAnswer& a);
// The same document as Dump(EncodeLookup(a)), written directly: lookups are the hot path and
// building an ordered_json costs ~30 allocations per answer.
std::string EncodeLookupText(const tuner::LookupAnswer& a);
Result<tuner::LookupAnswer> DecodeLookup(const Json& j);
// One lookup, from GET /v1/lookup's query string (DecodeLookupQuery) or from a query of POST
// /v1/lookup's {"queries": [{"kernel", "dtype", "dims": {...}, "threads", "hardware",
// "config"}]} (DecodeBatchLookup): both decoded here, with the same checks.
struct LookupRequest {
  std::string kernel;
  const KernelSpec* spec = nullptr;  // the kernel, found once by the decoder
  tuner::LookupQuery query;
  int threads = 1;
};
// A query string as the HTTP layer parsed it: every (name, value), repeats included
// (httplib::Params).
using QueryParams = std::multimap<std::string, std::string>;
// One query parameter: absent gives `fallback` (or, for an integer without one, an error);
// given twice, too long, not an integer or out of [lo, hi] is an error naming it.
Result<std::string> QueryString(const QueryParams& params, const char* name, std::string fallback, size_t max_len);
Result<int64_t> QueryInt(const QueryParams& params, const char* name, std::optional<int64_t> fallback, int64_t lo,
                         int64_t hi);
// GET /v1/lookup?kernel=...&dtype=...&<dim>=...&threads=...&hardware=...&config=...
Result<LookupRequest> DecodeLookupQuery(const QueryParams& params);
Result<std::vector<LookupRequest>> DecodeBatchLookup(const Json& j, const Limits& limits);
Json EncodeBatchLookupRequest(const std::vector<LookupRequest>& queries);
// A query's refusal by the lookup (its path relative to the problem: "n", "dtype",
// "config.block_m") with the path naming the field of query `i` in the batch's JSON:
// "queries[1].dims.n", "queries[1].dtype", "queries[1].config.block_m".
Error BatchQueryError(const LookupRequest& q, size_t i, Error e);
// {"results": [answer or {"error": {...}}, ...]} in query order; answers[i] is queries[i]'s,
// its error's path named by BatchQueryError.
Json EncodeBatchLookup(const std::vector<LookupRequest>& queries,
                       const std::vector<Result<tuner::LookupAnswer>>& answers);

Json EncodeKernel(const KernelSpec& k);
Json EncodeKernelList();
// POST /v1/kernels/reload: {"added", "replaced", "unchanged", "tuned_rows"}.
Json EncodeKernelReload(const std::vector<std::string>& added, const std::vector<std::string>& replaced,
                        int64_t unchanged, int64_t tuned_rows);
Json EncodeHardware(const HardwareProfile& hw, int64_t id, const std::string& first_seen_at);
Json EncodeHardwareList(const std::vector<store::HardwareRecord>& rows, const HardwareProfile& host);

Json EncodeTunedEntry(const tuner::TunedEntry& e);
Json EncodeTunedList(const std::vector<tuner::TunedEntry>& rows);
Result<std::vector<tuner::TunedEntry>> DecodeTunedList(const Json& j);

// Override: {"kernel", "hardware", "dtype", "bucket", "config": {...}, "reason", "expires_at"}
Result<store::OverrideRecord> DecodeOverride(const Json& j, const Limits& limits);
Json EncodeOverrideRequest(const store::OverrideRecord& o);
Json EncodeOverride(const store::OverrideRecord& o);
Json EncodeOverrideList(const std::vector<store::OverrideRecord>& rows);
Result<std::vector<store::OverrideRecord>> DecodeOverrideList(const Json& j);

// Lookup misses: {"misses": [...], "next_offset"} (null on the last page).
Json EncodeMiss(const server::MissView& v);
Json EncodeMissList(const std::vector<server::MissView>& misses, int64_t next_offset);
Result<std::vector<server::MissView>> DecodeMissList(const Json& j, int64_t* next_offset);

// POST /v1/results: one batch of another database's results (store::ResultsBatch), and the
// answer (store::ApplyResult).
Json EncodeResultsBatch(const store::ResultsBatch& b);
Result<store::ResultsBatch> DecodeResultsBatch(const Json& j, const Limits& limits);
Json EncodeIngestResult(const std::string& batch_id, const store::ApplyResult& r);
Result<store::ApplyResult> DecodeIngestResult(const Json& j);

Json EncodeBackup(const std::string& path, int64_t bytes);
Json EncodeStatus(std::string_view status);
// GET /healthz: {"status": "ok"}, or "degraded" with the storage error while writes fail.
Json EncodeHealth(std::string_view storage_error);
Json EncodeReady(bool ready, std::string_view detail);

// Timestamps on the wire: UTC "YYYY-MM-DDTHH:MM:SS[.fff]Z"; normalised to milliseconds.
Result<std::string> NormaliseTimestamp(std::string_view text, const std::string& path);

Json EncodeConfig(const Config& c);

// Every component schema of the OpenAPI document (Error, Sweep, LookupAnswer, ...), each
// written next to its codec in server/wire/<resource>.cc.
Json ComponentSchemas();

}  // namespace blocktune::server::wire
