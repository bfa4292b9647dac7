// Reading the route table for requests and URLs: which route a method and path are for (the
// guards' auth decision), and the URL of an operation with its arguments (the CLI); see paths.h.
#include "server/api/paths.h"

#include <cstdio>
#include <cstdlib>

namespace blocktune::server::api {
namespace {

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

}  // namespace blocktune::server::api
