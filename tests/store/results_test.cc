// Results from other databases (store/results_table.h, store/results_reader.h): batches applied twice add nothing,
// every sample is kept, winners are recomputed from the pool of every host with one hardware key and never mixed across
// keys, inputs are read without a byte changing, and a newer schema or a foreign file is refused.
#include "store/results_reader.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "store/migrate.h"
#include "store/store.h"
#include "tests/common/scratch_dir.h"

namespace blocktune::store {
namespace {

std::string ReadAll(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

HardwareProfile Hardware(const std::string& isa) {
  HardwareProfile h;
  h.cpu.arch = "x86_64";
  h.cpu.isa = isa;
  h.cpu.vendor = "amd";
  h.cpu.family = 25;
  h.cpu.model = 1;
  h.model_name = "test cpu";
  h.threads = 1;
  return h;
}

tuner::Measurement M(const std::string& config, tuner::Outcome outcome, std::vector<double> samples) {
  tuner::Measurement m;
  m.bucket = "m64_n32_k16";
  m.problem.dims = NamedInts({{"m", 64}, {"n", 32}, {"k", 16}});
  m.config = *NamedInts::Parse(config);
  m.outcome = outcome;
  m.samples_ns = std::move(samples);
  if (!m.samples_ns.empty()) m.median_ns = m.samples_ns[m.samples_ns.size() / 2];
  m.created_at = "2026-11-25T12:00:00.000Z";
  return m;
}

ResultsBatch Batch(const std::string& uid, const std::string& host, const HardwareProfile& hw,
                   std::vector<tuner::Measurement> ms) {
  ResultsBatch b;
  b.batch_id = uid + ":" + std::to_string(ms.size());
  b.sweep.uid = uid;
  b.sweep.host = host;
  b.sweep.request.kernel = "matmul";
  b.sweep.request.shapes = {NamedInts({{"m", 64}, {"n", 32}, {"k", 16}})};
  b.sweep.status = SweepStatus::kDone;
  b.sweep.bucket_version = 1;
  b.sweep.environment.tool_version = "test-1";
  b.sweep.hardware_key = hw.Key();
  b.hardware = hw;
  b.measurements = std::move(ms);
  return b;
}

int64_t Count(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

class ResultsTest : public ::testing::Test {
 protected:
  test::ScratchDir dir_{"blocktune_results_test"};
};

TEST_F(ResultsTest, ApplyTwiceAddsNothingAndKeepsEverySample) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  const auto hw = Hardware("avx2");
  ResultsBatch b = Batch("aaaaaaaa01", "host-a", hw,
                         {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 11, 12}),
                          M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {8, 9, 30}),
                          M("block_m=144,block_n=128,block_k=128", tuner::Outcome::kInvalid, {})});
  auto first = (*st)->results().Apply(b);
  ASSERT_TRUE(first) << first.error().ToString();
  EXPECT_EQ(first->inserted, 3);
  EXPECT_FALSE(first->replayed);
  EXPECT_EQ(first->winners, 1);
  auto again = (*st)->results().Apply(b);  // the same batch id: answered from ingest_batches
  ASSERT_TRUE(again);
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->inserted, 3);
  b.batch_id = "recut";  // the same measurements in a batch cut differently: keyed by (uid, bucket, config)
  auto recut = (*st)->results().Apply(b);
  ASSERT_TRUE(recut);
  EXPECT_FALSE(recut->replayed);
  EXPECT_EQ(recut->inserted, 0);
  st->reset();
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM measurements"), 3);
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM samples"), 6);
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM sweeps WHERE imported = 1 AND host = 'host-a'"), 1);
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM sweeps WHERE tool_version = 'test-1'"), 1);
}

