#!/usr/bin/env bash
# End to end with external kernels (docs/external-kernels.md): blocktuned loads the NumPy and
# C++ example specs and a faulty one from --kernel-dir (NumPy's from a folder of kernel folders),
# logs each and warns about a folder without one; GET /v1/kernels lists them with their folder; a NumPy
# matmul sweep through the daemon; its winner looked up over HTTP, from a generated C++ header
# compiled here and from the generated Python table; a C++-runner sweep; and a runner that
# crashes, hangs and prints garbage, each recorded with its outcome.
# Usage: e2e_external.sh BUILD_DIR SOURCE_DIR CXX
set -euo pipefail
build=$1
src=$2
cxx=${3:-c++}
source "$(dirname "$0")/lib.sh"

# A kernel whose runner (a shell script here; any program will do) answers config mode=0,
# crashes on mode=1, hangs on mode=2 and writes garbage on fd 3 for mode=3.
mkdir -p "$work/faulty"
cat >"$work/faulty/faulty.json" <<'JSON'
{
  "name": "faulty",
  "parameters": [{"name": "mode", "values": [0, 1, 2, 3], "categorical": true}],
  "dims": [{"name": "n", "max": 1024}],
  "runner": {"command": ["/bin/sh", "-c", "while read -r l; do case \"$l\" in *'\"mode\":0'*) echo '{\"times_ms\":[1,1,1]}' >&3;; *'\"mode\":1'*) kill -SEGV $$;; *'\"mode\":2'*) exec sleep 1000;; *) echo 'garbage' >&3;; esac; done"],
             "timeout_s": 1}
}
JSON

# A Kernel Tuner cache with every failure marker, imported before the daemon starts on the same
# database; its spec is written into $work/imported, a folder the daemon then loads.
mkdir -p "$work/imported" "$work/db"
"$build/client/blocktune" import kerneltuner "$src/tests/data/import/kerneltuner_markers.json" \
  --db "$work/db/blocktune.db" --kernel-dir "$work/imported" --json >"$work/import.json"
grep -q '"outcomes":{"compile_failed":1,"invalid":2,"ok":6,"runtime_failed":1}' "$work/import.json" || { cat "$work/import.json"; exit 1; }
"$build/client/blocktune" import kerneltuner "$src/tests/data/import/kerneltuner_markers.json" \
  --db "$work/db/blocktune.db" --kernel-dir "$work/imported" --json | grep -q '"created":false'  # idempotent

# The daemon's kernel folders. The CLI needs them only for what it does itself (tables generate,
# export); a sweep through the daemon is validated by the daemon, so `sweep` below runs without.
# NumPy's comes in a folder of kernel folders (examples/: numpy_matmul/ and
# jax_flash_attention/, whose runner is never started here), and one folder holds no spec.
mkdir -p "$work/empty"
kdirs=(--kernel-dir "$src/examples" --kernel-dir "$build/examples/cpp_transpose/spec"
       --kernel-dir "$work/faulty" --kernel-dir "$work/imported" --kernel-dir "$work/empty")
cli=("$build/client/blocktune" "${kdirs[@]}")
remote=("$build/client/blocktune")
StartDaemon --min-repetition-ms 2 --repetitions 3 --max-cv 1000 --log-level info \
  "${kdirs[@]}"

curl -fsS "$url/v1/kernels" >"$work/kernels.json"
for k in matmul numpy_matmul cpp_transpose faulty; do grep -q "\"name\":\"$k\"" "$work/kernels.json" || { echo "no $k"; exit 1; }; done
# Each external kernel is logged with its spec and runner, and listed with the folder it came
# from; the folder without a spec is warned about.
grep -q "external kernel loaded name=numpy_matmul spec=$src/examples/numpy_matmul/numpy_matmul.json runner=\"/usr/bin/python3 runner.py\"" \
  "$work/daemon.log" || { grep "external kernel" "$work/daemon.log"; exit 1; }
grep -q "external kernel loaded name=faulty spec=$work/faulty/faulty.json" "$work/daemon.log"
grep -q -- "--kernel-dir $work/empty holds no kernel spec" "$work/daemon.log" || { echo "no warning"; exit 1; }
grep -q "\"kernel_dir\":\"$src/examples\",\"restrictions\"" "$work/kernels.json" || { echo "no kernel_dir"; exit 1; }
curl -fsS "$url/v1/kernel-spec-schema" | grep -q '"restrictions"'

