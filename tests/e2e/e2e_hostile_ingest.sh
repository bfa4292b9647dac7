#!/usr/bin/env bash
# Trust nothing that arrives (issue 26), end to end against blocktuned and the CLI, as a hostile
# or careless token holder would try it:
#  1. a database written by an older build holds tuned rows with an invalid config, a
#     non-canonical bucket, a negative median without samples and an unknown kernel: the daemon
#     serves none (lookup exact, nearest, GET /v1/tables) nor lists them (GET /v1/tuned, the
#     dashboard's /v1/winners), and `tables generate --db` skips them with a warning and
#     publishes the rest (exit 0);
#  2. POST /v1/results with each bad record the issue lists is a 400 naming the record and the
#     field, and stores nothing (the good record before it included);
#  3. a reused batch_id: the same contents are a replay (200), other contents a 409 naming it;
#  4. `blocktune push --token-file MISSING` fails before sending anything;
#  5. `db merge` with an input holding a bad record fails naming it, OUT byte for byte unchanged;
#  6. a runner that forks `sleep` into the background and exits leaves nothing running, through
#     the daemon and with `sweep --local`.
# Usage: e2e_hostile_ingest.sh BUILD_DIR
set -euo pipefail
build=$1
source "$(dirname "$0")/lib.sh"
bt=$build/client/blocktune
fail() { echo "FAIL: $*"; exit 1; }
# Live `sleep SECONDS` processes (pgrep skips zombies' empty command lines), and a wait of at
# most 5 s for them to be gone (a SIGKILL is delivered asynchronously); the runners' sleeps last
# 31.7 s, so one still there after 5 s outlived its runner.
sleeps() { pgrep -c -f "^sleep ${1//./\\.}\$" || true; }
sleeps_gone() { local end=$((SECONDS + 5)); while ((SECONDS < end)); do [[ $(sleeps "$1") == 0 ]] && return 0; sleep 0.1; done; return 1; }

# A kernel whose runner starts a `sleep` in the background, answers one config and exits (one
# runner per config).
mkdir -p "$work/forky" "$work/db"
cat >"$work/forky/forky.json" <<'JSON'
{
  "name": "forky",
  "parameters": [{"name": "mode", "values": [0, 1], "categorical": true}],
  "dims": [{"name": "n", "max": 1024}],
  "runner": {"command": ["/bin/sh", "-c", "sleep 31.7 & read -r l; echo '{\"times_ms\":[1,1,1]}' >&3"],
             "persistent": false, "timeout_s": 5}
}
JSON

# 1. An older build's database: a sweep's real rows, then two rows no check would have let in.
tiny=(--min-repetition-ms 0.05 --repetitions 2 --max-cv 1000)
"$bt" sweep matmul --local --in-process --db "$work/db/blocktune.db" --shape m=64,n=64,k=64 --strategy random \
  --budget 2 --threads 1 "${tiny[@]}" >/dev/null 2>&1
key=$(sqlite3 "$work/db/blocktune.db" "SELECT hardware_key FROM tuned_entries WHERE kernel = 'matmul' LIMIT 1")
[[ -n $key ]] || fail "the sweep made no tuned row"
sqlite3 "$work/db/blocktune.db" "INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config,
  median_ns, samples, sweep_id, measurement_id, measured_at) SELECT 'matmul', '$key', 'f32', 'm128_n128_k128', 1,
  'block_m=-96,block_n=7,block_k=0', 1e-305, 1, sweep_id, measurement_id, measured_at FROM tuned_entries LIMIT 1;
  INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id,
  measurement_id, measured_at) SELECT 'matmul', '$key', 'f32', 'm999_n1_k1', 1, 'block_m=48,block_n=128,block_k=128',
  1, 1, sweep_id, measurement_id, measured_at FROM tuned_entries LIMIT 1;
  INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id,
  measurement_id, measured_at) SELECT 'matmul', '$key', 'f32', 'm256_n256_k256', 1, 'block_m=48,block_n=256,block_k=128',
  -5, 0, sweep_id, measurement_id, measured_at FROM tuned_entries LIMIT 1;
  INSERT INTO tuned_entries (kernel, hardware_key, dtype, bucket, bucket_version, config, median_ns, samples, sweep_id,
  measurement_id, measured_at) SELECT 'ghost_kernel', '$key', 'f32', 'n64', 1, 'block=1', 1000, 5, sweep_id,
  measurement_id, measured_at FROM tuned_entries LIMIT 1"
StartDaemon --kernel-dir "$work/forky" "${tiny[@]}" --log-level warn
threads=${key##*.t}
for q in "m=128&n=128&k=128" "m=999&n=1&k=1" "m=64&n=64&k=64"; do
  got=$(curl -fsS "$url/v1/lookup?kernel=matmul&$q&threads=$threads")
  [[ $got != *'"block_m":-96'* ]] || fail "lookup $q served the invalid row: $got"
done
# The bad row's bucket is answered by what the daemon would serve without it (nearest, a
# checked-in row of this CPU, or the default), never by the row.
echo "  lookup m=128,n=128,k=128: $(curl -fsS "$url/v1/lookup?kernel=matmul&m=128&n=128&k=128&threads=$threads" |
  python3 -c 'import json,sys; a=json.load(sys.stdin); print(a["source"], a["config"])')"
