#!/usr/bin/env bash
# Two independent exhaustive sweeps of the same matmul and flash_attention buckets (seeds 1 and
# 2), each by its own blocktuned into its own database (in one database the second sweep would
# see the first one's winners as incumbents), then:
#   - how far apart the two sweeps' choices are, per bucket (blocktune sweeps compare), and
#   - how well each search strategy does on 10% of each space, replayed on the stored
#     measurements of both sweeps (blocktune simulate), which is also exported as the
#     tab-separated file tests/data/ uses.
#
#   deploy/independent-sweeps.sh [--out DIR] [--min-repetition-ms MS] [--repetitions N]
#                                [--rt] [--parallel] [--kernels matmul,flash_attention]
#
# --kernels picks the kernels (default both; flash_attention alone takes 3.5 min a pair under
# --rt). In each database the sweeps are numbered in that order: matmul 1 and flash_attention 2,
# or 1 for a kernel swept alone.
#
# Takes ~30 minutes per sweep pair on a 2-core box (12 + 12 buckets, 180 and 48 configs each).
# Runs under nice by default; the figures mean most on an otherwise idle machine. --rt runs
# the daemons under SCHED_FIFO (chrt -f 10) instead; --parallel runs the two sweeps at once,
# each daemon and its workers pinned to its own core (taskset), halving the wall time on a
# 2-core machine at the price of sharing L3 and memory bandwidth. Workers always run in the
# normal scheduling class here (--worker-sched normal), not the daemon's default SCHED_IDLE.
set -euo pipefail
cd "$(dirname "$0")/.."
out=var/independent-sweeps
min_ms=10
reps=5
prio=(nice -n 15)
parallel=0
kernels=matmul,flash_attention
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --min-repetition-ms) min_ms=$2; shift 2 ;;
    --repetitions) reps=$2; shift 2 ;;
    --rt) prio=(chrt -f 10); shift ;;
    --parallel) parallel=1; shift ;;
    --kernels) kernels=$2; shift 2 ;;
    *) echo "usage: $0 [--out DIR] [--min-repetition-ms MS] [--repetitions N] [--rt] [--parallel] [--kernels LIST]" >&2; exit 2 ;;
  esac
done
selected=()
for kernel in matmul flash_attention; do
  [[ ,$kernels, == *,$kernel,* ]] && selected+=("$kernel")
done
[[ ${#selected[@]} -gt 0 ]] || { echo "--kernels: give matmul and/or flash_attention" >&2; exit 2; }
bin=build
[[ -x $bin/server/blocktuned && -x $bin/client/blocktune ]] || { echo "build first: deploy/build.sh" >&2; exit 1; }
mkdir -p "$out"

MM=(--shape m=128,n=128,k=128 --shape m=256,n=256,k=256 --shape m=512,n=512,k=512
    --shape m=1024,n=1024,k=1024 --shape m=2048,n=2048,k=2048 --shape m=32,n=4096,k=1024
    --shape m=64,n=1024,k=4096 --shape m=4096,n=64,k=1024 --shape m=1024,n=1024,k=64
    --shape m=256,n=1024,k=512 --shape m=1024,n=256,k=2048 --shape m=512,n=2048,k=128)
FA=()
for s in 1,8,8,512,512,64,0 1,8,8,512,512,64,1 1,8,8,1024,1024,64,0 1,8,2,1024,1024,128,1 \
         1,4,4,2048,2048,128,0 1,4,1,2048,2048,64,1 2,8,8,256,256,128,0 1,16,4,512,512,128,1 \
         1,4,4,128,2048,128,0 1,8,8,64,4096,64,0 4,4,4,512,512,64,0 1,2,2,4096,4096,128,1; do
  IFS=, read -r b h kv sq skv d c <<<"$s"
  FA+=(--shape "batch=$b,heads=$h,kv_heads=$kv,seq_q=$sq,seq_kv=$skv,head_dim=$d,causal=$c")
done

one_run() {  # run
  local run=$1 dir=$out/run$1 pin=()
  [[ $parallel == 1 ]] && pin=(taskset -c $(( (run - 1) % $(nproc) )))
  mkdir -p "$dir"
  rm -f "$dir/port"
  "${pin[@]}" "${prio[@]}" "$bin/server/blocktuned" --db "$dir/blocktune.db" --port 0 --port-file "$dir/port" \
    --min-repetition-ms "$min_ms" --repetitions "$reps" --worker-sched normal >"$dir/daemon.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do [[ -s $dir/port ]] && break; sleep 0.1; done
  [[ -s $dir/port ]] || { echo "daemon did not start"; cat "$dir/daemon.log"; exit 1; }
  local S=(--server "http://127.0.0.1:$(cat "$dir/port")" --token-file "$dir/token")
  if [[ ,$kernels, == *,matmul,* ]]; then
    "$bin/client/blocktune" sweep matmul "${S[@]}" --threads 1 --seed "$run" "${MM[@]}" 2>/dev/null
  fi
  if [[ ,$kernels, == *,flash_attention,* ]]; then
    "$bin/client/blocktune" sweep flash_attention "${S[@]}" --threads 1 --seed "$run" "${FA[@]}" 2>/dev/null
  fi
  kill "$pid"
  wait "$pid" || true
}
if [[ $parallel == 1 ]]; then
  one_run 1 & first=$!
  one_run 2
  wait "$first"
else
  one_run 1
  one_run 2
fi

id=0
for kernel in "${selected[@]}"; do
  id=$((id + 1))
  echo "== $kernel: sweep A (run1) vs sweep B (run2)"
  "$bin/client/blocktune" sweeps compare --db-a "$out/run1/blocktune.db" --sweep-a "$id" \
    --db-b "$out/run2/blocktune.db" --sweep-b "$id" | tail -1
done
"$bin/client/blocktune" simulate --db "$out/run1/blocktune.db" --db "$out/run2/blocktune.db" \
  --export "$out/exhaustive_matmul_flash.tsv" >/dev/null
for kernel in "${selected[@]}"; do
  for strategy in anneal surrogate transfer; do
    echo "== $kernel $strategy"
    "$bin/client/blocktune" simulate --data "$out/exhaustive_matmul_flash.tsv" --kernel "$kernel" \
      --strategy "$strategy" --budget-fraction 0.1 --seeds 20 | tail -1
  done
done