# The imported winner, served over HTTP under the GPU's key; another GPU does not borrow it.
curl -fsS "$url/v1/lookup?kernel=vector_add&size_x=10000000&hardware=gpu.nvidia.sm75.rtx_2080_ti" >"$work/kt.json"
grep -q '"config":{"block_size_x":128,"use_vec":1},"source":"tuned"' "$work/kt.json" || { cat "$work/kt.json"; exit 1; }
curl -fsS "$url/v1/lookup?kernel=vector_add&size_x=10000000&hardware=gpu.nvidia.sm80.a100" | grep -q '"source":"default"'
# A CLBlast tuner's file imported while the daemon runs: its spec lands in a folder the daemon
# serves, its rows in the daemon's database. Unknown until the daemon reloads; then its winner is
# served under the OpenCL device's key, without a restart.
"$build/client/blocktune" import clblast "$src/tests/data/import/clblast_xgemm_1_32.json" \
  --db "$work/db/blocktune.db" --kernel-dir "$work/imported" --json >"$work/clblast.json"
grep -q '"hardware":"gpu.nvidia.sm61.gtx_1080"' "$work/clblast.json" || { cat "$work/clblast.json"; exit 1; }
grep -q '"outcomes":{"ok":5,"unstable":1}' "$work/clblast.json" || { cat "$work/clblast.json"; exit 1; }
clq="kernel=xgemm_1&m=1024&n=1024&k=1024&hardware=gpu.nvidia.sm61.gtx_1080"
code=$(curl -sS -o "$work/before.json" -w '%{http_code}' "$url/v1/lookup?$clq")
[[ "$code" == 400 ]] && grep -q '"path":"kernel"' "$work/before.json" || { echo "$code"; cat "$work/before.json"; exit 1; }
code=$(curl -sS -o /dev/null -w '%{http_code}' --data "" "$url/v1/kernels/reload")
[[ "$code" == 401 ]] || { echo "reload without the token: $code"; exit 1; }
"${remote[@]}" kernels --reload --server "$url" --token-file "$work/db/token" --json >"$work/reload.json"
grep -q '"added":\["xgemm_1"\]' "$work/reload.json" || { cat "$work/reload.json"; exit 1; }
curl -fsS "$url/v1/lookup?$clq" >"$work/clblast_lookup.json"
python3 - "$work/clblast_lookup.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
assert a["source"] == "tuned", a
assert a["config"]["MWG"] == 64 and a["config"]["NWG"] == 64 and a["config"]["KWG"] == 16 and a["config"]["VWM"] == 4, a
PY
# A spec file that does not load is refused by name, and the daemon keeps what it had.
echo '{"name": "broken", "parameters": [{"name": "x", "values": [1]}], "restrictions": ["x +* 2"]}' >"$work/imported/broken.json"
code=$(curl -sS -o "$work/bad_reload.json" -w '%{http_code}' --data "" -H "Authorization: Bearer $(cat "$work/db/token")" "$url/v1/kernels/reload")
[[ "$code" == 400 ]] && grep -q "broken.json" "$work/bad_reload.json" || { echo "$code"; cat "$work/bad_reload.json"; exit 1; }
rm "$work/imported/broken.json"
curl -fsS "$url/v1/lookup?$clq" | grep -q '"source":"tuned"'

# Exported back in Kernel Tuner's format, failures under __error__.
"${cli[@]}" export kerneltuner --db "$work/db/blocktune.db" --sweep 1 --out "$work/export.json"
python3 -c "
import json; c = json.load(open('$work/export.json'))['cache']
assert len(c) == 10 and c['160,0']['__error__'] == 'CompilationFailedConfig' and c['128,1']['times'] == [0.33, 0.34, 0.33], c"

# --- NumPy matmul through the daemon -------------------------------------------------------
"${remote[@]}" sweep numpy_matmul --server "$url" --token-file "$work/db/token" \
  --shape m=128,n=128,k=128 --json >"$work/sweep.json"
grep -q '"status":"done"' "$work/sweep.json" || { cat "$work/sweep.json"; exit 1; }
curl -fsS "$url/v1/lookup?kernel=numpy_matmul&m=128&n=128&k=128&threads=1" >"$work/lookup.json"
grep -q '"source":"tuned"' "$work/lookup.json" || { cat "$work/lookup.json"; exit 1; }
hw=$(sed -n 's/.*"hardware":"\([^"]*\)".*/\1/p' "$work/lookup.json")
http_config=$(python3 -c "import json,sys; c=json.load(open('$work/lookup.json'))['config']; print(c['block_m'], c['block_n'], c['block_k'], c['k_outer'])")

