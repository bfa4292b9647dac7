#!/usr/bin/env bash
# Many processes, one database (issue 40; docs/scale.md "One database, many processes"): two
# blocktuned daemons and `blocktune sweep --local` processes share one SQLite file, in both
# orders, and each side is killed with SIGKILL mid-sweep. Every sweep must end done, each
# (sweep, bucket, config) measured exactly once (count = distinct = planned), with no UNIQUE
# failure anywhere, and PRAGMA integrity_check ok.
#   1. daemon A first: a sweep through A, a --local sweep, then daemon B and a sweep through B
#   2. --local first: a --local sweep, then a sweep through A
#   3. SIGKILL of a --local process mid-sweep: a surviving daemon takes its sweep over
#   4. SIGKILL of daemon A mid-sweep: daemon B takes it over; A restarts; SIGKILL of B
#      mid-sweep: the restarted A takes that over
# Usage: e2e_many_processes.sh BUILD_DIR
set -euo pipefail
build=$1
work=$(mktemp -d)
[[ -z ${KEEP:-} ]] || echo "work folder (kept): $work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [[ -n ${KEEP:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
db=$work/db/blocktune.db
cli=$build/client/blocktune
# Short repetitions: this checks who stores what, not timing quality. --worker-sched normal: the
# default SCHED_IDLE workers starve on a machine busy with other builds.
timing=(--min-repetition-ms 1 --repetitions 3 --max-cv 1000)
q() { sqlite3 "$db" "$1"; }
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do echo "--- $f"; tail -n 20 "$f"; done
  exit 1
}

# start_daemon NAME: blocktuned on a free port, pid in pid_NAME, URL in url_NAME.
start_daemon() {
  local name=$1
  rm -f "$work/port-$name"
  "$build/server/blocktuned" --port 0 --port-file "$work/port-$name" --db "$db" --worker-sched normal \
    "${timing[@]}" >>"$work/daemon-$name.log" 2>&1 &
  local pid=$!
  pids+=("$pid")
  for _ in $(seq 200); do [[ -s $work/port-$name ]] && break; sleep 0.05; done
  [[ -s $work/port-$name ]] || fail "daemon $name did not start"
  printf -v "pid_$name" '%s' "$pid"
  printf -v "url_$name" '%s' "http://127.0.0.1:$(cat "$work/port-$name")"
}
# remote URL SHAPE... : queues a sweep (random, 12 configs a bucket) and prints its id.
remote() {
  local url=$1
  shift
  local shapes=()
  for s in "$@"; do shapes+=(--shape "$s"); done
  "$cli" sweep matmul "${shapes[@]}" --strategy random --budget 12 --no-wait --json --server "$url" \
    --token-file "$work/db/token" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'
}
# local NAME SHAPE...: a --local sweep in the background (pid in pid_NAME), log in NAME.log.
local_sweep() {
  local name=$1
  shift
  local shapes=()
  for s in "$@"; do shapes+=(--shape "$s"); done
  "$cli" sweep matmul --local --db "$db" "${shapes[@]}" --strategy random --budget 12 \
    "${timing[@]}" --idempotency-key "$name" >"$work/$name.log" 2>&1 &
  pids+=("$!")
  printf -v "pid_$name" '%s' "$!"
}
# wait_done ID...: until each sweep is done (fails on failed/cancelled, or after 120 s).
wait_done() {
  local deadline=$((SECONDS + 120))
  for id in "$@"; do
    while true; do
      local st
      st=$(q "SELECT status FROM sweeps WHERE id = $id" 2>/dev/null || echo busy)
      [[ $st == done ]] && break
      [[ $st == failed || $st == cancelled ]] && fail "sweep $id ended $st: $(q "SELECT error FROM sweeps WHERE id = $id")"
      ((SECONDS < deadline)) || fail "sweep $id still '$st' after 120 s"
      sleep 0.2
    done
  done
}
# wait_measured ID N: until sweep ID has at least N measurements committed.
wait_measured() {
  local deadline=$((SECONDS + 60))
  while [[ $(q "SELECT COUNT(*) FROM measurements WHERE sweep_id = $1" 2>/dev/null || echo 0) -lt $2 ]]; do
    ((SECONDS < deadline)) || fail "sweep $1 did not reach $2 measurements"
    sleep 0.05
  done
}
# The sweep a --local process made (its Idempotency-Key is its name).
local_id() {
  local deadline=$((SECONDS + 30)) id=
  while [[ -z $id ]]; do
    id=$(q "SELECT sweep_id FROM idempotency_keys WHERE idempotency_key = '$1'" 2>/dev/null || true)
    ((SECONDS < deadline)) || fail "no sweep for $1"
    [[ -n $id ]] || sleep 0.05
  done
  echo "$id"
}
# "daemon pid 123": the executor that owns (finished) sweep $1.
owner_of() {
  q "SELECT e.kind || ' pid ' || e.pid FROM sweeps s JOIN executors e ON e.id = s.owner WHERE s.id = $1" 2>/dev/null ||
    true
}

