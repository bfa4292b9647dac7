#!/usr/bin/env bash
# Many machines, one database (docs/scale.md), end to end through the CLI:
#  1. the union of 4 shards of an exhaustive sweep (`sweep --local --shard I/4`) measures exactly
#     the configs of the unsharded sweep, each once;
#  2. `db merge` of the shards holds that many measurements, merging again adds nothing, the
#     inputs are byte-for-byte unchanged, a winner is chosen per bucket, and an input with a newer
#     schema is refused with OUT untouched;
#  3. `push` to blocktuned killed with SIGKILL mid-way and run again, then the daemon killed with
#     SIGKILL mid-push and restarted while push retries: every measurement and sample arrives,
#     none twice.
# Usage: e2e_scale.sh BUILD_DIR
set -euo pipefail
build=$1
source "$(dirname "$0")/lib.sh"
bt=$build/client/blocktune
sweep=(matmul --local --in-process --shape m=32,n=32,k=32 --shape m=64,n=64,k=32 --shape m=128,n=32,k=32
       --min-repetition-ms 0.05 --repetitions 2 --max-cv 1000)
items() { sqlite3 "$1" "SELECT bucket || ' ' || config FROM measurements ORDER BY 1"; }

# 1. Shards.
"$bt" sweep "${sweep[@]}" --db "$work/full.db" >/dev/null 2>&1
for i in 0 1 2 3; do "$bt" sweep "${sweep[@]}" --db "$work/shard$i.db" --shard "$i/4" >/dev/null 2>&1; done
full=$(sqlite3 "$work/full.db" "SELECT COUNT(*) FROM measurements")
for i in 0 1 2 3; do items "$work/shard$i.db"; done | sort >"$work/union.txt"
items "$work/full.db" >"$work/full.txt"
dups=$(uniq -d "$work/union.txt" | wc -l)
echo "unsharded: $full measurements; shards: $(for i in 0 1 2 3; do sqlite3 "$work/shard$i.db" 'SELECT COUNT(*) FROM measurements'; done | tr '\n' ' ')(union $(wc -l <"$work/union.txt"), duplicates $dups)"
[[ $dups == 0 ]] || { echo "FAIL: a (bucket, config) measured by two shards"; exit 1; }
cmp "$work/union.txt" "$work/full.txt" || { echo "FAIL: the shards' union is not the unsharded sweep"; exit 1; }
[[ $(sqlite3 "$work/shard1.db" "SELECT shard_index || '/' || shard_count FROM sweeps") == 1/4 ]]
# More shards than items: a shard may hold nothing, and then it is done at once.
timeout 60 "$bt" sweep matmul --local --in-process --shape m=32,n=32,k=32 --db "$work/empty.db" --shard 999/1000 >/dev/null 2>&1
[[ $(sqlite3 "$work/empty.db" "SELECT status || ' ' || (SELECT COUNT(*) FROM measurements) FROM sweeps") == "done 0" ]]

