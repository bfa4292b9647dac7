// The HTTP contract of blocktuned as one declarative table: every operation's id, method, path
// template, auth flag, query and header parameters, request and response schemas and the
// statuses it answers with. Nothing else spells a route. The server binds one handler to each
// Op and installs the table in order (server/http.cc), the guards take the auth decision from
// the matched route (server/api/paths.h), /v1/openapi.json is generated from it
// (server/openapi.cc), and the CLI builds its URLs and decides whether to send the token from
// it (client/cli.cc). Plain C++ with no dependency, so the client links it without the server;
// schema names refer to the component schemas server/wire documents next to the code that
// writes those keys. The rows are in routes.cc; matching and URL building in paths.cc.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace blocktune::server::api {

// One per operation; the table (routes.cc) has exactly one row per Op, in this order.
enum class Op : uint8_t {
  kGetLookup,
  kBatchLookup,
  kGetHealth,
  kGetReady,
  kGetMetrics,
  kGetOpenApi,
  kListKernels,
  kGetKernel,
  kListHardware,
  kGetHostHardware,
  kCreateSweep,
  kListSweeps,
  kGetSweep,
  kCancelSweep,
  kListMeasurements,
  kListTuned,
  kListMisses,
  kListOverrides,
  kCreateOverride,
  kDeleteOverride,
  kGetTable,
  kCreateBackup,
  // Read-only aggregates the dashboard (/ui/) draws; see server/dashboard.h.
  kGetSweepLandscape,
  kGetSweepBest,
  kListWinners,
  kExplainTuned,
  kIngestResults,
  kGetKernelSpecSchema,
  kReloadKernels,
};
inline constexpr size_t kOpCount = static_cast<size_t>(Op::kReloadKernels) + 1;

// kBearer: the request needs `Authorization: Bearer <token>`. Every route that changes state
// is kBearer; batch lookup is a POST only because a list of queries does not fit a URL, and
// stays public.
enum class Auth : uint8_t { kPublic, kBearer };

// A query, path or header parameter. `type` is "integer", "string", or the name of a component
// schema (e.g. "DType", whose enum the codec generates from the C++ list).
struct Param {
  std::string_view name;
  std::string_view type;
  bool required = false;
  std::string_view description;
  int64_t minimum = 0;  // both 0: unbounded
  int64_t maximum = 0;
};

// One documented answer. `schema` is a component schema name; "" means the route's
// non-JSON `content_type` (a string body). Errors use "Error".
struct Response {
  int status;
  std::string_view schema;
  std::string_view description;
};

struct Route {
  Op op;
  std::string_view operation_id;  // URL-safe camelCase, unique: getLookup, createSweep
  std::string_view method;        // GET, POST or DELETE
  std::string_view path;          // template; {id} is a positive integer, other {name}s strings
  Auth auth;
  std::string_view tag;
  std::string_view summary;
  std::vector<Param> path_params;
  std::vector<Param> query;
  // The query also takes one integer parameter per dimension of the kernel named by `kernel`
  // (GET /v1/lookup: m, n, k for matmul); they cannot be listed statically.
  bool kernel_dims_in_query = false;
  std::vector<Param> headers;
  std::string_view request;         // component schema of the JSON body; "" = no body
  std::string_view content_type;    // of the success body
  std::vector<Response> responses;  // success first, then every status the handler answers with
  std::string_view description;     // longer text for the OpenAPI document ("" = none)
};

// Every route, in the order the server matches them (lookups first: they are the hot path).
const std::vector<Route>& Routes();
const Route& RouteOf(Op op);
inline size_t Index(Op op) { return static_cast<size_t>(op); }

}  // namespace blocktune::server::api
