"""The counting rules of the side-by-side search benchmark (deploy/bench_search, docs/search.md)
that its tables rest on, without Kernel Tuner or Optuna: a peer run stands in for them.

- E[random]: the exact expectation of random search's best, against every draw enumerated;
- a peer that stops early keeps its best at the larger budgets;
- NAME+restarts runs the peer again with the next seed until the budget is spent, counting only
  configs not measured before, and never past the budget."""

from __future__ import annotations

import importlib
import itertools
import sys
from types import ModuleType
from typing import Any

import pytest

from conftest import SOURCE


def load_bench(module: str) -> ModuleType:
    """deploy/bench_search's `module`, imported as the package's own (deploy/ on the path)."""
    deploy = str(SOURCE / "deploy")
    if deploy not in sys.path:
        sys.path.insert(0, deploy)
    return importlib.import_module("bench_search." + module)


landscapes = load_bench("landscapes")
peers = load_bench("peers")
report = load_bench("report")

# 7 configs, two of them failed (None): failed draws count as evaluations.
TIMES = [3.0, None, 1.0, 5.0, 2.0, None, 4.0]


@pytest.mark.parametrize("budget", range(1, len(TIMES) + 1))
def test_expected_random_best_is_the_mean_over_every_draw(budget: int) -> None:
    worst = max(t for t in TIMES if t is not None)
    opt = min(t for t in TIMES if t is not None)
    bests = []
    for draw in itertools.combinations(TIMES, budget):
        ok = [t for t in draw if t is not None]
        bests.append(min(ok) if ok else worst)  # every draw failed: scored as the worst passing time
    assert landscapes.expected_random_best(TIMES, budget) == pytest.approx(sum(bests) / len(bests), rel=1e-12)
    ratios = [opt / b for b in bests]
    assert landscapes.expected_random_ratio(TIMES, budget) == pytest.approx(sum(ratios) / len(ratios), rel=1e-12)


def test_a_peer_that_stops_early_keeps_its_best() -> None:
    times = [5.0, None, 3.0, 4.0]
    assert report.best_at(times, 2, 9.0) == 5.0
    assert report.best_at(times, 800, 9.0) == 3.0  # stopped at 4 configs: its best of those
    assert report.best_at([None, None], 800, 9.0) == 9.0  # nothing passed: the worst passing time


def fake_peer(calls: list[int], stop_after: int) -> Any:
    """A peer that measures the shared configs c0-c2 first, then configs of its seed's own, and
    stops after `stop_after` distinct configs whatever its budget (as Kernel Tuner's genetic
    algorithm stops after its generations)."""

    def run(doc: Any, plain: Any, strategy: str, budget: int, seed: int) -> list[tuple[str, float | None]]:
        calls.append(seed)
        keys = ["c0", "c1", "c2"] + ["s%d_%d" % (seed, i) for i in range(stop_after - 3)]
        return [(k, None if k == "c1" else float(len(k))) for k in keys][:budget]

    return run


def test_restarts_count_only_new_configs_until_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(peers, "run_kernel_tuner", fake_peer(calls, stop_after=5))
    plain = peers.run_peer({}, None, "genetic_algorithm", 12, 7)
    assert len(plain) == 5 and calls == [7]  # the plain peer stops where it stops
    calls.clear()
    restarted = peers.run_peer({}, None, "genetic_algorithm" + peers.RESTARTS, 12, 7)
    # 5 from the first run, then 2 new ones per run (c0-c2 were measured): 5 + 2 + 2 + 2 + 1.
    assert len(restarted) == 12
    assert restarted[:5] == plain  # a restarted peer's first run is the plain peer's run
    assert calls == [7 + 100000 * k for k in range(5)]
    assert restarted.count(None) == 1  # the failed c1 is counted once, as an evaluation


def test_restarts_give_up_when_nothing_new_comes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(peers, "run_kernel_tuner", fake_peer(calls, stop_after=3))  # only c0-c2, every seed
    restarted = peers.run_peer({}, None, "genetic_algorithm" + peers.RESTARTS, 12, 1)
    assert len(restarted) == 3
    assert len(calls) == peers.MAX_RESTARTS
    assert restarted == [2.0, None, 2.0]