TEST_F(ResultsTest, OneProfileFromTwoHostsPoolsAndProfilesStayApart) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  const auto avx2 = Hardware("avx2");
  const auto avx512 = Hardware("avx512");
  // Host a: config A fast (10), B slower (20). Host b, same profile: A slow (40, 40, 40), B 21.
  // Pooled: A's samples {10,10,10,40,40,40,40} -> median 40; B's {20,20,20,21,21,21,21} -> 21.
  ASSERT_TRUE(
      (*st)->results().Apply(Batch("aaaaaaaa02", "host-a", avx2,
                                   {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 10, 10}),
                                    M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {20, 20, 20})})));
  auto tuned = (*st)->tuned().Get("matmul", avx2.Key(), DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(tuned && *tuned);
  EXPECT_EQ((*tuned)->config.ToString(), "block_m=48,block_n=128,block_k=128");
  ASSERT_TRUE(
      (*st)->results().Apply(Batch("bbbbbbbb02", "host-b", avx2,
                                   {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {40, 40, 40, 40}),
                                    M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {21, 21, 21, 21})})));
  tuned = (*st)->tuned().Get("matmul", avx2.Key(), DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(tuned && *tuned);
  EXPECT_EQ((*tuned)->config.ToString(), "block_m=96,block_n=128,block_k=128");
  EXPECT_EQ((*tuned)->samples, 7);
  EXPECT_DOUBLE_EQ((*tuned)->median_ns, 21);
  // Another profile: its own row, which the avx2 measurements do not touch, and vice versa.
  ASSERT_TRUE((*st)->results().Apply(Batch(
      "cccccccc02", "host-c", avx512, {M("block_m=144,block_n=128,block_k=128", tuner::Outcome::kOk, {5, 5, 5})})));
  auto other = (*st)->tuned().Get("matmul", avx512.Key(), DType::kF32, "m64_n32_k16");
  ASSERT_TRUE(other && *other);
  EXPECT_EQ((*other)->config.ToString(), "block_m=144,block_n=128,block_k=128");
  tuned = (*st)->tuned().Get("matmul", avx2.Key(), DType::kF32, "m64_n32_k16");
  EXPECT_EQ((*tuned)->config.ToString(), "block_m=96,block_n=128,block_k=128");
  // A config that failed verification anywhere is out, however fast it ran elsewhere.
  ASSERT_TRUE((*st)->results().Apply(Batch(
      "dddddddd02", "host-d", avx2, {M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kWrongResult, {})})));
  tuned = (*st)->tuned().Get("matmul", avx2.Key(), DType::kF32, "m64_n32_k16");
  EXPECT_EQ((*tuned)->config.ToString(), "block_m=48,block_n=128,block_k=128");
}

TEST_F(ResultsTest, FingerprintsTravelWithMeasurementsAndReachTheWinner) {
  // Measurements keep the build that measured them through a push (Apply) and a read back
  // (ResultsReader, what `blocktune push` and `db merge` send), and the bucket's recomputed row
  // carries its winning measurement's fingerprint; a measurement without one stays unknown.
  const std::string src = dir_.File("src.db");
  const auto hw = Hardware("avx2");
  auto fast = M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 10, 10});
  fast.fingerprint = "00112233aabbccdd";
  auto slow = M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {20, 20, 20});  // unknown
  {
    auto st = Store::Open(src);
    ASSERT_TRUE(st);
    ASSERT_TRUE((*st)->results().Apply(Batch("ffffffff05", "host-a", hw, {fast, slow})));
    auto tuned = (*st)->tuned().Get("matmul", hw.Key(), DType::kF32, "m64_n32_k16");
    ASSERT_TRUE(tuned && *tuned);
    EXPECT_EQ((*tuned)->config.ToString(), "block_m=48,block_n=128,block_k=128");
    EXPECT_EQ((*tuned)->fingerprint, "00112233aabbccdd");
  }
  EXPECT_EQ(Count(src, "SELECT COUNT(*) FROM measurements WHERE fingerprint = '00112233aabbccdd'"), 1);
  EXPECT_EQ(Count(src, "SELECT COUNT(*) FROM measurements WHERE fingerprint IS NULL"), 1);
  auto reader = ResultsReader::Open(src);
  ASSERT_TRUE(reader) << reader.error().ToString();
  std::vector<std::string> read;
  ASSERT_TRUE((*reader)->ForEachBatch(100, [&](const ResultsBatch& b) -> Status {
    for (const auto& m : b.measurements) read.push_back(m.config.ToString() + " " + m.fingerprint);
    return {};
  }));
  EXPECT_EQ(read, (std::vector<std::string>{"block_m=48,block_n=128,block_k=128 00112233aabbccdd",
                                            "block_m=96,block_n=128,block_k=128 "}));
}

TEST_F(ResultsTest, MalformedBatchesAreRefusedNamingTheField) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  ResultsBatch b = Batch("short", "h", Hardware("avx2"), {});
  auto r = (*st)->results().Apply(b);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "sweep.uid");
  b = Batch("aaaaaaaa03", "h", Hardware("avx2"), {});
  b.hardware = Hardware("avx512");
  r = (*st)->results().Apply(b);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "hardware");
  b = Batch("aaaaaaaa03", "h", Hardware("avx2"),
            {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {1}),
             M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {1})});
  r = (*st)->results().Apply(b);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().path, "measurements[1].config");
}

