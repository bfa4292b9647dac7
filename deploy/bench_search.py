#!/usr/bin/env python3
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

  deploy/bench-search.sh            (creates the venv from deploy/search-requirements.lock)
  python deploy/bench_search.py --landscapes ../shared/landscapes --blocktune build/client/blocktune
"""
import argparse
import gzip
import json
import math
import multiprocessing
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

BUDGETS = [25, 50, 100, 200, 400, 800]
KT_STRATEGIES = ["genetic_algorithm", "dual_annealing", "simulated_annealing", "greedy_ils", "pso",
                 "bayes_opt", "random_sample"]
OPTUNA_STRATEGIES = ["optuna_tpe", "optuna_cmaes"]
OURS = ["auto", "anneal", "surrogate"]
SLOW = ("bayes_opt", "optuna_tpe", "optuna_cmaes")
THRESHOLD = 0.98


# ------------------------------------------------------------------------------------------
# Landscapes


def load_landscape(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def landscape_name(path):
    base = os.path.basename(path)
    for ext in (".json.gz", ".json"):
        if base.endswith(ext):
            return base[: -len(ext)]
    return base


def entry_time(e):
    """The config's time in ms, or None when it failed (a string instead of a number)."""
    t = e.get("time")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0 and "__error__" not in e:
        return float(t)
    return None


def expected_random(times, budget, score):
    """E[score(best time)] of `budget` draws without replacement from the space (failed configs
    drawn too: they count). A run whose draws all failed is scored at the worst passing time; at
    25 draws from these spaces (at most 11% failing) that has probability < 1e-20."""
    ok = sorted(t for t in times if t is not None)
    n = len(times)
    k = min(budget, n)
    # P(best draw is the j-th fastest passing config) = C(n - 1 - j, k - 1) / C(n, k), j from 0;
    # the remaining probability (every draw among the failed ones) gets the worst passing time.
    log_total = math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
    e = 0.0
    p_sum = 0.0
    for j, t in enumerate(ok):
        rest = n - 1 - j
        if rest < k - 1:
            break
        p = math.exp(math.lgamma(rest + 1) - math.lgamma(k) - math.lgamma(rest - k + 2) - log_total)
        e += p * score(t)
        p_sum += p
    return e + max(0.0, 1.0 - p_sum) * score(ok[-1])


def expected_random_best(times, budget):
    """E[min time]: the methodology score's R."""
    return expected_random(times, budget, lambda t: t)


def expected_random_ratio(times, budget):
    """E[optimum / best]: the mean best/optimum random search scores, which the strategies' means
    are compared with (optimum / E[best] is lower when the times have a long tail)."""
    opt = min(t for t in times if t is not None)
    return expected_random(times, budget, lambda t: opt / t)


# ------------------------------------------------------------------------------------------
# Peer runs. Each returns (config key, time in ms or None = failed) of the distinct configs
# measured, in the order they were measured, at most `budget` of them.

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


# ------------------------------------------------------------------------------------------
# blocktune runs: import each landscape once, then `blocktune simulate --budget N --json`.


def import_landscape(blocktune, path, workdir):
    name = landscape_name(path)
    db = os.path.join(workdir, name + ".db")
    kdir = os.path.join(workdir, name + "_kernels")
    meta = os.path.join(workdir, name + ".import.json")
    if not os.path.exists(meta):
        plain = os.path.join(workdir, name + ".json")
        doc = load_landscape(path)
        # The objective is `time` (the mean of the 32 samples) for everyone: without `times` the
        # import stores `time` itself instead of the samples' median, which would rank configs
        # (and place the optimum) slightly differently from what the peers see.
        for e in doc["cache"].values():
            e.pop("times", None)
        with open(plain, "w") as f:
            json.dump(doc, f)
        os.makedirs(kdir, exist_ok=True)
        out = subprocess.run([blocktune, "import", "kerneltuner", plain, "--db", db, "--kernel-dir", kdir, "--json"],
                             check=True, capture_output=True, text=True).stdout
        os.remove(plain)
        with open(meta, "w") as f:
            f.write(out)
    with open(meta) as f:
        kernel = json.load(f)["kernel"]
    return db, kdir, kernel


