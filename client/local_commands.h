// The blocktune subcommands that work on this machine's libraries, without a daemon: tables
// generate|check (tables_commands.cc), bench and regret (bench_commands.cc), simulate and sweeps
// compare (simulate_commands.cc). Each Register* returns the exit code of its command that
// parsed, or -1 if none did. Exit codes: see client/cli.h.
#pragma once

#include <functional>

#include "client/cli.h"

namespace blocktune::client {

// `tables generate` and `tables check`, under the `tables` command main creates (the service
// commands add `tables download` to it).
std::function<int()> RegisterTablesCommands(CLI::App* tables_cmd, Common& common);
std::function<int()> RegisterBenchCommands(CLI::App& app, Common& common);
// After the service commands: `sweeps compare` joins their `sweeps`.
std::function<int()> RegisterSimulateCommands(CLI::App& app, Common& common);

}  // namespace blocktune::client
