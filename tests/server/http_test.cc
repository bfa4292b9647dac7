// blocktuned in-process on a free port: the route table, the served routes and the OpenAPI
// document agree; every mutating route refuses a missing or wrong token (and changes nothing);
// lookups answer from every source; idempotency keys, rate limits, Host checks and body guards
// hold over real sockets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <set>
#include <thread>

#include "server/handlers/handlers.h"
#include "server/http.h"
#include "server/openapi.h"
#include "server/routes.h"
#include "server/service.h"
#include "server/wire/wire.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::server {
namespace {

using api::Route;
using wire::Json;

bool Bearer(const Route& r) { return r.auth == api::Auth::kBearer; }

constexpr char kToken[] = "test-token-0123456789abcdef";

class Daemon : public ::testing::Test {
 protected:
  void SetUp() override {
    const ServiceOptions options;  // named: g++ 12 warns (maybe-uninitialized) on a temporary here
    StartDaemon(options);
  }

  void StartDaemon(ServiceOptions options) {
    auto store = store::Store::Open(dir_.File("db.sqlite"));
    ASSERT_TRUE(store) << store.error().ToString();
    options.sweep.timing.min_repetition_ns = 1e5;  // 0.1 ms: tests check flow, not speed
    options.sweep.timing.repetitions = 2;
    // Two samples on a loaded core can spread past any CV limit and leave a sweep with no
    // stable config, hence no tuned row; the unstable verdict has its own tests (search_test).
    options.sweep.timing.max_cv = 1e9;
    service_ = std::make_unique<Service>(std::move(*store), dir_.File("db.sqlite"), options);
    ASSERT_TRUE(service_->Start());
    HttpOptions http;
    http.port = 0;
    http.token = kToken;
    http.worker_threads = 8;
    server_ = std::make_unique<HttpServer>(*service_, http);
    auto port = server_->Bind();
    ASSERT_TRUE(port) << port.error().ToString();
    port_ = *port;
    thread_ = std::thread([this] { server_->Run(); });
  }

  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    if (service_) service_->Stop();
    server_.reset();
    service_.reset();
  }

  httplib::Client Client() {
    httplib::Client c("127.0.0.1", port_);
    c.set_connection_timeout(5);
    c.set_read_timeout(30);
    return c;
  }

  httplib::Headers Auth(const std::string& token = kToken) { return {{"Authorization", "Bearer " + token}}; }

  // Sends `method path` with `body` and returns (status, parsed body or null).
  std::pair<int, Json> Send(const std::string& method, const std::string& path, const std::string& body = "",
                            httplib::Headers headers = {}) {
    auto c = Client();
    httplib::Result r = method == "GET"    ? c.Get(path.c_str(), headers)
                        : method == "POST" ? c.Post(path.c_str(), headers, body, "application/json")
                                           : c.Delete(path.c_str(), headers, body, "application/json");
    if (!r) {
      ADD_FAILURE() << method << " " << path << ": " << httplib::to_string(r.error());
      return {0, Json()};
    }
    return {r->status, Json::parse(r->body, nullptr, false)};
  }

  // Sends raw bytes and returns the status of the first response line (0 if none).
  int RawStatus(const std::string& raw) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      ::close(fd);
      return 0;
    }
    (void)!::write(fd, raw.data(), raw.size());
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[64] = {};
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    int status = 0;
    if (n > 12) std::sscanf(buf, "HTTP/1.1 %d", &status);
    return status;
  }

  int64_t CreateTinySweep(const std::string& key = "", int m = 8) {
    httplib::Headers h = Auth();
    if (!key.empty()) h.emplace("Idempotency-Key", key);
    auto [status, body] = Send("POST", "/v1/sweeps",
                               R"({"kernel":"matmul","shapes":[{"m":)" + std::to_string(m) +
                                   R"(,"n":8,"k":8}],"strategy":"random","budget":1})",
                               h);
    EXPECT_TRUE(status == 202 || status == 200) << status << " " << body.dump();
    return body.value("id", int64_t{0});
  }

  test::ScratchDir dir_{"http_test"};
  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  int port_ = 0;
};

