#!/usr/bin/env bash
# Installs a blocktune build into a temporary prefix, checks the installed tree, starts the
# installed daemon (which must find the installed worker beside it), then builds and runs the
# consumer project in this folder against that prefix three ways: find_package(blocktune),
# pkg-config through CMake, and the bare compiler line `pkg-config --cflags --libs` gives
# (after moving the prefix, so the .pc files are shown to be relocatable).
# Usage: run.sh BUILD_DIR [CXX_COMPILER]
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
cxx=${2:-c++}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
echo "installed into $prefix:"
(cd "$prefix" && find . -type f | sort | grep -v '^./include/kernels/' && echo "./include/kernels/: $(find include/kernels -name '*.h' | wc -l) headers")

for f in bin/blocktune bin/blocktuned bin/blocktune-worker \
         include/blocktune/tables/resolve.h include/kernels/matmul/matmul.h include/kernels/core/result.h \
         lib/libblocktune_kernels.a \
         lib/cmake/blocktune/blocktuneConfig.cmake lib/cmake/blocktune/blocktuneConfigVersion.cmake \
         lib/cmake/blocktune/blocktuneTargets.cmake \
         lib/pkgconfig/blocktune-tables.pc lib/pkgconfig/blocktune-kernels.pc; do
  [[ -f $prefix/$f ]] || { echo "FAIL: $f not installed"; exit 1; }
done
# Every generated table header, byte for byte.
for h in "$src"/tables/include/blocktune/tables/*.h; do
  cmp "$h" "$prefix/include/blocktune/tables/$(basename "$h")"
done
# Every header a kernel header includes is installed under the name it is included by.
grep -rhoE '#include "[^"]+"' "$prefix/include" | sed 's/#include "\(.*\)"/\1/' | sort -u | while read -r inc; do
  # the generated headers include resolve.h beside themselves, and resolve.h its parts
  [[ -f $prefix/include/blocktune/tables/$inc ]] && continue
  [[ -f $prefix/include/$inc ]] || { echo "FAIL: an installed header includes $inc, which is not installed"; exit 1; }
done
# Nothing installed points back into the source or build tree.
if grep -rlF -e "$src" -e "$build" "$prefix/lib/cmake" "$prefix/lib/pkgconfig"; then
  echo "FAIL: installed package files name the source or build tree"; exit 1
fi

# The installed daemon starts (it refuses to without a worker beside it: exit 8) and serves.
"$prefix/bin/blocktuned" --port 0 --port-file "$work/port" --db "$work/db/blocktune.db" --log-level warn \
  >"$work/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do [[ -s $work/port ]] && break; sleep 0.05; done
[[ -s $work/port ]] || { echo "FAIL: installed blocktuned did not start"; cat "$work/daemon.log"; exit 1; }
"$prefix/bin/blocktune" health --server "http://127.0.0.1:$(cat "$work/port")"
kill -TERM "$daemon_pid"
wait "$daemon_pid"
daemon_pid=

echo "== find_package(blocktune)"
cmake -S "$here" -B "$work/cmake" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log"
cmake --build "$work/cmake" >>"$work/cmake.log" || { cat "$work/cmake.log"; exit 1; }
"$work/cmake/consumer"

echo "== pkg-config through CMake"
PKG_CONFIG_PATH=$prefix/lib/pkgconfig cmake -S "$here" -B "$work/pc" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$cxx" -DCONSUMER_USE_PKGCONFIG=ON >"$work/pc.log"
cmake --build "$work/pc" >>"$work/pc.log" || { cat "$work/pc.log"; exit 1; }
"$work/pc/consumer"

echo "== pkg-config by hand, prefix moved"
mv "$prefix" "$work/moved"
export PKG_CONFIG_PATH=$work/moved/lib/pkgconfig
flags=$(pkg-config --cflags --libs blocktune-kernels)
echo "pkg-config --cflags --libs blocktune-kernels: $flags"
pkg-config --exists 'blocktune-tables >= 0.1'
# shellcheck disable=SC2086  # the flags are words
"$cxx" -std=c++23 -O2 "$here/main.cc" -o "$work/by_hand" $flags
"$work/by_hand"
echo PASS
