// The OpenAPI 3.1 document served at /v1/openapi.json, generated from the route table so the
// two cannot drift: every route contributes its operationId, path, method, summary,
// parameters, body, security (bearer, or an explicit empty list for public routes) and every
// status its table row names, each error with the shared Error body; the guards' refusals
// before routing are the 4XX catch-all. Component schemas come from the codec files that write
// the bodies (server/wire/), enums from the C++ name lists.
#include "server/openapi.h"

#include <string>

#include "server/api/routes.h"

namespace blocktune::server {
namespace {

using wire::Json;

Json Ref(std::string_view name) { return Json{{"$ref", "#/components/schemas/" + std::string(name)}}; }

Json ParamSchema(const api::Param& p) {
  Json s = p.type == "integer" || p.type == "string" ? Json{{"type", p.type}} : Ref(p.type);
  if (p.minimum != 0 || p.maximum != 0) {
    s["minimum"] = p.minimum;
    if (p.maximum > p.minimum) s["maximum"] = p.maximum;
  }
  return s;
}

Json Parameter(const api::Param& p, const char* in) {
  Json j{{"name", p.name}, {"in", in}, {"required", p.required}, {"schema", ParamSchema(p)}};
  if (!p.description.empty()) j["description"] = p.description;
  return j;
}

Json ErrorContent() { return Json{{"application/json", {{"schema", Ref("Error")}}}}; }

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Json Operation(const api::Route& r) {
  Json op{{"operationId", r.operation_id}, {"summary", r.summary}, {"tags", Json::array({r.tag})}};
  if (!r.description.empty()) op["description"] = r.description;
  // Machine-readable form of "one integer query parameter per kernel dimension", which a
  // static parameter list cannot say (the contract test reads it).
  if (r.kernel_dims_in_query) op["x-kernel-dims-in-query"] = true;
  Json params = Json::array();
  for (const api::Param& p : r.path_params) params.push_back(Parameter(p, "path"));
  for (const api::Param& p : r.query) params.push_back(Parameter(p, "query"));
  for (const api::Param& p : r.headers) {
    Json h = Parameter(p, "header");
    if (p.name == "Idempotency-Key") h["schema"]["maxLength"] = 128;
    params.push_back(h);
  }
  if (!params.empty()) op["parameters"] = params;
  if (!r.request.empty()) {
    op["requestBody"] = {{"required", true}, {"content", {{"application/json", {{"schema", Ref(r.request)}}}}}};
  }
  Json responses = Json::object();
  for (const api::Response& resp : r.responses) {
    Json out{{"description", resp.description}};
    if (resp.schema.empty()) {
      out["content"] = {{std::string(r.content_type), {{"schema", {{"type", "string"}}}}}};
    } else {
      out["content"] = {{"application/json", {{"schema", Ref(resp.schema)}}}};
    }
    responses[std::to_string(resp.status)] = out;
  }
  if (r.auth == api::Auth::kBearer) {
    responses["401"] = {{"description", "missing or wrong bearer token (error.code unauthenticated)"},
                        {"content", ErrorContent()}};
    op["security"] = Json::array({{{"bearer", Json::array()}}});
  } else {
    op["security"] = Json::array();
  }
  responses["4XX"] = {{"description",
                       "refused by a guard before routing: Host not served (421), body framing "
                       "(411, 415), size (413, 414), no route (404, 405)"},
                      {"content", ErrorContent()}};
  responses["5XX"] = {{"description", "server error"}, {"content", ErrorContent()}};
  op["responses"] = responses;
  return op;
}

}  // namespace

Json OpenApiDocument() {
  Json paths = Json::object();
  for (const api::Route& r : api::Routes()) paths[std::string(r.path)][Lower(r.method)] = Operation(r);
  const Json tags = Json::array({
      {{"name", "lookup"}, {"description", "Best block sizes for a problem, and where the answer came from"}},
      {{"name", "sweeps"}, {"description", "Measure every candidate config of a kernel over buckets of shapes"}},
      {{"name", "tuned"}, {"description", "The tuned entries lookups serve"}},
      {{"name", "overrides"}, {"description", "Configs pinned by hand, with a reason and an expiry"}},
      {{"name", "kernels"}, {"description", "The kernels, their parameters and buckets"}},
      {{"name", "hardware"}, {"description", "Hardware profiles"}},
      {{"name", "tables"}, {"description", "Generated C++ headers"}},
      {{"name", "operations"}, {"description", "Health, readiness, metrics, this document, backups"}},
      {{"name", "dashboard"}, {"description", "Read-only aggregates the dashboard at /ui/ draws"}},
  });
  return Json{
      {"openapi", "3.1.0"},
      {"info",
       {{"title", "blocktuned"},
        {"version", "1"},
        {"description",
         "Tuned block sizes for CPU kernels: lookups, sweeps, overrides, tables. Generated from the "
         "route table in server/api/routes.h; see docs/api.md."}}},
      {"servers", Json::array({{{"url", "http://127.0.0.1:8787"}, {"description", "the daemon's default address"}}})},
      {"tags", tags},
      {"paths", paths},
      {"components",
       {{"schemas", wire::ComponentSchemas()},
        {"securitySchemes",
         {{"bearer",
           {{"type", "http"},
            {"scheme", "bearer"},
            {"description", "the daemon's token (var/token or BLOCKTUNE_TOKEN)"}}}}}}}};
}

}  // namespace blocktune::server
