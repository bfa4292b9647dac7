#!/usr/bin/env bash
# End to end with a device key (docs/accelerators.md): the fake-device runner
# (tests/data/fake_device/) times a Python loop on this CPU and announces an NVIDIA H200 on the
# runner protocol's device line. Swept through the daemon, its sweep is filed under
# gpu.nvidia.sm90.h200 with the identity as provenance; the daemon, the generated C++ header,
# the Python table and the JSON table answer its rows for that key and never for this host's
# CPU key, nor does a CPU lookup fall back into them. An invalid identity and a runner whose
# restart lands on another device each fail their sweep with a clear error, nothing stored
# under a device key that was not measured.
# Usage: e2e_device.sh BUILD_DIR SOURCE_DIR CXX
set -euo pipefail
build=$1
src=$2
cxx=${3:-c++}
source "$(dirname "$0")/lib.sh"

key=gpu.nvidia.sm90.h200
kdir=(--kernel-dir "$src/tests/data/fake_device")
cli=("$build/client/blocktune" "${kdir[@]}")
mkdir -p "$work/db"
# The runner imports blocktune from the source tree (python/src) when it is not installed.
unset BLOCKTUNE_FAKE_DEVICE BLOCKTUNE_FAKE_DEVICE_ROTATE BLOCKTUNE_FAKE_EXIT_AFTER
StartDaemon --min-repetition-ms 1 --repetitions 3 --max-cv 1000 --log-level warn "${kdir[@]}"
auth=(--server "$url" --token-file "$work/db/token")

# --- Filed under the device's key ----------------------------------------------------------
"$build/client/blocktune" sweep fake_device_kernel "${auth[@]}" --strategy exhaustive \
  --shape n=4096 --shape n=16384 --json >"$work/sweep.json"
id=$(python3 -c "import json; print(json.load(open('$work/sweep.json'))['id'])")
"$build/client/blocktune" sweeps show "$id" --server "$url" --json >"$work/show.json"
python3 - "$work/show.json" "$key" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "done", s
assert s["hardware"] == sys.argv[2], s["hardware"]
assert s["device"]["model"] == "NVIDIA H200" and s["device"]["arch"] == "sm90", s["device"]
assert s["device"]["memory_bytes"] == 150754820096 and s["device"]["platform"] == "fake", s["device"]
assert s["isa"] == "", s["isa"]
PY
host=$(curl -fsS "$url/v1/hardware/host?threads=1" | python3 -c "import json,sys; print(json.load(sys.stdin)['key'])")
echo "sweep $id filed under $key; this host is $host"
curl -fsS "$url/v1/lookup?kernel=fake_device_kernel&n=4096&hardware=$key" >"$work/dev.json"
grep -q '"source":"tuned"' "$work/dev.json" && grep -q "\"hardware\":\"$key\"" "$work/dev.json" || { cat "$work/dev.json"; exit 1; }
# The host's own key (a lookup without a key is one) never gets the device's rows.
for q in "hardware=$host" "threads=1"; do
  curl -fsS "$url/v1/lookup?kernel=fake_device_kernel&n=4096&$q" >"$work/cpu.json"
  grep -q '"source":"default"' "$work/cpu.json" || { cat "$work/cpu.json"; exit 1; }
done
# Another model of the same architecture: not without the option (off until measured).
curl -fsS "$url/v1/lookup?kernel=fake_device_kernel&n=4096&hardware=gpu.nvidia.sm90.h100" | grep -q '"source":"default"'