TEST_F(ResultsTest, ReaderLeavesItsInputUntouchedAndRefusesNewerOrForeignFiles) {
  const std::string src = dir_.File("src.db");
  {
    auto st = Store::Open(src);
    ASSERT_TRUE(st);
    ASSERT_TRUE(
        (*st)->results().Apply(Batch("aaaaaaaa04", "host-a", Hardware("avx2"),
                                     {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {1, 2, 3})})));
  }
  const std::string before = ReadAll(src);
  {
    auto reader = ResultsReader::Open(src);
    ASSERT_TRUE(reader) << reader.error().ToString();
    int64_t batches = 0, measurements = 0, samples = 0;
    ASSERT_TRUE((*reader)->ForEachBatch(100, [&](const ResultsBatch& b) -> Status {
      ++batches;
      measurements += static_cast<int64_t>(b.measurements.size());
      for (const auto& m : b.measurements) samples += static_cast<int64_t>(m.samples_ns.size());
      EXPECT_EQ(b.sweep.host, "host-a");
      EXPECT_EQ(b.sweep.uid, "aaaaaaaa04");
      return {};
    }));
    EXPECT_EQ(batches, 1);
    EXPECT_EQ(measurements, 1);
    EXPECT_EQ(samples, 3);
  }
  EXPECT_EQ(ReadAll(src), before);
  EXPECT_FALSE(std::filesystem::exists(src + "-wal"));

  // One schema version ahead of this build: refused, and the file is still what it was.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(src.c_str(), &db), SQLITE_OK);
    const std::string sql = "PRAGMA user_version = " + std::to_string(LatestSchemaVersion() + 1);
    ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string newer = ReadAll(src);
  auto refused = ResultsReader::Open(src);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::kFailedPrecondition);
  EXPECT_EQ(ReadAll(src), newer);

  std::ofstream(dir_.File("junk.db")) << "not a database at all, just text that is long enough to be a header";
  auto junk = ResultsReader::Open(dir_.File("junk.db"));
  ASSERT_FALSE(junk);
  EXPECT_EQ(junk.error().code, ErrorCode::kDataLoss);
}

// Issue 26: a pushed or merged measurement is checked as a sweep checks what it measures (the
// kernel spec: complete config, candidate values, the spec's validation on the bucket's
// problem, the bucket function), with times, samples and counts in range and the outcome
// consistent with its fields. One bad record refuses the whole batch, naming record and field.
TEST_F(ResultsTest, ABatchWithAnyBadRecordIsRefusedWholeNamingRecordAndField) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  const auto hw = Hardware("avx2");
  using Edit = std::function<void(tuner::Measurement&)>;
  const auto config = [](const char* text) {
    return [text](tuner::Measurement& m) { m.config = *NamedInts::Parse(text); };
  };
  const struct {
    const char* what;
    Edit edit;
    const char* path;
  } cases[] = {
      {"issue's config {-96, 7, 0}", config("block_m=-96,block_n=7,block_k=0"), "measurements[1].config.block_m"},
      {"block_m not a candidate", config("block_m=7,block_n=128,block_k=128"), "measurements[1].config.block_m"},
      {"extra parameter", config("block_m=48,block_n=128,block_k=128,block_z=1"), "measurements[1].config.block_z"},
      {"partial config", config("block_m=48,block_n=128"), "measurements[1].config.block_k"},
      {"bucket not its problem's", [](tuner::Measurement& m) { m.bucket = "m999_n1_k1"; }, "measurements[1].bucket"},
      {"problem out of range", [](tuner::Measurement& m) { m.problem.dims.Set("m", 0); }, "measurements[1].problem.m"},
      {"negative median", [](tuner::Measurement& m) { m.median_ns = -5; }, "measurements[1].median_ns"},
      {"zero median", [](tuner::Measurement& m) { m.median_ns = 0; }, "measurements[1].median_ns"},
      {"median 1e-305", [](tuner::Measurement& m) { m.median_ns = 1e-305; }, "measurements[1].median_ns"},
      {"median 1e308", [](tuner::Measurement& m) { m.median_ns = 1e308; }, "measurements[1].median_ns"},
      {"infinite median", [](tuner::Measurement& m) { m.median_ns = std::numeric_limits<double>::infinity(); },
       "measurements[1].median_ns"},
      {"negative sample", [](tuner::Measurement& m) { m.samples_ns[1] = -5; }, "measurements[1].samples_ns[1]"},
      {"zero sample", [](tuner::Measurement& m) { m.samples_ns[2] = 0; }, "measurements[1].samples_ns[2]"},
      {"NaN sample", [](tuner::Measurement& m) { m.samples_ns[0] = std::nan(""); }, "measurements[1].samples_ns[0]"},
      {"cv -1", [](tuner::Measurement& m) { m.cv = -1; }, "measurements[1].cv"},
      {"iterations -7", [](tuner::Measurement& m) { m.iterations = -7; }, "measurements[1].iterations"},
      {"negative error", [](tuner::Measurement& m) { m.max_abs_err = -1; }, "measurements[1].max_abs_err"},
      {"ok beyond the tolerance", [](tuner::Measurement& m) { m.max_rel_err = 3; }, "measurements[1].max_rel_err"},
      {"invalid with samples", [](tuner::Measurement& m) { m.outcome = tuner::Outcome::kInvalid; },
       "measurements[1].samples_ns"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto bad = M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 11, 12});
    bad.iterations = 3;
    c.edit(bad);
    ResultsBatch b = Batch("aaaaaaaa26", "host-a", hw,
                           {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 11, 12}), bad});
    auto r = (*st)->results().Apply(b);
    ASSERT_FALSE(r) << "accepted";
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << r.error().ToString();
    EXPECT_EQ(r.error().path, c.path) << r.error().ToString();
  }
  st->reset();
  // Refused whole: not even the good first record, no tuned row, no batch record.
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM measurements"), 0);
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM tuned_entries"), 0);
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM ingest_batches"), 0);
}

