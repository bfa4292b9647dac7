#!/usr/bin/env bash
# README command 1: install dependencies, build, and run blocktuned on 127.0.0.1 with its
# SQLite file under ./var/. Extra arguments go to blocktuned (see blocktuned --help).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
deploy/build.sh
mkdir -p var
exec build/server/blocktuned --host 127.0.0.1 --port "${BLOCKTUNE_PORT:-8787}" --db var/blocktune.db "$@"