def ours_task(args):
    blocktune, db, kdir, kernel, strategy, budget, seeds, outfile, priors, pause_file = args
    if os.path.exists(outfile):
        return outfile, 0.0
    wait_while(pause_file)
    t0 = time.time()
    cmd = [blocktune, "simulate", "--kernel-dir", kdir, "--db", db, "--kernel", kernel, "--strategy", strategy,
           "--budget", str(budget), "--seeds", str(seeds), "--json"]
    if priors:
        cmd += ["--prior"] + priors
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    b = out["buckets"][0]
    elapsed = time.time() - t0
    os.makedirs(os.path.dirname(outfile), exist_ok=True)
    with open(outfile + ".tmp", "w") as f:
        json.dump({"strategy": strategy, "budget": budget, "best_ns": b[strategy]["best_ns"],
                   "optimum_ns": b["optimum_ns"], "seconds": elapsed}, f)
    os.replace(outfile + ".tmp", outfile)
    return outfile, elapsed


# ------------------------------------------------------------------------------------------
# Report


def best_at(times, budget, worst):
    ok = [t for t in times[:budget] if t is not None]
    return min(ok) if ok else worst


def collect(out_dir, name, strategy, budgets, prefix):
    """{budget: runs} from the stored runs: per seed, the times measured (peers) or the best
    time in ms (blocktune runs). With `prefix`, a budget without a run of its own is read off
    the seed's shortest run at a larger budget."""
    res = {}
    d = os.path.join(out_dir, name, strategy)
    if not os.path.isdir(d):
        return res
    if strategy.startswith("blocktune_"):
        for b in budgets:
            f = os.path.join(d, "b%d.json" % b)
            if os.path.exists(f):
                res[b] = [v / 1e6 for v in json.load(open(f))["best_ns"]]
        return res
    by_seed = {}
    for fn in os.listdir(d):
        if fn.endswith(".json"):
            run_budget, seed = (int(x[1:]) for x in fn[:-5].split("_"))
            by_seed.setdefault(seed, {})[run_budget] = os.path.join(d, fn)
    for b in budgets:
        vals = []
        for seed in sorted(by_seed):
            runs = by_seed[seed]
            pick = b if b in runs else (min((r for r in runs if r > b), default=None) if prefix else None)
            if pick is not None:
                vals.append(json.load(open(runs[pick]))["times"])
        if vals:
            res[b] = vals
    return res


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--landscapes", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared", "landscapes"))
    p.add_argument("--only", default="", help="comma-separated landscape names (default: every *.json.gz)")
    p.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    p.add_argument("--seeds", type=int, default=50, help="seeds per (landscape, strategy, budget)")
    p.add_argument("--slow-seeds", type=int, default=None,
                   help="seeds for bayes_opt, optuna_tpe and optuna_cmaes, the slow peers (default: --seeds)")
    p.add_argument("--slow-budget", type=int, default=None,
                   help="largest budget for bayes_opt, optuna_tpe and optuna_cmaes (default: every budget; at 800 evaluations "
                        "each run takes minutes)")
    p.add_argument("--peers", default=",".join(KT_STRATEGIES + OPTUNA_STRATEGIES),
                   help="peer strategies; NAME+restarts runs NAME again with the next seed whenever it stops "
                        "before the budget (e.g. genetic_algorithm+restarts,optuna_cmaes+restarts)")
    p.add_argument("--ours", default=",".join(OURS))
    p.add_argument("--blocktune", default="build/client/blocktune")
    p.add_argument("--prior", action="store_true",
                   help="also run blocktune auto with the other five devices of the kernel as --prior (leave one out)")
    p.add_argument("--prior-budgets", default="",
                   help="budgets for the --prior runs (default: --budgets; the prior's target is 50 evaluations)")
    p.add_argument("--prefix-curves", action="store_true",
                   help="run each peer once at the largest budget and read the smaller budgets off its curve "
                        "(6x cheaper; a strategy that plans by its budget is then scored off-plan below it)")
    p.add_argument("--out", default="build/bench-search")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--pause-while", default="",
                   help="hold each new run while this file exists (e.g. a shared machine's quiet-window flag)")
    p.add_argument("--phase", default="all", choices=["peers", "ours", "report", "all"])
    p.add_argument("--plots", default="", help="directory for the PNG curves (default: OUT/img)")
    p.add_argument("--markdown", default="", help="also write the tables as Markdown to this file")
    a = p.parse_args()

    budgets = [int(x) for x in a.budgets.split(",")]
    paths = sorted(os.path.join(a.landscapes, f) for f in os.listdir(a.landscapes) if f.endswith(".json.gz"))
    if a.only:
        want = set(a.only.split(","))
        paths = [x for x in paths if landscape_name(x) in want]
    peers = [x for x in a.peers.split(",") if x]
    ours = [x for x in a.ours.split(",") if x]
    slow_seeds = a.slow_seeds if a.slow_seeds is not None else a.seeds
    os.makedirs(a.out, exist_ok=True)
    workdir = os.path.join(a.out, "work")
    os.makedirs(workdir, exist_ok=True)

    if a.phase in ("peers", "all") and peers:
        run_budgets = [max(budgets)] if a.prefix_curves else budgets
        tasks = []
        for seed in range(1, a.seeds + 1):
            for path in paths:
                for s in peers:
                    slow = s.removesuffix(RESTARTS) in SLOW
                    if slow and seed > slow_seeds:
                        continue
                    for b in run_budgets:
                        if slow and a.slow_budget:
                            if b > a.slow_budget and not a.prefix_curves:
                                continue
                            b = min(b, a.slow_budget)
                        f = os.path.join(a.out, landscape_name(path), s, "b%d_s%d.json" % (b, seed))
                        if not os.path.exists(f):
                            tasks.append((path, s, b, seed, f, workdir, a.pause_while))
        print("peers: %d runs to do" % len(tasks), flush=True)
        with multiprocessing.Pool(a.jobs) as pool:
            for k, (f, sec) in enumerate(pool.imap_unordered(peer_task, tasks)):
                print("[%d/%d] %s %.1fs" % (k + 1, len(tasks), os.path.relpath(f, a.out), sec), flush=True)

    if a.phase in ("ours", "all") and ours:
        every = sorted(os.path.join(a.landscapes, f) for f in os.listdir(a.landscapes) if f.endswith(".json.gz"))
        imported = {x: import_landscape(a.blocktune, x, workdir) for x in (every if a.prior else paths)}
        tasks = []
        for path in paths:
            db, kdir, kernel = imported[path]
            runs = [(s, "blocktune_" + s, []) for s in ours]
            prior_budgets = [int(x) for x in a.prior_budgets.split(",")] if a.prior_budgets else budgets
            if a.prior:
                kern = landscape_name(path).split("_")[0]
                others = [imported[q][0] for q in sorted(imported)
                          if q != path and landscape_name(q).split("_")[0] == kern]
                runs.append(("auto", "blocktune_auto+prior", others))
            for s, label, priors in runs:
                for b in (prior_budgets if priors else budgets):
                    f = os.path.join(a.out, landscape_name(path), label, "b%d.json" % b)
                    tasks.append((a.blocktune, db, kdir, kernel, s, b, a.seeds, f, priors, a.pause_while))
        with multiprocessing.Pool(a.jobs) as pool:
            for f, sec in pool.imap_unordered(ours_task, tasks):
                if sec:
                    print("%s %.1fs" % (os.path.relpath(f, a.out), sec), flush=True)

    report(a, paths, budgets, peers, ours)


