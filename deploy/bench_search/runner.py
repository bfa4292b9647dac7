"""The command line and its phases: every peer run still missing (a process pool over
peer_task), every blocktune run still missing (over ours_task, with --prior the other devices of
the kernel as priors), then the report."""
import argparse
import multiprocessing
import os
import sys

from .landscapes import landscape_name
from .ours import import_landscape, ours_task
from .peers import KT_STRATEGIES, OPTUNA_STRATEGIES, RESTARTS, peer_task
from .report import report

BUDGETS = [25, 50, 100, 200, 400, 800]
OURS = ["auto", "anneal", "surrogate"]
SLOW = ("bayes_opt", "optuna_tpe", "optuna_cmaes")


def main():
    p = argparse.ArgumentParser(description=sys.modules[__package__].__doc__.split("\n")[0])
    p.add_argument("--landscapes", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "landscapes"))
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