// Fills a route's path parameters with plausible values.
std::string ExamplePath(const Route& r, const std::string& id = "1") {
  std::string p(r.path);
  p = std::regex_replace(p, std::regex(R"(\{id\})"), id);
  p = std::regex_replace(p, std::regex(R"(\{kernel\})"), "matmul");
  return p;
}

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
  const Handlers handlers = BindAllHandlers(HandlerContext{service, wire::Limits{}, metrics});
  ASSERT_EQ(api::Routes().size(), api::kOpCount);
  std::set<std::string_view> ids;
  for (size_t i = 0; i < api::kOpCount; ++i) {
    const Route& r = api::Routes()[i];
    EXPECT_EQ(api::Index(r.op), i) << r.operation_id;
    EXPECT_TRUE(static_cast<bool>(handlers[i])) << "no handler for " << r.operation_id;
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

TEST_F(Daemon, LookupAnswersFromEverySource) {
  const std::string host = service_->HostKey(1);
  // default: a hardware key nothing is tuned for.
  auto [s1, def] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&hardware=zz.none");
  ASSERT_EQ(s1, 200) << def.dump();
  EXPECT_EQ(def["source"], "default");
  // explicit: the caller's config, completed with defaults.
  auto [s2, ex] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&config=block_m%3D96");
  ASSERT_EQ(s2, 200) << ex.dump();
  EXPECT_EQ(ex["source"], "explicit");
  EXPECT_EQ(ex["config"]["block_m"], 96);
  // override, then removed.
  auto [s3, pin] = Send("POST", "/v1/overrides",
                        R"({"kernel":"matmul","hardware":"*","bucket":"m8_n8_k8","config":{"block_m":48},)"
                        R"("reason":"pinned for a test","expires_at":"2999-01-01T00:00:00Z"})",
                        Auth());
  ASSERT_EQ(s3, 201) << pin.dump();
  auto [s4, over] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8");
  EXPECT_EQ(over["source"], "override") << over.dump();
  EXPECT_EQ(over["override"]["reason"], "pinned for a test");
  EXPECT_EQ(over["config"]["block_m"], 48);
  // An expired override is not served.
  auto [s5, old] = Send("POST", "/v1/overrides",
                        R"({"kernel":"matmul","hardware":"*","bucket":"m16_n8_k8","config":{"block_m":48},)"
                        R"("reason":"expired","expires_at":"2001-01-01T00:00:00Z"})",
                        Auth());
  ASSERT_EQ(s5, 201);
  EXPECT_NE(Send("GET", "/v1/lookup?kernel=matmul&m=16&n=8&k=8").second["source"], "override");
  ASSERT_EQ(Send("DELETE", "/v1/overrides/" + std::to_string(pin["id"].get<int64_t>()), "", Auth()).first, 200);
  EXPECT_NE(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8").second["source"], "override");
  // tuned after a sweep, and nearest for a bucket the sweep did not cover on a key that has
  // only this database's rows.
  const int64_t id = CreateTinySweep("", 8);
  for (int i = 0; i < 600 && Send("GET", "/v1/sweeps/" + std::to_string(id)).second["status"] != "done"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto [s6, tuned] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8");
  EXPECT_EQ(tuned["source"], "tuned") << tuned.dump();
  EXPECT_EQ(tuned["sweep_id"], id);
  EXPECT_EQ(tuned["hardware"], host);
  EXPECT_EQ(tuned["queried_hardware"], host);
  EXPECT_EQ(tuned["fallback_levels"], 0);
  auto [s7, near] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&hardware=" + host + ".extra");
  EXPECT_EQ(near["source"], "tuned_fallback") << near.dump();
  EXPECT_EQ(near["queried_hardware"], host + ".extra");
  EXPECT_EQ(near["fallback_levels"], 1);
  // The host's rows under another ISA level are not borrowed: the default answers.
  std::string other_isa = host;
  const std::string isa(tables::KeyIsa(host));
  other_isa.replace(other_isa.find("." + isa + "."), isa.size() + 2, isa == "base" ? ".avx2." : ".base.");
  auto [s7b, cross] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&hardware=" + other_isa);
  EXPECT_EQ(cross["source"], "default") << cross.dump();
  EXPECT_EQ(cross["fallback_levels"], 3) << cross.dump();
  // Batch: answers in order, an error in place for the bad query, the rest still answered.
  // A refused query's path names its field in the request's JSON (queries[1].dims.n), as the
  // same refusal by GET names its query parameter (n).
  auto [s8, batch] = Send("POST", "/v1/lookup",
                          R"({"queries":[{"kernel":"matmul","dims":{"m":8,"n":8,"k":8}},)"
                          R"({"kernel":"matmul","dims":{"m":8,"n":-1,"k":8}},)"
                          R"({"kernel":"matmul","dims":{"m":8,"n":8,"k":8},"dtype":"f32","hardware":"zz.none"},)"
                          R"({"kernel":"matmul","dims":{"m":8,"n":8,"k":8},"config":{"block_zz":8}}]})");
  ASSERT_EQ(s8, 200) << batch.dump();
  ASSERT_EQ(batch["results"].size(), 4u);
  EXPECT_EQ(batch["results"][0]["source"], "tuned");
  EXPECT_EQ(batch["results"][1]["error"]["code"], "invalid_argument") << batch.dump();
  EXPECT_EQ(batch["results"][1]["error"]["path"], "queries[1].dims.n") << batch.dump();
  EXPECT_EQ(batch["results"][2]["source"], "default");
  EXPECT_EQ(batch["results"][3]["error"]["path"], "queries[3].config.block_zz") << batch.dump();
  auto [s9, refused] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=-1&k=8");
  EXPECT_EQ(s9, 400) << refused.dump();
  EXPECT_EQ(refused["error"]["path"], "n") << refused.dump();
  auto [s10, unknown] = Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&config=block_zz%3D8");
  EXPECT_EQ(s10, 400) << unknown.dump();
  EXPECT_EQ(unknown["error"]["path"], "config.block_zz") << unknown.dump();
  auto [s11, bad_pin] = Send("POST", "/v1/overrides",
                             R"({"kernel":"matmul","hardware":"*","bucket":"m8_n8_k8","config":{"block_zz":48},)"
                             R"("reason":"unknown block size"})",
                             Auth());
  EXPECT_EQ(s11, 400) << bad_pin.dump();
  EXPECT_EQ(bad_pin["error"]["path"], "config.block_zz") << bad_pin.dump();
}

// Misses are counted from the answers' sources: default and tuned_fallback count, tuned,
// explicit and override do not; GET /v1/misses lists them (pending counts included) most
// counted first, and a bucket swept since is listed with current_source tuned.
TEST_F(Daemon, MissesCountFallbackAndDefaultLookupsButNotTunedHits) {
  const std::string host = service_->HostKey(1);
  const int64_t id = CreateTinySweep("", 8);
  for (int i = 0; i < 600 && Send("GET", "/v1/sweeps/" + std::to_string(id)).second["status"] != "done"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8").second["source"], "tuned");
  for (int i = 0; i < 4; ++i) {  // default: nothing under this key
    ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=7&n=8&k=8&hardware=zz.none").second["source"], "default");
  }
  // tuned_fallback: the sweep's row, one key component up; twice by GET, once in a batch.
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&hardware=" + host + ".extra").second["source"],
              "tuned_fallback");
  }
  auto [bs, batch] = Send("POST", "/v1/lookup",
                          R"({"queries":[{"kernel":"matmul","dims":{"m":8,"n":8,"k":8},"hardware":")" + host +
                              R"(.extra"},{"kernel":"matmul","dims":{"m":8,"n":8,"k":8}},)"
                              R"({"kernel":"matmul","dims":{"m":8,"n":8,"k":8},"config":{"block_m":48}}]})");
  ASSERT_EQ(bs, 200) << batch.dump();
  // Hits that are not misses: tuned (above and in the batch), explicit (batch), override.
  ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&config=block_m%3D48").second["source"], "explicit");

  auto [status, body] = Send("GET", "/v1/misses");
  ASSERT_EQ(status, 200) << body.dump();
  const Json& misses = body["misses"];
  ASSERT_EQ(misses.size(), 2u) << body.dump();
  EXPECT_EQ(misses[0]["hardware"], "zz.none");
  EXPECT_EQ(misses[0]["bucket"], "m8_n8_k8");
  EXPECT_EQ(misses[0]["default"], 4);
  EXPECT_EQ(misses[0]["fallback"], 0);
  EXPECT_EQ(misses[0]["count"], 4);
  EXPECT_EQ(misses[0]["dims"], Json({{"m", 7}, {"n", 8}, {"k", 8}}));  // the first problem counted
  EXPECT_EQ(misses[0]["dtype"], "f32");
  EXPECT_EQ(misses[0]["current_source"], "default");
  EXPECT_FALSE(misses[0]["first_seen_at"].get<std::string>().empty());
  EXPECT_EQ(misses[1]["hardware"], host + ".extra");
  EXPECT_EQ(misses[1]["bucket"], "m8_n8_k8");
  EXPECT_EQ(misses[1]["fallback"], 3);
  EXPECT_EQ(misses[1]["default"], 0);
  EXPECT_EQ(misses[1]["count"], 3);
  EXPECT_EQ(misses[1]["current_source"], "tuned_fallback");
  EXPECT_TRUE(body["next_offset"].is_null());
  for (const Json& m : misses) EXPECT_NE(m["hardware"], host) << "a tuned hit was counted: " << m.dump();

  // More lookups add to the stored rows (the first listing flushed them): m=8 is in the same
  // bucket as m=7, so zz.none still has one row.
  ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8&hardware=zz.none").second["source"], "default");
  auto [s2, again] = Send("GET", "/v1/misses?hardware=zz&limit=1");
  ASSERT_EQ(s2, 200) << again.dump();
  ASSERT_EQ(again["misses"].size(), 1u);
  EXPECT_EQ(again["misses"][0]["hardware"], "zz.none");
  EXPECT_EQ(again["misses"][0]["count"], 5);
  EXPECT_EQ(again["next_offset"], 1);
  auto [s3, second] = Send("GET", "/v1/misses?hardware=zz&limit=1&offset=1");
  ASSERT_EQ(s3, 200);
  EXPECT_TRUE(second["misses"].empty()) << second.dump();
  EXPECT_TRUE(second["next_offset"].is_null());
  auto [s4, other] = Send("GET", "/v1/misses?kernel=flash_attention");
  ASSERT_EQ(s4, 200);
  EXPECT_TRUE(other["misses"].empty());

  // Bad filters are 400s naming the parameter.
  for (const auto& [query, param] : std::vector<std::pair<std::string, std::string>>{{"kernel=nope", "kernel"},
                                                                                     {"limit=0", "limit"},
                                                                                     {"offset=-1", "offset"},
                                                                                     {"hardware=a%20b", "hardware"},
                                                                                     {"dtype=f32", "dtype"}}) {
    auto [bad, err] = Send("GET", std::string("/v1/misses?").append(query));
    EXPECT_EQ(bad, 400) << query << " " << err.dump();
    EXPECT_EQ(err["error"]["path"], param) << query;
  }
}