// Failures stay data: a candidate config recorded as invalid (it never ran, no samples) is
// accepted beside an ok one.
TEST_F(ResultsTest, FailuresThatAreCandidatesAreAccepted) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  auto invalid = M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kInvalid, {});
  auto ok = M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 11, 12});
  auto r = (*st)->results().Apply(Batch("aaaaaaaa27", "host-a", Hardware("avx2"), {invalid, ok}));
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->inserted, 2);
}

// A batch id names its contents: the same id again with the same contents is a replay (200,
// nothing written), with other contents a conflict that names the batch (409), never a silent
// drop of the new data.
TEST_F(ResultsTest, AReusedBatchIdWithOtherContentsIsAConflict) {
  auto st = Store::Open(dir_.File("out.db"));
  ASSERT_TRUE(st);
  const auto hw = Hardware("avx2");
  ResultsBatch b =
      Batch("aaaaaaaa28", "host-a", hw, {M("block_m=48,block_n=128,block_k=128", tuner::Outcome::kOk, {10, 11, 12})});
  b.batch_id = "aaaaaaaa28:1-1";
  ASSERT_TRUE((*st)->results().Apply(b));
  auto same = (*st)->results().Apply(b);
  ASSERT_TRUE(same) << same.error().ToString();
  EXPECT_TRUE(same->replayed);
  // The sweep's status moves on between two pushes of one batch (running, then done): the
  // measurements are the contents, so that is still a replay.
  ResultsBatch later = b;
  later.sweep.status = SweepStatus::kRunning;
  auto moved = (*st)->results().Apply(later);
  ASSERT_TRUE(moved) << moved.error().ToString();
  EXPECT_TRUE(moved->replayed);
  ResultsBatch other = b;
  other.measurements[0].samples_ns = {5, 6, 7};
  other.measurements[0].median_ns = 6;
  auto conflict = (*st)->results().Apply(other);
  ASSERT_FALSE(conflict) << "a reused batch id with other contents was answered as a replay";
  EXPECT_EQ(conflict.error().code, ErrorCode::kAlreadyExists);
  EXPECT_EQ(conflict.error().path, "batch_id");
  EXPECT_NE(conflict.error().message.find("aaaaaaaa28:1-1"), std::string::npos) << conflict.error().message;
  other.measurements.push_back(M("block_m=96,block_n=128,block_k=128", tuner::Outcome::kOk, {1, 2, 3}));
  EXPECT_FALSE((*st)->results().Apply(other));
  st->reset();
  EXPECT_EQ(Count(dir_.File("out.db"), "SELECT COUNT(*) FROM measurements"), 1);
}

}  // namespace
}  // namespace blocktune::store
