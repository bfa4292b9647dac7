// ExecutorsTable, its SQL and the liveness rule; see executors_table.h.
#include "store/executors_table.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "store/sweeps_table.h"

namespace blocktune::store {
namespace {

constexpr char kUpsertSql[] =
    "INSERT INTO executors (id, kind, host, boot_id, pid, pid_start, started_at, expires_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?7) "
    "ON CONFLICT (id) DO UPDATE SET expires_ms = excluded.expires_ms";
constexpr char kHoldsAnySql[] =
    "SELECT EXISTS (SELECT 1 FROM sweeps WHERE owner = ? AND status IN ('queued', 'running'))";
constexpr char kReleaseTasksSql[] =
    "UPDATE sweep_tasks SET status = 'queued' WHERE status = 'running' AND sweep_id IN "
    "(SELECT id FROM sweeps WHERE owner = ?1 AND status IN ('queued', 'running'))";
constexpr char kReleaseSweepsSql[] = "UPDATE sweeps SET owner = NULL WHERE owner = ?";
constexpr char kDeleteSql[] = "DELETE FROM executors WHERE id = ?";
constexpr char kSelectSql[] =
    "SELECT id, kind, host, boot_id, pid, pid_start, started_at, expires_ms FROM executors WHERE id = ?";

std::string ReadFirstLine(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

struct ProcStat {
  bool found = false;
  char state = '?';   // field 3: R, S, D, ... Z (zombie: it ended, its parent has not reaped it)
  int64_t start = 0;  // field 22: starttime, clock ticks after boot
};

// /proc/PID/stat's fields 3 and 22. The second field is the command in parentheses and may
// itself hold spaces and ')', so the fields are counted from the last ')'.
ProcStat ReadProcStat(int64_t pid) {
  ProcStat out;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return out;
  out.found = true;
  std::istringstream rest(text.substr(close + 1));
  std::string field;
  for (int i = 3; i <= 22; ++i) {
    if (!(rest >> field)) return out;
    if (i == 3) out.state = field.empty() ? '?' : field[0];
  }
  out.start = std::strtoll(field.c_str(), nullptr, 10);
  return out;
}

}  // namespace

ExecutorRecord ThisProcess(const std::string& kind) {
  ExecutorRecord e;
  std::random_device rd;
  char buf[33];
  std::snprintf(buf, sizeof buf, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  e.id = buf;
  e.kind = kind;
  e.host = HostName();
  e.boot_id = ReadFirstLine("/proc/sys/kernel/random/boot_id");
  e.pid = static_cast<int64_t>(getpid());
  e.pid_start = ReadProcStat(e.pid).start;
  return e;
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool Holds(const ExecutorRecord& e, int64_t now_ms) {
  if (e.expires_ms < now_ms) return false;
  if (e.host.empty() || e.host != HostName() || e.boot_id.empty() ||
      e.boot_id != ReadFirstLine("/proc/sys/kernel/random/boot_id")) {
    return true;  // another machine (or boot): only its expiry says
  }
  if (kill(static_cast<pid_t>(e.pid), 0) != 0 && errno == ESRCH) return false;
  // There, but is it the same process, and running? A pid is reused after its process ends,
  // and a process killed with SIGKILL stays a zombie until its parent waits for it.
  const ProcStat now = ReadProcStat(e.pid);
  if (!now.found) return true;  // no /proc here: the expiry says
  if (now.state == 'Z' || now.state == 'X') return false;
  return now.start == 0 || e.pid_start == 0 || now.start == e.pid_start;
}

std::string Describe(const ExecutorRecord& e) {
  return e.kind + " pid " + std::to_string(e.pid) + " on " + (e.host.empty() ? std::string("?") : e.host);
}

std::unexpected<Error> LostClaim(int64_t sweep_id, const std::string& holder, const std::string& status) {
  return MakeError(
      ErrorCode::kFailedPrecondition,
      "sweep " + std::to_string(sweep_id) + " is no longer this process's to run (" + status + ", " + holder + ")",
      "owner");
}

bool IsLostClaim(const Error& e) { return e.code == ErrorCode::kFailedPrecondition && e.path == "owner"; }

Status UpsertExecutor(Connection& conn, const ExecutorRecord& self, int64_t lease_ms) {
  auto st = conn.Prepare(kUpsertSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, self.id).Bind(2, self.kind).Bind(3, self.host).Bind(4, self.boot_id).Bind(5, self.pid);
  st->Bind(6, self.pid_start).Bind(7, NowMs() + lease_ms);
  return st->Run();
}

ExecutorRecord ReadExecutor(const Statement& st, int first) {
  ExecutorRecord e;
  e.id = st.Text(first);
  e.kind = st.Text(first + 1);
  e.host = st.Text(first + 2);
  e.boot_id = st.Text(first + 3);
  e.pid = st.Int(first + 4);
  e.pid_start = st.Int(first + 5);
  e.started_at = st.Text(first + 6);
  e.expires_ms = st.Int(first + 7);
  return e;
}

Result<bool> ExecutorsTable::Renew(const ExecutorRecord& self, int64_t lease_ms) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  // Read first, outside a write transaction: an idle executor (most of a daemon's life) takes
  // no write lock and writes nothing.
  {
    auto st = conn.Prepare(kHoldsAnySql);
    if (!st) return std::unexpected(st.error());
    st->Bind(1, self.id);
    auto row = st->Step();
    if (!row) return std::unexpected(row.error());
    if (!*row || st->Int(0) == 0) return false;
  }
  if (auto s = UpsertExecutor(conn, self, lease_ms); !s) return std::unexpected(s.error());
  return true;
}

Status ExecutorsTable::Unregister(const std::string& id) {
  auto lock = db_.Lock();
  Connection& conn = db_.conn();
  return db_.InTransaction([&]() -> Status {
    for (const char* sql : {kReleaseTasksSql, kReleaseSweepsSql, kDeleteSql}) {
      auto st = conn.Prepare(sql);
      if (!st) return std::unexpected(st.error());
      st->Bind(1, id);
      if (auto s = st->Run(); !s) return s;
    }
    return {};
  });
}

Result<std::optional<ExecutorRecord>> ExecutorsTable::Get(const std::string& id) {
  auto lock = db_.Lock();
  auto st = db_.conn().Prepare(kSelectSql);
  if (!st) return std::unexpected(st.error());
  st->Bind(1, id);
  auto row = st->Step();
  if (!row) return std::unexpected(row.error());
  if (!*row) return std::optional<ExecutorRecord>();
  return std::optional<ExecutorRecord>(ReadExecutor(*st, 0));
}

}  // namespace blocktune::store