// Many threads counting at once lose nothing; Take empties the counter.
TEST(MissCounter, ConcurrentCountsAllArriveAndTakeEmpties) {
  MissCounter counter;
  const NamedInts dims({{"m", 1}, {"n", 1}, {"k", 1}});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        // Appended, not "literal" + string: GCC 12's -Wrestrict false positive (see cmake/warnings.cmake).
        const std::string bucket = std::string("b").append(std::to_string(i % 10));
        const std::string key = std::string("hw.t").append(std::to_string(t % 2));
        counter.Count("matmul", DType::kF32, key, bucket,
                      (i / 10) % 2 ? tables::Source::kDefault : tables::Source::kTunedFallback, dims);
        counter.Count("matmul", DType::kF32, "hw.t0", bucket, tables::Source::kTuned, dims);  // not a miss
      }
    });
  }
  for (auto& t : threads) t.join();
  auto taken = counter.Take();
  ASSERT_EQ(taken.size(), 20u);  // 2 keys x 10 buckets
  int64_t total = 0;
  for (const auto& m : taken) {
    EXPECT_EQ(m.count(), 200);  // 2 threads x 100 lookups per bucket
    EXPECT_EQ(m.fallback, 100);
    EXPECT_LE(m.first_seen_at, m.last_seen_at);
    total += m.count();
  }
  EXPECT_EQ(total, 4000);
  EXPECT_TRUE(counter.Take().empty());
  EXPECT_EQ(counter.dropped(), 0);
}

