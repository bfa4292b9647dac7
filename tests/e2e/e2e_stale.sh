#!/usr/bin/env bash
# Staleness and the regression gate end to end (docs/tables.md#staleness, #regression-gate):
#  1. the kernel fingerprint is a function of file contents: a copy of the kernel sources at
#     another path gives this build's fingerprints (blocktune --version); one changed line in
#     matmul's AVX2 micro-kernel changes matmul's and grouped_matmul's (which runs it), not
#     flash_attention's; one in flash_attention changes ragged_paged_attention's; a change to reference.cc
#     changes nothing; one to kernels/core/simd.h changes every kernel's;
#  2. a row carrying the changed fingerprint (measured by the changed build) is detected stale:
#     `tables check` lists it and exits 1, the daemon's lookup answers it with "stale": true, and
#     a fresh row of this build passes;
#  3. `tables generate --db` on this machine's own matmul row: a slower config (the fault worker's
#     "slow" rule adds 5 ms per call, so the outcome does not depend on the machine's load) is refused
#     (gate kept), --force takes it (gate forced), and both decisions are in the jsonl, the
#     generated JSON and the header comments;
#  4. the gate runs its configs in worker processes: with a worker that segfaults on the new
#     config (blocktune-fault-worker, BLOCKTUNE_FAULT_INJECT), the new row is refused as
#     "crashed", another profile's row is still merged, and the tables are written (exit 0).
# Usage: e2e_stale.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
build=$1
src=$2
bt=$build/client/blocktune
source "$(dirname "$0")/lib.sh"

# --- 1. fingerprints of a copied, then changed, tree -----------------------------------------
fp() {  # fp ROOT KERNEL
  cmake -DROOT="$1" -DTOOLCHAIN_FILE="$build/generated/blocktune/toolchain.txt" -DKERNEL="$2" \
    -P "$src/cmake/fingerprint.cmake" | awk '{print $2}'
}
built() { "$bt" --version | awk -v k="$1" '$1 == k {print $2}'; }
mkdir -p "$work/tree"
cp -r "$src/kernels" "$work/tree/"
for k in matmul flash_attention grouped_matmul; do
  [[ $(fp "$work/tree" $k) == "$(built $k)" ]] || { echo "FAIL: $k fingerprint of a copy differs from the build's"; exit 1; }
done
old_matmul=$(built matmul)
old_flash=$(built flash_attention)
old_grouped=$(built grouped_matmul)
old_rpa=$(built ragged_paged_attention)
echo "// a changed line" >>"$work/tree/kernels/matmul/matmul_avx2.cc"
new_matmul=$(fp "$work/tree" matmul)
[[ $new_matmul != "$old_matmul" ]] || { echo "FAIL: matmul fingerprint unchanged after a source change"; exit 1; }
[[ $(fp "$work/tree" flash_attention) == "$old_flash" ]] || { echo "FAIL: flash_attention changed with matmul's source"; exit 1; }
# grouped_matmul runs matmul's micro-kernels: its rows go stale with them.
[[ $(fp "$work/tree" grouped_matmul) != "$old_grouped" ]] ||
  { echo "FAIL: grouped_matmul unchanged after a change to the matmul micro-kernel it runs"; exit 1; }
echo "matmul fingerprint $old_matmul -> $new_matmul after changing matmul_avx2.cc (grouped_matmul changed too)"
cp "$src/kernels/matmul/matmul_avx2.cc" "$work/tree/kernels/matmul/"
# ragged_paged_attention calls flash_attention's kernel; flash_attention does not depend on it.
echo "// a changed line" >>"$work/tree/kernels/flash_attention/flash_attention_avx2.cc"
[[ $(fp "$work/tree" ragged_paged_attention) != "$old_rpa" ]] ||
  { echo "FAIL: ragged_paged_attention unchanged after a flash_attention source change"; exit 1; }
[[ $(fp "$work/tree" matmul) == "$old_matmul" ]] || { echo "FAIL: matmul changed with flash_attention's source"; exit 1; }
cp "$src/kernels/flash_attention/flash_attention_avx2.cc" "$work/tree/kernels/flash_attention/"
cp -r "$src/kernels/matmul/matmul_avx2.cc" "$work/tree/kernels/matmul/"
echo "// test oracle only" >>"$work/tree/kernels/matmul/reference.cc"
[[ $(fp "$work/tree" matmul) == "$old_matmul" ]] || { echo "FAIL: reference.cc changed the fingerprint"; exit 1; }
echo "// core" >>"$work/tree/kernels/core/simd.h"
[[ $(fp "$work/tree" matmul) != "$old_matmul" && $(fp "$work/tree" flash_attention) != "$old_flash" ]] ||
  { echo "FAIL: a simd.h change left a fingerprint unchanged"; exit 1; }

