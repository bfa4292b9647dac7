// Shared CLI plumbing; see cli.h.
#include "client/cli.h"

#include <httplib.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/codegen.h"

namespace blocktune::client {

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "blocktune: %s\n", message.c_str());
  return code;
}

Result<std::string> ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Result<std::vector<tuner::TunedEntry>> ReadJsonlFile(const std::string& path, bool missing_ok) {
  auto text = ReadText(path);
  if (!text) {
    if (missing_ok && !std::filesystem::exists(path)) return std::vector<tuner::TunedEntry>{};
    return std::unexpected(text.error());
  }
  auto parsed = codegen::ParseJsonl(*text);
  if (!parsed) return std::unexpected(WithPathPrefix(parsed.error(), path));
  return parsed;
}

Result<std::string> ResolveToken(const Common& c) {
  if (!c.token.empty()) return c.token;
  if (const char* env = std::getenv("BLOCKTUNE_TOKEN"); env != nullptr && *env != '\0') return std::string(env);
  std::ifstream in(c.token_file);
  if (!in) {
    return InvalidArgument("no token to send: cannot read --token-file " + c.token_file + " (" + std::strerror(errno) +
                               "); give --token, BLOCKTUNE_TOKEN or --token-file",
                           "--token-file");
  }
  std::string t;
  std::getline(in, t);
  if (t.empty()) return InvalidArgument("no token to send: --token-file " + c.token_file + " is empty", "--token-file");
  return t;
}

Result<NamedInts> ParseShape(const std::string& text) {
  auto s = NamedInts::Parse(text);
  if (!s) return std::unexpected(WithPathPrefix(s.error(), "--shape"));
  return s;
}

void AddCommon(CLI::App* cmd, Common& c, bool server) {
  if (server) {
    cmd->add_option("--server", c.server, "blocktuned base URL (env BLOCKTUNE_SERVER)")
        ->envname("BLOCKTUNE_SERVER")
        ->capture_default_str();
    cmd->add_option("--token", c.token, "bearer token for mutating requests (env BLOCKTUNE_TOKEN)");
    cmd->add_option("--token-file", c.token_file,
                    "file with the bearer token; a command that needs it stops with exit 2, before sending anything, "
                    "if it cannot be read")
        ->capture_default_str();
  }
  cmd->add_flag("--json", c.json, "print machine-readable JSON");
}

std::expected<HttpReply, int> Call(const Common& c, const Target& target, const CallOptions& options) {
  const server::api::Route& route = server::api::RouteOf(target.op);
  // A route that needs the token is never sent without one: a missing or empty token file is
  // this command's mistake (exit 2), not the server's 401.
  std::string token;
  if (route.auth == server::api::Auth::kBearer) {
    auto t = ResolveToken(c);
    if (!t) {
      Fail(kExitUsage, t.error().message);
      return std::unexpected(kExitUsage);
    }
    token = std::move(*t);
  }
  httplib::Client cli(c.server);
  cli.set_connection_timeout(5);
  cli.set_read_timeout(options.read_timeout_seconds);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!options.ca_cert_file.empty()) cli.set_ca_cert_path(options.ca_cert_file);
#endif
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  if (!options.idempotency_key.empty()) headers.emplace("Idempotency-Key", options.idempotency_key);
  const char* url = target.url.c_str();
  httplib::Result r = route.method == "GET"      ? cli.Get(url, headers)
                      : route.method == "DELETE" ? cli.Delete(url, headers, options.body, "application/json")
                                                 : cli.Post(url, headers, options.body, "application/json");
  if (!r) {
    if (options.quiet) return std::unexpected(kExitUnreachable);
    Fail(kExitUnreachable, "cannot reach " + c.server + ": " + httplib::to_string(r.error()));
    return std::unexpected(kExitUnreachable);
  }
  HttpReply reply;
  reply.status = r->status;
  reply.text = r->body;
  if (!options.raw || r->status >= 400) reply.body = Json::parse(r->body, nullptr, false);
  if (r->status >= 500 && options.quiet) return std::unexpected(kExitServerError);
  if (r->status >= 400) {
    const Json& e = reply.body.is_object() && reply.body.contains("error") ? reply.body["error"] : Json();
    if (c.json) {
      std::printf("%s\n", r->body.c_str());
    } else if (e.is_object()) {
      const std::string where = e.value("path", std::string());
      std::fprintf(stderr, "blocktune: server refused (%d %s): %s%s\n", r->status,
                   e.value("code", std::string()).c_str(), e.value("message", std::string()).c_str(),
                   where.empty() ? "" : (" [" + where + "]").c_str());
    } else {
      std::fprintf(stderr, "blocktune: server returned %d: %s\n", r->status, r->body.c_str());
    }
    return std::unexpected(r->status >= 500 ? kExitServerError : kExitRefused);
  }
  if (!options.raw && reply.body.is_discarded()) {
    Fail(kExitServerError, "server sent a body that is not JSON");
    return std::unexpected(kExitServerError);
  }
  return reply;
}