TEST(MissCounter, DropsNewBucketsBeyondItsCapacity) {
  MissCounter counter(16);  // one per shard
  const NamedInts dims;
  for (int i = 0; i < 1000; ++i) {
    counter.Count("matmul", DType::kF32, "hw", std::string("b").append(std::to_string(i)), tables::Source::kDefault,
                  dims);
  }
  const auto taken = counter.Take();
  EXPECT_LE(taken.size(), 16u);
  EXPECT_EQ(static_cast<int64_t>(taken.size()) + counter.dropped(), 1000);
}

TEST(LookupIndex, NearestBucketWhenTheChainHasRowsButNotThisBucket) {
  const KernelSpec* spec = FindKernel("matmul");
  ASSERT_NE(spec, nullptr);
  tuner::TunedEntry near;
  near.kernel = "matmul";
  near.hardware_key = "x.y.t1";
  near.bucket = "m64_n64_k64";
  near.config = NamedInts({{"block_m", 96}, {"block_n", 256}, {"block_k", 128}});
  tuner::TunedEntry far = near;
  far.bucket = "m4096_n4096_k4096";
  far.config = NamedInts({{"block_m", 192}, {"block_n", 512}, {"block_k", 256}});
  tuner::LookupIndex index({far, near}, {});
  auto a = tuner::Lookup(*spec, index, {DType::kF32, NamedInts({{"m", 100}, {"n", 100}, {"k", 50}}), "x.y.t1", {}}, "");
  ASSERT_TRUE(a);
  EXPECT_EQ(a->source, tables::Source::kNearest);
  EXPECT_EQ(a->matched_bucket, "m64_n64_k64");
  EXPECT_EQ(a->bucket, "m128_n128_k64");
  EXPECT_EQ(a->config, near.config);
  // Without the nearest step (what generated headers do) the default answers.
  auto h = tuner::Lookup(*spec, index, {DType::kF32, NamedInts({{"m", 100}, {"n", 100}, {"k", 50}}), "x.y.t1", {}}, "",
                         /*nearest=*/false);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->source, tables::Source::kDefault);
}