echo "1. daemon A first, then a --local process, then daemon B"
start_daemon A
s1=$(remote "$url_A" m=64,n=64,k=64 m=128,n=64,k=64)
local_sweep L1 m=96,n=96,k=64 m=160,n=64,k=64
start_daemon B
s3=$(remote "$url_B" m=64,n=128,k=64 m=128,n=128,k=64)
wait "$pid_L1" || fail "the --local sweep failed: $(tail -n 3 "$work/L1.log")"
s2=$(local_id L1)
wait_done "$s1" "$s2" "$s3"
echo "   sweep $s1 (daemon A), $s2 (--local), $s3 (daemon B): done"

echo "2. a --local process first, then a sweep through daemon A"
local_sweep L2 m=192,n=64,k=64 m=224,n=64,k=64
s4=$(local_id L2)
s5=$(remote "$url_A" m=256,n=64,k=64 m=96,n=128,k=64)
wait "$pid_L2" || fail "the --local sweep failed: $(tail -n 3 "$work/L2.log")"
wait_done "$s4" "$s5"
echo "   sweep $s4 (--local), $s5 (daemon A): done"

echo "3. SIGKILL of a --local process mid-sweep"
local_sweep L3 m=64,n=192,k=64 m=64,n=224,k=64
s6=$(local_id L3)
wait_measured "$s6" 4
{ kill -9 "$pid_L3" && wait "$pid_L3"; } 2>/dev/null || true  # (no "Killed" line from the shell)
echo "   killed the --local process of sweep $s6 at $(q "SELECT COUNT(*) FROM measurements WHERE sweep_id = $s6") measurements"
wait_done "$s6"
echo "   sweep $s6 finished by $(owner_of "$s6") (daemon A is pid $pid_A, B pid $pid_B)"
[[ $(owner_of "$s6") == "daemon pid $pid_A" || $(owner_of "$s6") == "daemon pid $pid_B" ]] || fail "sweep $s6's owner"

echo "4. SIGKILL of daemon A mid-sweep, then of daemon B"
s7=$(remote "$url_A" m=64,n=256,k=64 m=128,n=192,k=64)
wait_measured "$s7" 4
{ kill -9 "$pid_A" && wait "$pid_A"; } 2>/dev/null || true  # (no "Killed" line from the shell)
echo "   killed daemon A at $(q "SELECT COUNT(*) FROM measurements WHERE sweep_id = $s7") measurements of sweep $s7"
wait_done "$s7"
echo "   sweep $s7 finished by $(owner_of "$s7") (daemon B)"
[[ $(owner_of "$s7") == "daemon pid $pid_B" ]] || fail "sweep $s7 was not finished by daemon B"
grep -q "sweep taken over sweep=$s7 " "$work/daemon-B.log" || fail "daemon B did not log taking sweep $s7 over"
start_daemon A
s8=$(remote "$url_B" m=128,n=256,k=64 m=192,n=128,k=64)
wait_measured "$s8" 4
{ kill -9 "$pid_B" && wait "$pid_B"; } 2>/dev/null || true  # (no "Killed" line from the shell)
echo "   killed daemon B at $(q "SELECT COUNT(*) FROM measurements WHERE sweep_id = $s8") measurements of sweep $s8"
wait_done "$s8"
echo "   sweep $s8 finished by $(owner_of "$s8") (the restarted daemon A)"
[[ $(owner_of "$s8") == "daemon pid $pid_A" ]] || fail "sweep $s8 was not finished by the restarted daemon A"

echo "every sweep: measurements stored, distinct, planned"
bad=0
for id in $(q "SELECT id FROM sweeps ORDER BY id"); do
  row=$(q "SELECT (SELECT COUNT(*) FROM measurements WHERE sweep_id = $id) || ' ' ||
    (SELECT COUNT(*) FROM (SELECT DISTINCT bucket, config FROM measurements WHERE sweep_id = $id)) || ' ' ||
    progress_total || ' ' || status || ' ' || (SELECT SUM(attempts) FROM sweep_tasks WHERE sweep_id = $id)
    FROM sweeps WHERE id = $id")
  read -r n distinct planned status leases <<<"$row"
  echo "   sweep $id: $n stored, $distinct distinct, $planned planned, $status, $leases task leases"
  [[ $n == "$distinct" && $n == "$planned" && $status == done ]] || bad=1
done
[[ $bad == 0 ]] || fail "a sweep is not done with each config once"
[[ $(q "SELECT COUNT(*) FROM sweeps") == 8 ]] || fail "$(q "SELECT COUNT(*) FROM sweeps") sweeps, expected 8"
if grep -l "UNIQUE" "$work"/*.log; then fail "a UNIQUE failure was logged"; fi
[[ $(q "PRAGMA integrity_check") == ok ]] || fail "integrity_check"
kill -TERM "$pid_A"
wait "$pid_A" || fail "daemon A did not drain on SIGTERM"
echo "PASS: 8 sweeps from 2 daemons and 3 --local processes on one file, 3 SIGKILLs, each config stored once"
