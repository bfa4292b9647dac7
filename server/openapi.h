// The OpenAPI 3.1 document served at /v1/openapi.json, generated from the route table
// (server/api/routes.h) and the codec's component schemas (server/wire/).
#pragma once

#include "server/wire/wire.h"

namespace blocktune::server {

wire::Json OpenApiDocument();

}  // namespace blocktune::server