TEST_F(Daemon, IdempotencyKeyReturnsTheSameSweep) {
  const int64_t a = CreateTinySweep("key-1");
  const int64_t b = CreateTinySweep("key-1");
  EXPECT_EQ(a, b);
  const int64_t c = CreateTinySweep("key-2");
  EXPECT_NE(a, c);
  auto [status, body] = Send("POST", "/v1/sweeps", R"({"kernel":"matmul","shapes":[{"m":9,"n":8,"k":8}]})", [&] {
    auto h = Auth();
    h.emplace("Idempotency-Key", "key-1");
    return h;
  }());
  EXPECT_EQ(status, 409) << body.dump();
  EXPECT_EQ(Send("GET", "/v1/sweeps").second["sweeps"].size(), 2u);
}

// Issue 26: POST /v1/results checks every record as a sweep would have made it (400 naming the
// record and field, nothing stored), and a batch id names its contents (same: 200 replayed;
// other: 409 naming the batch).
TEST_F(Daemon, PushedBatchesAreCheckedAndBatchIdsNameTheirContents) {
  store::ResultsBatch b;
  b.batch_id = "pushed:1-2";
  b.sweep.uid = "0123456789abcdef26";
  b.sweep.host = "elsewhere";
  b.sweep.request.kernel = "matmul";
  b.sweep.request.shapes = {NamedInts({{"m", 64}, {"n", 64}, {"k", 64}})};
  b.sweep.status = store::SweepStatus::kDone;
  b.sweep.bucket_version = 1;
  b.hardware = HardwareProfile::Detect(1);
  b.sweep.hardware_key = b.hardware.Key();
  for (int64_t bm : {48, 96}) {
    tuner::Measurement m;
    m.bucket = "m64_n64_k64";
    m.problem.dims = NamedInts({{"m", 64}, {"n", 64}, {"k", 64}});
    m.config = NamedInts({{"block_m", bm}, {"block_n", 128}, {"block_k", 128}});
    m.samples_ns = {1000, 1100, 1200};
    m.median_ns = 1100;
    m.iterations = 10;
    m.created_at = "2026-11-27T00:00:00.000Z";
    b.measurements.push_back(m);
  }
  const Json good = wire::EncodeResultsBatch(b);
  Json bad = good;
  bad["measurements"][1]["config"] = Json{{"block_m", -96}, {"block_n", 7}, {"block_k", 0}};
  bad["measurements"][1]["median_ns"] = 1e-305;
  auto [s1, refused] = Send("POST", "/v1/results", bad.dump(), Auth());
  EXPECT_EQ(s1, 400) << refused.dump();
  EXPECT_EQ(refused["error"]["path"], "measurements[1].config.block_m") << refused.dump();
  Json bucket = good;
  bucket["measurements"][0]["bucket"] = "m999_n1_k1";
  auto [s2, refused2] = Send("POST", "/v1/results", bucket.dump(), Auth());
  EXPECT_EQ(s2, 400) << refused2.dump();
  EXPECT_EQ(refused2["error"]["path"], "measurements[0].bucket") << refused2.dump();
  EXPECT_NE(Send("GET", "/v1/lookup?kernel=matmul&m=64&n=64&k=64").second["source"], "tuned");

  auto [s3, first] = Send("POST", "/v1/results", good.dump(), Auth());
  ASSERT_EQ(s3, 200) << first.dump();
  EXPECT_EQ(first["inserted"], 2);
  auto [s4, again] = Send("POST", "/v1/results", good.dump(), Auth());
  ASSERT_EQ(s4, 200) << again.dump();
  EXPECT_EQ(again["replayed"], true);
  Json other = good;
  other["measurements"][0]["samples_ns"] = Json::array({900.0, 950.0, 1000.0});
  auto [s5, conflict] = Send("POST", "/v1/results", other.dump(), Auth());
  EXPECT_EQ(s5, 409) << conflict.dump();
  EXPECT_EQ(conflict["error"]["path"], "batch_id");
  EXPECT_NE(conflict["error"]["message"].get<std::string>().find("pushed:1-2"), std::string::npos) << conflict.dump();
}

