// The route table and the helpers that read it; see routes.h.
#include "server/routes.h"

#include <cstdio>
#include <cstdlib>

namespace blocktune::api {
namespace {

// Statuses shared by many routes, spelled once.
constexpr Response kBadRequest{400, "Error",
                               "invalid argument: a malformed or unknown parameter or field, named in error.path"};
constexpr Response kNotFound{404, "Error", "no such resource"};

const Param kIdParam{"id", "integer", true, "numeric id", 1, 0};
const Param kKernelParam{"kernel", "string", true, "kernel name, e.g. matmul (GET /v1/kernels lists them)"};
const Param kThreadsParam{"threads", "integer", false, "threads the kernel runs with (default 1)", 1, 256};
const Param kAfterIdParam{"after_id",
                          "integer",
                          false,
                          "return rows with id above this (default 0); "
                          "pass the previous page's next_after_id",
                          0,
                          0};
const Param kLimitParam{"limit", "integer", false, "rows per page (default 100)", 1, 1000};

std::vector<Route> MakeRoutes() {
  using enum Op;
  return {
      {kGetLookup,
       "getLookup",
       "GET",
       "/v1/lookup",
       Auth::kPublic,
       "lookup",
       "Best config for one problem (always answers, says where from)",
       {},
       {{"kernel", "string", true, "kernel name"},
        {"dtype", "DType", false, "element type (default f32)"},
        kThreadsParam,
        {"hardware", "string", false, "hardware key (default: this host's key at `threads`)"},
        {"config", "string", false,
         "your own config, e.g. block_m=96,block_n=512: validated, completed with "
         "defaults and echoed with source `explicit`"}},
       true,
       {},
       "",
       "application/json",
       {{200, "LookupAnswer", "the config and where it came from"}, kBadRequest},
       "Also one integer query parameter per dimension of the kernel (matmul: m, n, k), all required; "
       "see GET /v1/kernels/{kernel}."},
      {kBatchLookup,
       "batchLookup",
       "POST",
       "/v1/lookup",
       Auth::kPublic,
       "lookup",
       "Best configs for a batch of problems (a POST only because the list does not fit a URL; changes nothing)",
       {},
       {},
       false,
       {},
       "BatchLookupRequest",
       "application/json",
       {{200, "BatchLookupResponse", "one answer or error per query, in order"}, kBadRequest},
       ""},
      {kGetHealth,
       "getHealth",
       "GET",
       "/healthz",
       Auth::kPublic,
       "operations",
       "Liveness",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Status", "the process serves HTTP"}, kBadRequest},
       ""},
      {kGetReady,
       "getReady",
       "GET",
       "/readyz",
       Auth::kPublic,
       "operations",
       "Readiness: database reachable and job runner alive",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Ready", "ready"}, kBadRequest, {503, "Ready", "not ready; detail says why"}},
       ""},
      {kGetMetrics,
       "getMetrics",
       "GET",
       "/metrics",
       Auth::kPublic,
       "operations",
       "Prometheus text: requests and latency by route, sweeps, measurements, database size",
       {},
       {},
       false,
       {},
       "",
       "text/plain",
       {{200, "", "Prometheus text exposition format 0.0.4"}, kBadRequest},
       ""},
      {kGetOpenApi,
       "getOpenApi",
       "GET",
       "/v1/openapi.json",
       Auth::kPublic,
       "operations",
       "This API as an OpenAPI 3.1 document",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "OpenApi", "this document"}, kBadRequest},
       ""},
      {kListKernels,
       "listKernels",
       "GET",
       "/v1/kernels",
       Auth::kPublic,
       "kernels",
       "List kernels",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "KernelList", "every kernel"}, kBadRequest},
       ""},
      {kGetKernel,
       "getKernel",
       "GET",
       "/v1/kernels/{kernel}",
       Auth::kPublic,
       "kernels",
       "Describe a kernel: parameters, dimensions, buckets, default config",
       {kKernelParam},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Kernel", "the kernel"}, kBadRequest, kNotFound},
       ""},
      {kListHardware,
       "listHardware",
       "GET",
       "/v1/hardware",
       Auth::kPublic,
       "hardware",
       "Hardware profiles known to the database, and this host's",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "HardwareList", "profiles"}, kBadRequest},
       ""},
      {kGetHostHardware,
       "getHostHardware",
       "GET",
       "/v1/hardware/host",
       Auth::kPublic,
       "hardware",
       "This host's hardware profile",
       {},
       {kThreadsParam},
       false,
       {},
       "",
       "application/json",
       {{200, "Hardware", "this host"}, kBadRequest},
       ""},
      {kCreateSweep,
       "createSweep",
       "POST",
       "/v1/sweeps",
       Auth::kBearer,
       "sweeps",
       "Create a sweep (with an Idempotency-Key, a retry returns the same sweep)",
       {},
       {},
       false,
       {{"Idempotency-Key", "string", false,
         "printable ASCII, at most 128 characters; the same key with the same body returns the first sweep"}},
       "SweepRequest",
       "application/json",
       {{202, "CreatedSweep", "queued (Location names the sweep)"},
        {200, "CreatedSweep", "an earlier request with this Idempotency-Key and body; nothing new was created"},
        kBadRequest,
        {409, "Error", "the Idempotency-Key was used with a different body"},
        {429, "Error", "sweep creation rate limit; Retry-After says when to retry"}},
       ""},
      {kListSweeps,
       "listSweeps",
       "GET",
       "/v1/sweeps",
       Auth::kPublic,
       "sweeps",
       "List sweeps, oldest first",
       {},
       {{"status", "SweepStatus", false, "only sweeps in this state"}, kAfterIdParam, kLimitParam},
       false,
       {},
       "",
       "application/json",
       {{200, "SweepList", "a page of sweeps"}, kBadRequest},
       ""},
      {kGetSweep,
       "getSweep",
       "GET",
       "/v1/sweeps/{id}",
       Auth::kPublic,
       "sweeps",
       "A sweep with progress, ETA and counts by outcome",
       {kIdParam},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Sweep", "the sweep"}, kBadRequest, kNotFound},
       ""},
      {kCancelSweep,
       "cancelSweep",
       "POST",
       "/v1/sweeps/{id}/cancel",
       Auth::kBearer,
       "sweeps",
       "Cancel a queued or running sweep",
       {kIdParam},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Sweep", "the sweep, cancelled"}, kBadRequest, kNotFound, {412, "Error", "the sweep already finished"}},
       ""},
      {kListMeasurements,
       "listMeasurements",
       "GET",
       "/v1/sweeps/{id}/measurements",
       Auth::kPublic,
       "sweeps",
       "A sweep's measurements, paginated by id",
       {kIdParam},
       {kAfterIdParam, kLimitParam},
       false,
       {},
       "",
       "application/json",
       {{200, "MeasurementPage", "a page of measurements"}, kBadRequest, kNotFound},
       ""},
      {kListTuned,
       "listTuned",
       "GET",
       "/v1/tuned",
       Auth::kPublic,
       "tuned",
       "Tuned entries lookups serve (the checked-in table overlaid with this database)",
       {},
       {{"kernel", "string", false, "only this kernel"},
        {"hardware", "string", false, "only hardware keys starting with this"},
        {"dtype", "string", false, "only this element type"}},
       false,
       {},
       "",
       "application/json",
       {{200, "TunedList", "the entries"}, kBadRequest},
       ""},
      {kListMisses,
       "listMisses",
       "GET",
       "/v1/misses",
       Auth::kPublic,
       "lookup",
       "Buckets lookups asked for that had no row tuned for their hardware key, most asked first",
       {},
       {{"kernel", "string", false, "only this kernel"},
        {"hardware", "string", false, "only hardware keys equal to this or under it (whole key components)"},
        {"offset", "integer", false, "skip this many rows (default 0); pass the previous page's next_offset", 0, 0},
        kLimitParam},
       false,
       {},
       "",
       "application/json",
       {{200, "MissList", "a page of misses"}, kBadRequest},
       "Counts lookups (GET and POST /v1/lookup) answered with source tuned_fallback, nearest or default, per "
       "kernel, dtype, hardware key asked for and bucket. The daemon counts in memory and stores the counts every "
       "few seconds; this list includes every lookup answered before the request. Ordered by count, so pages are "
       "by offset rather than by id."},
      {kListOverrides,
       "listOverrides",
       "GET",
       "/v1/overrides",
       Auth::kPublic,
       "overrides",
       "Overrides (pinned configs)",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "OverrideList", "every override"}, kBadRequest},
       ""},
      {kCreateOverride,
       "createOverride",
       "POST",
       "/v1/overrides",
       Auth::kBearer,
       "overrides",
       "Pin a config for (kernel, hardware, dtype, bucket) with a reason and an optional expiry",
       {},
       {},
       false,
       {},
       "OverrideRequest",
       "application/json",
       {{201, "Override", "stored"}, kBadRequest},
       ""},
      {kDeleteOverride,
       "deleteOverride",
       "DELETE",
       "/v1/overrides/{id}",
       Auth::kBearer,
       "overrides",
       "Remove an override",
       {kIdParam},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "Status", "removed"}, kBadRequest, kNotFound},
       ""},
      {kGetTable,
       "getTable",
       "GET",
       "/v1/tables/{kernel}",
       Auth::kPublic,
       "tables",
       "The generated C++ header for a kernel over the rows lookups serve",
       {kKernelParam},
       {},
       false,
       {},
       "",
       "text/x-c++hdr",
       {{200, "", "the header (Content-Disposition names the file)"}, kBadRequest, kNotFound},
       ""},
      {kCreateBackup,
       "createBackup",
       "POST",
       "/v1/backup",
       Auth::kBearer,
       "operations",
       "Online backup of the database into the backup directory",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{201, "Backup", "the file written"}, kBadRequest},
       ""},
      // The dashboard's aggregates: one request per view, so a page never pages through raw
      // measurements (a sweep plans at most --max-sweep-measurements).
      {kGetSweepLandscape,
       "getSweepLandscape",
       "GET",
       "/v1/sweeps/{id}/landscape",
       Auth::kPublic,
       "dashboard",
       "Every measurement of one bucket of a sweep, column-wise, with the bucket's decision round",
       {kIdParam},
       {{"bucket", "string", false, "bucket id (default: the sweep's first bucket)"}},
       false,
       {},
       "",
       "application/json",
       {{200, "Landscape", "the bucket's measurements"}, kBadRequest, kNotFound},
       ""},
      {kGetSweepBest,
       "getSweepBest",
       "GET",
       "/v1/sweeps/{id}/best",
       Auth::kPublic,
       "dashboard",
       "A sweep's fastest passing config per bucket, with the default config's time and the decision round's choice",
       {kIdParam},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "SweepBest", "one row per bucket"}, kBadRequest, kNotFound},
       ""},
      {kListWinners,
       "listWinners",
       "GET",
       "/v1/winners",
       Auth::kPublic,
       "dashboard",
       "The tuned rows lookups serve with their speedup over the default config, age, staleness and override",
       {},
       {{"kernel", "string", false, "only this kernel"},
        {"dtype", "string", false, "only this element type"},
        {"stale_days", "integer", false, "a row measured longer ago than this is stale (default 90)", 1, 36500}},
       false,
       {},
       "",
       "application/json",
       {{200, "WinnerList", "the rows"}, kBadRequest},
       "A row is stale when its bucket version is not the kernel's current one or it is older than stale_days. "
       "speedup is null when the default config was not measured (and passed) in the row's sweep and bucket, "
       "or the row is the checked-in table's (from_database false)."},
      {kExplainTuned,
       "explainTuned",
       "GET",
       "/v1/tuned/explain",
       Auth::kPublic,
       "dashboard",
       "Why a tuned row holds its config: the bucket's fastest configs with samples, the noise band, the sweep",
       {},
       {{"kernel", "string", true, "kernel name"},
        {"hardware", "string", true, "the row's full hardware key"},
        {"dtype", "string", true, "element type"},
        {"bucket", "string", true, "bucket id"},
        {"top", "integer", false, "fastest configs listed (default 20)", 1, 200}},
       false,
       {},
       "",
       "application/json",
       {{200, "Explain", "the row and the measurements behind it"}, kBadRequest, kNotFound},
       ""},
      {kIngestResults,
       "ingestResults",
       "POST",
       "/v1/results",
       Auth::kBearer,
       "results",
       "Add a batch of another database's results (blocktune push): every sample kept, winners recomputed",
       {},
       {},
       false,
       {},
       "ResultsBatch",
       "application/json",
       {{200, "IngestResult", "applied (or, with replayed true, applied before: nothing was written)"},
        kBadRequest,
        {409, "Error", "the batch_id was applied before with different contents (the message names it)"}},
       "One sweep's identity and provenance (uid, host, hardware profile, tool version) with at most 1000 of its "
       "measurements. Every measurement is checked as a sweep checks what it measures, against the kernel's spec "
       "(a complete config of candidate values that the kernel validates for the bucket on the batch's hardware, "
       "bucket = the bucket of its problem, times finite and in [1e-3, 1e15] ns, counts non-negative, the outcome "
       "consistent with its fields); one bad record refuses the whole batch with a 400 naming it "
       "(measurements[i].field). Safe to retry: a batch_id seen before with the same contents is answered from the "
       "record of its first application (other contents: 409), "
       "and a measurement is stored once per (sweep uid, bucket, config) whichever batch carries it. The tuned "
       "entries of the buckets that gained measurements are recomputed from every sweep of that hardware key "
       "(docs/scale.md)."},
      {kGetKernelSpecSchema,
       "getKernelSpecSchema",
       "GET",
       "/v1/kernel-spec-schema",
       Auth::kPublic,
       "kernels",
       "The JSON Schema of an external kernel spec file (--kernel-dir; docs/external-kernels.md)",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "JsonSchema", "a JSON Schema (draft 2020-12)"}, kBadRequest},
       ""},
      {kReloadKernels,
       "reloadKernels",
       "POST",
       "/v1/kernels/reload",
       Auth::kBearer,
       "kernels",
       "Read the --kernel-dir folders and the tuned rows again (after `blocktune import`, or an edited spec)",
       {},
       {},
       false,
       {},
       "",
       "application/json",
       {{200, "KernelReload", "what changed"},
        {400, "Error", "a spec file does not load; error.path names the file and nothing changed"}},
       "All or nothing: every *.json of every --kernel-dir is parsed first; if one fails (or declares a built-in "
       "kernel, or a kernel another file declares) the answer names it and nothing changes. New kernels are "
       "registered, changed ones replaced (a request that already holds the old spec finishes with it), a removed "
       "file's kernel stays until restart. The tuned rows are then read from the database again, so results another "
       "process wrote there (blocktune import, db merge) are served. SIGHUP does the same."},
  };
}

