"""blocktune.runner: the timing loop (iterations from one timed call, each repetition at least
min_time_ms, mean per call), the outcome of every failure, inputs and reference made once per
problem, and the protocol over stdin and file descriptor 3 with the NumPy example's runner."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from blocktune import runner
from conftest import SOURCE


def request(**over):  # type: ignore[no-untyped-def]
    r = {"kernel": "k", "dtype": "f32", "shape": {"n": 4}, "config": {"x": 1}, "min_time_ms": 5.0,
         "repetitions": 3, "threads": 1}
    r.update(over)
    return r


class FakeClock:
    """Time advances only when the kernel runs: 1 ms per call."""

    def __init__(self) -> None:
        self.now = 0.0
        self.calls = 0

    def __call__(self) -> float:
        return self.now

    def kernel(self, x):  # type: ignore[no-untyped-def]
        self.now += 0.001
        self.calls += 1
        return x * 2


def test_timing_loop_honours_min_time_and_repetitions():
    clock = FakeClock()
    made = []
    r = runner.Runner(lambda req: clock.kernel, lambda req: made.append(1) or (np.arange(4.0),),
                      lambda req, x: x * 2, clock=clock)
    a = r.handle(request())
    # The checked call of 1 ms picks the count: 6 iterations (3% past 5 ms) per repetition, each
    # reported as 1 ms per call; no call beyond the checked one is spent outside the repetitions.
    assert a == {"times_ms": pytest.approx([1.0, 1.0, 1.0]), "timed_ms": pytest.approx(18.0),
                 "overhead_ms": pytest.approx(1.0)}
    assert clock.calls == 1 + 3 * 6  # checked call, 3 x 6 timed
    b = r.handle(request(config={"x": 2}, repetitions=2))
    assert len(b["times_ms"]) == 2
    assert len(made) == 1  # same problem: inputs and reference kept
    r.handle(request(shape={"n": 5}))
    assert len(made) == 2


def test_repetitions_land_just_past_the_minimum_after_a_slow_first_call():
    # A 5 ms first call (a compile) and 0.37 ms calls after it: the first batch (2 calls, from the
    # first call's time) falls short and is overhead; each kept repetition is within 10% of 5 ms.
    clock = FakeClock()

    def kernel(x):  # type: ignore[no-untyped-def]
        clock.now += 0.005 if clock.calls == 0 else 0.00037
        clock.calls += 1
        return x * 2

    r = runner.Runner(lambda req: kernel, lambda req: (np.arange(4.0),), lambda req, x: x * 2, clock=clock)
    a = r.handle(request())
    assert a["times_ms"] == pytest.approx([0.37, 0.37, 0.37])
    per_rep = a["timed_ms"] / 3
    assert 5.0 <= per_rep <= 5.5
    assert a["overhead_ms"] == pytest.approx(5.0 + 2 * 0.37)


@pytest.mark.parametrize("build, kernel_error, outcome", [
    ("invalid", None, "invalid"),
    ("raise", None, "compile_failed"),
    ("ok", RuntimeError("device lost"), "runtime_failed"),
    ("ok", runner.CompileFailed("ptxas"), "compile_failed"),
])
def test_failures_map_to_outcomes(build, kernel_error, outcome):
    def b(req):  # type: ignore[no-untyped-def]
        if build == "invalid":
            raise runner.Invalid("block too big")
        if build == "raise":
            raise SyntaxError("bad kernel source")

        def k(x):  # type: ignore[no-untyped-def]
            raise kernel_error
        return k

    a = runner.Runner(b, lambda req: (np.ones(3),), lambda req, x: x).handle(request())
    assert a["outcome"] == outcome and a["message"]


def test_wrong_result_and_nan():
    ref = lambda req, x: x  # noqa: E731
    a = runner.Runner(lambda req: (lambda x: x + 1e-2), lambda req: (np.ones(8, np.float32),), ref).handle(request())
    assert a["outcome"] == "wrong_result" and "8 of 8" in a["message"]
    a = runner.Runner(lambda req: (lambda x: x * np.nan), lambda req: (np.ones(8),), ref).handle(request())
    assert a["outcome"] == "wrong_result"
    # Within the tolerance passes; tuples of outputs are compared element by element.
    a = runner.Runner(lambda req: (lambda x: (x + 1e-6, x)), lambda req: (np.ones(8),),
                      lambda req, x: (x, x)).handle(request(min_time_ms=0.01))
    assert len(a["times_ms"]) == 3
    a = runner.Runner(lambda req: (lambda x: (x, x)), lambda req: (np.ones(8),),
                      lambda req, x: (x, x + 1)).handle(request(min_time_ms=0.01))
    assert a["outcome"] == "wrong_result" and a["message"].startswith("output[1]")


def test_reference_failure_is_runtime_failed():
    a = runner.Runner(lambda req: (lambda x: x), lambda req: (1.0,),
                      lambda req, x: 1 / 0).handle(request())
    assert a["outcome"] == "runtime_failed" and "ZeroDivisionError" in a["message"]


def test_numpy_example_over_stdin_and_fd3():
    """The protocol as blocktune speaks it: JSON lines in on stdin, answers on fd 3."""
    folder = SOURCE / "examples" / "numpy_matmul"
    read_fd, write_fd = os.pipe()
    # fd 3 as blocktune sets it up (external/runner.cc), through bash (dash takes single-digit fds only).
    proc = subprocess.Popen(["/bin/bash", "-c", f'exec "$0" runner.py 3>&{write_fd}', sys.executable], cwd=folder,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, pass_fds=(write_fd,))
    os.close(write_fd)
    reqs = [request(kernel="numpy_matmul", shape={"m": 64, "n": 64, "k": 64}, min_time_ms=1.0,
                    config={"block_m": 16, "block_n": 16, "block_k": 32, "k_outer": k}) for k in (0, 1)]
    reqs.append(request(kernel="numpy_matmul", dtype="bf16", shape={"m": 64, "n": 64, "k": 64},
                        config={"block_m": 16, "block_n": 16, "block_k": 32, "k_outer": 0}))
    assert proc.stdin is not None
    proc.stdin.write("".join(json.dumps(r) + "\n" for r in reqs).encode())
    proc.stdin.close()
    with os.fdopen(read_fd) as answers:
        got = [json.loads(line) for line in answers]
    assert proc.wait(timeout=60) == 0
    assert [len(a.get("times_ms", [])) for a in got[:2]] == [3, 3]
    assert all(t > 0 for a in got[:2] for t in a["times_ms"])
    assert {k: got[2][k] for k in ("outcome", "message")} == {"outcome": "invalid", "message": "only f32"}
    assert got[2]["overhead_ms"] >= 0
