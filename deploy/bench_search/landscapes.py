"""The landscapes (Kernel Tuner cache files, brute-forced on GPUs) and what is known about each
without running a strategy: a config's time, and the exact expectation of random search's best
at a budget (sampling without replacement, failed configs drawn too)."""
import gzip
import json
import math
import os


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
