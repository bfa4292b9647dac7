#!/usr/bin/env bash
# The device check (issue 38, docs/accelerators.md#the-device-check): on a machine with an NVIDIA
# GPU, starts blocktuned with the Pallas kernels of examples/pallas, sweeps each through its
# runner on the GPU (3 shapes, bf16 and f32), generates the tables (rows under the GPU's key,
# gpu.nvidia.sm90.h200 on an H200), and prints side by side: each bucket's tuned config against
# the kernel's default (re-timed together through the runner by `blocktune regret --hardware
# KEY`), the Pallas flash attention against jax.nn.dot_product_attention (XLA and cuDNN), and
# the sweeps' wall time and efficiency. Made to finish within 8 minutes on one H200.
#
# --fake-device runs the same path on a host without a GPU: the specs' runner is replaced by
# deploy/device_check/fake_runner.py, which announces an H200 and answers from a cost model of
# one (nothing is timed for real; the attention comparison only looks the table up). ctest
# device_check_fake runs it so.
#
#   deploy/device-check.sh [--fake-device] [--build DIR] [--out DIR] [--budget N]
#                          [--budget-seconds S] [--repetitions N] [--min-time-ms MS] [--limit-s S]
#     --build DIR         a build tree (DIR/client/blocktune, DIR/server/blocktuned); default: build/
#                         if it has them, else the programs on PATH (the wheel: pip install blocktune-*.whl)
#     --out DIR           where the database, tables, JSON and report go (default: build/device-check)
#     --budget N          evaluations per bucket (auto strategy; default 12, 16 with --fake-device)
#     --budget-seconds S  search time per bucket (default 8)
#     --repetitions N     timed repetitions per config, in sweeps and re-timing (default 3)
#     --min-time-ms MS    per repetition (default 10; 2 with --fake-device)
#     --limit-s S         the wall time the check must stay within (default 480)
# Needs python3 with JAX and its CUDA plugin first in PATH (not with --fake-device: any python3).
# Exit status 0 when every target is met (report.py says which is not).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
fake=0
build=
out=$src/build/device-check
budget=
budget_seconds=8
repetitions=3
min_time_ms=
limit_s=480
while (($#)); do
  case $1 in
    --fake-device) fake=1; shift ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --budget-seconds) budget_seconds=$2; shift 2 ;;
    --repetitions) repetitions=$2; shift 2 ;;
    --min-time-ms) min_time_ms=$2; shift 2 ;;
    --limit-s) limit_s=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-check: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
((fake)) && budget=${budget:-16} min_time_ms=${min_time_ms:-2}
budget=${budget:-12}
min_time_ms=${min_time_ms:-10}
start=$(date +%s)

# The programs: a build tree's, else the installed ones.
if [[ -z $build && -x $src/build/client/blocktune && -x $src/build/server/blocktuned ]]; then build=$src/build; fi
if [[ -n $build ]]; then
  blocktune=$build/client/blocktune
  blocktuned=$build/server/blocktuned
else
  blocktune=$(command -v blocktune || true)
  blocktuned=$(command -v blocktuned || true)
fi
[[ -x $blocktune && -x $blocktuned ]] || {
  echo "device-check: no blocktune and blocktuned: pass --build DIR or install the wheel (deploy/wheel.sh)" >&2
  exit 2
}

# What an earlier run left there (only the check's own files: --out may name any folder).
mkdir -p "$out"
(cd "$out" && rm -rf db sweeps regret tables kernels jax-cache port daemon.log tables.log attention.json attention.err \
  report.json report.txt)
mkdir -p "$out/db" "$out/sweeps" "$out/regret"
out=$(cd "$out" && pwd)
kernels=$src/examples/pallas
key=gpu.nvidia.sm90.h200
if ((fake)); then
  # The Pallas specs, each with the fake runner instead of runner.py.
  kernels=$out/kernels
  mkdir -p "$kernels"
  python3 - "$src/examples/pallas" "$kernels" "$src/deploy/device_check/fake_runner.py" <<'PY'
import glob, json, os, sys
src, dst, runner = sys.argv[1:]
for path in glob.glob(os.path.join(src, "pallas_*.json")):
    spec = json.load(open(path))
    spec.pop("$schema", None)
    spec["runner"] = {"command": ["python3", runner], "persistent": True, "timeout_s": 60}
    json.dump(spec, open(os.path.join(dst, os.path.basename(path)), "w"), indent=1)