// One path segment against one template segment: "{id}" takes 1 to 18 digits (what fits an
// int64 without overflow), other "{name}"s 1 to 64 of [A-Za-z0-9_].
bool SegmentMatches(std::string_view tmpl, std::string_view seg) {
  if (tmpl.empty() || tmpl.front() != '{') return tmpl == seg;
  const bool id = tmpl == "{id}";
  if (seg.empty() || seg.size() > (id ? 18u : 64u)) return false;
  for (const char c : seg) {
    const bool digit = c >= '0' && c <= '9';
    const bool word = digit || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (id ? !digit : !word) return false;
  }
  return true;
}

bool PathMatches(std::string_view tmpl, std::string_view path) {
  while (true) {
    const size_t t = tmpl.find('/', 1);
    const size_t p = path.find('/', 1);
    if (tmpl.empty() || path.empty()) return tmpl.empty() && path.empty();
    if (tmpl.front() != '/' || path.front() != '/') return false;
    if (!SegmentMatches(tmpl.substr(1, t == std::string_view::npos ? t : t - 1),
                        path.substr(1, p == std::string_view::npos ? p : p - 1))) {
      return false;
    }
    tmpl = t == std::string_view::npos ? std::string_view() : tmpl.substr(t);
    path = p == std::string_view::npos ? std::string_view() : path.substr(p);
  }
}