# --- The generated tables: the device's key only ---------------------------------------------
"${cli[@]}" tables generate --db "$work/db/blocktune.db" --out "$work/tables" >/dev/null
header="$work/tables/include/blocktune/tables/fake_device_kernel_tuned_block_sizes.h"
grep -q "$key" "$header"
grep -q "NVIDIA H200" "$header" || { echo "the header names no device identity"; grep -n "$key" "$header"; exit 1; }
cat >"$work/app.cc" <<CC
#include "fake_device_kernel_tuned_block_sizes.h"
#include <cstdio>
int main() {
  namespace t = blocktune::tables;
  auto dev = t::fake_device_kernel::LookupBlockSizes("$key", "f32", 4096);
  auto cpu = t::fake_device_kernel::LookupBlockSizes("$host", "f32", 4096);
  auto other = t::fake_device_kernel::LookupBlockSizes("gpu.nvidia.sm90.h100", "f32", 4096);
  if (dev.source != t::Source::kTuned || cpu.source != t::Source::kDefault || other.source != t::Source::kDefault) return 2;
  // The explicit same-architecture lookup: the H100 gets the H200's row, never another
  // architecture or the CPU.
  auto same = t::fake_device_kernel::LookupDimsSameArch("gpu.nvidia.sm90.h100", "f32", {{4096}});
  auto a100 = t::fake_device_kernel::LookupDimsSameArch("gpu.nvidia.sm80.a100", "f32", {{4096}});
  auto cpu_same = t::fake_device_kernel::LookupDimsSameArch("$host", "f32", {{4096}});
  if (same.source != t::Source::kTunedFallback || same.hardware != "$key" || same.fallback_levels != 1 ||
      same.config.block != dev.config.block || a100.source != t::Source::kDefault ||
      cpu_same.source != t::Source::kDefault) return 3;
  std::printf("%lld\n", (long long)dev.config.block);
  return 0;
}
CC
"$cxx" -std=c++17 -O1 -I "$work/tables/include/blocktune/tables" "$work/app.cc" -o "$work/app"
app_block=$("$work/app")
http_block=$(python3 -c "import json; print(json.load(open('$work/dev.json'))['config']['block'])")
py_block=$(cd "$work/tables/python" && python3 -c "
import fake_device_kernel_tuned_block_sizes as t
c, source, hw, bucket = t.infer_block_sizes('$key', 'f32', n=4096)
assert source == 'tuned' and hw == '$key', (source, hw)
assert t.infer_block_sizes('$host', 'f32', n=4096)[1] == 'default'
assert t.infer_block_sizes('gpu.nvidia.sm90.h100', 'f32', n=4096)[1] == 'default'
same = t.infer_block_sizes_same_arch('gpu.nvidia.sm90.h100', 'f32', n=4096)
assert same[1] == 'tuned_fallback' and same[2] == '$key' and same[0] == c, same
assert t.infer_block_sizes_same_arch('gpu.nvidia.sm80.a100', 'f32', n=4096)[1] == 'default'
print(c['block'])")
python3 - "$work/tables/json/fake_device_kernel_tuned_block_sizes.json" "$key" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
rows = t["rows"]
keys = {r["hardware"] for r in rows}
assert keys == {sys.argv[2]}, keys
PY
echo "fake_device_kernel n=4096 on $key: http: $http_block  header: $app_block  python: $py_block"
[[ "$http_block" == "$app_block" && "$http_block" == "$py_block" ]]

# --- The explicit option: another model of the architecture answers as tuned_fallback ------------
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=
StartDaemon --log-level warn --device-fallback same-arch "${kdir[@]}"
curl -fsS "$url/v1/lookup?kernel=fake_device_kernel&n=4096&hardware=gpu.nvidia.sm90.h100" >"$work/h100.json"
grep -q '"source":"tuned_fallback"' "$work/h100.json" && grep -q "\"hardware\":\"$key\"" "$work/h100.json" || { cat "$work/h100.json"; exit 1; }
for other in gpu.nvidia.sm80.a100 "$host"; do  # never another architecture, nor the CPU
  curl -fsS "$url/v1/lookup?kernel=fake_device_kernel&n=4096&hardware=$other" | grep -q '"source":"default"'
done

# --- Refused: an invalid identity, and a device that changes within a sweep -----------------
rows() {  # rows of table $1 for sweep $2 in the database $3
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[3]); print(c.execute('SELECT COUNT(*) FROM '+sys.argv[1]+' WHERE sweep_id=?', (int(sys.argv[2]),)).fetchone()[0])" "$@"
}
local_db="$work/local.db"
BLOCKTUNE_FAKE_DEVICE='{"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA", "arch": "sm90"}' \
  "${cli[@]}" sweep fake_device_kernel --local --db "$local_db" --shape n=4096 --strategy exhaustive \
  --min-repetition-ms 1 --repetitions 3 --max-cv 1000 >"$work/invalid.out" 2>&1 && { cat "$work/invalid.out"; exit 1; }
