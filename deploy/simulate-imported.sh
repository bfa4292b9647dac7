#!/usr/bin/env bash
# Scores the search strategies on an imported exhaustive landscape (docs/external-kernels.md#
# simulate-on-imported-data): writes the synthetic Kernel Tuner cache of
# tests/data/import/make_landscape.py (5760 configs with restrictions, categorical parameters and
# 1157 failed configs), imports it into a temporary database and runs `blocktune simulate` for
# every strategy at 1%, 2% and 5% of the space with 20 seeds, next to random search.
#   deploy/simulate-imported.sh [BUILD_DIR] [CACHE.json]   (a real Kernel Tuner cache works too)
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cache=${2:-$work/landscape.json}
[[ -n ${2:-} ]] || python3 "$src/tests/data/import/make_landscape.py" "$cache"
mkdir -p "$work/kernels"
"$build/client/blocktune" import kerneltuner "$cache" --db "$work/db" --kernel-dir "$work/kernels" --json >"$work/import.json"
kernel=$(python3 -c "import json; print(json.load(open('$work/import.json'))['kernel'])")
printf '%-10s %-9s %8s %12s %12s %10s %10s\n' strategy budget evals "mean ratio" "random" "hit>=.98" "random"
for frac in 0.01 0.02 0.05; do
  for strategy in auto anneal surrogate transfer; do
    "$build/client/blocktune" simulate --kernel-dir "$work/kernels" --db "$work/db" --kernel "$kernel" \
      --strategy "$strategy" --budget-fraction "$frac" --seeds 20 --json >"$work/sim.json"
    python3 - "$work/sim.json" "$strategy" "$frac" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["buckets"][0]
print("%-10s %-9s %8d %12.4f %12.4f %9.0f%% %9.0f%%" % (sys.argv[2], "%g%%" % (100 * float(sys.argv[3])), b["budget"],
      r["strategy_mean_ratio"], r["random_mean_ratio"], 100 * r["strategy_run_fraction"], 100 * r["random_run_fraction"]))
PY
  done
done
