#!/usr/bin/env bash
# The portable kernels off x86: cross-compiles the kernel library and kernels_test for aarch64
# with Debian 12's g++-aarch64-linux-gnu and runs the tests under qemu-user (correctness only;
# emulated timings mean nothing). The x86 intrinsics files are not compiled there, so every
# kernel runs its portable path. Separate build dir: build-aarch64/ (or $1).
#
#   deploy/test-aarch64.sh [BUILD_DIR] [extra ctest args...]
#
# GoogleTest is built from the sources libgtest-dev ships in /usr/src/googletest, with the
# cross compiler, inside this build: no arm64 multiarch packages or apt sources are needed.
# Takes ~5 min on 2 idle cores (build ~3 min, tests ~1 min of CPU under qemu); under heavy load
# the tests alone took 12-23 min of wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build-aarch64}
shift || true

# The cross g++ 12 (with libc6-dev-arm64-cross and arm64 libstdc++) and qemu-aarch64, run with
# -L /usr/aarch64-linux-gnu by the toolchain file; GoogleTest's sources come with libgtest-dev.
deploy/install-deps.sh g++-aarch64-linux-gnu qemu-user

launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DBLOCKTUNE_KERNELS_ONLY=ON "${launcher[@]}" >/dev/null
jobs=$(nproc 2>/dev/null || echo 2)
cmake --build "$build_dir" -j "$jobs"

if command -v file >/dev/null; then echo "kernels_test: $(file -b "$build_dir/tests/kernels_test" | cut -d, -f1-2)"; fi
log="$build_dir/kernels_test_aarch64.log"
start=$(date +%s)
status=0
ctest --test-dir "$build_dir" -V "$@" >"$log" 2>&1 || status=$?
# GoogleTest's own totals (cases, not the one ctest entry), then ctest's closing lines.
grep -E '\[==========\]|\[  PASSED  \]|\[  FAILED  \]|\[  SKIPPED \]|GTEST_FILTER' "$log" | sed 's/^[0-9]*: //' || true
grep -E 'tests passed|tests failed|Total Test time' "$log" || true
echo "aarch64 kernel tests under qemu: $(( $(date +%s) - start )) s, log in $log"
exit "$status"
