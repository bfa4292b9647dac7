#!/usr/bin/env bash
# Installs the contract tools pinned in tests/contract/package-lock.json (Redocly CLI, ajv) into
# DEST/node_modules with `npm ci`, outside the source tree. Skipped when DEST already holds an
# install of this exact lockfile. Needs node >= 18.17 and npm (deploy/install-deps.sh).
# Usage: npm-ci.sh DEST
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=$1
mkdir -p "$dest"
stamp="$dest/node_modules/.lock-sha256"
want=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
  echo "contract tools already installed in $dest"
  exit 0
fi
cp "$here/package.json" "$here/package-lock.json" "$dest/"
(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error)
echo "$want" >"$stamp"
echo "node $(node --version), npm $(npm --version), redocly $("$dest/node_modules/.bin/redocly" --version)"
