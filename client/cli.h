// What every blocktune subcommand shares: the common flags (--server, --token, --token-file,
// --json), exit codes, and one HTTP call that maps failures to those codes and prints the
// server's error body.
//
// Exit codes: 0 success, 1 the operation failed (sweep failed or cancelled, verification
// failed, tables out of date with --check), 2 bad command line, 3 server unreachable, 4 server
// refused the request (4xx; the error body is printed), 5 server error (5xx or a malformed
// answer), 6 local database problem (--local, backup --db).
#pragma once

#include <CLI/CLI.hpp>

#include <expected>
#include <string>

#include "kernels/core/config.h"
#include "server/api/paths.h"
#include "server/wire/wire.h"
#include "store/store.h"

namespace blocktune::client {

using server::wire::Json;

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr int kExitUnreachable = 3;
constexpr int kExitRefused = 4;
constexpr int kExitServerError = 5;
constexpr int kExitDatabase = 6;

struct Common {
  std::string server = "http://127.0.0.1:8787";
  std::string token;
  std::string token_file = "var/token";
  bool json = false;
  // --kernel-dir (env BLOCKTUNE_KERNEL_DIR): external kernel specs loaded at start-up, absolute.
  std::vector<std::string> kernel_dirs;
};

int Fail(int code, const std::string& message);
// The token for a route that needs one: --token, else BLOCKTUNE_TOKEN, else the first line of
// --token-file; an error naming the file if it cannot be read or is empty.
Result<std::string> ResolveToken(const Common& c);
// A whole file's bytes; NotFound naming the path when it cannot be read.
Result<std::string> ReadText(const std::string& path);
// Tuned rows of a tuned_entries.jsonl file (errors prefixed with the path); a missing file is
// an empty table when `missing_ok`.
Result<std::vector<tuner::TunedEntry>> ReadJsonlFile(const std::string& path, bool missing_ok = false);
Result<NamedInts> ParseShape(const std::string& text);
void AddCommon(CLI::App* cmd, Common& c, bool server);
// Opens (creating if missing, with its folder) the local database of --local, import and merge;
// a failure is printed and returned as kExitDatabase.
std::expected<std::unique_ptr<store::Store>, int> OpenLocalStore(const std::string& path);

struct HttpReply {
  int status = 0;
  Json body;         // parsed JSON (null when raw)
  std::string text;  // the body as received
};

struct CallOptions {
  std::string body;
  std::string idempotency_key;
  bool raw = false;  // the answer is not JSON (tables, metrics)
  int read_timeout_seconds = 120;
  bool quiet = false;        // do not print an unreachable server or a 5xx (the caller retries or reports it)
  std::string ca_cert_file;  // https: trust this PEM file (e.g. a site's own CA) instead of the system's
};

// An operation of the route table and its URL (path parameters filled in, query appended),
// built by server::api::Url from the table, which refuses a query parameter the route does not declare.
struct Target {
  server::api::Op op;
  std::string url;
};
inline Target To(server::api::Op op, std::initializer_list<std::string_view> path_args = {},
                 const std::vector<std::pair<std::string, std::string>>& query = {}) {
  return Target{op, server::api::Url(op, path_args, query)};
}

// Sends the operation with the route's method; the token goes with it exactly when the route
// table marks the route kBearer. Errors are printed (the server's error body with --json) and
// returned as an exit code.
std::expected<HttpReply, int> Call(const Common& c, const Target& target, const CallOptions& options = {});

// Prints any JSON value for people: objects as aligned "key  value" lines, arrays of objects as
// blocks separated by blank lines. Keys come from the document, so no key is spelled here.
void PrintHuman(const Json& j, int indent = 0);
// A successful reply: the server's JSON verbatim with --json, PrintHuman otherwise; returns 0.
int PrintReply(const Common& c, const HttpReply& reply);
// One line for people: a sweep's efficiency and its largest phases (tuner/breakdown.h).
void PrintBreakdownLine(const tuner::SweepBreakdown& b);
// Whether a sweep's status (wire) is one it never leaves: done, failed or cancelled.
inline bool SweepFinished(const std::string& status) {
  return status == "done" || status == "failed" || status == "cancelled";
}

// Registers sweep, sweeps, lookup, kernels, hardware, tuned, misses, override, tables download, backup,
// health and metrics. Returns the exit code of the command that parsed, or -1 if none did.
std::function<int()> RegisterServiceCommands(CLI::App& app, Common& common, CLI::App* tables_cmd);
// Registers `db merge` and `push` (client/results_commands.cc); same convention.
std::function<int()> RegisterResultsCommands(CLI::App& app, Common& common);

// Registers `import kerneltuner|t4|clblast FILE` and `export kerneltuner|t4|csv` (client/import_commands.cc);
// the returned function gives -1 if none of them parsed.
std::function<int()> RegisterImportCommands(CLI::App& app, Common& common);

// Registers `adapt` (client/adapt_command.cc); same convention.
std::function<int()> RegisterAdaptCommand(CLI::App& app, Common& common);

}  // namespace blocktune::client
