// Reading the route table (routes.h) for requests and URLs: the route a method and path are
// for, and an operation's URL with its path and query arguments. The server's router, the guards
// and the CLI all walk the path templates through these, so the three agree on what a route's
// URL is.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "server/api/routes.h"

namespace blocktune::server::api {

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

}  // namespace blocktune::server::api