def report(a, paths, budgets, peers, ours):
    # A NAME+restarts peer after NAME: its cells are reported only where NAME's runs measured
    # under 90% of the budget (elsewhere the two are the same runs, or nearly, and a second,
    # smaller sample of them would only add noise to the best-peer maximum: the genetic
    # algorithm's plain runs stop at 199 of 200 on some landscapes).
    peers = sorted(peers, key=lambda p: p.endswith(RESTARTS))
    labels = ["blocktune_" + s for s in ours] + (["blocktune_auto+prior"] if a.prior else []) + peers
    plots = a.plots or os.path.join(a.out, "img")
    os.makedirs(plots, exist_ok=True)
    summary = {}  # label -> list of per-landscape scores over every budget
    summary_low = {}  # ... over the budgets <= 200
    random_ratios = {}  # landscape -> budget -> E[optimum / random best]
    table = {}
    # landscape -> peer -> budget -> mean distinct configs measured, when under the budget: a
    # sampler that converges proposes configs it measured already (Optuna's CMA-ES has no
    # restarts) and stops at the cap of 10 proposals per evaluation.
    short_runs = {}
    for path in paths:
        name = landscape_name(path)
        doc = load_landscape(path)
        times = [entry_time(e) for e in doc["cache"].values()]
        ok = [t for t in times if t is not None]
        opt, worst = min(ok), max(ok)
        rand = {b: expected_random_best(times, b) for b in budgets}
        random_ratios[name] = {b: expected_random_ratio(times, b) for b in budgets}
        print("\n## %s: %d configs, %d failed, optimum %.4f ms" % (name, len(times), len(times) - len(ok), opt))
        print("%-26s" % "strategy" + "".join("%22s" % ("%d evals" % b) for b in budgets) + "%8s%8s" % ("score", "<=200"))
        print("%-26s" % "E[random] best/optimum" + "".join("%22.3f" % random_ratios[name][b] for b in budgets))
        curves = {}
        for label in labels:
            runs = collect(a.out, name, label, budgets, a.prefix_curves)
            if not runs:
                continue
            cells = []
            scores = []
            low = []  # at budgets <= 200, the range every peer ran
            curve = []
            for b in budgets:
                restarted = label.endswith(RESTARTS)
                plain_measured = short_runs.get(name, {}).get(label.removesuffix(RESTARTS), {}).get(b, b) if restarted else b
                if b not in runs or (restarted and plain_measured >= 0.9 * b):
                    cells.append("%22s" % "-")
                    continue
                if label.startswith("blocktune_"):
                    bests = runs[b]
                else:
                    bests = [best_at(t, b, worst) for t in runs[b]]
                    measured = sum(min(len(t), b) for t in runs[b]) / len(runs[b])
                    if measured < b:
                        short_runs.setdefault(name, {}).setdefault(label, {})[b] = measured
                ratios = [opt / x for x in bests]
                mean_best = sum(bests) / len(bests)
                mean_ratio = sum(ratios) / len(ratios)
                hit = sum(r >= THRESHOLD for r in ratios) / len(ratios)
                score = (rand[b] - mean_best) / (rand[b] - opt) if rand[b] > opt else 1.0
                scores.append(score)
                if b <= 200:
                    low.append(score)
                curve.append((b, mean_ratio))
                se = (math.sqrt(sum((r - mean_ratio) ** 2 for r in ratios) / (len(ratios) - 1) / len(ratios))
                      if len(ratios) > 1 else float("inf"))
                table.setdefault(name, {}).setdefault(label, {})[b] = (mean_ratio, hit, score, len(bests), se)
                cells.append("%22s" % ("%.3f p%.2f n%d" % (mean_ratio, hit, len(bests))))
            s = sum(scores) / len(scores) if len(scores) == len(budgets) else float("nan")
            n_low = len([b for b in budgets if b <= 200])
            s_low = sum(low) / len(low) if low and len(low) == n_low else float("nan")
            summary.setdefault(label, {})[name] = s
            summary_low.setdefault(label, {})[name] = s_low
            curves[label] = curve
            print("%-26s" % label + "".join(cells) + "%8.3f%8.3f" % (s, s_low))
        plot(name, budgets, curves, random_ratios[name], plots)
    print("\n## methodology score averaged over the landscapes (1 = optimum at every budget, 0 = random search)")
    print("%-26s %18s %18s" % ("strategy", "all budgets", "budgets <= 200"))
    for label in labels:
        cells = []
        for table_ in (summary, summary_low):
            v = [x for x in table_.get(label, {}).values() if not math.isnan(x)]
            cells.append("%7.3f (%2d land.)" % (sum(v) / len(v), len(v)) if v else "%18s" % "-")
        print("%-26s %18s %18s" % (label, cells[0], cells[1]))
    with open(os.path.join(a.out, "table.json"), "w") as f:
        json.dump(table, f, indent=1)
    if a.markdown:
        write_markdown(a.markdown, table, budgets, labels, summary, summary_low, random_ratios, peers, short_runs)