curl -fsS "$url/v1/tables/matmul" >"$work/served.h"
grep -q -- "-96" "$work/served.h" && fail "GET /v1/tables/matmul published the invalid config"
grep -q "skipped" "$work/daemon.log" || fail "the daemon did not warn about the rows it skipped"
# Listings show what is served: none of those rows in GET /v1/tuned or the dashboard's matrix
# (a median that is no time, no samples, a kernel this daemon does not have are refused too).
for route in "v1/tuned?hardware=$key" "v1/winners"; do
  listed=$(curl -fsS "$url/$route")
  for bad in '"block_m":-96' 'm999_n1_k1' '"median_ns":-5' 'ghost_kernel'; do
    [[ $listed != *"$bad"* ]] || fail "GET /$route lists a refused row ($bad)"
  done
done
grep -q "ghost_kernel.*is not loaded here" "$work/daemon.log" || fail "no warning for the unknown kernel's row"
grep -q "m256_n256_k256.*median_ns must be a time" "$work/daemon.log" || fail "no warning for the negative median"
# (`tables generate` refuses a row of a kernel it does not know by name: load its --kernel-dir.)
sqlite3 "$work/db/blocktune.db" "DELETE FROM tuned_entries WHERE kernel = 'ghost_kernel'"
rc=0; "$bt" tables generate --db "$work/db/blocktune.db" --out "$work/tables" --force 2>"$work/generate.err" >/dev/null || rc=$?
cat "$work/generate.err"
[[ $rc == 0 ]] || fail "tables generate exited $rc on a database with bad rows"
grep -q "m999_n1_k1" "$work/generate.err" && grep -q "block_m=-96" "$work/generate.err" || fail "no warning naming the skipped rows"
grep -q -- "-96" "$work/tables/include/blocktune/tables/matmul_tuned_block_sizes.h" && fail "the header holds the invalid config"
grep -q "m64_n64_k64" "$work/tables/tuned_entries.jsonl" || fail "the good row was not published"
echo "1. older build's rows: not served, skipped by tables generate with a warning, the rest published"

