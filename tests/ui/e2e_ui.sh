#!/usr/bin/env bash
# The dashboard (/ui/) in a real browser. Starts blocktuned on a fresh database, runs real small
# sweeps through the API (two finished, one pinned override, one left running for the whole
# test), adds a synthetic sweep of 20,000 measurements (gen_measurements.py) for the load-time
# check, then drives Debian's Chromium headless with playwright-core (ui_test.mjs): every page
# loaded, checked against the API, free of console errors and failed requests, interacted
# with, and saved as a screenshot in BUILD_DIR/ui-screenshots (the README's are docs/img/ui-*.png).
# Needs /usr/bin/chromium (deploy/install-deps.sh) and the build's npm install (server/ui/npm-ci.sh).
# Usage: e2e_ui.sh BUILD_DIR
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
# The browser's requests are pages, not API exchanges: not recorded for the contract test.
export BLOCKTUNE_NO_EXCHANGE_LOG=1
source "$here/../e2e/lib.sh"
[[ -x /usr/bin/chromium ]] || { echo "FAIL: /usr/bin/chromium missing; run deploy/install-deps.sh"; exit 1; }
modules=$build/ui/npm/node_modules
[[ -d $modules/playwright-core ]] || { echo "FAIL: $modules/playwright-core missing; build blocktuned (server/ui/npm-ci.sh)"; exit 1; }

StartDaemon --min-repetition-ms 1 --repetitions 3 --max-cv 1000 --log-level warn
auth=(-H "Authorization: Bearer $token" -H 'Content-Type: application/json')
submit() {  # submit JSON -> sweep id
  curl -fsS -X POST "${auth[@]}" "$url/v1/sweeps" -d "$1" | sed -n 's/.*"id":\([0-9]*\).*/\1/p'
}
wait_done() {  # wait_done ID: until done (fails on failed/cancelled or after 10 min)
  for _ in $(seq 1200); do
    status=$(curl -fsS "$url/v1/sweeps/$1" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')
    [[ $status == done ]] && return 0
    [[ $status == failed || $status == cancelled ]] && { echo "FAIL: sweep $1 $status"; exit 1; }
    sleep 0.5
  done
  echo "FAIL: sweep $1 not done in 10 min"; exit 1
}

# Two finished sweeps over the same two buckets (exhaustive, then random), for the sweep page and
# the comparison; the exhaustive one measures the default config, so its rows have a speedup.
done_id=$(submit '{"kernel":"matmul","shapes":[{"m":64,"n":64,"k":64},{"m":32,"n":128,"k":64}],"threads":1}')
wait_done "$done_id"
b_id=$(submit '{"kernel":"matmul","shapes":[{"m":64,"n":64,"k":64},{"m":32,"n":128,"k":64}],"threads":1,"strategy":"random","budget":12}')
wait_done "$b_id"
# A pinned config on one of the rows.
row=$(curl -fsS "$url/v1/winners?kernel=matmul" | python3 -c '
import json, sys
e = [w for w in json.load(sys.stdin)["entries"] if w["from_database"]][0]
print(json.dumps({"kernel": e["kernel"], "hardware": e["hardware"], "dtype": e["dtype"], "bucket": e["bucket"],
                  "config": {"block_m": 48, "block_n": 128, "block_k": 128}, "reason": "pinned by the UI test"}))')
curl -fsS -X POST "${auth[@]}" "$url/v1/overrides" -d "$row" >/dev/null
big_id=$(python3 "$here/gen_measurements.py" "$work/db/blocktune.db" "$done_id" 20000)
# Left running while the browser looks: one large bucket, exhaustively (minutes of work).
run_id=$(submit '{"kernel":"matmul","shapes":[{"m":2048,"n":2048,"k":2048}],"threads":1}')
for _ in $(seq 600); do
  [[ $(curl -fsS "$url/v1/sweeps/$run_id" | sed -n 's/.*"done":\([0-9]*\).*/\1/p') -ge 1 ]] && break
  sleep 0.2
done
echo "sweeps: done $done_id, random $b_id, synthetic 20,000 measurements $big_id, running $run_id"

PLAYWRIGHT_NODE_MODULES=$modules SWEEP_DONE=$done_id SWEEP_B=$b_id SWEEP_RUNNING=$run_id SWEEP_BIG=$big_id \
  node "$here/ui_test.mjs" "$url" "$build/ui-screenshots"
# The running sweep was never disturbed: still running or done, never failed.
status=$(curl -fsS "$url/v1/sweeps/$run_id" | sed -n 's/.*"status":"\([a-z]*\)".*/\1/p')
[[ $status == running || $status == done ]] || { echo "FAIL: the running sweep ended $status"; exit 1; }
