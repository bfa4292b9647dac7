// Migration 0016 (device keys): keys imports wrote before device keys (cuda.nvidia.a100_pcie_40gb,
// hip.amd.instinct_mi250x, an override's cuda.nvidia) become device keys in every table that
// holds one; two old keys that make one new key (an A100 PCIe and an A100 SXM4) become one
// profile, their sweeps with it, and the faster tuned row stays; CPU keys are untouched; sweeps
// gain the device column. On the release database of tests/data (docs there), migrated to 0014
// and given legacy keys by hand.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "store/migrate.h"
#include "store/store.h"

namespace blocktune::store {
namespace {

class MigrateDeviceKeysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("blocktune_migrate_device_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "t.db").string();
    std::filesystem::copy_file(std::string(BLOCKTUNE_SOURCE_DIR) + "/tests/data/store_release_9620d5f.db", path_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void Exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "") << "\n" << sql;
    sqlite3_free(err);
    sqlite3_close(db);
  }
  // Every row of a one-column query, as text.
  std::multiset<std::string> Texts(const std::string& sql) {
    std::multiset<std::string> out;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK) << sql << ": " << sqlite3_errmsg(db);
    while (sqlite3_step(st) == SQLITE_ROW) {
      const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
      out.insert(t != nullptr ? t : "NULL");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return out;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(MigrateDeviceKeysTest, LegacyImportKeysBecomeDeviceKeysEverywhere) {
  {
    auto conn = Connection::Open(path_, false);
    ASSERT_TRUE(conn);
    ASSERT_TRUE(Migrate(*conn, 14));
  }
  const std::string copy_profile =
      "INSERT INTO hardware_profiles (id, hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, "
      "l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) SELECT %d, '%s', 'cuda', 'device', 'nvidia', 0, 0, "
      "'%s', 1, 0, 0, 0, 1, first_seen_at FROM hardware_profiles WHERE id = 1;";
  auto profile = [&](int id, const char* key, const char* name) {
    char buf[1024];
    std::snprintf(buf, sizeof buf, copy_profile.c_str(), id, key, name);
    return std::string(buf);
  };
  Exec(profile(2, "cuda.nvidia.a100_pcie_40gb", "NVIDIA A100-PCIE-40GB") +
       profile(3, "cuda.nvidia.a100_sxm4_80gb", "NVIDIA A100-SXM4-80GB") +
       profile(4, "hip.amd.instinct_mi250x", "AMD Instinct MI250X") +
       "UPDATE sweeps SET hardware_id = 2 WHERE id = 1; UPDATE sweeps SET hardware_id = 3 WHERE id = 2; "
       "UPDATE sweeps SET hardware_id = 4 WHERE id = 3;"
       // Two A100 rows of one bucket (the SXM4's faster) and an MI250X row; the CPU row stays.
       "UPDATE tuned_entries SET hardware_key = 'cuda.nvidia.a100_pcie_40gb' WHERE bucket = 'm64_n64_k64';"
       "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, "
       "sweep_id, measurement_id, measured_at) SELECT kernel, 'cuda.nvidia.a100_sxm4_80gb', dtype, bucket, "
       "bucket_version, 'block_m=1', 50000, samples, 2, measurement_id, measured_at FROM tuned_entries "
       "WHERE bucket = 'm64_n64_k64';"
       "UPDATE tuned_entries SET hardware_key = 'hip.amd.instinct_mi250x' WHERE bucket = 'm128_n64_k64';"
       "UPDATE overrides SET hardware_key = 'cuda.nvidia';"
       "INSERT INTO lookup_misses (kernel, dtype, hardware_key, bucket, dims, default_count, count, first_seen_at, "
       "last_seen_at) VALUES ('matmul', 'f32', 'cuda.nvidia.geforce_rtx_2080_ti', 'm8_n8_k8', 'k=8,m=8,n=8', 3, 3, "
       "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');");

  auto st = Store::Open(path_);  // migrates to the latest version
  ASSERT_TRUE(st) << st.error().ToString();
  EXPECT_EQ((*st)->maintenance().IntegrityCheck().value_or(""), "ok");
  EXPECT_EQ(
      Texts("SELECT hardware_key FROM hardware_profiles"),
      (std::multiset<std::string>{"gpu.amd.gfx90a.mi250x", "gpu.nvidia.sm80.a100", "x86_64.avx2.amd.fam25_mod1.t1"}));
  EXPECT_EQ(Texts("SELECT h.hardware_key FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id ORDER BY s.id"),
            (std::multiset<std::string>{"gpu.nvidia.sm80.a100", "gpu.nvidia.sm80.a100", "gpu.amd.gfx90a.mi250x"}));
  EXPECT_EQ(Texts("SELECT hardware_key || ' ' || bucket || ' ' || median_ns FROM tuned_entries"),
            (std::multiset<std::string>{"gpu.nvidia.sm80.a100 m64_n64_k64 50000.0",
                                        "gpu.amd.gfx90a.mi250x m128_n64_k64 18024.3802816901",
                                        "x86_64.avx2.amd.fam25_mod1.t1 m32_n128_k64 13221.8"}));
  EXPECT_EQ(Texts("SELECT hardware_key FROM overrides"), (std::multiset<std::string>{"gpu.nvidia"}));
  EXPECT_EQ(Texts("SELECT hardware_key FROM lookup_misses"),
            (std::multiset<std::string>{"gpu.nvidia.sm75.rtx_2080_ti"}));
  EXPECT_EQ(Texts("SELECT device FROM sweeps"), (std::multiset<std::string>{"", "", ""}));
  // The store reads the migrated rows: the tuned rows under their device keys, no identity.
  auto tuned = (*st)->tuned().List("matmul");
  ASSERT_TRUE(tuned) << tuned.error().ToString();
  ASSERT_EQ(tuned->size(), 3u);
  auto sweep = (*st)->sweeps().Get(1);
  ASSERT_TRUE(sweep) << sweep.error().ToString();
  EXPECT_EQ(sweep->hardware_key, "gpu.nvidia.sm80.a100");
  EXPECT_EQ(sweep->device, "");
}

}  // namespace
}  // namespace blocktune::store
