// The blocktune subcommands that talk to blocktuned, registered in --help's order; the commands
// themselves are in one file per resource (see service_commands.h).
#include "client/service_commands.h"

namespace blocktune::client {

// Call and print: JSON as received with --json, PrintHuman otherwise.
int Show(const Common& c, const Target& target) {
  auto got = Call(c, target);
  if (!got) return got.error();
  return PrintReply(c, *got);
}

std::function<int()> RegisterServiceCommands(CLI::App& app, Common& common, CLI::App* tables_cmd) {
  std::vector<std::function<int()>> groups = {RegisterSweepCommands(app, common), RegisterLookupCommands(app, common),
                                              RegisterOverrideCommands(app, common),
                                              RegisterOperationsCommands(app, common, tables_cmd)};
  return [groups]() -> int {
    for (const auto& g : groups) {
      if (const int rc = g(); rc >= 0) return rc;
    }
    return -1;
  };
}

}  // namespace blocktune::client
