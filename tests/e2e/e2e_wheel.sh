#!/usr/bin/env bash
# The wheel and the release tarball (deploy/wheel.sh, docs/install.md) as a user gets them: packs
# this build tree's static runtime (build/static/), checks the platform tag with auditwheel,
# installs the wheel with `pip install --no-index` into a fresh venv and unpacks the tarball,
# then runs each with a PATH and an environment that hold nothing of the build or source tree:
# `blocktune --version` (the same text, kernel fingerprints included, as this tree's
# build/client/blocktune: the same build), the dynamic dependencies (the C library's family
# only), blocktuned on a free port with the shipped NumPy example, a lookup over HTTP and through
# blocktune.Client, a checked-in row served as blocktune.tables reads it from share/, a small
# `sweep --local`, and the NumPy kernel's sweep through its Python runner (Debian's python3 and
# python3-numpy as the shipped spec names them, and the venv's python3 with the wheel's
# blocktune.runner). Also: pip takes the wheel for Python 3.11 and 3.12 (--python-version), and
# it installs and runs under any python3.12 / python3.13 this machine has.
# Usage: e2e_wheel.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
trap 'echo "FAIL: line $LINENO: $BASH_COMMAND" >&2' ERR
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d)
daemon_pid=
cleanup() {
  if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

"$src/deploy/wheel.sh" --build-dir "$build" --no-build --out "$work/dist" --audit | tee "$work/pack.log"
wheel=$(ls "$work"/dist/blocktune-*-py3-none-manylinux_*.whl)
tarball=$(ls "$work"/dist/blocktune-*-linux-*.tar.gz)
size=$(stat -c %s "$wheel")
((size <= 40 * 1000 * 1000)) || { echo "FAIL: the wheel is $size bytes, over 40 MB"; exit 1; }
expected_version=$("$build/client/blocktune" --version)

# A clean environment: no build or source path, no LD_LIBRARY_PATH, a home and cwd of its own.
mkdir -p "$work/home" "$work/run" "$work/broken"
echo '{"name": "broken", "parameters": [{"name": "x", "values": [1]}], "dims": [{"name": "n", "max": 64}],
       "restrictions": ["x +* 2"]}' >"$work/broken/broken.json"
cleanenv() { echo HOME="$work/home" LANG=C.UTF-8 PATH="$1:/usr/bin:/bin"; }
clean() { env -i $(cleanenv "$1") "${@:2}"; }

