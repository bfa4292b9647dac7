"""Peer runs: Kernel Tuner 1.5's strategies (simulation mode on a per-worker copy of the cache)
and Optuna's TPE and CMA-ES on a landscape, NAME+restarts going on with the next seed when a
peer stops before its budget, and the stored-run task the runner's pool maps over. Each run
returns (config key, time in ms or None = failed) of the distinct configs measured, in the
order they were measured, at most `budget` of them."""
import json
import os
import random
import time
import warnings

from .landscapes import entry_time, landscape_name, load_landscape

KT_STRATEGIES = ["genetic_algorithm", "dual_annealing", "simulated_annealing", "greedy_ils", "pso",
                 "bayes_opt", "random_sample"]
OPTUNA_STRATEGIES = ["optuna_tpe", "optuna_cmaes"]

_cache = {}


def worker_landscape(path, workdir):
    """(doc, plain-JSON cache path) per worker: Kernel Tuner reads (and may append to) the cache
    file, so each worker gets its own uncompressed copy."""
    if path not in _cache:
        doc = load_landscape(path)
        plain = os.path.join(workdir, "%d_%s.json" % (os.getpid(), landscape_name(path)))
        with open(plain, "w") as f:
            json.dump(doc, f)
        _cache[path] = (doc, plain)
    return _cache[path]


def run_kernel_tuner(doc, plain, strategy, budget, seed):
    import numpy as np
    import kernel_tuner

    tp = doc["tune_params"]
    keys = set(doc["cache"])
    names = list(tp)

    def restrict(p):
        return ",".join(str(p[k]) for k in names) in keys

    random.seed(seed)
    np.random.seed(seed)
    # A fresh copy of the cache each run: Kernel Tuner appends to it only outside simulation
    # mode, but a crash mid-write must not corrupt the next run's input.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res, _ = kernel_tuner.tune_kernel(doc["kernel_name"], "__global__ void k(){}", doc["problem_size"], [], tp,
                                          restrictions=restrict, strategy=strategy,
                                          strategy_options={"max_fevals": budget}, cache=plain,
                                          simulation_mode=True, quiet=True, lang="CUDA")
    out = []
    seen = set()
    for r in res:
        key = ",".join(str(r[k]) for k in names)
        if key in seen:
            continue
        seen.add(key)
        out.append((key, entry_time(doc["cache"][key])))
    return out[:budget]


def run_optuna(doc, sampler_name, budget, seed, stall=None):
    """With `stall`, the run also ends after that many proposals in a row brought no new config
    (a converged sampler: run_peer's restarts go on with a fresh one)."""
    import optuna
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tp = doc["tune_params"]
    names = list(tp)
    free = [k for k in names if len(tp[k]) > 1]
    cache = doc["cache"]
    if sampler_name == "optuna_tpe":
        sampler = optuna.samplers.TPESampler(seed=seed)
    else:
        sampler = optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    study = optuna.create_study(sampler=sampler, direction="minimize")
    out = []
    measured = {}
    # Configs outside the space cost nothing (refused before measurement) but would let a
    # sampler stuck in the refused region loop forever: cap the proposals.
    repeats = 0
    for _ in range(budget * 10):
        if len(out) >= budget or (stall and repeats >= stall):
            break
        trial = study.ask()
        idx = {k: trial.suggest_int(k, 0, len(tp[k]) - 1) for k in free}
        key = ",".join(str(tp[k][idx[k]] if k in idx else tp[k][0]) for k in names)
        repeats += 1
        if key not in cache:
            study.tell(trial, state=TrialState.FAIL)
            continue
        if key not in measured:
            repeats = 0
            measured[key] = entry_time(cache[key])
            out.append((key, measured[key]))
        t = measured[key]
        if t is None:
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, t)
    return out


def wait_while(pause_file):
    """Hold the next run while `pause_file` exists (a shared machine's quiet window: someone is
    timing something there), checking every 20 s; a run already started finishes."""
    while pause_file and os.path.exists(pause_file):
        time.sleep(20)


RESTARTS = "+restarts"
MAX_RESTARTS = 50
# An Optuna run restarts after this many proposals in a row that were refused or measured before.
RESTART_STALL = 100


def run_peer(doc, plain, strategy, budget, seed):
    """The times of the distinct configs `strategy` measured, in order. A peer named
    NAME+restarts that stops before its budget (Kernel Tuner's genetic algorithm after its
    generations, Optuna's CMA-ES once it converges: Optuna 5 dropped its restart strategies) is
    run again with the next seed on the same landscape, as a user with budget left would go on;
    what it measured before is free, so only new configs count, up to MAX_RESTARTS runs. An
    Optuna run there also ends after RESTART_STALL proposals in a row brought nothing new (a
    converged CMA-ES otherwise spends the 10 x budget proposals repeating itself, 17 minutes
    for one run at 800)."""
    base = strategy.removesuffix(RESTARTS)
    runs = MAX_RESTARTS if base != strategy else 1
    times, seen = [], set()
    for k in range(runs):
        s = seed + 100000 * k
        if base in OPTUNA_STRATEGIES:
            pairs = run_optuna(doc, base, budget, s, stall=RESTART_STALL if runs > 1 else None)
        else:
            pairs = run_kernel_tuner(doc, plain, base, budget, s)
        for key, t in pairs:
            if key not in seen and len(times) < budget:
                seen.add(key)
                times.append(t)
        if len(times) >= budget:
            break
    return times


def peer_task(args):
    path, strategy, budget, seed, outfile, workdir, pause_file = args
    if os.path.exists(outfile):
        return outfile, 0.0
    wait_while(pause_file)
    doc, plain = worker_landscape(path, workdir)
    t0 = time.time()
    times = run_peer(doc, plain, strategy, budget, seed)
    elapsed = time.time() - t0
    os.makedirs(os.path.dirname(outfile), exist_ok=True)
    tmp = outfile + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"strategy": strategy, "budget": budget, "seed": seed, "times": times, "seconds": elapsed}, f)
    os.replace(tmp, outfile)
    return outfile, elapsed