# --- 2. a row of the changed build is stale ----------------------------------------------------
row() {  # row FINGERPRINT CONFIG_JSON
  printf '{"kernel":"matmul","hardware":"x86_64.avx512.intel.fam6_mod9999.t1","dtype":"f32","bucket":"m128_n128_k128","bucket_version":1,"config":%s,"median_ns":1000.0,"samples":5,"sweep_id":1,"measurement_id":1,"measured_at":"2026-11-25T00:00:00.000Z","fingerprint":%s}\n' "$2" "$1"
}
cfg='{"block_m":48,"block_n":128,"block_k":256}'
row "\"$new_matmul\"" "$cfg" >"$work/stale.jsonl"
rc=0
"$bt" tables check --jsonl "$work/stale.jsonl" >"$work/check.out" 2>"$work/check.err" || rc=$?
cat "$work/check.out" "$work/check.err"
[[ $rc == 1 ]] || { echo "FAIL: tables check exited $rc on a stale row"; exit 1; }
grep -q "^stale    matmul x86_64.avx512.intel.fam6_mod9999.t1 f32 m128_n128_k128  fingerprint $new_matmul, this build $old_matmul" "$work/check.out"
grep -q "1 stale row(s) would be served" "$work/check.err"
row "\"$old_matmul\"" "$cfg" >"$work/fresh.jsonl"
row null "$cfg" >>"$work/fresh.jsonl"
sed -i '2s/m128_n128_k128/m256_n256_k256/' "$work/fresh.jsonl"
"$bt" tables check --jsonl "$work/fresh.jsonl" --json >"$work/check.json"
python3 - "$work/check.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["fresh"] == 1 and c["stale"] == [] and len(c["unknown"]) == 1, c
assert c["unknown"][0]["fingerprint"] is None, c
PY
# The checked-in table: rows of unknown fingerprint only, none stale.
"$bt" tables check --out "$src/tables" | tail -1

# The daemon serves a database row of the changed build: "stale": true, with its fingerprint.
StartDaemon --log-level warn
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=
sqlite3 "$work/db/blocktune.db" "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config,
  median_ns, samples, sweep_id, measurement_id, measured_at, fingerprint) VALUES ('matmul',
  'x86_64.avx512.intel.fam6_mod9999.t1', 'f32', 'm128_n128_k128', 1, 'block_m=48,block_n=128,block_k=256', 1000, 5, 1, 1,
  '2026-11-25T00:00:00.000Z', '$new_matmul')"
StartDaemon --log-level warn
"$bt" lookup --server "$url" matmul --shape m=100,n=100,k=100 --hardware x86_64.avx512.intel.fam6_mod9999.t1 --json \
  >"$work/lookup.json"
cat "$work/lookup.json"; echo
python3 - "$work/lookup.json" "$new_matmul" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
assert a["source"] == "tuned" and a["stale"] is True and a["fingerprint"] == sys.argv[2], a
PY
"$bt" lookup --server "$url" matmul --shape m=100,n=100,k=100 --hardware x86_64.avx512.intel.fam6_mod9999.t1 |
  grep -q "STALE"
curl -fsS "$url/v1/kernels" | python3 -c "
import json, sys
ks = {k['name']: k['fingerprint'] for k in json.load(sys.stdin)['kernels']}
assert ks['matmul'] == '$old_matmul', ks"
rc=0
"$bt" tables check --out "$src/tables" --db "$work/db/blocktune.db" >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || { echo "FAIL: tables check --db exited $rc with a stale database row"; exit 1; }
kill "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true; daemon_pid=

# --- 3. the regression gate on this machine's own row ------------------------------------------
key=$("$bt" bench matmul --shape m=64,n=64,k=64 --config default --json --min-time-ms 1 --repetitions 1 |
  python3 -c "import json,sys; print(json.load(sys.stdin)['hardware'])")
mkdir -p "$work/tables"
# The checked-in row: the default config on 256^3 for this host, fresh.
printf '{"kernel":"matmul","hardware":"%s","dtype":"f32","bucket":"m256_n256_k256","bucket_version":1,"config":{"block_m":96,"block_n":512,"block_k":256},"median_ns":500000.0,"samples":5,"sweep_id":1,"measurement_id":1,"measured_at":"2026-11-25T00:00:00.000Z","fingerprint":"%s"}\n' \
  "$key" "$old_matmul" >"$work/tables/tuned_entries.jsonl"