# 2. Merge.
sha256sum "$work"/shard?.db >"$work/inputs.sum"
"$bt" db merge "$work/merged.db" "$work"/shard?.db
merged=$(sqlite3 "$work/merged.db" "SELECT COUNT(*) FROM measurements")
echo "merged: $merged measurements (unsharded $full)"
[[ $merged == "$full" ]] || { echo "FAIL: merged count $merged != unsharded $full"; exit 1; }
again=$("$bt" db merge "$work/merged.db" "$work"/shard?.db --json)
echo "merge again: $again"
python3 -c 'import json,sys; d=json.loads(sys.argv[1]); assert d["inserted"] == 0 and d["replayed_batches"] == d["batches"], d' "$again"
[[ $(sqlite3 "$work/merged.db" "SELECT COUNT(*) FROM measurements") == "$full" ]]
sha256sum -c --quiet "$work/inputs.sum" || { echo "FAIL: merge changed an input"; exit 1; }
ls "$work"/shard?.db-wal 2>/dev/null && { echo "FAIL: merge left a -wal beside an input"; exit 1; }
[[ $(sqlite3 "$work/merged.db" "SELECT COUNT(*) FROM tuned_entries") == 3 ]] || { echo "FAIL: not one winner per bucket"; exit 1; }
[[ $(sqlite3 "$work/merged.db" "SELECT COUNT(DISTINCT uid) || ' ' || MIN(imported) || ' ' || COUNT(DISTINCT host) FROM sweeps") == "4 1 1" ]]
[[ $(sqlite3 "$work/merged.db" "SELECT COUNT(*) FROM samples") == $(for i in 0 1 2 3; do sqlite3 "$work/shard$i.db" 'SELECT COUNT(*) FROM samples'; done | awk '{s += $1} END {print s}') ]]
cp "$work/shard0.db" "$work/newer.db"
sqlite3 "$work/newer.db" "PRAGMA user_version = 9999"
sha256sum "$work/merged.db" >"$work/out.sum"
rc=0; "$bt" db merge "$work/merged.db" "$work/shard1.db" "$work/newer.db" 2>"$work/newer.err" || rc=$?
cat "$work/newer.err"
[[ $rc == 6 ]] && grep -q "newer than this build" "$work/newer.err" || { echo "FAIL: newer schema not refused (rc $rc)"; exit 1; }
sha256sum -c --quiet "$work/out.sum" || { echo "FAIL: a refused merge changed OUT"; exit 1; }

# 3. Push, with the client and then the daemon killed mid-way.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() {
  "$build/server/blocktuned" --port "$port" --db "$work/db/blocktune.db" "${exchange_args[@]}" --log-level warn \
    >>"$work/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 200); do curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && return 0; sleep 0.05; done
  echo "daemon did not start"; cat "$work/daemon.log"; exit 1
}
start
url="http://127.0.0.1:$port"
token_file=$work/db/token
"$bt" push --server "$url" --token-file "$token_file" --batch 2 "$work/merged.db" >"$work/push1.out" 2>&1 &
push_pid=$!
for _ in $(seq 400); do
  n=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements" 2>/dev/null || echo 0)
  [[ $n -ge 40 ]] && break
  sleep 0.01
done
kill -9 "$push_pid" 2>/dev/null || true
wait "$push_pid" 2>/dev/null || true
at_kill=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements")
echo "push killed (SIGKILL) with $at_kill of $full measurements on the server"
[[ $at_kill -lt $full ]] || { echo "FAIL: the push finished before the kill; make it longer"; exit 1; }
"$bt" push --server "$url" --token-file "$token_file" --batch 2 "$work/merged.db" >"$work/push2.out" 2>&1 &
push_pid=$!
sleep 0.3
kill -9 "$daemon_pid"; wait "$daemon_pid" 2>/dev/null || true
at_kill=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM measurements")
echo "daemon killed (SIGKILL) during the second push with $at_kill measurements stored"
sleep 1
start
wait "$push_pid" || { echo "FAIL: the retried push did not finish"; cat "$work/push2.out"; exit 1; }
cat "$work/push2.out"
got=$(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*), COUNT(DISTINCT s.uid || m.bucket || m.config) FROM measurements m JOIN sweeps s ON s.id = m.sweep_id")
echo "server: $got (count, distinct) of $full"
[[ $got == "$full|$full" ]] || { echo "FAIL: lost or doubled measurements"; exit 1; }
[[ $(sqlite3 "$work/db/blocktune.db" "SELECT COUNT(*) FROM samples") == $(sqlite3 "$work/merged.db" "SELECT COUNT(*) FROM samples") ]] || { echo "FAIL: samples differ"; exit 1; }
[[ $(sqlite3 "$work/db/blocktune.db" "PRAGMA integrity_check") == ok ]]
# The same winners as the merge chose, served by lookups.
[[ $(sqlite3 "$work/db/blocktune.db" "SELECT config FROM tuned_entries ORDER BY bucket") == $(sqlite3 "$work/merged.db" "SELECT config FROM tuned_entries ORDER BY bucket") ]] || { echo "FAIL: winners differ from the merge's"; exit 1; }
# Without the token: refused.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/v1/results" -d '{}')
[[ $code == 401 ]] || { echo "FAIL: POST /v1/results without a token answered $code"; exit 1; }
echo "e2e_scale: ok"
