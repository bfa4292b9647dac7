// The bearer token for mutating routes: from BLOCKTUNE_TOKEN, else a file created with a
// random token (0600) on first start, so a fresh install is secure without configuration.
#pragma once

#include <string>

#include "kernels/core/result.h"

namespace blocktune::server {

Result<std::string> LoadOrCreateToken(const std::string& path);

}  // namespace blocktune::server