grep -q "device line is invalid: device.model" "$work/invalid.out" || { cat "$work/invalid.out"; exit 1; }
[[ $(rows measurements 1 "$local_db") == 0 && $(rows tuned_entries 1 "$local_db" 2>/dev/null || echo 0) == 0 ]]
python3 - "$local_db" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
status, error = c.execute("SELECT status, error FROM sweeps WHERE id = 1").fetchone()
assert status == "failed" and "device.model" in error, (status, error)
assert c.execute("SELECT COUNT(*) FROM tuned_entries").fetchone()[0] == 0
PY

# The first runner process announces the H200 and exits after the device probe and two
# configs; the one started next announces an A100.
printf '%s\n' '{"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm90"}' \
  '{"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA A100-SXM4-40GB", "arch": "sm80"}' >"$work/rotate"
BLOCKTUNE_FAKE_DEVICE_ROTATE="$work/rotate" BLOCKTUNE_FAKE_EXIT_AFTER=3 \
  "${cli[@]}" sweep fake_device_kernel --local --db "$local_db" --shape n=4096 --strategy exhaustive \
  --min-repetition-ms 1 --repetitions 3 --max-cv 1000 >"$work/change.out" 2>&1 && { cat "$work/change.out"; exit 1; }
grep -q "device changed within the sweep" "$work/change.out" || { cat "$work/change.out"; exit 1; }
python3 - "$local_db" "$key" <<'PY'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
status, error, hw = c.execute(
    "SELECT s.status, s.error, h.hardware_key FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id WHERE s.id = 2").fetchone()
assert status == "failed" and "gpu.nvidia.sm80.a100" in error, (status, error)
assert hw == sys.argv[2], hw  # filed under the first device, whose measurements these are
ok = c.execute("SELECT COUNT(*) FROM measurements WHERE sweep_id = 2 AND outcome = 'ok'").fetchone()[0]
retimed = c.execute(
    "SELECT COUNT(*) FROM measurements WHERE sweep_id = 2 AND detail LIKE 're-timed:%'").fetchone()[0]
# The H200 runner answered two timing requests; a config whose repetitions spread more than
# retime_cv (a loaded machine) is timed again, which takes one of them, and a second look that
# the A100 runner answers is refused with its config. Nothing from the A100 is stored.
assert ok >= 1 and ok + retimed <= 2, (ok, retimed)
assert c.execute("SELECT COUNT(*) FROM tuned_entries").fetchone()[0] == 0
assert c.execute("SELECT COUNT(*) FROM hardware_profiles WHERE hardware_key LIKE '%a100%'").fetchone()[0] == 0
PY
echo "refused: $(grep -o 'device line is invalid[^;]*' "$work/invalid.out" | head -1)"
echo "refused: $(grep -o 'but the runner answered from [^ ]*' "$work/change.out" | head -1)"

# --- Across databases: db merge and push keep the device key and the identity ---------------
"${cli[@]}" db merge "$work/merged.db" "$work/db/blocktune.db" >"$work/merge.out"
"${cli[@]}" push --server "$url" --token-file "$work/db/token" "$local_db" >"$work/push.out"
curl -fsS "$url/v1/sweeps?limit=100" >"$work/sweeps.json"
python3 - "$work/merged.db" "$work/sweeps.json" "$key" <<'PY'
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("SELECT h.hardware_key, s.device FROM sweeps s JOIN hardware_profiles h ON h.id = s.hardware_id").fetchall()
assert rows and all(k == sys.argv[3] and json.loads(d)["model"] == "NVIDIA H200" for k, d in rows), rows
assert {k for (k,) in c.execute("SELECT hardware_key FROM tuned_entries")} == {sys.argv[3]}
pushed = [s for s in json.load(open(sys.argv[2]))["sweeps"] if s["status"] == "failed" and s["hardware"] == sys.argv[3]]
assert len(pushed) == 1 and pushed[0]["device"]["model"] == "NVIDIA H200", pushed
PY
echo "db merge and push: the device key and its identity kept"