"${cli[@]}" tables generate --db "$work/db/blocktune.db" --out "$work/tables" >/dev/null
header="$work/tables/include/blocktune/tables/numpy_matmul_tuned_block_sizes.h"
grep -q "$hw" "$header"
cat >"$work/app.cc" <<CC
#include "numpy_matmul_tuned_block_sizes.h"
#include <cstdio>
int main() {
  namespace t = blocktune::tables;
  auto r = t::numpy_matmul::LookupBlockSizes("$hw", "f32", 128, 128, 128);
  if (r.source != t::Source::kTuned) return 2;
  std::printf("%lld %lld %lld %lld\n", (long long)r.config.block_m, (long long)r.config.block_n,
              (long long)r.config.block_k, (long long)r.config.k_outer);
  return 0;
}
CC
"$cxx" -std=c++17 -O1 -I "$work/tables/include/blocktune/tables" "$work/app.cc" -o "$work/app"
app_config=$("$work/app")
py_config=$(cd "$work/tables/python" && python3 -c "
import numpy_matmul_tuned_block_sizes as t
c, source, hw, bucket = t.infer_block_sizes('$hw', 'f32', m=128, n=128, k=128)
assert source == 'tuned', source
print(c['block_m'], c['block_n'], c['block_k'], c['k_outer'])")
echo "numpy_matmul: http: $http_config  header: $app_config  python: $py_config"
[[ "$http_config" == "$app_config" ]]
[[ "$http_config" == "$py_config" ]]

# --- The C++ runner (one process per config) --------------------------------------------------
"${remote[@]}" sweep cpp_transpose --server "$url" --token-file "$work/db/token" --shape rows=256,cols=256 --json >"$work/t.json"
grep -q '"status":"done"' "$work/t.json" || { cat "$work/t.json"; exit 1; }
curl -fsS "$url/v1/lookup?kernel=cpp_transpose&rows=256&cols=256&threads=1" | grep -q '"source":"tuned"'

# --- Crash, hang and garbage are recorded outcomes ----------------------------------------------
"${remote[@]}" sweep faulty --server "$url" --token-file "$work/db/token" --shape n=64 --json >"$work/f.json"
id=$(python3 -c "import json; print(json.load(open('$work/f.json'))['id'])")
curl -fsS "$url/v1/sweeps/$id/measurements?limit=100" >"$work/fm.json"
python3 - "$work/fm.json" <<'PY'
import json, sys
ms = json.load(open(sys.argv[1]))["measurements"]
got = {m["config"]["mode"]: (m["outcome"], m["detail"]) for m in ms}
for mode, outcome in {0: "ok", 1: "crashed", 2: "timeout", 3: "worker_lost"}.items():
    print(mode, got[mode][0], got[mode][1][:100])
    assert got[mode][0] == outcome, (mode, got[mode])
assert "SIGSEGV" in got[1][1] and "protocol error" in got[3][1]
PY
# The daemon is still serving after all of that.
curl -fsS "$url/healthz" | grep -q '"ok"'
# A kernel the daemon does not know: its 400, naming the field, not a guess of the CLI's.
if "${remote[@]}" sweep no_such_kernel --server "$url" --token-file "$work/db/token" --shape n=64 2>"$work/nosuch.err"; then
  echo "sweep of an unknown kernel succeeded"; exit 1
fi
grep -q "unknown kernel 'no_such_kernel'" "$work/nosuch.err" && grep -q "kernel" "$work/nosuch.err" || { cat "$work/nosuch.err"; exit 1; }
# SIGHUP reloads like POST /v1/kernels/reload: a spec added now is served without a restart.
echo '{"name": "hup_kernel", "parameters": [{"name": "x", "values": [1, 2]}], "dims": [{"name": "n", "max": 64}]}' \
  >"$work/imported/hup_kernel.json"
kill -HUP "$daemon_pid"
for _ in $(seq 100); do
  curl -fsS "$url/v1/kernels/hup_kernel" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$url/v1/kernels/hup_kernel" | grep -q '"name":"hup_kernel"'
curl -fsS "$url/healthz" | grep -q '"ok"'
