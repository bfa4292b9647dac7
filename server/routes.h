// The HTTP contract of blocktuned as one declarative table: every operation's id, method, path
// template, auth flag, query and header parameters, request and response schemas and the
// statuses it answers with. Nothing else spells a route. The server binds one handler to each
// Op and installs the table in order (server/http.cc), the guards take the auth decision from
// the matched route, /v1/openapi.json is generated from it (server/openapi.cc), and the CLI
// builds its URLs and decides whether to send the token from it (client/cli.cc). Plain C++ with
// no dependency, so the client links it without the server; schema names refer to the
// component schemas server/wire documents next to the code that writes those keys.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace blocktune::api {

// One per operation; the table below has exactly one row per Op, in this order.
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

// The route a request is for: method and path (no query) matched against the templates;
// nullptr if none. Used by the guards for the auth decision before routing.
const Route* MatchRoute(std::string_view method, std::string_view path);
// Path and query without a route: 404, or 405 when the path exists for another method.
bool PathExists(std::string_view path);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view s);

// `path_template` with each {name} replaced by fill(name), the literal parts copied: the one
// walk over a template that Url (arguments) and the server (match patterns) both use.
template <typename Fill>
std::string ExpandPath(std::string_view path_template, Fill&& fill) {
  std::string out;
  while (!path_template.empty()) {
    const size_t open = path_template.find('{');
    if (open == std::string_view::npos) {
      out += path_template;
      break;
    }
    out += path_template.substr(0, open);
    const size_t close = path_template.find('}', open);
    out += fill(path_template.substr(open + 1, close - open - 1));
    path_template.remove_prefix(close + 1);
  }
  return out;
}

// The URL path of `op` with its path parameters filled in order ({id} then ...), each
// percent-encoded, followed by "?name=value&..." for `query` (pairs kept in order, values
// percent-encoded). Aborts on a wrong number of path arguments or on a query name the route
// does not declare: both are programming errors that must not reach the wire.
std::string Url(Op op, std::initializer_list<std::string_view> path_args = {},
                const std::vector<std::pair<std::string, std::string>>& query = {});

}  // namespace blocktune::api
