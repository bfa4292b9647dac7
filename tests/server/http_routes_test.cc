// The route table against what is served: the OpenAPI document and the table agree, every
// operation has one row and one handler, URLs are built from the table, blocktuned serves every
// route and the same document; every mutating route refuses a missing or wrong token (and
// changes nothing); requests must have the shape their row declares; Host checks and body
// guards hold over real sockets.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <regex>
#include <set>

#include "server/api/paths.h"
#include "server/handlers/handlers.h"
#include "server/openapi.h"
#include "tests/server/http_daemon.h"

namespace blocktune::server {
namespace {

using api::Route;
using wire::Json;

TEST(OpenApi, DocumentAndRouteTableAgree) {
  const Json doc = OpenApiDocument();
  EXPECT_EQ(doc["openapi"], "3.1.0");
  std::set<std::pair<std::string, std::string>> documented;
  std::set<std::string> operation_ids;
  for (auto it = doc["paths"].begin(); it != doc["paths"].end(); ++it) {
    for (auto m = it->begin(); m != it->end(); ++m) {
      std::string method = m.key();
      for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      documented.emplace(method, it.key());
      EXPECT_TRUE(m->contains("responses")) << it.key();
      // URL-safe and unique operation ids; every operation states its security, [] if public.
      const std::string id = (*m)["operationId"];
      EXPECT_TRUE(std::regex_match(id, std::regex("[a-z][A-Za-z]+"))) << id;
      EXPECT_TRUE(operation_ids.insert(id).second) << id;
      ASSERT_TRUE(m->contains("security")) << id;
      // Every documented error status has the shared Error body (readyz's 503 is its own).
      for (auto r = (*m)["responses"].begin(); r != (*m)["responses"].end(); ++r) {
        if (r.key()[0] < '4' || id == "getReady") continue;
        EXPECT_EQ((*r)["content"]["application/json"]["schema"]["$ref"], "#/components/schemas/Error")
            << id << " " << r.key();
      }
    }
  }
  std::set<std::pair<std::string, std::string>> routed;
  for (const Route& r : api::Routes()) {
    routed.emplace(r.method, r.path);
    // Every schema a route names exists in the document.
    if (!r.request.empty()) {
      EXPECT_TRUE(doc["components"]["schemas"].contains(r.request)) << r.request;
    }
    for (const api::Response& resp : r.responses) {
      if (!resp.schema.empty()) {
        EXPECT_TRUE(doc["components"]["schemas"].contains(resp.schema)) << resp.schema;
      }
    }
    std::string method(r.method);
    for (char& c : method) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Json& op = doc["paths"][std::string(r.path)][method];
    EXPECT_EQ(op["operationId"], r.operation_id);
    EXPECT_EQ(op["security"].empty(), !Bearer(r)) << r.operation_id;
    EXPECT_EQ(op["responses"].contains("401"), Bearer(r)) << r.operation_id;
  }
  EXPECT_EQ(documented, routed);
}

// The enums of the document come from the C++ lists, and the sweep schema has every field the
// codec writes.
TEST(OpenApi, EnumsAndSweepFieldsComeFromTheCode) {
  const Json schemas = OpenApiDocument()["components"]["schemas"];
  EXPECT_EQ(schemas["Strategy"]["enum"].size(), std::size(tuner::kStrategyNames));
  EXPECT_EQ(schemas["Outcome"]["enum"].size(), std::size(tuner::kOutcomeNames));
  EXPECT_EQ(schemas["DType"]["enum"].size(), kDTypeNames.size());
  EXPECT_EQ(schemas["SweepStatus"]["enum"], Json::array({"queued", "running", "done", "failed", "cancelled"}));
  for (const char* field : {"budget_seconds", "environment", "strategy", "eta_seconds"}) {
    EXPECT_TRUE(schemas["Sweep"]["properties"].contains(field)) << field;
  }
  EXPECT_TRUE(schemas["SweepRequest"]["properties"].contains("budget_seconds"));
  EXPECT_EQ(schemas["SweepList"]["properties"]["next_after_id"]["type"], Json::array({"integer", "null"}));
  EXPECT_EQ(schemas["Override"]["properties"]["expires_at"]["type"], Json::array({"string", "null"}));
}

// One handler per operation and one operation per handler: the handler array is indexed by
// Op, every slot is filled, and every Op has exactly one row in the table.
TEST(Routes, EveryOperationHasOneRowAndOneHandler) {
  const std::string dir = ::testing::TempDir() + "/routes_test_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  auto store = store::Store::Open(dir + "/db.sqlite");
  ASSERT_TRUE(store) << store.error().ToString();
  const ServiceOptions options;
  Service service(std::move(*store), dir + "/db.sqlite", options);
  HttpMetrics metrics(api::Routes().size());
  const handlers::Handlers bound =
      handlers::BindAllHandlers(handlers::HandlerContext{service, wire::Limits{}, metrics});
  ASSERT_EQ(api::Routes().size(), api::kOpCount);
  std::set<std::string_view> ids;
  for (size_t i = 0; i < api::kOpCount; ++i) {
    const Route& r = api::Routes()[i];
    EXPECT_EQ(api::Index(r.op), i) << r.operation_id;
    EXPECT_TRUE(static_cast<bool>(bound[i])) << "no handler for " << r.operation_id;
    EXPECT_TRUE(ids.insert(r.operation_id).second) << r.operation_id;
    EXPECT_EQ(api::MatchRoute(r.method, ExamplePath(r)), &r) << r.operation_id;
  }
  std::filesystem::remove_all(dir);
}

TEST(Routes, UrlsAreBuiltFromTheTable) {
  EXPECT_EQ(api::Url(api::Op::kGetSweep, {"7"}), "/v1/sweeps/7");
  EXPECT_EQ(api::Url(api::Op::kListMeasurements, {"7"}, {{"limit", "5"}, {"after_id", "0"}}),
            "/v1/sweeps/7/measurements?limit=5&after_id=0");
  EXPECT_EQ(api::Url(api::Op::kGetLookup, {}, {{"kernel", "matmul"}, {"m", "8"}, {"config", "block_m=96,block_n=4"}}),
            "/v1/lookup?kernel=matmul&m=8&config=block_m%3D96%2Cblock_n%3D4");
  EXPECT_EQ(api::Url(api::Op::kGetTable, {"a b"}), "/v1/tables/a%20b");
  EXPECT_DEATH(api::Url(api::Op::kListSweeps, {}, {{"nope", "1"}}), "not in the route table");
  EXPECT_DEATH(api::Url(api::Op::kGetSweep), "wrong number of path arguments");
  EXPECT_EQ(api::MatchRoute("GET", "/v1/sweeps/12/measurements")->op, api::Op::kListMeasurements);
  EXPECT_EQ(api::MatchRoute("POST", "/v1/lookup")->auth, api::Auth::kPublic);
  EXPECT_EQ(api::MatchRoute("POST", "/v1/sweeps/x/cancel"), nullptr);
  EXPECT_EQ(api::MatchRoute("GET", "/v1/sweeps/1/"), nullptr);
}

TEST_F(Daemon, ServesTheSameOpenApiDocumentAndEveryRoute) {
  auto [status, served] = Send("GET", "/v1/openapi.json");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(served, OpenApiDocument());
  const int64_t id = CreateTinySweep();
  ASSERT_GT(id, 0);
  for (const Route& r : api::Routes()) {
    const std::string path = ExamplePath(r, std::to_string(id));
    std::string url = path;
    if (r.op == api::Op::kGetLookup) url += "?kernel=matmul&m=8&n=8&k=8";
    if (r.op == api::Op::kExplainTuned) {
      // A row lookups serve (the checked-in table's, at least): its four key fields.
      auto [tuned_status, tuned] = Send("GET", "/v1/tuned?kernel=matmul");
      ASSERT_EQ(tuned_status, 200);
      ASSERT_FALSE(tuned["entries"].empty());
      const Json& e = tuned["entries"][0];
      url += "?kernel=matmul&hardware=" + api::UrlEncode(e["hardware"].get<std::string>()) +
             "&dtype=" + e["dtype"].get<std::string>() + "&bucket=" + e["bucket"].get<std::string>();
    }
    std::string body = r.request.empty() ? "" : "{}";
    httplib::Headers h = Bearer(r) ? Auth() : httplib::Headers{};
    auto c = Client();
    httplib::Result res = std::string(r.method) == "GET"    ? c.Get(url.c_str(), h)
                          : std::string(r.method) == "POST" ? c.Post(url.c_str(), h, body, "application/json")
                                                            : c.Delete(url.c_str(), h, body, "application/json");
    ASSERT_TRUE(res) << r.method << " " << url;
    EXPECT_LT(res->status, 500) << r.method << " " << url << " " << res->body;
    // Reached its handler: either success, or the handler's own verdict, never "no route".
    EXPECT_EQ(res->body.find("no route for"), std::string::npos) << r.method << " " << url;
    if (r.request.empty() && r.method == "GET") {
      EXPECT_EQ(res->status, r.responses[0].status) << r.method << " " << url << " " << res->body;
    }
  }
}

TEST_F(Daemon, EveryMutatingRouteRefusesAMissingOrWrongToken) {
  int mutating = 0;
  for (const Route& r : api::Routes()) {
    if (!Bearer(r)) continue;
    ++mutating;
    const std::string path = ExamplePath(r);
    const std::string body =
        std::string(!r.request.empty() ? R"({"kernel":"matmul","shapes":[{"m":8,"n":8,"k":8}],)"
                                         R"("hardware":"*","bucket":"m8_n8_k8","config":{"block_m":48},)"
                                         R"("reason":"x"})"
                                       : "");
    const std::vector<httplib::Headers> bad = {
        {},
        Auth("wrong-token-0123456789abcdef"),
        Auth(std::string(kToken) + "x"),
        Auth(std::string(kToken).substr(1)),
        {{"Authorization", std::string("Basic ") + kToken}},
        {{"Authorization", std::string("bearer ") + kToken}},
        {{"Authorization", "Bearer "}},
    };
    for (const auto& h : bad) {
      auto [status, json] = Send(std::string(r.method), path, body, h);
      EXPECT_EQ(status, 401) << r.method << " " << path;
      EXPECT_EQ(json["error"]["path"], "Authorization") << json.dump();
    }
  }
  EXPECT_GE(mutating, 5);
  // Nothing was created, cancelled, pinned or backed up.
  EXPECT_TRUE(Send("GET", "/v1/sweeps").second["sweeps"].empty());
  EXPECT_TRUE(Send("GET", "/v1/overrides").second["overrides"].empty());
  EXPECT_FALSE(std::filesystem::exists(dir_.File("backups")));
}

// The route table's shape holds before any handler: no body where the route takes none, no
// nameless query parameter, no undeclared one.
TEST_F(Daemon, RequestsMustHaveTheShapeTheTableDeclares) {
  auto [s1, e1] = Send("DELETE", "/v1/overrides/1", "{}", Auth());
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["error"]["path"], "body");
  EXPECT_EQ(Send("POST", "/v1/backup", "x", Auth()).first, 400);
  auto [s2, e2] = Send("GET", "/v1/tuned?&&==&");
  EXPECT_EQ(s2, 400);
  EXPECT_EQ(e2["error"]["path"], "query");
  EXPECT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&=1").first, 400);
  EXPECT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&&").first, 200);
  EXPECT_EQ(Send("GET", "/v1/sweeps?sort=id").first, 400);
}

TEST_F(Daemon, RefusesForeignHostsAndUnsafeBodies) {
  auto c = Client();
  auto evil = c.Get("/healthz", {{"Host", "evil.example"}});
  ASSERT_TRUE(evil);
  EXPECT_EQ(evil->status, 421);
  auto local = c.Get("/healthz", {{"Host", "localhost:1"}});
  ASSERT_TRUE(local);
  EXPECT_EQ(local->status, 200);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(Send("POST", "/v1/sweeps", deep, Auth()).first, 400);
  EXPECT_EQ(Send("POST", "/v1/lookup", deep).first, 400);
  const std::string long_string = R"({"kernel":")" + std::string(100000, 'a') + R"("})";
  EXPECT_EQ(Send("POST", "/v1/sweeps", long_string, Auth()).first, 400);
  // A declared length over the limit is refused from the head alone, before any body byte.
  EXPECT_EQ(RawStatus("POST /v1/sweeps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
                      "\r\nContent-Length: 2097152\r\n\r\n"),
            413);
  EXPECT_EQ(RawStatus("POST /v1/sweeps HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + std::string(kToken) +
                      "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"),
            411);
  auto gz =
      Client().Post("/v1/sweeps", {{"Authorization", std::string("Bearer ") + kToken}, {"Content-Encoding", "gzip"}},
                    std::string("\x1f\x8b\x08\x00", 4), "application/json");
  ASSERT_TRUE(gz);
  EXPECT_EQ(gz->status, 415);
  // Unknown query parameters, bad integers and invalid UTF-8 are 4xx with the error body.
  auto [s1, e1] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&bogus=1");
  EXPECT_EQ(s1, 400);
  EXPECT_EQ(e1["error"]["path"], "bogus");
  EXPECT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=99999999999999999999").first, 400);
  auto [s2, e2] = Send("GET", "/v1/lookup?kernel=%ff%fe&m=8");
  EXPECT_EQ(s2, 400);
  EXPECT_TRUE(e2.is_object()) << "error body must stay valid JSON with invalid UTF-8 echoed";
}

}  // namespace
}  // namespace blocktune::server
