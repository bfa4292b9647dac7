#!/usr/bin/env bash
# Sweep efficiency, side by side: runs `blocktune sweep --local` (worker isolation on) with each
# given CLI build, interleaved A B A B ..., each on a fresh database, and prints per run the wall
# time of the command, the timed repetitions it stored (search measurements: iterations x
# samples; decision rounds: iterations x repetitions x median) and their ratio, the efficiency,
# with the load average before the run. Builds without a breakdown (before issue 22) are judged
# by the same database arithmetic, so old and new are compared by one rule; a build that reports
# its breakdown also has it printed.
# Usage: [KEEP_DB=prefix] deploy/bench-sweep-efficiency.sh ROUNDS "SWEEP ARGS" CLI_A [CLI_B ...]
#   e.g. deploy/bench-sweep-efficiency.sh 2 "matmul --shape m=512,n=512,k=512 --threads 1 --strategy exhaustive" \
#          /tmp/before/blocktune build/client/blocktune
set -euo pipefail
rounds=$1
args=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf "%-40s %5s %8s %8s %6s  %s\n" cli round wall_s timed_s eff load
for r in $(seq "$rounds"); do
  for cli in "$@"; do
    db=$work/run.db
    rm -f "$db" "$db-wal" "$db-shm"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$cli" sweep $args --local --db "$db" --json >"$work/out.json" 2>"$work/err.log" || { cat "$work/err.log"; exit 1; }
    end=$(date +%s.%N)
    wall=$(echo "$end - $start" | bc)
    timed=$(sqlite3 "$db" "SELECT printf('%.3f', ((SELECT COALESCE(SUM(m.iterations * s.ns_per_iteration), 0)
      FROM measurements m JOIN samples s ON s.measurement_id = m.id) + (SELECT COALESCE(SUM(iterations * repetitions *
      median_ns), 0) FROM final_rounds WHERE outcome = 'ok')) / 1e9)")
    outcomes=$(sqlite3 "$db" "SELECT group_concat(outcome || '=' || n, ' ') FROM (SELECT outcome, COUNT(*) AS n
      FROM measurements GROUP BY outcome)")
    printf "%-40s %5d %8.2f %8.2f %6.3f  %s  [%s]\n" "$cli" "$r" "$wall" "$timed" "$(echo "$timed / $wall" | bc -l)" \
      "$load" "$outcomes"
    [[ -z ${KEEP_DB:-} ]] || cp "$db" "$KEEP_DB.$r.$(basename "$(dirname "$cli")").db"
    if grep -q '"breakdown"' "$work/out.json"; then
      python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["breakdown"]; print("    breakdown", " ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in b.items()))' "$work/out.json"
    fi
  done
done
