#!/usr/bin/env bash
# Lints the OpenAPI document blocktuned serves with Redocly CLI's recommended ruleset (the
# version pinned in package-lock.json); fails on any error. Warnings are printed, not fatal.
# Usage: lint.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
source "$(dirname "$0")/lib.sh"
FetchOpenApi
cd "$build/contract"
"$redocly" lint --extends recommended --format stylish openapi.json
