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
source "$(dirname "$0")/lib.sh"
StartDaemon --min-repetition-ms 1 --repetitions 2 --log-level error
python3 "$here/malformed_corpus.py" "$port" "$token" "$count" "$seed"
kill -0 "$daemon_pid" || { echo "FAIL: daemon died"; cat "$work/daemon.log"; exit 1; }
if grep -q "unhandled exception" "$work/daemon.log"; then echo "FAIL: unhandled exception logged"; exit 1; fi
echo "PASS"
