#!/usr/bin/env bash
# Runs tests/e2e/malformed_corpus.py against a fresh blocktuned: COUNT malformed or mutated
# requests; passes only with 0 5xx, 0 malformed error bodies and the daemon alive (and still
# running as the same process) at the end.
# Usage: e2e_malformed.sh BUILD_DIR COUNT [SEED]
set -euo pipefail
build=$1
count=${2:-10000}
seed=${3:-1}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
"$build/server/blocktuned" --port 0 --port-file "$work/port" --db "$work/db/blocktune.db" \
  --min-repetition-ms 1 --repetitions 2 --log-level error >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
[[ -s $work/port ]] || { echo "daemon did not start"; cat "$work/daemon.log"; exit 1; }
python3 "$here/malformed_corpus.py" "$(cat "$work/port")" "$(cat "$work/db/token")" "$count" "$seed"
kill -0 "$daemon_pid" || { echo "FAIL: daemon died"; cat "$work/daemon.log"; exit 1; }
if grep -q "unhandled exception" "$work/daemon.log"; then echo "FAIL: unhandled exception logged"; exit 1; fi
echo "PASS"
