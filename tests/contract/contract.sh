#!/usr/bin/env bash
# Validates every exchange the e2e scripts recorded (tests/e2e/lib.sh runs blocktuned with
# --exchange-log into BUILD_DIR/contract/exchanges/) against the OpenAPI document blocktuned
# serves, with ajv: validate.mjs says what is checked.
# Usage: contract.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib.sh"
FetchOpenApi
shopt -s nullglob
# A log older than the daemon binary was written by an earlier build (an e2e script whose
# arguments changed leaves its old file behind); it says nothing about this one.
logs=()
for f in "$build"/contract/exchanges/*.jsonl; do
  if [[ $f -nt $build/server/blocktuned ]]; then logs+=("$f"); else echo "skipped (older than blocktuned): $(basename "$f")"; fi
done
((${#logs[@]})) || { echo "no exchange logs newer than blocktuned in $build/contract/exchanges: run the e2e tests first"; exit 1; }
NODE_PATH=$npm_dir/node_modules node "$here/validate.mjs" "$build/contract/openapi.json" "${logs[@]}"