// Issue 26: tuned rows a database holds that do not fit their kernel (written by an older build)
// are neither served, exactly or as the nearest bucket, nor published by GET /v1/tables.
TEST_F(Daemon, StoredRowsThatDoNotFitTheirKernelAreNotServed) {
  const int64_t id = CreateTinySweep("", 8);
  for (int i = 0; i < 600 && Send("GET", "/v1/sweeps/" + std::to_string(id)).second["status"] != "done"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8").second["source"], "tuned");
  const std::string host = service_->HostKey(1);
  TearDown();
  {
    auto store = store::Store::Open(dir_.File("db.sqlite"));
    ASSERT_TRUE(store);
    auto row = (*store)->tuned().Get("matmul", host, DType::kF32, "m8_n8_k8");
    ASSERT_TRUE(row && *row);
    tuner::TunedEntry bad = **row;
    bad.bucket = "m128_n128_k128";
    bad.config = NamedInts({{"block_m", -96}, {"block_n", 7}, {"block_k", 0}});
    ASSERT_TRUE((*store)->tuned().Upsert(bad));
    bad.bucket = "m999_n1_k1";  // not canonical: before, `tables generate` refused every row for it
    ASSERT_TRUE((*store)->tuned().Upsert(bad));
  }
  const ServiceOptions options;
  StartDaemon(options);
  for (const char* q : {"m=128&n=128&k=128", "m=999&n=1&k=1", "m=65536&n=1&k=1"}) {
    auto [status, a] = Send("GET", std::string("/v1/lookup?kernel=matmul&") + q);
    ASSERT_EQ(status, 200) << a.dump();
    EXPECT_NE(a["config"]["block_m"], -96) << q << ": " << a.dump();
  }
  EXPECT_EQ(Send("GET", "/v1/lookup?kernel=matmul&m=8&n=8&k=8").second["source"], "tuned");  // the good row still is
  auto c = Client();
  auto header = c.Get("/v1/tables/matmul");
  ASSERT_TRUE(header);
  ASSERT_EQ(header->status, 200);
  EXPECT_EQ(header->body.find("-96"), std::string::npos);
}

TEST_F(Daemon, SweepProgressMeasurementsAndCancel) {
  const int64_t id = CreateTinySweep();
  Json sweep;
  for (int i = 0; i < 600; ++i) {
    sweep = Send("GET", "/v1/sweeps/" + std::to_string(id)).second;
    if (sweep["status"] == "done") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(sweep["status"], "done") << sweep.dump();
  const int64_t total = sweep["progress"]["total"].get<int64_t>();
  EXPECT_EQ(sweep["progress"]["done"], total);
  EXPECT_EQ(sweep["eta_seconds"], 0.0);
  int64_t counted = 0;
  for (auto it = sweep["progress"]["by_outcome"].begin(); it != sweep["progress"]["by_outcome"].end(); ++it) {
    counted += it->get<int64_t>();
  }
  EXPECT_EQ(counted, total);
  // Pages of one: every measurement exactly once, in id order.
  std::set<int64_t> seen;
  int64_t after = 0;
  for (int i = 0; i < 10000; ++i) {
    auto page =
        Send("GET", "/v1/sweeps/" + std::to_string(id) + "/measurements?limit=1&after_id=" + std::to_string(after))
            .second;
    for (const auto& m : page["measurements"]) EXPECT_TRUE(seen.insert(m["id"].get<int64_t>()).second);
    if (page["next_after_id"].is_null()) break;
    after = page["next_after_id"].get<int64_t>();
  }
  EXPECT_EQ(static_cast<int64_t>(seen.size()), total);
  // A finished sweep cannot be cancelled; a missing one is 404.
  EXPECT_EQ(Send("POST", "/v1/sweeps/" + std::to_string(id) + "/cancel", "", Auth()).first, 412);
  EXPECT_EQ(Send("POST", "/v1/sweeps/999/cancel", "", Auth()).first, 404);
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

class RateLimited : public Daemon {
 protected:
  void SetUp() override {
    ServiceOptions o;
    o.sweep_burst = 2;
    o.sweeps_per_minute = 0.5;
    StartDaemon(o);
  }
};

TEST_F(RateLimited, SweepCreationIsRateLimited) {
  CreateTinySweep();
  CreateTinySweep();
  auto [status, body] =
      Send("POST", "/v1/sweeps", R"({"kernel":"matmul","shapes":[{"m":8,"n":8,"k":8}],"budget":1,"strategy":"random"})",
           Auth());
  EXPECT_EQ(status, 429) << body.dump();
  EXPECT_EQ(body["error"]["code"], "resource_exhausted");
}

// Retries of one Idempotency-Key return the first sweep and cost no token, even once the
// tokens are spent, so a client retrying after a lost reply is not throttled by its own retries.
TEST_F(RateLimited, IdempotentReplaysCostNoToken) {
  const int64_t first = CreateTinySweep("retry-key");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(CreateTinySweep("retry-key"), first);
  EXPECT_GT(CreateTinySweep("", 16), first);  // the burst's second token was still there
  const std::string body8 = R"({"kernel":"matmul","shapes":[{"m":8,"n":8,"k":8}],"strategy":"random","budget":1})";
  auto [status, body] = Send("POST", "/v1/sweeps", body8, Auth());
  EXPECT_EQ(status, 429) << body.dump();           // no token left for a new sweep
  EXPECT_EQ(CreateTinySweep("retry-key"), first);  // but a replay still answers
}

// The dashboard: pages under /ui/ answer the embedded index.html with a Content-Security-Policy
// and without a token; assets by name; an unknown asset is a JSON 404. The aggregates its pages
// read agree with the sweep they summarise.
TEST_F(Daemon, ServesTheDashboardAndItsAggregates) {
  auto c = Client();
  for (const char* page : {"/ui/", "/ui/sweeps/1", "/ui/tuned/matmul/f32/x86_64/m8_n8_k8", "/ui/compare"}) {
    auto r = c.Get(page);
    ASSERT_TRUE(r) << page;
    EXPECT_EQ(r->status, 200) << page;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8") << page;
    EXPECT_NE(r->body.find("/ui/assets/app.js"), std::string::npos) << page;
    EXPECT_NE(r->get_header_value("Content-Security-Policy").find("default-src 'none'"), std::string::npos);
  }
  auto redirect = c.Get("/ui");
  ASSERT_TRUE(redirect);
  EXPECT_EQ(redirect->status, 301);
  auto echarts = c.Get("/ui/assets/echarts.min.js");
  ASSERT_TRUE(echarts);
  EXPECT_EQ(echarts->status, 200);
  EXPECT_GT(echarts->body.size(), 500000u);  // the whole library, not a stub
  EXPECT_EQ(echarts->get_header_value("Content-Type"), "application/javascript; charset=utf-8");
  auto licence = c.Get("/ui/assets/echarts-LICENSE.txt");
  ASSERT_TRUE(licence);
  EXPECT_NE(licence->body.find("Apache License"), std::string::npos);
  auto [missing, error] = Send("GET", "/ui/assets/nope.js");
  EXPECT_EQ(missing, 404);
  EXPECT_EQ(error["error"]["code"], "not_found");
  EXPECT_EQ(Send("POST", "/ui/", "{}").first, 401);  // nothing under /ui/ takes a write

  const int64_t id = CreateTinySweep();
  for (int i = 0; i < 600 && Send("GET", "/v1/sweeps/" + std::to_string(id)).second["status"] != "done"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto [page_status, page] = Send("GET", "/v1/sweeps/" + std::to_string(id) + "/measurements?limit=1000");
  ASSERT_EQ(page_status, 200);
  auto [land_status, land] = Send("GET", "/v1/sweeps/" + std::to_string(id) + "/landscape");
  ASSERT_EQ(land_status, 200) << land.dump();
  EXPECT_EQ(land["params"], Json::array({"block_m", "block_n", "block_k"}));
  ASSERT_EQ(land["points"]["id"].size(), page["measurements"].size());
  for (size_t i = 0; i < page["measurements"].size(); ++i) {
    const Json& m = page["measurements"][i];
    EXPECT_EQ(land["points"]["id"][i], m["id"]);
    EXPECT_EQ(land["points"]["columns"]["block_m"][i], m["config"]["block_m"]);
    EXPECT_EQ(land["points"]["outcome"][i], m["outcome"]);
  }
  auto [best_status, best] = Send("GET", "/v1/sweeps/" + std::to_string(id) + "/best");
  ASSERT_EQ(best_status, 200);
  ASSERT_EQ(best["buckets"].size(), 1u);
  EXPECT_EQ(best["buckets"][0]["measured"], page["measurements"].size());
  auto [winners_status, winners] = Send("GET", "/v1/winners?kernel=matmul");
  ASSERT_EQ(winners_status, 200);
  auto [tuned_status, tuned] = Send("GET", "/v1/tuned?kernel=matmul");
  ASSERT_EQ(winners["entries"].size(), tuned["entries"].size());
  int from_db = 0;
  for (const Json& w : winners["entries"]) {
    if (!w["from_database"].get<bool>()) continue;
    ++from_db;
    EXPECT_EQ(w["sweep_id"], id);
    auto [x_status, x] =
        Send("GET", "/v1/tuned/explain?kernel=matmul&hardware=" + api::UrlEncode(w["hardware"].get<std::string>()) +
                        "&dtype=f32&bucket=" + w["bucket"].get<std::string>());
    ASSERT_EQ(x_status, 200) << x.dump();
    EXPECT_EQ(x["winner"]["config"], w["config"]);
    EXPECT_EQ(x["sweep"]["id"], id);
    bool winner_ranked = false;
    for (const Json& r : x["ranked"]) winner_ranked |= r["is_winner"].get<bool>() && r["config"] == w["config"];
    EXPECT_TRUE(winner_ranked) << x.dump();
  }
  EXPECT_EQ(from_db, 1);
  EXPECT_EQ(Send("GET", "/v1/sweeps/" + std::to_string(id) + "/landscape?bucket=nope").first, 404);
  EXPECT_EQ(Send("GET", "/v1/tuned/explain?kernel=matmul&hardware=x&dtype=f32&bucket=y").first, 404);
}

}  // namespace
}  // namespace blocktune::server
