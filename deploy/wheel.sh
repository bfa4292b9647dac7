#!/usr/bin/env bash
# Packs blocktune for machines with Python but no compiler, apt or root (docs/install.md):
#   dist/blocktune-<version>-py3-none-<platform>.whl   the Python package, blocktune, blocktuned and
#       blocktune-worker as the wheel's scripts (on PATH after pip install), share/blocktune/ as data
#   dist/blocktune-<version>-linux-<arch>.tar.gz       the same programs with share/, the headers,
#       the kernel library and the CMake and pkg-config packages for embedding (bin/ include/ lib/ share/)
# Both hold the static runtime (cmake/static_runtime.cmake): the very objects of the source build
# linked with everything but the C library static, so the kernel fingerprints are the source
# build's. The platform tag is derived from the glibc symbol versions the binaries need
# (manylinux_2_<max>); --audit checks it with auditwheel (pinned in deploy/wheel-requirements.lock).
#
#   deploy/wheel.sh [--build-dir DIR] [--no-build] [--out DIR] [--audit]
#     --build-dir DIR  the build tree (default build-wheel/: configured here, Release, without tests)
#     --no-build       pack DIR as it is built (ctest e2e_wheel packs the suite's own tree this way)
#     --out DIR        where the wheel and the tarball go (default dist/)
#     --audit          run `auditwheel show` on the wheel; fail unless it names the same tag
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build-wheel
out=$src/dist
do_build=1
audit=0
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --out) out=$2; shift 2 ;;
    --audit) audit=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
build=$(mkdir -p "$build" && cd "$build" && pwd)
out=$(cd "$out" && pwd)

if ((do_build)); then
  launcher=()
  if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBLOCKTUNE_BUILD_TESTS=OFF \
    -DBLOCKTUNE_BUILD_BENCHMARKS=OFF -DBLOCKTUNE_STATIC_RUNTIME=ON "${launcher[@]}" >/dev/null
  cmake --build "$build" -j "$(nproc 2>/dev/null || echo 2)"
fi
for b in blocktune blocktuned blocktune-worker; do
  [[ -x $build/static/$b ]] || {
    echo "$build/static/$b is missing: the static runtime was not built (see BLOCKTUNE_STATIC_RUNTIME's configure warning)" >&2
    exit 1
  }
done

# The stage: the normal install, then the static programs (stripped) over its bin/.
pack=$build/package
stage=$pack/stage
rm -rf "$pack"/stage "$pack"/blocktune-*-linux-*
cmake --install "$build" --prefix "$stage" >"$pack.install.log" 2>&1 || { cat "$pack.install.log" >&2; exit 1; }
# (cmake --install keeps a file newer than the one it would copy: remove the dynamic programs.)
rm "$stage"/bin/blocktune "$stage"/bin/blocktuned "$stage"/bin/blocktune-worker
cmake --install "$build" --prefix "$stage" --component static_runtime --strip >>"$pack.install.log" 2>&1 \
  || { cat "$pack.install.log" >&2; exit 1; }

# Dynamic dependencies: the C library's family only, found by the default search (no RPATH).
glibc_max=0.0
for b in "$stage"/bin/*; do
  needed=$(readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for n in $needed; do
    [[ $n =~ ^(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|ld-linux-aarch64)\.so\.[0-9]+$ ]] || {
      echo "$(basename "$b") needs $n, which is not part of the C library" >&2
      exit 1
    }
  done
  if readelf -d "$b" | grep -qE '\((RPATH|RUNPATH)\)'; then echo "$(basename "$b") has an RPATH" >&2; exit 1; fi
  for v in $(readelf -V --wide "$b" | grep -oE 'Name: GLIBC_[0-9.]+' | sed 's/Name: GLIBC_//'); do
    glibc_max=$(printf '%s\n%s\n' "$glibc_max" "$v" | sort -V | tail -1)
  done
done
arch=$(uname -m)
tag=manylinux_${glibc_max%%.*}_$(cut -d. -f2 <<<"$glibc_max")_$arch

# One version: the CMake project's (what the programs print) and the Python package's.
version=$("$stage/bin/blocktune" --version | head -1 | awk '{print $NF}')
py_version=$(python3 -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["version"])' \
  "$src/python/pyproject.toml")
[[ $version == "$py_version" ]] || { echo "blocktune --version says $version, python/pyproject.toml $py_version" >&2; exit 1; }

# The stage is the tarball's folder: blocktune-<version>-linux-<arch>/ with bin/ include/ lib/ share/.
name=blocktune-$version-linux-$arch
mv "$stage" "$pack/$name"
stage=$pack/$name

wheel=$(python3 "$src/deploy/wheel.py" --stage "$stage" --package "$src/python/src/blocktune" \
  --pyproject "$src/python/pyproject.toml" --tag "$tag" --out "$out")

# The tarball, reproducible (sorted, one owner and time); links stay links.
tarball=$out/$name.tar.gz
tar -C "$pack" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@"${SOURCE_DATE_EPOCH:-1577836800}" \
  -cf - "$name" | gzip -9n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"

if ((audit)); then
  venv=$pack/audit-venv
  lock=$src/deploy/wheel-requirements.lock
  if [[ ! -x $venv/bin/auditwheel ]] || ! cmp -s "$lock" "$venv/lock"; then
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --require-hashes -r "$lock"
    cp "$lock" "$venv/lock"
  fi
  report=$("$venv/bin/auditwheel" show "$wheel" 2>&1) || { echo "$report" >&2; exit 1; }
  audited=$(grep -oE 'platform tag:[[:space:]]*"[^"]+"' <<<"$report" | head -1 | sed 's/.*"\(.*\)"/\1/')
  [[ $audited == "$tag" ]] || { echo "auditwheel says ${audited:-nothing} where the symbol versions say $tag:" >&2; echo "$report" >&2; exit 1; }
  echo "auditwheel show: $audited"
fi

echo "glibc >= $glibc_max ($tag); needed: $(for b in "$stage"/bin/*; do readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u | tr '\n' ' ')"
ls -l "$wheel" "$tarball" | awk '{printf "%s %.1f MB\n", $NF, $5 / 1e6}'
