#!/usr/bin/env bash
# README command 2 (and CI): install dependencies, build, and run the whole test suite except
# tests labelled `slow` (run those with: ctest --test-dir build -L slow).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
deploy/build.sh
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs" -LE slow "$@"
