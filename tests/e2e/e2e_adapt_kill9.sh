#!/usr/bin/env bash
# `blocktune adapt --local` killed with SIGKILL and run again loses and repeats nothing. A tiny
# checked-in table (four matmul f32 buckets, rows of a foreign CPU) drives adapt at 1 and 2
# threads; the script kills the CLI with SIGKILL at random moments KILLS times (its workers die
# with it), then runs the same command to the end. Then: still exactly one sweep per (dtype,
# threads) unit (the plan's idempotency keys found them again), every task done, progress
# complete and equal to the measurements stored, every (sweep, bucket, config) measured once,
# each bucket's search at its evaluation budget (no config lost, none measured twice), every
# sweep reporting its time breakdown, integrity_check ok, and the regenerated table holding
# this host's own row for every bucket and thread count.
# Usage: e2e_adapt_kill9.sh BUILD_DIR KILLS
set -euo pipefail
build=$1
kills=${2:-3}
budget=16  # evaluations per bucket
work=$(mktemp -d)
adapt_pid=
cleanup() {
  if [[ -n $adapt_pid ]]; then kill -9 "$adapt_pid" 2>/dev/null || true; wait "$adapt_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
db=$work/db/blocktune.db
mkdir -p "$work/tables"
foreign=x86_64.avx2.intel.fam6_mod1.t1
for b in m32_n32_k32 m64_n64_k32 m128_n128_k32 m256_n256_k32; do
  echo "{\"kernel\":\"matmul\",\"hardware\":\"$foreign\",\"dtype\":\"f32\",\"bucket\":\"$b\",\"bucket_version\":1,\"config\":{\"block_m\":48,\"block_n\":512,\"block_k\":256},\"median_ns\":1000.0,\"samples\":5,\"sweep_id\":1,\"measurement_id\":1,\"measured_at\":\"2026-01-01T00:00:00.000Z\",\"fingerprint\":null}"
done >"$work/tables/tuned_entries.jsonl"

# A budget far beyond what the tiny buckets need: the searches stop at their evaluation budget,
# never at the clock, so what a bucket measures does not depend on how the kills fell. 6 ms
# repetitions: the whole run takes ~3 s, so three kills 0.2-0.9 s apart land before it ends (at
# 2 ms, with decision rounds reusing iteration counts, it took ~1.5 s and ended first).
adapt=("$build/client/blocktune" adapt --local --db "$db" --tables "$work/tables" --kernel matmul --dtype f32
  --threads 1 --threads 2 --budget-minutes 60 --budget "$budget" --min-repetition-ms 6 --repetitions 3
  --max-cv 1000 --gate-repetitions 3 --gate-min-time-ms 2 --poll-seconds 0.1)

q() { sqlite3 "$db" "$1"; }
mid=0
tries=0
while [[ $mid -lt $kills ]]; do
  tries=$((tries + 1))
  [[ $tries -le $((kills * 5)) ]] || { echo "FAIL: adapt kept finishing before the kill; make the run longer"; exit 1; }
  "${adapt[@]}" >>"$work/adapt.log" 2>&1 &
  adapt_pid=$!
  sleep "0.$((RANDOM % 7 + 2))$((RANDOM % 10))"  # 0.2 to 0.89 s: start-up, submission or measuring
  if ! kill -0 "$adapt_pid" 2>/dev/null; then
    wait "$adapt_pid" || true
    adapt_pid=
    echo "FAIL: adapt ended before the kill"; cat "$work/adapt.log"; exit 1
  fi
  kill -9 "$adapt_pid"
  wait "$adapt_pid" 2>/dev/null || true
  adapt_pid=
  [[ -f $db ]] || continue  # killed before the database existed: not a mid-run kill
  mid=$((mid + 1))
  echo "kill $mid: SIGKILL with $(q "SELECT COUNT(*) FROM measurements") measurements committed"
done
pgrep -f "blocktune-worker --parent-pid" >/dev/null && sleep 0.5  # PDEATHSIG reaches the workers

"${adapt[@]}" >"$work/final.log" 2>&1 || { echo "FAIL: the re-run failed"; cat "$work/final.log"; exit 1; }
grep -q "resuming 2 sweep(s)" "$work/final.log" || { echo "FAIL: the re-run did not resume the plan's sweeps"; cat "$work/final.log"; exit 1; }

sweeps=$(q "SELECT COUNT(*) FROM sweeps")
not_done=$(q "SELECT COUNT(*) FROM sweep_tasks WHERE status != 'done'")
total=$(q "SELECT COUNT(*) FROM measurements")
distinct=$(q "SELECT COUNT(*) FROM (SELECT DISTINCT sweep_id, bucket, config FROM measurements)")
bad_progress=$(q "SELECT COUNT(*) FROM sweeps s WHERE progress_done != (SELECT COUNT(*) FROM measurements m WHERE m.sweep_id = s.id) OR progress_done != progress_total")
# Valid configs measured per bucket: the search's budget, plus at most the default and the
# served row when the search did not reach them (the decision round measures them first).
off_budget=$(q "SELECT COUNT(*) FROM (SELECT sweep_id, bucket, SUM(outcome != 'invalid') AS n FROM measurements GROUP BY sweep_id, bucket) WHERE n < $budget OR n > $budget + 2")
buckets=$(q "SELECT COUNT(*) FROM (SELECT DISTINCT sweep_id, bucket FROM measurements)")
breakdowns=$(q "SELECT COUNT(*) FROM sweep_breakdowns WHERE timed_s > 0 AND wall_s >= timed_s")
integrity=$(q "PRAGMA integrity_check")
own_rows=$(grep -c '"kernel":"matmul"' "$work/tables/tuned_entries.jsonl" || true)
own_rows=$((own_rows - $(grep -c "\"hardware\":\"$foreign\"" "$work/tables/tuned_entries.jsonl")))
echo "kills=$mid sweeps=$sweeps buckets=$buckets measurements=$total distinct=$distinct tasks_not_done=$not_done bad_progress=$bad_progress off_budget=$off_budget breakdowns=$breakdowns own_rows=$own_rows integrity=$integrity"
[[ $sweeps == 2 ]] || { echo "FAIL: $sweeps sweeps, expected 2 (one per thread count)"; exit 1; }
[[ $buckets == 8 ]] || { echo "FAIL: $buckets (sweep, bucket) pairs measured, expected 8"; exit 1; }
[[ $not_done == 0 ]] || { echo "FAIL: $not_done tasks not done"; exit 1; }
[[ $total == "$distinct" ]] || { echo "FAIL: a config was measured twice"; exit 1; }
[[ $bad_progress == 0 ]] || { echo "FAIL: progress does not match the stored measurements"; exit 1; }
[[ $off_budget == 0 ]] || { echo "FAIL: $off_budget buckets measured more or fewer configs than their budget"; exit 1; }
[[ $breakdowns == 2 ]] || { echo "FAIL: $breakdowns sweeps with a time breakdown, expected 2"; exit 1; }
[[ $integrity == ok ]] || { echo "FAIL: integrity_check: $integrity"; exit 1; }
[[ $own_rows == 8 ]] || { echo "FAIL: $own_rows rows of this host in the regenerated table, expected 8"; cat "$work/final.log"; exit 1; }
echo "PASS: $mid SIGKILLs, adapt resumed its 2 sweeps, $total measurements each exactly once, 8 own rows generated"
