// The OpenAPI 3.0 document served at /v1/openapi.json, generated from the route table so the
// two cannot drift: every route contributes its path, method, summary, parameters, body and
// responses; the component schemas below describe the bodies server/codec writes (the codec
// stays the only code that reads or writes those keys; this file only documents them).
#include <string>

#include "server/http.h"

namespace blocktune::server {
namespace {

using wire::Json;

Json Obj(std::initializer_list<std::pair<const char*, const char*>> props, std::vector<const char*> required = {}) {
  Json p = Json::object();
  for (const auto& [name, type] : props) {
    const std::string t = type;
    if (t.rfind("#", 0) == 0) {
      p[name] = {{"$ref", "#/components/schemas/" + t.substr(1)}};
    } else if (t.rfind("[]", 0) == 0) {
      const std::string item = t.substr(2);
      p[name] = {{"type", "array"},
                 {"items", item.rfind("#", 0) == 0 ? Json{{"$ref", "#/components/schemas/" + item.substr(1)}}
                                                   : Json{{"type", item}}}};
    } else if (t == "map") {
      p[name] = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}}};
    } else {
      p[name] = {{"type", t}};
    }
  }
  Json o{{"type", "object"}, {"properties", p}};
  if (!required.empty()) o["required"] = required;
  return o;
}

Json Schemas() {
  Json s = Json::object();
  s["Error"] = Obj({{"error", "#ErrorBody"}}, {"error"});
  s["ErrorBody"] = Obj({{"code", "string"}, {"message", "string"}, {"path", "string"}}, {"code", "message", "path"});
  s["Status"] = Obj({{"status", "string"}});
  s["Ready"] = Obj({{"status", "string"}, {"detail", "string"}});
  s["OpenApi"] = Obj({{"openapi", "string"}, {"info", "object"}, {"paths", "object"}});
  s["Config"] = {{"type", "object"}, {"additionalProperties", {{"type", "integer"}}},
                 {"description", "block sizes by parameter name, e.g. {\"block_m\": 96}"}};
  s["LookupAnswer"] = Obj({{"kernel", "string"}, {"config", "#Config"}, {"source", "string"}, {"hardware", "string"},
                           {"bucket", "string"}, {"matched_bucket", "string"}, {"median_ns", "number"},
                           {"samples", "integer"}, {"sweep_id", "integer"}, {"measurement_id", "integer"},
                           {"measured_at", "string"}, {"override", "object"}},
                          {"kernel", "config", "source", "hardware", "bucket"});
  s["LookupAnswer"]["properties"]["source"]["enum"] = {"explicit", "override", "tuned", "tuned_fallback", "nearest", "default"};
  s["LookupQuery"] = Obj({{"kernel", "string"}, {"dtype", "string"}, {"dims", "map"}, {"threads", "integer"},
                          {"hardware", "string"}, {"config", "#Config"}},
                         {"kernel", "dims"});
  s["BatchLookupRequest"] = Obj({{"queries", "[]#LookupQuery"}}, {"queries"});
  s["BatchLookupResponse"] = Obj({{"results", "[]object"}});
  s["BatchLookupResponse"]["properties"]["results"]["description"] = "a LookupAnswer or an Error per query, in order";
  s["Kernel"] = Obj({{"name", "string"}, {"description", "string"}, {"params", "[]object"}, {"dims", "[]object"},
                     {"dtypes", "[]string"}, {"bucket_version", "integer"}, {"buckets", "[]object"},
                     {"config_space_size", "integer"}, {"default_config", "#Config"}});
  s["KernelList"] = Obj({{"kernels", "[]#Kernel"}});
  s["Hardware"] = Obj({{"key", "string"}, {"arch", "string"}, {"isa", "string"}, {"vendor", "string"},
                       {"family", "integer"}, {"model", "integer"}, {"model_name", "string"}, {"cores", "integer"},
                       {"l1d_bytes", "integer"}, {"l2_bytes", "integer"}, {"l3_bytes", "integer"},
                       {"threads", "integer"}, {"id", "integer"}, {"first_seen_at", "string"}});
  s["HardwareList"] = Obj({{"host", "#Hardware"}, {"profiles", "[]#Hardware"}});
  s["SweepRequest"] = Obj({{"kernel", "string"}, {"dtype", "string"}, {"shapes", "[]object"}, {"threads", "integer"},
                           {"strategy", "string"}, {"budget", "integer"}, {"seed", "integer"}},
                          {"kernel", "shapes"});
  s["CreatedSweep"] = Obj({{"id", "integer"}, {"status", "string"}, {"created", "boolean"}});
  s["Sweep"] = Obj({{"id", "integer"}, {"kernel", "string"}, {"dtype", "string"}, {"shapes", "[]object"},
                    {"threads", "integer"}, {"strategy", "string"}, {"budget", "integer"}, {"seed", "integer"},
                    {"status", "string"}, {"progress", "object"}, {"eta_seconds", "number"}, {"hardware", "string"},
                    {"error", "string"}, {"created_at", "string"}, {"started_at", "string"}, {"finished_at", "string"}});
  s["SweepList"] = Obj({{"sweeps", "[]#Sweep"}, {"next_after_id", "integer"}});
  s["Measurement"] = Obj({{"id", "integer"}, {"bucket", "string"}, {"problem", "map"}, {"config", "#Config"},
                          {"outcome", "string"}, {"detail", "string"}, {"median_ns", "number"}, {"cv", "number"},
                          {"iterations", "integer"}, {"samples_ns", "[]number"}, {"max_abs_err", "number"},
                          {"max_rel_err", "number"}, {"created_at", "string"}});
  s["MeasurementPage"] = Obj({{"measurements", "[]#Measurement"}, {"next_after_id", "integer"}});
  s["TunedEntry"] = Obj({{"kernel", "string"}, {"hardware", "string"}, {"dtype", "string"}, {"bucket", "string"},
                         {"bucket_version", "integer"}, {"config", "#Config"}, {"median_ns", "number"},
                         {"samples", "integer"}, {"sweep_id", "integer"}, {"measurement_id", "integer"},
                         {"measured_at", "string"}});
  s["TunedList"] = Obj({{"entries", "[]#TunedEntry"}});
  s["OverrideRequest"] = Obj({{"kernel", "string"}, {"hardware", "string"}, {"dtype", "string"}, {"bucket", "string"},
                              {"config", "#Config"}, {"reason", "string"}, {"expires_at", "string"}},
                             {"kernel", "hardware", "bucket", "config", "reason"});
  s["Override"] = Obj({{"id", "integer"}, {"kernel", "string"}, {"hardware", "string"}, {"dtype", "string"},
                       {"bucket", "string"}, {"config", "#Config"}, {"reason", "string"}, {"expires_at", "string"},
                       {"created_at", "string"}});
  s["OverrideList"] = Obj({{"overrides", "[]#Override"}});
  s["Backup"] = Obj({{"path", "string"}, {"bytes", "integer"}});
  return s;
}

