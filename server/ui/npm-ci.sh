#!/usr/bin/env bash
# Installs the dashboard's npm packages pinned in server/ui/package-lock.json (Apache ECharts,
# embedded into blocktuned; playwright-core, which the browser test tests/ui drives Chromium
# with) into DEST/node_modules with `npm ci`, outside the source tree. The build runs it
# (server/CMakeLists.txt); skipped when DEST already holds an install of this exact lockfile.
# Needs node >= 18.17 and npm (deploy/install-deps.sh) and, the first time, the npm registry.
# Usage: npm-ci.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
mkdir -p "$dest"
stamp="$dest/node_modules/.lock-sha256"
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  touch "$stamp"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "npm-ci.sh: npm not found; run deploy/install-deps.sh" >&2; exit 1; }
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$stamp"
