#!/usr/bin/env bash
# Re-measures the checked-in tuned tables on this machine: starts a private blocktuned on a
# fresh database, runs the sweeps below (the same buckets the checked-in tables cover), then
# merges the winners into tables/tuned_entries.jsonl and regenerates every header, Python and
# JSON table. Review the diff (`git diff tables/`) before committing it.
#
#   deploy/retune-tables.sh [--kernels matmul,flash_attention,...] [--threads 1,2]
#                           [--dtypes f32,bf16] [--rt] [--db FILE (default var/retune.db)] [--no-generate]
#                           [--isa avx512|avx2|base]
#
# --isa runs every kernel at that ISA level (at most the CPU's own; blocktuned --isa) and files
# the rows under its hardware key, e.g. an AVX-512 host re-measuring the AVX2 rows that AVX2
# hosts of the same vendor and model look up.
# Workers run in the normal scheduling class here (--worker-sched normal), not the daemon's
# default SCHED_IDLE, so a retune measures at full speed.
# --rt runs the daemon under SCHED_FIFO (chrt -f 10; root or CAP_SYS_NICE) so builds or other
# jobs on a shared machine do not leak into the timings; see docs/performance.md. Time on the
# 2-core development VM: matmul f32 ~9 min at 1 thread and ~7 at 2; all kernels, both dtypes
# and both thread counts ~40 min.
set -euo pipefail
cd "$(dirname "$0")/.."

kernels=matmul,flash_attention,fused_cross_entropy,grouped_matmul,ragged_paged_attention
threads=1,2
dtypes=f32,bf16
rt=()
isa=()
db=""
generate=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --kernels) kernels=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --dtypes) dtypes=$2; shift 2 ;;
    --rt) rt=(chrt -f 10); shift ;;
    --db) db=$2; shift 2 ;;
    --no-generate) generate=0; shift ;;
    --isa) isa=(--isa "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "retune-tables: unknown option $1" >&2; exit 2 ;;
  esac
done
[[ -x build/server/blocktuned && -x build/client/blocktune ]] || deploy/build.sh

work=$(mktemp -d)
# The database is kept (default var/retune.db): the generated rows cite its sweep and
# measurement ids as their provenance. An existing file is reused, never replaced.
db=${db:-var/retune.db}
mkdir -p "$(dirname "$db")"
trap 'kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$work"' EXIT
"${rt[@]}" build/server/blocktuned --db "$db" --port 0 --port-file "$work/port" \
  --token-file "$work/token" --worker-sched normal --log-level warn "${isa[@]}" >"$work/daemon.log" 2>&1 &
daemon=$!
for _ in $(seq 100); do [[ -s $work/port ]] && break; sleep 0.1; done
[[ -s $work/port ]] || { cat "$work/daemon.log" >&2; exit 1; }
cli=(build/client/blocktune sweep --server "http://127.0.0.1:$(cat "$work/port")" --token-file "$work/token")

# The buckets of the checked-in tables. f32 is swept exhaustively where the space is small
# enough (matmul 180 configs, flash_attention 48, ragged 56) and by seeded random sampling
# otherwise; bf16 rows use random sampling of 24 configs on the main buckets (its optimum sits
# near f32's: bf16 only changes the packing/widening cost).
sweep() {  # kernel dtype strategy budget shapes...
  local kernel=$1 dtype=$2 strategy=$3 budget=$4; shift 4
  local shape_args=()
  for s in "$@"; do shape_args+=(--shape "$s"); done
  local t
  for t in ${threads//,/ }; do
    echo "== $kernel $dtype threads=$t $strategy budget=$budget ($# shapes)" >&2
    "${cli[@]}" "$kernel" --dtype "$dtype" --threads "$t" --strategy "$strategy" --budget "$budget" "${shape_args[@]}"
  done
}
want() { [[ ",$kernels," == *",$1,"* && ",$dtypes," == *",$2,"* ]]; }

mm=(m=128,n=128,k=128 m=256,n=256,k=256 m=512,n=512,k=512 m=1024,n=1024,k=1024 m=2048,n=2048,k=2048
    m=32,n=4096,k=1024 m=64,n=1024,k=4096 m=4096,n=64,k=1024 m=1024,n=1024,k=64)
fa=(batch=1,heads=1,kv_heads=1,seq_q=2048,seq_kv=2048,head_dim=128,causal=0
    batch=1,heads=8,kv_heads=2,seq_q=2048,seq_kv=2048,head_dim=128,causal=0
    batch=1,heads=8,kv_heads=2,seq_q=2048,seq_kv=2048,head_dim=128,causal=1
    batch=1,heads=8,kv_heads=2,seq_q=512,seq_kv=512,head_dim=128,causal=1)
fce=(b=1024,h=512,v=8192,backward=0 b=1024,h=512,v=8192,backward=1 b=2048,h=1024,v=16384,backward=0)
gm=(m=4096,k=1024,n=1024,groups=8 m=4096,k=1024,n=1024,groups=64)
rpa=(num_seqs=32,max_kv_len=2048,prefill_q_len=1,page_size=16,heads=8,kv_heads=2,head_dim=128
     num_seqs=16,max_kv_len=2048,prefill_q_len=256,page_size=16,heads=8,kv_heads=2,head_dim=128)

want matmul f32 && sweep matmul f32 exhaustive 0 "${mm[@]}"
want flash_attention f32 && sweep flash_attention f32 exhaustive 0 "${fa[@]}"
want fused_cross_entropy f32 && sweep fused_cross_entropy f32 random 32 "${fce[@]}"
want grouped_matmul f32 && sweep grouped_matmul f32 random 32 "${gm[@]}"
want ragged_paged_attention f32 && sweep ragged_paged_attention f32 exhaustive 0 "${rpa[@]}"

want matmul bf16 && sweep matmul bf16 random 24 "${mm[1]}" "${mm[3]}" "${mm[4]}" "${mm[5]}"
want flash_attention bf16 && sweep flash_attention bf16 random 24 "${fa[0]}" "${fa[2]}"
want fused_cross_entropy bf16 && sweep fused_cross_entropy bf16 random 24 "${fce[0]}" "${fce[1]}"
want grouped_matmul bf16 && sweep grouped_matmul bf16 random 24 "${gm[1]}"
want ragged_paged_attention bf16 && sweep ragged_paged_attention bf16 random 24 "${rpa[@]}"

if [[ $generate == 1 ]]; then
  build/client/blocktune tables generate --db "$db" --out tables
  git --no-pager diff --stat -- tables/ || true
fi
