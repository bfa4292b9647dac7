// Lookups over HTTP: answers from every source (default, explicit, tuned, nearest, override),
// misses counted from the answers' sources and listed by GET /v1/misses, the miss counter under
// concurrency and at capacity, and the lookup index's nearest bucket.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>
#include <vector>

#include "tests/server/http_daemon.h"

namespace blocktune::server {
namespace {

using wire::Json;

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

}  // namespace
}  // namespace blocktune::server
