#!/usr/bin/env bash
# Side-by-side search benchmark (docs/search.md): creates build/search-venv from
# deploy/search-requirements.lock (hash-checked: Kernel Tuner 1.5, Optuna 5, matplotlib) and runs
# the package deploy/bench_search (python deploy/bench_search), which replays Kernel Tuner's and
# Optuna's strategies and ours on the brute-forced GPU landscapes at 25..800 evaluations and
# prints the comparison. Extra arguments go to bench_search (e.g. --seeds 10 --only
# convolution_A100); the defaults are the full protocol: 12 landscapes, 6 budgets, 50 seeds,
# every peer run at every budget.
#   deploy/bench-search.sh [--landscapes ../shared/landscapes] [--blocktune build/client/blocktune] ...
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
venv=${SEARCH_VENV:-$src/build/search-venv}
lock=$src/deploy/search-requirements.lock
if [[ ! -f $venv/.lock.sha256 ]] || ! sha256sum --status -c "$venv/.lock.sha256" 2>/dev/null; then
  python3.11 -m venv --clear "$venv"
  "$venv/bin/pip" install --quiet --no-deps --require-hashes -r "$lock"
  (cd / && sha256sum "$lock") >"$venv/.lock.sha256"
fi
cd "$src"
# The landscapes live beside the checkout (../shared/landscapes); a worktree one level deeper
# finds them one more level up. --landscapes DIR overrides.
landscapes=$src/../shared/landscapes
[[ -d $landscapes ]] || landscapes=$src/../../shared/landscapes
exec nice -n 10 "$venv/bin/python" deploy/bench_search --landscapes "$landscapes" "$@"