namespace {
std::string Scalar(const Json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "-";
  if (v.is_object()) {
    // Small flat objects (configs, dims) on one line: a=1,b=2.
    std::string out;
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (!out.empty()) out += ',';
      out += it.key() + "=" + (it->is_structured() ? it->dump() : Scalar(*it));
    }
    return out;
  }
  return v.dump();
}
bool Flat(const Json& v) {
  if (!v.is_structured()) return true;
  for (const auto& x : v) {
    if (x.is_structured()) return false;
  }
  return v.size() <= 12;
}
}  // namespace

int PrintReply(const Common& c, const HttpReply& reply) {
  if (c.json) {
    std::printf("%s\n", reply.text.c_str());
  } else {
    PrintHuman(reply.body);
  }
  return 0;
}

void PrintHuman(const Json& j, int indent) {
  const std::string pad(static_cast<size_t>(indent), ' ');
  if (j.is_array()) {
    bool first = true;
    for (const auto& x : j) {
      if (!first && x.is_object()) std::printf("\n");
      first = false;
      if (x.is_object()) {
        PrintHuman(x, indent);
      } else {
        std::printf("%s%s\n", pad.c_str(), Scalar(x).c_str());
      }
    }
    return;
  }
  if (!j.is_object()) {
    std::printf("%s%s\n", pad.c_str(), Scalar(j).c_str());
    return;
  }
  size_t width = 0;
  for (auto it = j.begin(); it != j.end(); ++it) width = std::max(width, it.key().size());
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (Flat(*it) || (it->is_array() && it->empty())) {
      std::printf("%s%-*s  %s\n", pad.c_str(), static_cast<int>(width), it.key().c_str(),
                  it->is_array() ? [&] {
                    std::string s;
                    for (const auto& x : *it) {
                      if (!s.empty()) s += ' ';
                      s += Scalar(x);
                    }
                    return s;
                  }().c_str()
                                 : Scalar(*it).c_str());
    } else {
      std::printf("%s%s\n", pad.c_str(), it.key().c_str());
      PrintHuman(*it, indent + 2);
    }
  }
}

void PrintBreakdownLine(const tuner::SweepBreakdown& b) {
  const tuner::EvalCosts& e = b.eval;
  std::printf(
      "time: %.1f s wall, %.1f s timed repetitions (efficiency %.2f); calibrate %.1f s, retries %.1f s (%lld), "
      "verify %.1f s, reference %.1f s, setup %.1f s, spawn %.1f s (%lld), transport %.1f s, lost %.1f s, "
      "store %.1f s, search %.1f s, other %.1f s; decision rounds %.1f s\n",
      b.wall_s, e.timed_s, b.Efficiency(), e.calibrate_s, e.retry_s, static_cast<long long>(e.retries), e.verify_s,
      e.reference_s, e.setup_s, e.spawn_s, static_cast<long long>(e.spawns), e.transport_s, e.lost_s, b.store_s,
      b.search_s, b.OtherS(), b.decision_s);
}

std::expected<std::unique_ptr<store::Store>, int> OpenLocalStore(const std::string& path) {
  const std::filesystem::path db(path);
  if (db.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(db.parent_path(), ec);  // Open reports what matters
  }
  auto store = store::Store::Open(path);
  if (!store) return std::unexpected(Fail(kExitDatabase, "cannot open " + path + ": " + store.error().ToString()));
  return std::move(*store);
}

}  // namespace blocktune::client
