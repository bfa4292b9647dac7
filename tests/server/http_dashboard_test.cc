// The dashboard over HTTP: pages under /ui/ answer the embedded index.html with a
// Content-Security-Policy and without a token, assets by name, an unknown asset a JSON 404;
// the aggregates its pages read agree with the sweep they summarise.
#include <gtest/gtest.h>
#include <httplib.h>

#include <regex>
#include <set>
#include <string>

#include "server/api/paths.h"
#include "tests/server/http_daemon.h"

namespace blocktune::server {
namespace {

using wire::Json;

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
  // Every module the page loads is embedded and served as JavaScript (a browser refuses a module
  // of another type), and so is every module those import.
  auto index = c.Get("/ui/");
  ASSERT_TRUE(index);
  std::set<std::string> modules;
  const std::regex script(R"re((?:src|href)="/ui/assets/([a-z_]+\.js)")re");
  for (std::sregex_iterator it(index->body.begin(), index->body.end(), script), end; it != end; ++it) {
    if ((*it)[1] != "echarts.min.js") modules.insert((*it)[1].str());
  }
  EXPECT_GE(modules.size(), 7u);  // app.js, common.js and the five pages
  const std::regex imports(R"re(from '\./([a-z_]+\.js)')re");
  for (const std::string& m : modules) {
    auto r = c.Get("/ui/assets/" + m);
    ASSERT_TRUE(r) << m;
    EXPECT_EQ(r->status, 200) << m;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/javascript; charset=utf-8") << m;
    for (std::sregex_iterator it(r->body.begin(), r->body.end(), imports), end; it != end; ++it) {
      EXPECT_TRUE(modules.count((*it)[1].str()))
          << m << " imports " << (*it)[1] << ", which index.html does not preload";
    }
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