PY
else
  # The GPU and its key, as the runner will announce it.
  key=$(PYTHONPATH=$src/python/src python3 -c "
import jax, blocktune
assert jax.default_backend() == 'gpu', 'JAX finds no GPU (backend ' + jax.default_backend() + '): use --fake-device'
print(blocktune.device_key())") || { echo "device-check: no GPU for JAX here" >&2; exit 2; }
  # Compiled kernels kept across the runner's requests and the re-timing (JAX's persistent cache):
  # every request of a sweep compiles its config, and a decision round asks for each several times.
  export JAX_COMPILATION_CACHE_DIR=$out/jax-cache JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0
  export JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
fi
echo "device-check: $( ((fake)) && echo 'FAKE device (cost model), ' )key $key, budget $budget/bucket (${budget_seconds} s), $repetitions x >= $min_time_ms ms"

daemon_pid=
cleanup() { if [[ -n $daemon_pid ]]; then kill "$daemon_pid" 2>/dev/null || true; wait "$daemon_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
"$blocktuned" --port 0 --port-file "$out/port" --db "$out/db/blocktune.db" --kernel-dir "$kernels" \
  --min-repetition-ms "$min_time_ms" --repetitions "$repetitions" --log-level warn >"$out/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 200); do [[ -s $out/port ]] && break; sleep 0.05; done
[[ -s $out/port ]] || { echo "device-check: blocktuned did not start"; cat "$out/daemon.log"; exit 1; }
url=http://127.0.0.1:$(cat "$out/port")

# Three shapes per kernel, sized for an H200 (a few ms a call at most).
declare -A shapes=(
  [pallas_flash_attention]="batch=4,heads=16,seq=1024,head_dim=64 batch=2,heads=16,seq=2048,head_dim=128 batch=1,heads=8,seq=4096,head_dim=128"
  [pallas_grouped_matmul]="m=2048,k=1024,n=1024,groups=8 m=4096,k=2048,n=1024,groups=16 m=8192,k=1024,n=2048,groups=8"
  [pallas_ragged_paged_attention]="tokens=128,q_heads=32,kv_heads=8,head_dim=128,page_size=16,pages_per_seq=64 tokens=256,q_heads=32,kv_heads=8,head_dim=128,page_size=16,pages_per_seq=128 tokens=512,q_heads=16,kv_heads=4,head_dim=128,page_size=16,pages_per_seq=64"
)
order=(pallas_flash_attention pallas_grouped_matmul pallas_ragged_paged_attention)
for kernel in "${order[@]}"; do
  for dtype in bf16 f32; do
    args=()
    for s in ${shapes[$kernel]}; do args+=(--shape "$s"); done
    t0=$(date +%s)
    "$blocktune" sweep "$kernel" --server "$url" --token-file "$out/db/token" --dtype "$dtype" --strategy auto \
      --budget "$budget" --budget-seconds "$budget_seconds" "${args[@]}" --json >"$out/sweeps/${kernel}_$dtype.json" \
      2>"$out/sweeps/${kernel}_$dtype.err" || { echo "sweep $kernel $dtype failed:"; cat "$out/sweeps/${kernel}_$dtype.err"; }
    echo "swept $kernel $dtype in $(($(date +%s) - t0)) s"
  done
done

"$blocktune" tables generate --db "$out/db/blocktune.db" --kernel-dir "$kernels" --out "$out/tables" >"$out/tables.log" 2>&1 \
  || { cat "$out/tables.log"; exit 1; }

# Tuned against default, re-timed side by side through the runner, on the device only.
for kernel in "${order[@]}"; do
  for dtype in bf16 f32; do
    "$blocktune" regret "$kernel" --kernel-dir "$kernels" --table "$out/tables/tuned_entries.jsonl" --hardware "$key" \
      --dtype "$dtype" --threads 1 --repetitions "$repetitions" --min-time-ms "$min_time_ms" --json \
      >"$out/regret/${kernel}_$dtype.json" 2>"$out/regret/${kernel}_$dtype.err" \
      || { echo "regret $kernel $dtype: $(tail -1 "$out/regret/${kernel}_$dtype.err")"; rm -f "$out/regret/${kernel}_$dtype.json"; }
  done
done

att=(--tables "$out/tables" --dtype bf16 --dtype f32 --repetitions "$repetitions" --min-time-ms "$min_time_ms")
for s in ${shapes[pallas_flash_attention]}; do att+=(--shape "$s"); done
((fake)) && att+=(--fake-device)
BLOCKTUNE_FAKE_KEY=$key python3 "$src/deploy/device_check/attention.py" "${att[@]}" >"$out/attention.json" \
  2>"$out/attention.err" || { echo "attention comparison failed:"; tail -5 "$out/attention.err"; rm -f "$out/attention.json"; }

cleanup
daemon_pid=
python3 "$src/deploy/device_check/report.py" "$out" --key "$key" --elapsed-s "$(($(date +%s) - start))" \
  --limit-s "$limit_s" | tee "$out/report.txt"
exit "${PIPESTATUS[0]}"