def write_markdown(path, table, budgets, labels, summary, summary_low, random_ratios, peers, short_runs):
    """`auto` against the best peer per cell; per landscape: mean best/optimum (P >= 0.98, seeds)
    per budget; then the mean scores."""
    out = []
    short = {"genetic_algorithm": "GA", "dual_annealing": "DA", "simulated_annealing": "SA", "greedy_ils": "ILS",
             "pso": "PSO", "bayes_opt": "BO", "random_sample": "random", "optuna_tpe": "TPE", "optuna_cmaes": "CMA-ES"}
    plain = [p for p in peers if not p.endswith(RESTARTS)]
    views = [(plain, "#### `auto` against the best peer in each cell")]
    if len(plain) < len(peers):
        views.append((peers, "#### `auto` against the best peer in each cell, the restarted peers included\n\n"
                             "+r: the peer run again with the next seed until the budget was spent, counted where its "
                             "plain runs measured under 90% of the budget."))
    for view_peers, title in views if any("blocktune_auto" in table[name] for name in table) else []:
        out.append("\n%s\n" % title)
        out.append("`auto`'s mean best/optimum / the best peer's (which peer, its seeds); **bold**: `auto` at or above "
                   "it; (n) after a loss: n standard errors of the best peer's mean below it (n <= 2: inside its noise; "
                   "'every run': all the best peer's runs ended at the same time, so four decimals); "
                   "r: E[random], the mean best/optimum of random search, exact.\n")
        out.append("| landscape | " + " | ".join("%d" % b for b in budgets) + " |")
        out.append("|---" * (len(budgets) + 1) + "|")
        wins = near = cells = above_random = 0
        for name in sorted(table):
            row = table[name].get("blocktune_auto", {})
            cells_md = []
            for b in budgets:
                if b not in row:
                    cells_md.append("-")
                    continue
                m = row[b][0]
                cand = [(table[name][p][b][0], p) for p in view_peers if b in table[name].get(p, {})]
                cells += 1
                above_random += m >= random_ratios[name][b]
                if not cand:
                    cells_md.append("%.3f / - (r %.3f)" % (m, random_ratios[name][b]))
                    continue
                pm, pl = max(cand)
                pn, pse = table[name][pl][b][3], table[name][pl][b][4]
                base = pl.removesuffix(RESTARTS)
                pl = short.get(base, base) + ("+r" if base != pl else "")
                if m >= pm:
                    wins += 1
                    cells_md.append("**%.3f** / %.3f %s n%d" % (m, pm, pl, pn))
                elif pse > 0:
                    k = (pm - m) / pse
                    near += k <= 2
                    cells_md.append("%.3f / %.3f %s n%d (%.1f)" % (m, pm, pl, pn, k))
                else:  # every run of the best peer ended at the same config (the optimum, as a rule)
                    cells_md.append("%.4f / %.4f %s n%d (every run)" % (m, pm, pl, pn))
            out.append("| %s | %s |" % (name, " | ".join(cells_md)))
        out.append("\n`auto` at or above the best peer in %d of %d cells, within 2 standard errors of it in %d more; "
                   "at or above E[random] in %d of %d.\n" % (wins, cells, near, above_random, cells))
    for name in sorted(table):
        out.append("\n#### %s\n" % name)
        out.append("| strategy | " + " | ".join("%d" % b for b in budgets) + " | score | score <= 200 |")
        out.append("|---" * (len(budgets) + 3) + "|")
        out.append("| E[random] | " + " | ".join("%.3f" % random_ratios[name][b] for b in budgets) + " | 0 | 0 |")
        for label in labels:
            row = table[name].get(label)
            if not row:
                continue
            cells = []
            for b in budgets:
                if b in row:
                    m, hit, _, n, _ = row[b]
                    cells.append("%.3f (%.0f%%, %d)" % (m, 100 * hit, n))
                else:
                    cells.append("-")
            s = summary.get(label, {}).get(name, float("nan"))
            sl = summary_low.get(label, {}).get(name, float("nan"))
            fmt = lambda x: "-" if math.isnan(x) else "%.3f" % x
            out.append("| %s | %s | %s | %s |" % (label.replace("blocktune_", "**") + ("**" if label.startswith("blocktune_") else ""),
                                                 " | ".join(cells), fmt(s), fmt(sl)))
    if short_runs:
        out.append("\n#### Peers that measured fewer configs than the budget\n")
        out.append("Mean distinct configs measured per run, lowest and highest over the landscapes (a budget "
                   "is left out where every run measured it in full); the best at a budget is the best of "
                   "what was measured.\n")
        out.append("| peer | " + " | ".join("%d" % b for b in budgets) + " |")
        out.append("|---" * (len(budgets) + 1) + "|")
        for label in peers:
            per_b = {}
            for name in short_runs:
                for b, m in short_runs[name].get(label, {}).items():
                    per_b.setdefault(b, []).append(m)
            if per_b:
                out.append("| %s | %s |" % (label, " | ".join(
                    "%.0f-%.0f (%d land.)" % (min(per_b[b]), max(per_b[b]), len(per_b[b])) if b in per_b else "-"
                    for b in budgets)))
    out.append("\n#### Methodology score, mean over the landscapes\n")
    out.append("| strategy | all budgets | budgets <= 200 |")
    out.append("|---|---|---|")
    for label in labels:
        cells = []
        for t in (summary, summary_low):
            v = [x for x in t.get(label, {}).values() if not math.isnan(x)]
            cells.append("%.3f (%d)" % (sum(v) / len(v), len(v)) if v else "-")
        out.append("| %s | %s | %s |" % (label, cells[0], cells[1]))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def plot(name, budgets, curves, random_curve, plots):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=100)
    ax.plot(budgets, [random_curve[b] for b in budgets], "k--", label="E[random]", linewidth=1)
    for label, curve in curves.items():
        style = "-o" if label.startswith("blocktune_") else ":x"
        ax.plot([b for b, _ in curve], [r for _, r in curve], style, label=label.replace("blocktune_", "bt "),
                linewidth=1.5 if label.startswith("blocktune_") else 1, markersize=3)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets)
    ax.set_xticklabels([str(b) for b in budgets])
    ax.set_xlabel("evaluations (distinct configs, failures count)")
    ax.set_ylabel("mean best / optimum")
    ax.set_title(name)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    fig.savefig(os.path.join(plots, name + ".png"))
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
