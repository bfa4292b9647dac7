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
logs=("$build"/contract/exchanges/*.jsonl)
((${#logs[@]})) || { echo "no exchange logs in $build/contract/exchanges: run the e2e tests first"; exit 1; }
NODE_PATH=$npm_dir/node_modules node "$here/validate.mjs" "$build/contract/openapi.json" "${logs[@]}"
