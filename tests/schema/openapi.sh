#!/usr/bin/env bash
# schema/openapi.json is a checked copy of the OpenAPI document blocktuned serves at
# /v1/openapi.json (generated at run time from the route table, server/routes.h, and the
# component schemas of server/wire/): the HTTP contract as data, readable and diffable without
# building. This script serves the document from a fresh daemon of BUILD_DIR, pretty-prints
# it (2-space indent, keys in the daemon's order, UTF-8, final newline) and compares it with the
# copy; it fails with the diff when they differ. With --update it writes the copy instead:
#   tests/schema/openapi.sh build . --update
# Usage: openapi.sh BUILD_DIR SOURCE_DIR [--update]   (ctest schema_openapi_copy)
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
update=${3:-}
copy=$src/schema/openapi.json
BLOCKTUNE_NO_EXCHANGE_LOG=1 source "$(dirname "$0")/../e2e/lib.sh"
StartDaemon --log-level warn
curl -fsS "$url/v1/openapi.json" >"$work/served.json"
python3 -c '
import json, sys
doc = json.load(open(sys.argv[1], encoding="utf-8"))
with open(sys.argv[2], "w", encoding="utf-8") as f:
    f.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
' "$work/served.json" "$work/openapi.json"
if [[ $update == --update ]]; then
  cp "$work/openapi.json" "$copy"
  echo "wrote $copy ($(wc -l <"$copy") lines)"
  exit 0
fi
if ! diff -u --label schema/openapi.json --label "served by $build/server/blocktuned" "$copy" "$work/openapi.json" \
    >"$work/diff"; then
  head -n 80 "$work/diff"
  echo "schema/openapi.json differs from the served document ($(grep -c '^[-+][^-+]' "$work/diff") lines);"
  echo "if the change to the API is meant, regenerate the copy: tests/schema/openapi.sh BUILD_DIR . --update"
  exit 1
fi
echo "schema/openapi.json is the served document ($(wc -l <"$copy") lines)"
