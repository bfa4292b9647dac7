"""The Pallas kernels' runner (examples/pallas/runner.py) and specs: on this CPU-only host every
config is answered `invalid` with a message saying interpret mode is not timed, in process and
through a real blocktuned sweep (every measurement invalid, nothing tuned, no row to generate);
in interpret mode (tests only) the runner builds, checks and answers for each kernel; the
specs' defaults and dims fit the problems the runner makes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from blocktune import Client
from conftest import BUILD, SOURCE, start_daemon, stop_daemon

EXAMPLE = SOURCE / "examples" / "pallas"
sys.path.insert(0, str(EXAMPLE))
jax = pytest.importorskip("jax")
import pallas_common as pc  # noqa: E402
import problems  # noqa: E402
import runner as pallas_runner  # noqa: E402

SPECS = {p.stem: json.loads(p.read_text()) for p in sorted(EXAMPLE.glob("pallas_*.json"))}
SMALL = {
    "pallas_flash_attention": ({"batch": 1, "heads": 2, "seq": 32, "head_dim": 16},
                               {"block_q": 16, "block_k": 16, "num_warps": 4, "num_stages": 2}),
    "pallas_grouped_matmul": ({"m": 32, "k": 16, "n": 16, "groups": 4},
                              {"tile_m": 16, "tile_k": 16, "tile_n": 16, "num_warps": 4, "num_stages": 2}),
    "pallas_ragged_paged_attention": ({"tokens": 8, "q_heads": 2, "kv_heads": 1, "head_dim": 16, "page_size": 16,
                                       "pages_per_seq": 2},
                                      {"num_queries_per_block": 16, "num_kv_pages_per_block": 2, "num_warps": 4,
                                       "num_stages": 2}),
}
cpu_only = pytest.mark.skipif(pc.platform() == "gpu", reason="this host has a GPU: the runner times there")


def request(kernel: str, dtype: str = "f32", config: dict[str, int] | None = None) -> dict[str, Any]:
    shape, default_config = SMALL[kernel]
    return {"kernel": kernel, "dtype": dtype, "shape": shape, "config": config or default_config,
            "min_time_ms": 0.1, "repetitions": 2, "threads": 1}


def test_specs_match_the_problems() -> None:
    assert set(SPECS) == set(problems.PROBLEMS) == set(SMALL)
    for name, spec in SPECS.items():
        params = {p["name"]: p["values"] for p in spec["parameters"]}
        assert spec["name"] == name and {"num_warps", "num_stages"} <= set(params)
        assert all(spec["default"][p] in params[p] for p in params), name
        assert set(spec["dims"][i]["name"] for i in range(len(spec["dims"]))) == set(SMALL[name][0]), name
        assert spec["runner"]["command"] == ["python3", "runner.py"] and set(spec["dtypes"]) == {"f32", "bf16"}
        # the spec's default is the BlockSizes' default
        assert problems.PROBLEMS[name].block_sizes(spec["default"]) == type(problems.PROBLEMS[name].block_sizes(
            spec["default"])).get_default(), name


@cpu_only
@pytest.mark.parametrize("kernel", sorted(SMALL))
def test_cpu_host_refuses_to_time(kernel: str) -> None:
    answer = pallas_runner.make_runner().handle(request(kernel))
    assert answer["outcome"] == "invalid"
    assert "interpret mode" in answer["message"] and "not timed" in answer["message"]


@pytest.mark.parametrize("kernel", sorted(SMALL))
def test_interpret_mode_runner_builds_checks_and_answers(kernel: str) -> None:
    r = pallas_runner.make_runner(interpret=True)
    for dtype in ("f32", "bf16"):
        answer = r.handle(request(kernel, dtype))
        assert "times_ms" in answer and len(answer["times_ms"]) == 2, answer
    bad = dict(SMALL[kernel][1])
    first = next(iter(bad))
    bad[first] = 24  # not a power of two
    answer = r.handle(request(kernel, config=bad))
    assert answer["outcome"] == "invalid" and f"{first}=24" in answer["message"], answer
    assert r.handle({**request(kernel), "dtype": "f16"})["outcome"] == "invalid"


@cpu_only
def test_sweep_on_a_cpu_host_is_refused(tmp_path: Path) -> None:
    """blocktune sweep of a Pallas kernel through a real daemon on this host: every config the
    restrictions let through reaches the runner and comes back invalid with the reason; nothing
    is tuned, so lookups answer the spec's default."""
    old = os.environ["PATH"]
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + old  # the runner's python3
    try:
        d = start_daemon(tmp_path, "pallas_runner", "--kernel-dir", str(EXAMPLE), "--min-repetition-ms", "1",
                         "--repetitions", "2")
    finally:
        os.environ["PATH"] = old
    try:
        res = subprocess.run([str(BUILD / "client" / "blocktune"), "sweep", "pallas_flash_attention", "--server", d.url,
                              "--token", d.token, "--shape", "batch=1,heads=2,seq=64,head_dim=32", "--dtype", "bf16",
                              "--strategy", "random", "--budget", "6", "--json"],
                             capture_output=True, text=True, timeout=300)
        c = Client(d.url, token=d.token)
        [listed] = list(c.sweeps())
        sweep = c.sweep(listed["id"])
        assert sweep["status"] in ("done", "failed"), (sweep, res.stdout, res.stderr)
        assert set(sweep["progress"]["by_outcome"]) == {"invalid"}, sweep
        ms = list(c.measurements(sweep["id"]))
        assert ms and all(m["outcome"] == "invalid" for m in ms), ms
        assert any("interpret mode" in (m.get("detail") or "") for m in ms), ms
        looked = c.lookup("pallas_flash_attention", dtype="bf16", batch=1, heads=2, seq=64, head_dim=32)
        assert looked.source == "default" and looked.config == SPECS["pallas_flash_attention"]["default"]
    finally:
        stop_daemon(d)
