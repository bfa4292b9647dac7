// Sweeps and results over HTTP: idempotency keys, progress, measurements and cancel, the
// creation rate limit (replays of one key cost no token), pushed result batches checked record
// by record with batch ids naming their contents, and stored rows that do not fit their kernel
// kept out of lookups and tables.
#include <gtest/gtest.h>
#include <httplib.h>

#include "tests/server/http_daemon.h"

namespace blocktune::server {
namespace {

using wire::Json;

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

}  // namespace
}  // namespace blocktune::server
