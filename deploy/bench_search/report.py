"""The report from the stored runs: per landscape and budget the mean best/optimum over seeds,
P(best/optimum >= 0.98) and the methodology score of Willemsen et al. (FGCS 2024), printed and
written to table.json; optionally as Markdown (`auto` against the best peer per cell); one PNG
of the curves per landscape."""
import json
import math
import os

from .landscapes import entry_time, expected_random_best, expected_random_ratio, landscape_name, load_landscape
from .peers import RESTARTS

THRESHOLD = 0.98


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
