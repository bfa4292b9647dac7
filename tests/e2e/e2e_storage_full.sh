#!/usr/bin/env bash
# A full disk is visible and survived (issue 40; docs/api.md "Operations"): blocktuned's
# database on a 16 MiB tmpfs, a sweep through the CLI, and the filesystem filled to the last
# page mid-sweep. While it is full: the sweep's JSON says `stalled` with SQLite's error and a
# null ETA, `blocktune sweeps show` and the waiting client's progress line say STALLED,
# /healthz answers degraded with the error, /readyz 503, /metrics blocktune_storage_ok 0. Space
# back: the sweep resumes by itself and ends done with every config measured exactly once,
# integrity_check ok, and health, readiness and the metric back to normal.
# Mounting a tmpfs needs root (CAP_SYS_ADMIN): elsewhere the test is skipped (exit 77).
# Usage: e2e_storage_full.sh BUILD_DIR
set -euo pipefail
build=$1
source "$(dirname "$0")/lib.sh"

fs=$work/db
mkdir -p "$fs"
if ! err=$(mount -t tmpfs -o size=16m blocktune-e2e "$fs" 2>&1); then
  echo "SKIP: cannot mount a tmpfs for the database (needs root): $err"
  exit 77
fi
client_pid=
unmount() {
  if [[ -n $client_pid ]]; then kill "$client_pid" 2>/dev/null || true; wait "$client_pid" 2>/dev/null || true; fi
  if [[ -n $daemon_pid ]]; then kill -9 "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  daemon_pid=
  umount "$fs" 2>/dev/null || umount -l "$fs" 2>/dev/null || true
  cleanup
}
trap unmount EXIT

StartDaemon --worker-sched normal --min-repetition-ms 1 --repetitions 3 --max-cv 1000
export BLOCKTUNE_SERVER=$url BLOCKTUNE_TOKEN=$token
cli=$build/client/blocktune
q() { sqlite3 "file:$fs/blocktune.db?mode=ro" "$1" 2>/dev/null || echo "?"; }
fail() {
  echo "FAIL: $*"
  echo "--- daemon"; tail -n 20 "$work/daemon.log"; echo "--- client"; tail -n 5 "$work/client.log"
  exit 1
}

# Two exhaustive buckets (360 configs), waited for by the CLI with its progress line (one line
# per change, as stderr is not a terminal).
"$cli" sweep matmul --shape m=64,n=64,k=32 --shape m=128,n=128,k=32 >"$work/client.log" 2>&1 &
client_pid=$!
deadline=$((SECONDS + 60))
until [[ $(q "SELECT COUNT(*) FROM measurements") =~ ^[0-9]+$ && $(q "SELECT COUNT(*) FROM measurements") -ge 20 ]]; do
  ((SECONDS < deadline)) || fail "the sweep did not start"
  sleep 0.05
done

# Fill the filesystem: every write that needs a new page now fails (SQLITE_FULL).
dd if=/dev/zero of="$fs/filler" bs=64k status=none 2>/dev/null || true
dd if=/dev/zero of="$fs/filler2" bs=4k status=none 2>/dev/null || true
echo "filled the database's filesystem at $(q "SELECT COUNT(*) FROM measurements") measurements"

# The runner's next commit fails; within a few seconds every report says so.
deadline=$((SECONDS + 30))
# grep reads a saved answer, not curl's pipe: `grep -q` stops at its match, and under pipefail
# the curl it leaves writing into a closed pipe (exit 23) fails the check.
until grep -q '"stalled"' <<<"$(curl -fsS "$url/v1/sweeps/1")"; do
  ((SECONDS < deadline)) || fail "the sweep never reported stalled: $(curl -fsS "$url/v1/sweeps/1")"
  sleep 0.2
done
sweep=$(curl -fsS "$url/v1/sweeps/1")
stuck=$(q "SELECT COUNT(*) FROM measurements")
echo "stalled at $stuck measurements: $(grep -o '"stalled":{[^}]*}' <<<"$sweep")"
grep -q '"status":"running"' <<<"$sweep" || fail "status: $sweep"
grep -q 'database or disk is full' <<<"$sweep" || fail "no SQLite error in $sweep"
grep -q '"eta_seconds":null' <<<"$sweep" || fail "an ETA while stalled: $sweep"
show=$("$cli" sweeps show 1)
grep -q 'stalled' <<<"$show" && grep -q 'disk is full' <<<"$show" || fail "sweeps show: $show"
health=$(curl -fsS "$url/healthz")
echo "healthz: $health"
grep -q '"status":"degraded"' <<<"$health" && grep -q 'disk is full' <<<"$health" || fail "healthz: $health"
ready_code=$(curl -s -o "$work/ready.json" -w '%{http_code}' "$url/readyz")
echo "readyz: $ready_code $(cat "$work/ready.json")"
[[ $ready_code == 503 ]] && grep -q 'disk is full' "$work/ready.json" || fail "readyz $ready_code"
metrics=$(curl -fsS "$url/metrics")
grep -q '^blocktune_storage_ok 0$' <<<"$metrics" || fail "metrics: $(grep storage <<<"$metrics")"
grep '^blocktune_storage_' <<<"$metrics" | sed 's/^/metrics: /'
# The waiting client says it too (its line as it printed it).
deadline=$((SECONDS + 10))
until grep -q 'STALLED storage: .*disk is full' "$work/client.log"; do
  ((SECONDS < deadline)) || fail "the client's progress line never said STALLED"
  sleep 0.2
done
echo "client: $(grep -m1 'STALLED' "$work/client.log")"
sleep 3  # stays stalled: nothing is committed, nothing fails
[[ $(q "SELECT COUNT(*) FROM measurements") == "$stuck" ]] || fail "measurements were committed while full"
grep -q '"status":"running"' <<<"$(curl -fsS "$url/v1/sweeps/1")" || fail "the sweep ended while full"

# Space back: the sweep resumes by itself and the client sees it end.
rm -f "$fs/filler" "$fs/filler2"
echo "freed the filesystem"
rc=0
wait "$client_pid" || rc=$?
client_pid=
[[ $rc == 0 ]] || fail "the client exited $rc"
tail -n 2 "$work/client.log" | head -n 1
total=$(q "SELECT COUNT(*) FROM measurements WHERE sweep_id = 1")
distinct=$(q "SELECT COUNT(*) FROM (SELECT DISTINCT bucket, config FROM measurements WHERE sweep_id = 1)")
planned=$(q "SELECT progress_total FROM sweeps WHERE id = 1")
integrity=$(q "PRAGMA integrity_check")
echo "after: $total stored, $distinct distinct, $planned planned, integrity $integrity"
[[ $total == 360 && $distinct == 360 && $planned == 360 && $integrity == ok ]] || fail "stored $total/$distinct/$planned"
grep -q '"status":"ok"' <<<"$(curl -fsS "$url/healthz")" || fail "healthz after: $(curl -fsS "$url/healthz")"
[[ $(curl -s -o /dev/null -w '%{http_code}' "$url/readyz") == 200 ]] || fail "readyz after"
grep -q '^blocktune_storage_ok 1$' <<<"$(curl -fsS "$url/metrics")" || fail "metrics after"
grep -q 'storage fault: runner cannot write' "$work/daemon.log" || fail "no storage fault in the log"
grep -q 'storage writable again' "$work/daemon.log" || fail "no recovery in the log"
echo "PASS: stalled and said so at $stuck measurements; resumed when space came back, 360 measured once"