Json Ref(const std::string& name) { return Json{{"$ref", "#/components/schemas/" + name}}; }

}  // namespace

Json OpenApiDocument() {
  Json paths = Json::object();
  for (const Route& r : Routes()) {
    Json op{{"summary", r.summary}, {"operationId", std::string(r.method) + " " + r.path}};
    Json params = Json::array();
    std::string_view p = r.path;
    for (size_t open = p.find('{'); open != std::string_view::npos; open = p.find('{', open + 1)) {
      const size_t close = p.find('}', open);
      const std::string name(p.substr(open + 1, close - open - 1));
      params.push_back({{"name", name},
                        {"in", "path"},
                        {"required", true},
                        {"schema", {{"type", name == "id" ? "integer" : "string"}}}});
    }
    std::string_view q = r.query;
    while (!q.empty()) {
      const size_t comma = q.find(',');
      const std::string name(q.substr(0, comma));
      if (name.front() == '<') {
        op["description"] = "Also one integer query parameter per dimension of the kernel (matmul: m, n, k), "
                            "all required; see GET /v1/kernels/{kernel}.";
      } else {
        const bool integer = name == "threads" || name == "after_id" || name == "limit";
        params.push_back({{"name", name}, {"in", "query"}, {"required", name == "kernel"},
                          {"schema", {{"type", integer ? "integer" : "string"}}}});
      }
      if (comma == std::string_view::npos) break;
      q.remove_prefix(comma + 1);
    }
    if (std::string_view(r.path) == "/v1/sweeps" && std::string_view(r.method) == "POST") {
      params.push_back({{"name", "Idempotency-Key"}, {"in", "header"}, {"required", false},
                        {"schema", {{"type", "string"}, {"maxLength", 128}}}});
    }
    if (!params.empty()) op["parameters"] = params;
    if (*r.request) {
      op["requestBody"] = {{"required", true}, {"content", {{"application/json", {{"schema", Ref(r.request)}}}}}};
    }
    Json responses = Json::object();
    Json ok{{"description", "success"}};
    if (*r.response) {
      ok["content"] = {{"application/json", {{"schema", Ref(r.response)}}}};
    } else {
      ok["content"] = {{std::string_view(r.path) == "/metrics" ? "text/plain" : "text/x-c++hdr",
                        {{"schema", {{"type", "string"}}}}}};
    }
    responses[std::to_string(r.success)] = ok;
    const Json err{{"description", "client error"}, {"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
    responses["4XX"] = err;
    if (r.mutating) {
      responses["401"] = {{"description", "missing or wrong bearer token"},
                          {"content", {{"application/json", {{"schema", Ref("Error")}}}}}};
      op["security"] = Json::array({{{"bearer", Json::array()}}});
    }
    op["responses"] = responses;
    std::string method = r.method;
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    paths[r.path][method] = op;
  }
  return Json{{"openapi", "3.0.3"},
              {"info", {{"title", "blocktuned"}, {"version", "1"},
                        {"description", "Tuned block sizes for CPU kernels: lookups, sweeps, overrides, tables."}}},
              {"servers", Json::array({{{"url", "http://127.0.0.1:8787"}}})},
              {"paths", paths},
              {"components", {{"schemas", Schemas()},
                              {"securitySchemes", {{"bearer", {{"type", "http"}, {"scheme", "bearer"}}}}}}}};
}

}  // namespace blocktune::server