# The database row: another config, made slower than the old one by the fault worker's "slow"
# rule (a 5 ms busy-wait per call, ~10x the kernel) so the gate keeps the old row on any machine
# and under any load (with real configs timed, a machine at load 15 once measured
# the smaller blocks 67% faster).
sqlite3 "$work/db/blocktune.db" "DELETE FROM tuned_entries; INSERT INTO tuned_entries (kernel, hardware_key, dtype,
  bucket, bucket_version, config, median_ns, samples, sweep_id, measurement_id, measured_at, fingerprint) VALUES
  ('matmul', '$key', 'f32', 'm256_n256_k256', 1, 'block_m=48,block_n=128,block_k=128', 1, 5, 2, 2,
  '2026-11-25T01:00:00.000Z', '$old_matmul')"
BLOCKTUNE_FAULT_INJECT="block_m=48,block_n=128:slow" "$bt" tables generate --out "$work/tables" \
  --db "$work/db/blocktune.db" --gate-repetitions 5 --gate-min-time-ms 5 --worker "$build/tests/blocktune-fault-worker" \
  >"$work/gen.out" 2>"$work/gen.err"
cat "$work/gen.err"
grep -q "^gate kept     matmul $key f32 m256_n256_k256" "$work/gen.err"
python3 - "$work/tables" <<'PY'
import json, sys
d = sys.argv[1]
row = json.loads(open(d + "/tuned_entries.jsonl").readline())
assert row["config"] == {"block_k": 256, "block_m": 96, "block_n": 512}, row
g = row["gate"]
assert g["decision"] == "kept" and g["old_ns"] > 0 and g["new_ns"] > 0 and g["repetitions"] == 5, g
assert g["new_config"] == {"block_k": 128, "block_m": 48, "block_n": 128}, g
j = json.load(open(d + "/json/matmul_tuned_block_sizes.json"))
assert j["rows"][0]["gate"]["decision"] == "kept", j["rows"][0]
PY
grep -q "// gate kept (old block_m=96,block_n=512,block_k=256, new block_m=48,block_n=128,block_k=128): old" \
  "$work/tables/include/blocktune/tables/matmul_tuned_block_sizes.h"
"$bt" tables generate --out "$work/tables" --db "$work/db/blocktune.db" --force >/dev/null 2>"$work/gen.err"
cat "$work/gen.err"
python3 - "$work/tables" <<'PY'
import json, sys
row = json.loads(open(sys.argv[1] + "/tuned_entries.jsonl").readline())
assert row["config"] == {"block_k": 128, "block_m": 48, "block_n": 128} and row["gate"]["decision"] == "forced", row
PY

# --- 4. a new config that crashes the gate's worker ------------------------------------------
printf '{"kernel":"matmul","hardware":"%s","dtype":"f32","bucket":"m256_n256_k256","bucket_version":1,"config":{"block_m":96,"block_n":512,"block_k":256},"median_ns":500000.0,"samples":5,"sweep_id":1,"measurement_id":1,"measured_at":"2026-11-25T00:00:00.000Z","fingerprint":"%s"}\n' \
  "$key" "$old_matmul" >"$work/tables/tuned_entries.jsonl"
sqlite3 "$work/db/blocktune.db" "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version,
  config, median_ns, samples, sweep_id, measurement_id, measured_at, fingerprint) VALUES ('matmul',
  'x86_64.avx512.intel.fam6_mod9999.t1', 'f32', 'm256_n256_k256', 1, 'block_m=48,block_n=256,block_k=256', 1, 5, 3, 3,
  '2026-11-25T01:00:00.000Z', '$old_matmul')"
BLOCKTUNE_FAULT_INJECT="block_m=48:segfault" "$bt" tables generate --out "$work/tables" --db "$work/db/blocktune.db" \
  --gate-repetitions 3 --gate-min-time-ms 1 --worker "$build/tests/blocktune-fault-worker" >/dev/null 2>"$work/gen.err"
cat "$work/gen.err"
grep -q "^gate kept     matmul $key f32 m256_n256_k256: the new config failed verification: crashed" "$work/gen.err"
python3 - "$work/tables" "$key" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/tuned_entries.jsonl")]
host = [r for r in rows if r["hardware"] == sys.argv[2]]
other = [r for r in rows if r["hardware"] == "x86_64.avx512.intel.fam6_mod9999.t1"]
assert len(host) == 1 and host[0]["config"] == {"block_k": 256, "block_m": 96, "block_n": 512}, host
assert host[0]["gate"]["decision"] == "kept" and host[0]["gate"]["new_config"]["block_m"] == 48, host
assert len(other) == 1 and other[0]["config"]["block_m"] == 48, other  # another profile: merged as it is
assert '"x86_64.avx512.intel.fam6_mod9999.t1"' in open(sys.argv[1] + "/include/blocktune/tables/matmul_tuned_block_sizes.h").read()
PY
echo "e2e_stale: OK"