# Check one installed tree: BIN holds the three programs, SHARE is share/blocktune, PY a python3
# command whose blocktune is the one under test (the venv's; for the tarball, Debian's python3
# with share/blocktune/python/src on PYTHONPATH), LOCAL_SPEC a folder with the NumPy kernel's
# spec and runner for `sweep --local`.
check_install() {
  local bin=$1 share=$2 label=$3 local_spec=$4 b n
  local py=("${@:5}")
  echo "== $label: $bin"
  [[ $(clean "$bin" sh -c 'command -v blocktune') == "$bin/blocktune" ]]
  [[ $(clean "$bin" blocktune --version) == "$expected_version" ]] || {
    echo "FAIL: $label's blocktune --version differs from this build's:"; clean "$bin" blocktune --version; exit 1; }
  # An exception thrown and caught inside the static program (muparser's syntax error; also
  # CLI11's --help): the unwinder finds its frames (cmake/static_runtime_glibc.cc).
  local refused
  if refused=$(clean "$bin" blocktune --kernel-dir "$work/broken" kernels --json 2>&1); then
    echo "FAIL: $label's blocktune accepted a broken spec"; exit 1
  fi
  grep -q "restriction 'x +\* 2': Unexpected operator" <<<"$refused" || { echo "FAIL: $refused"; exit 1; }
  clean "$bin" blocktune --help | grep -q "Usage:"
  for b in blocktune blocktuned blocktune-worker; do
    for n in $(readelf -d "$bin/$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      [[ $n =~ ^(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|ld-linux-aarch64)\.so\.[0-9]+$ ]] || {
        echo "FAIL: $label's $b needs $n"; exit 1; }
    done
    echo "ldd $b: $(ldd "$bin/$b" | awk '{print $1}' | tr '\n' ' ')"
    ! ldd "$bin/$b" | grep -q "not found"
    ! ldd "$bin/$b" | grep -qF -e "$build" -e "$src"
  done

  # The daemon, from its own folder, with the shipped NumPy example.
  local run=$work/run/$label
  mkdir -p "$run"
  env -i -C "$run" $(cleanenv "$bin") blocktuned --port 0 --port-file "$run/port" --db "$run/db/blocktune.db" --log-level warn \
    --min-repetition-ms 2 --repetitions 3 --max-cv 1000 --kernel-dir "$share/examples/numpy_matmul" >"$run/daemon.log" 2>&1 &
  daemon_pid=$!
  for _ in $(seq 200); do [[ -s $run/port ]] && break; sleep 0.05; done
  [[ -s $run/port ]] || { echo "FAIL: $label's blocktuned did not start"; cat "$run/daemon.log"; exit 1; }
  local url=http://127.0.0.1:$(cat "$run/port")

  # A checked-in row: its key and bucket from the shipped JSON table, answered over HTTP, by
  # blocktune.Client and by blocktune.tables reading share/ alike.
  local http py_answer
  read -r hw m n k < <(clean "$bin" "${py[@]}" - "$share/tables/json/matmul_tuned_block_sizes.json" <<'PY'
import json, sys
row = next(r for r in json.load(open(sys.argv[1]))["rows"] if r["dtype"] == "f32")
dims = {part[0]: part[1:] for part in row["bucket"].split("_")}  # m256_n256_k256
print(row["hardware"], dims["m"], dims["n"], dims["k"])
PY
)
  http=$(curl -fsS "$url/v1/lookup?kernel=matmul&m=$m&n=$n&k=$k&hardware=$hw")
  grep -q '"source":"tuned"' <<<"$http" || { echo "FAIL: $http"; exit 1; }
  py_answer=$(clean "$bin" "${py[@]}" - "$url" "$hw" "$m" "$n" "$k" "$share/tables/json" "$label" <<'PY'
import json, sys, urllib.request
import blocktune
from blocktune import Client, tables
url, hw, m, n, k, tables_dir, label = sys.argv[1:]
if label == "wheel":  # the installed package, not a copy from a source tree
    assert "/site-packages/blocktune/" in blocktune.__file__, blocktune.__file__
c = Client(url)
got = c.lookup("matmul", m=int(m), n=int(n), k=int(k), hardware=hw)
assert got.source == "tuned", got
t = tables.load_dir(tables_dir)["matmul"].lookup(hw, "f32", m=int(m), n=int(n), k=int(k))
assert t.config == got.config and t.source == "tuned", (t, got)
host = c.lookup("matmul", m=1000, n=1000, k=1000, threads=1)
http = json.load(urllib.request.urlopen(f"{url}/v1/lookup?kernel=matmul&m=1000&n=1000&k=1000&threads=1"))
assert http["config"] == host.config and http["source"] == host.source, (http, host)
print(json.dumps(got.config, sort_keys=True))
PY
)
  [[ $(python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["config"], sort_keys=True))' "$http") == "$py_answer" ]]
  echo "lookup matmul $hw m=$m n=$n k=$k: $py_answer (HTTP, Client and share/ tables agree)"

  # The NumPy kernel through the daemon: its runner is the spec's /usr/bin/python3 with Debian's
  # NumPy, importing blocktune.runner from share/blocktune/python/src as from a source tree.
  (cd "$run" && clean "$bin" blocktune sweep numpy_matmul --server "$url" --token-file "$run/db/token" \
    --shape m=64,n=64,k=64 --strategy random --budget 4 --json >"$run/numpy.json")
  grep -q '"status":"done"' "$run/numpy.json" || { cat "$run/numpy.json" "$run/daemon.log"; exit 1; }
  curl -fsS "$url/v1/lookup?kernel=numpy_matmul&m=64&n=64&k=64&threads=1" | grep -q '"source":"tuned"'
  kill -TERM "$daemon_pid"
  wait "$daemon_pid"
  daemon_pid=

  # sweep --local: a built-in kernel, then the NumPy kernel run by this install's python3.
  (cd "$run" && clean "$bin" blocktune sweep matmul --local --db "$run/local.db" --shape m=64,n=64,k=64 \
    --strategy random --budget 4 --min-repetition-ms 2 --repetitions 3 --max-cv 1000 --json >"$run/local.json")
  grep -q '"status":"done"' "$run/local.json" || { cat "$run/local.json"; exit 1; }
  (cd "$run" && clean "$bin" blocktune sweep numpy_matmul --local --db "$run/local.db" --kernel-dir "$local_spec" \
    --shape m=64,n=64,k=64 --strategy random --budget 4 --min-repetition-ms 2 --repetitions 3 --max-cv 1000 \
    --json >"$run/local_numpy.json")
  grep -q '"status":"done"' "$run/local_numpy.json" || { cat "$run/local_numpy.json"; exit 1; }
  grep -q '"ok":[1-9]' "$run/local_numpy.json" || { cat "$run/local_numpy.json"; exit 1; }
  echo "$label: daemon, lookups, sweep --local (matmul, numpy_matmul) and the daemon's numpy_matmul sweep done"
}

# --- the wheel: a fresh venv of Debian's python3 (its python3-numpy visible), pip install --no-index
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
start=$(date +%s.%N)
clean "$work/venv/bin" pip install -q --no-index --disable-pip-version-check "$wheel"
echo "pip install --no-index: $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$(date +%s.%N)") s"
for f in bin/blocktune bin/blocktuned bin/blocktune-worker share/blocktune/tables/json/matmul_tuned_block_sizes.json \
         share/blocktune/examples/numpy_matmul/numpy_matmul.json share/blocktune/schema/kernel-spec.schema.json \
         share/doc/blocktune/third-party/libmuparser-dev.copyright; do
  [[ -f $work/venv/$f ]] || { echo "FAIL: the wheel did not install $f"; exit 1; }
