#!/usr/bin/env bash
# README command 2 (and CI): install dependencies, build, and run the whole test suite except
# tests labelled `slow` (run those with: ctest --test-dir build -L slow).
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
# -Werror: the tree builds warning-free (-Wall -Wextra, GCC 12), so a new warning fails CI here
# rather than piling up; see BLOCKTUNE_WERROR in CMakeLists.txt and cmake/warnings.cmake.
deploy/build.sh -DBLOCKTUNE_WERROR=ON
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir build --output-on-failure -j "$jobs" -LE slow "$@"