[[noreturn]] void Misuse(const Route& r, const std::string& what) {
  std::fprintf(stderr, "api::Url(%.*s): %s\n", static_cast<int>(r.operation_id.size()), r.operation_id.data(),
               what.c_str());
  std::abort();
}

}  // namespace

const std::vector<Route>& Routes() {
  static const std::vector<Route> kRoutes = [] {
    std::vector<Route> routes = MakeRoutes();
    // The table is indexed by Op: a missing, repeated or misplaced row is a programming error.
    if (routes.size() != kOpCount) {
      std::fprintf(stderr, "api::Routes: %zu rows for %zu operations\n", routes.size(), kOpCount);
      std::abort();
    }
    for (size_t i = 0; i < routes.size(); ++i) {
      if (Index(routes[i].op) != i) {
        std::fprintf(stderr, "api::Routes: row %zu is not in Op order\n", i);
        std::abort();
      }
    }
    return routes;
  }();
  return kRoutes;
}

const Route& RouteOf(Op op) { return Routes()[Index(op)]; }

const Route* MatchRoute(std::string_view method, std::string_view path) {
  for (const Route& r : Routes()) {
    if (r.method == method && PathMatches(r.path, path)) return &r;
  }
  return nullptr;
}

bool PathExists(std::string_view path) {
  for (const Route& r : Routes()) {
    if (PathMatches(r.path, path)) return true;
  }
  return false;
}

std::string UrlEncode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    const bool unreserved = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' ||
                            u == '_' || u == '.' || u == '~';
    if (unreserved) {
      out += ch;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", u);
      out += buf;
    }
  }
  return out;
}

std::string Url(Op op, std::initializer_list<std::string_view> path_args,
                const std::vector<std::pair<std::string, std::string>>& query) {
  const Route& r = RouteOf(op);
  if (path_args.size() != r.path_params.size()) Misuse(r, "wrong number of path arguments");
  auto arg = path_args.begin();
  std::string out = ExpandPath(r.path, [&](std::string_view) { return UrlEncode(*arg++); });
  char sep = '?';
  for (const auto& [name, value] : query) {
    bool declared = r.kernel_dims_in_query;
    for (const Param& q : r.query) declared |= q.name == name;
    if (!declared) Misuse(r, "query parameter '" + name + "' is not in the route table");
    out += sep;
    out += UrlEncode(name);
    out += '=';
    out += UrlEncode(value);
    sep = '&';
  }
  return out;
}

}  // namespace blocktune::api