done
[[ -x $work/venv/bin/blocktune-worker ]]
# The venv's python3 runs the NumPy runner with the wheel's blocktune.runner (and Debian's NumPy).
mkdir -p "$work/numpy_venv"
cp "$work/venv/share/blocktune/examples/numpy_matmul/runner.py" "$work/numpy_venv/"
sed 's#"/usr/bin/python3"#"python3"#' "$work/venv/share/blocktune/examples/numpy_matmul/numpy_matmul.json" \
  >"$work/numpy_venv/numpy_matmul.json"
check_install "$work/venv/bin" "$work/venv/share/blocktune" wheel "$work/numpy_venv" python3

# Python 3.11 and 3.12 take it (py3-none: no CPython ABI; Requires-Python >= 3.11).
for v in 3.11 3.12; do
  python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-index --no-deps --only-binary=:all: \
    --python-version "$v" --target "$work/py$v" "$wheel"
  [[ -f $work/py$v/blocktune/client.py ]]
done
echo "pip accepts the wheel for Python 3.11 and 3.12"
# And installs it for real with any other CPython >= 3.11 on this machine (3.12 where there is
# one): in PATH, or a pyenv's (whose shims run only the versions it has activated).
others=()
for py in python3.12 python3.13 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23]*/bin/python3.1[23]; do
  if [[ -x $(command -v "$py" 2>/dev/null) ]] && "$py" -c 'import venv, ensurepip' 2>/dev/null; then
    others+=("$("$py" -c 'import sys; print(sys.executable)')")
  fi
done
mapfile -t others < <(printf '%s\n' "${others[@]}" | sort -u | grep .)
for py in "${others[@]}"; do
  "$py" -m venv "$work/venv-$(basename "$py")"
  py=$(basename "$py")
  "$work/venv-$py/bin/pip" install -q --no-index --disable-pip-version-check "$wheel"
  clean "$work/venv-$py/bin" python3 -c 'import sys, blocktune; assert "/site-packages/blocktune/" in blocktune.__file__
print(sys.version.split()[0], end=" ")'
  [[ $(clean "$work/venv-$py/bin" blocktune --version) == "$expected_version" ]]
  echo "installed and ran with $py"
done

# --- the tarball: unpacked anywhere, used in place ---------------------------------------------
mkdir -p "$work/tar"
tar -C "$work/tar" -xzf "$tarball"
root=$(ls -d "$work"/tar/blocktune-*)
for f in include/blocktune/tables/resolve.h include/kernels/matmul/matmul.h lib/libblocktune_kernels.a \
         lib/cmake/blocktune/blocktuneConfig.cmake lib/pkgconfig/blocktune-kernels.pc \
         share/blocktune/python/src/blocktune/runner.py; do
  [[ -f $root/$f ]] || { echo "FAIL: the tarball has no $f"; exit 1; }
done
# Outside a venv the Python package comes from share/ (the tarball's copy); the shipped NumPy
# spec runs Debian's python3, whose runner imports it from there itself.
check_install "$root/bin" "$root/share/blocktune" tarball "$root/share/blocktune/examples/numpy_matmul" \
  env PYTHONPATH="$root/share/blocktune/python/src" /usr/bin/python3
echo "e2e_wheel: 2 installs passed"
