// The blocktune subcommands that talk to blocktuned (and `sweep --local`, which runs the same
// service in-process on the embedded database), one file per resource: sweep_commands.cc (sweep,
// also --from-misses, and sweeps), lookup_commands.cc (lookup, kernels, hardware, tuned, misses),
// override_commands.cc (override), operations_commands.cc (tables download, backup, health,
// metrics). Requests are built and answers read through server/wire, so the CLI spells no JSON
// key. Each Register* returns the exit code of its command that parsed, or -1 if none did.
#pragma once

#include <expected>
#include <functional>
#include <string>
#include <vector>

#include "client/cli.h"
#include "server/misses.h"

namespace blocktune::client {

// Call and print: JSON as received with --json, PrintHuman otherwise.
int Show(const Common& c, const Target& target);
// Every stored miss matching the filter, page by page, until `want` of them pass `keep`.
std::expected<std::vector<server::MissView>, int> FetchMisses(const Common& c, const std::string& kernel,
                                                              const std::string& hardware, int64_t want,
                                                              const std::function<bool(const server::MissView&)>& keep);

std::function<int()> RegisterSweepCommands(CLI::App& app, Common& common);
std::function<int()> RegisterLookupCommands(CLI::App& app, Common& common);
std::function<int()> RegisterOverrideCommands(CLI::App& app, Common& common);
std::function<int()> RegisterOperationsCommands(CLI::App& app, Common& common, CLI::App* tables_cmd);

}  // namespace blocktune::client
