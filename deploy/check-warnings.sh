#!/usr/bin/env bash
# The whole tree under clang with -Wall -Wextra -Werror, in its own build dir (build-clang/ or
# $1). CI's own build (deploy/test.sh) is GCC 12 with -Werror; this is the second compiler.
#
#   deploy/check-warnings.sh [BUILD_DIR]
#
# Debian 12's default clang 14 cannot compile libstdc++ 12's <expected> (it needs
# __cpp_concepts >= 202002L, which clang reports from 19 on), and the tree uses std::expected
# everywhere, so this builds with Debian 12's clang-19 package. clang 14 still builds the
# libFuzzer target (deploy/fuzz-request.sh), which keeps to plain C++20.
# Takes ~5 min on 2 idle cores (ccache is used when installed).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-clang}
deploy/install-deps.sh clang-19
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
CC=clang-19 CXX=clang++-19 cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DBLOCKTUNE_WERROR=ON "${launcher[@]}" >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build "$build_dir" -j "$jobs"
echo "check-warnings: clang-19 build of the whole tree with -Werror: no warnings"
