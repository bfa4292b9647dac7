// HardwareTable and its SQL; see hardware_table.h.
#include "store/hardware_table.h"

#include "store/rows.h"

namespace blocktune::store {
namespace {

constexpr char kUpsertHardwareSql[] =
    "INSERT INTO hardware_profiles (hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, "
    "l1d_bytes, l2_bytes, l3_bytes, threads, first_seen_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
    "ON CONFLICT (hardware_key) DO UPDATE SET model_name = excluded.model_name, cores = excluded.cores, "
    "l1d_bytes = excluded.l1d_bytes, l2_bytes = excluded.l2_bytes, l3_bytes = excluded.l3_bytes";
constexpr char kSelectHardwareIdSql[] = "SELECT id FROM hardware_profiles WHERE hardware_key = ?";
constexpr char kSelectHardwareSql[] =
    "SELECT id, hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, l1d_bytes, l2_bytes, "
    "l3_bytes, threads, first_seen_at FROM hardware_profiles ORDER BY hardware_key";

Result<HardwareRecord> ReadHardware(const Statement& st) {
  HardwareRecord h;
  h.id = st.Int(0);
  h.key = st.Text(1);
  h.profile.cpu.arch = st.Text(2);
  h.profile.cpu.isa = st.Text(3);
  h.profile.cpu.vendor = st.Text(4);
  h.profile.cpu.family = static_cast<int>(st.Int(5));
  h.profile.cpu.model = static_cast<int>(st.Int(6));
  h.profile.model_name = st.Text(7);
  h.profile.cores = static_cast<int>(st.Int(8));
  h.profile.l1d_bytes = st.Int(9);
  h.profile.l2_bytes = st.Int(10);
  h.profile.l3_bytes = st.Int(11);
  h.profile.threads = static_cast<int>(st.Int(12));
  h.first_seen_at = st.Text(13);
  // A device key (an accelerator's, an import's) is not made of the CPU fields.
  if (h.profile.Key() != h.key) h.profile.device_key = h.key;
  return h;
}

}  // namespace

Result<int64_t> HardwareTable::Upsert(const HardwareProfile& hw) {
  auto lock = db_.Lock();
  Result<int64_t> id = Internal("hardware profile vanished after upsert");
  auto s = db_.InTransaction([&]() -> Status {
    auto st = db_.conn().Prepare(kUpsertHardwareSql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, hw.Key()).Bind(2, hw.cpu.arch).Bind(3, hw.cpu.isa).Bind(4, hw.cpu.vendor).Bind(5, hw.cpu.family);
    st->Bind(6, hw.cpu.model).Bind(7, hw.model_name).Bind(8, hw.cores).Bind(9, hw.l1d_bytes).Bind(10, hw.l2_bytes);
    st->Bind(11, hw.l3_bytes).Bind(12, hw.threads);
    if (auto r = st->Run(); !r) return r;
    auto sel = db_.conn().Prepare(kSelectHardwareIdSql);
    if (!sel) return std::unexpected(sel.error());
    sel->Bind(1, hw.Key());
    auto row = sel->Step();
    if (!row) return std::unexpected(row.error());
    if (*row) id = sel->Int(0);
    return {};
  });
  if (!s) return std::unexpected(s.error());
  return id;
}

Result<std::vector<HardwareRecord>> HardwareTable::List() {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSelectHardwareSql);
  if (!st) return std::unexpected(st.error());
  return ReadRows(*st, ReadHardware);
}

}  // namespace blocktune::store
