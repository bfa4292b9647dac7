"""Side-by-side search benchmark on brute-forced GPU landscapes (docs/search.md).

Runs Kernel Tuner 1.5's strategies (simulation mode on the cache file), Optuna's TPE and CMA-ES,
and blocktune's strategies (`blocktune simulate --budget N` on the imported landscape) on the
same Kernel Tuner cache files at the same evaluation budgets, counted alike: each distinct
config measured once, failed configs (CompilationFailedConfig, RuntimeFailedConfig) count as an
evaluation, configs outside the space (Kernel Tuner's restrictions; Optuna proposing a
combination that is not in the cache) are refused before measurement and do not count. Prints,
per landscape and budget, the mean best/optimum over seeds, P(best/optimum >= 0.98) and the
methodology score of Willemsen et al. (FGCS 2024): (E[best of random] - best) / (E[best of
random] - optimum) in time, with E[best of random] computed exactly for sampling without
replacement, averaged over the budgets. Writes one PNG of the curves per landscape.

Every run is stored as a JSON file under --out (resumable: a stored run is not run again), so
the peers can run for hours in the background while the report is redone in seconds.

Modules: landscapes (the cache files and random search's exact expectation), peers (Kernel
Tuner's and Optuna's runs), ours (blocktune's runs), report (tables, Markdown, plots), runner
(the command line and its phases); `python deploy/bench_search` runs __main__.py.

  deploy/bench-search.sh            (creates the venv from deploy/search-requirements.lock)
  python deploy/bench_search --landscapes ../shared/landscapes --blocktune build/client/blocktune
"""