# 2 and 3. Pushed batches, as a token holder.
measurements_before=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements")
python3 - "$url" "$token" "$threads" <<'PY'
import json, sys, urllib.request, urllib.error
url, token, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
hw = json.load(urllib.request.urlopen(f"{url}/v1/hardware/host?threads={threads}"))
def post(body):
    req = urllib.request.Request(f"{url}/v1/results", json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
def measurement(**over):
    m = {"bucket": "m64_n64_k64", "problem": {"m": 64, "n": 64, "k": 64},
         "config": {"block_m": 48, "block_n": 128, "block_k": 128}, "outcome": "ok", "detail": "", "iterations": 10,
         "median_ns": 1100.0, "cv": 0.05, "max_abs_err": 0.0, "max_rel_err": 0.1, "samples_ns": [1000.0, 1100.0, 1200.0],
         "created_at": "2026-11-27T00:00:00.000Z"}
    m.update(over)
    return m
def batch(batch_id, ms):
    return {"batch_id": batch_id, "hardware": {k: hw[k] for k in ("key", "arch", "isa", "vendor", "family", "model",
            "model_name", "cores", "l1d_bytes", "l2_bytes", "l3_bytes", "threads")},
            "sweep": {"uid": "hostile0000000026", "host": "elsewhere", "kernel": "matmul", "dtype": "f32",
                      "threads": threads, "strategy": "random", "budget": 2, "budget_seconds": 0, "seed": 1,
                      "shapes": [{"m": 64, "n": 64, "k": 64}], "shard_index": 0, "shard_count": 1, "status": "done",
                      "progress_total": 2, "error": "", "bucket_version": 1, "created_at": "2026-11-27T00:00:00.000Z",
                      "started_at": "", "finished_at": "",
                      "environment": {"load_average": "", "affinity": "", "governor": "", "compiler": "",
                                      "build_flags": "", "tool_version": "hostile"}},
            "measurements": ms}
cases = [
    ("the issue's config {-96, 7, 0} at 1e-305 ns",
     dict(config={"block_m": -96, "block_n": 7, "block_k": 0}, median_ns=1e-305), "config.block_m"),
    ("negative time", dict(median_ns=-1100.0), "median_ns"),
    ("zero time", dict(median_ns=0.0), "median_ns"),
    ("1e308 time", dict(median_ns=1e308), "median_ns"),
    ("negative sample", dict(samples_ns=[1000.0, -5.0, 1200.0]), "samples_ns[1]"),
    ("cv -1", dict(cv=-1.0), "cv"),
    ("iterations -7", dict(iterations=-7), "iterations"),
    ("block_m=7, not a candidate", dict(config={"block_m": 7, "block_n": 128, "block_k": 128}), "config.block_m"),
    ("an extra block_z", dict(config={"block_m": 48, "block_n": 128, "block_k": 128, "block_z": 1}), "config.block_z"),
    ("a partial config", dict(config={"block_m": 48}), "config.block_n"),
    ("bucket m999_n1_k1 for a 64^3 problem", dict(bucket="m999_n1_k1"), "bucket"),
]
good = measurement(config={"block_m": 96, "block_n": 128, "block_k": 128})
for i, (what, over, field) in enumerate(cases):
    status, body = post(batch(f"hostile:{i}", [good, measurement(**over)]))
    path = body.get("error", {}).get("path")
    print(f"  {what}: {status} {path}: {body.get('error', {}).get('message')}")
    assert status == 400, f"{what}: answered {status} {body}"
    assert path == "measurements[1]." + field, f"{what}: path {path}"
# 3. One id, two contents.
status, first = post(batch("hostile:reuse", [good]))
assert status == 200 and first["inserted"] == 1 and not first["replayed"], (status, first)
status, again = post(batch("hostile:reuse", [good]))
assert status == 200 and again["replayed"], (status, again)
status, other = post(batch("hostile:reuse", [measurement(config={"block_m": 144, "block_n": 128, "block_k": 128})]))
print(f"  reused batch id, other contents: {status} {other.get('error')}")
assert status == 409, (status, other)
assert "hostile:reuse" in other["error"]["message"] and other["error"]["path"] == "batch_id", other
PY
measurements_after=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements")
[[ $measurements_after == $((measurements_before + 1)) ]] ||
  fail "measurements $measurements_before -> $measurements_after: a refused batch wrote something"
curl -fsS "$url/v1/lookup?kernel=matmul&m=64&n=64&k=64&threads=$threads" | grep -q '"block_m":-96' && fail "served a pushed -96"
echo "2. every bad record refused with 400 naming it; nothing stored. 3. reused batch id: replay 200, other contents 409"

# 4. A token file that is not there: refused before anything is sent.
batches_before=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM ingest_batches")
rc=0; "$bt" push --server "$url" --token-file "$work/no-such-token" "$work/db/blocktune.db" 2>"$work/push.err" || rc=$?
cat "$work/push.err"
[[ $rc == 2 ]] || fail "push with a missing token file exited $rc (want 2, usage)"
grep -q "no-such-token" "$work/push.err" || fail "the message does not name the token file"
grep -q "401" "$work/push.err" && fail "push sent the request and reported the server's 401"
[[ $(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM ingest_batches") == "$batches_before" ]] || fail "a batch arrived"
echo "4. push --token-file MISSING: exit 2 before sending"

# 5. db merge: an input with one bad record is refused whole; OUT is untouched.
"$bt" sweep matmul --local --in-process --db "$work/a.db" --shape m=32,n=32,k=32 --strategy random --budget 2 \
  --threads 1 "${tiny[@]}" >/dev/null 2>&1
cp "$work/a.db" "$work/bad.db"
"$bt" sweep matmul --local --in-process --db "$work/b.db" --shape m=16,n=16,k=16 --strategy random --budget 2 \
  --threads 1 "${tiny[@]}" >/dev/null 2>&1
sqlite3 "$work/bad.db" "UPDATE measurements SET config = 'block_m=7,block_n=128,block_k=128' WHERE id = (SELECT MAX(id) FROM measurements)"
"$bt" db merge "$work/out.db" "$work/a.db" >/dev/null
sha256sum "$work/out.db" "$work/b.db" "$work/bad.db" >"$work/merge.sum"
rc=0; "$bt" db merge "$work/out.db" "$work/b.db" "$work/bad.db" 2>"$work/merge.err" >/dev/null || rc=$?
cat "$work/merge.err"
[[ $rc == 6 ]] || fail "db merge of a bad input exited $rc (want 6)"
grep -q "bad.db" "$work/merge.err" && grep -q "config.block_m" "$work/merge.err" || fail "the message does not name the input and field"
sha256sum -c --quiet "$work/merge.sum" || fail "a refused merge changed OUT or an input"
echo "5. db merge with a bad input: exit 6 naming it, OUT unchanged"

# 6. Runners that fork: nothing of theirs outlives them.
"$bt" sweep forky --server "$url" --token-file "$work/db/token" --shape n=64 --json >"$work/forky.json"
grep -q '"status":"done"' "$work/forky.json" || { cat "$work/forky.json"; fail "the forky sweep did not finish"; }
sleeps_gone 31.7 || fail "$(sleeps 31.7) runner child(ren) outlived their runner (through the daemon)"
"$bt" sweep forky --local --kernel-dir "$work/forky" --db "$work/forky.db" --shape n=64 "${tiny[@]}" >/dev/null 2>&1
sleeps_gone 31.7 || fail "$(sleeps 31.7) runner child(ren) outlived their runner (sweep --local)"
echo "6. forking runners: no child left, through the daemon and with --local"
echo "e2e_hostile_ingest: ok"
