#!/usr/bin/env bash
# Submits a sharded blocktune sweep to Slurm: an array of N shard tasks (sweep-array.sbatch)
# and a merge job that runs only if all of them succeed (merge.sbatch, --dependency=afterok).
# Prints the two job ids. Extra sbatch options (partition, account, time) go in SBATCH_* env
# variables or the #SBATCH lines.
#   deploy/slurm/submit.sh N OUT_DIR "SWEEP ARGS" [TABLES_DIR]
#   deploy/slurm/submit.sh 16 /shared/tune "matmul --shape m=1024,n=1024,k=1024 --threads 1" tables
set -euo pipefail
[[ $# -ge 3 ]] || { sed -n 2,7p "$0"; exit 2; }
n=$1 out=$2 sweep=$3 tables=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
export BLOCKTUNE_SHARDS=$n BLOCKTUNE_OUT=$out BLOCKTUNE_SWEEP=$sweep BLOCKTUNE_TABLES=$tables
mkdir -p "$out"
array=$(sbatch --parsable --chdir="$out" --export=ALL --array="0-$((n - 1))" "$here/sweep-array.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --chdir="$out" --export=ALL --dependency="afterok:$array" "$here/merge.sbatch")
merge=${merge%%;*}
echo "array $array merge $merge"
