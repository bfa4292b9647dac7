#!/usr/bin/env python3
"""Benchmark (not a test): what blocktune.runner adds per config beyond the timed repetitions.
A trivial kernel (a counter increment and one small NumPy add, ~1 us) is served for N configs
through Runner.serve with real JSON request lines and answers (everything but the pipe), and
the kernel counts its calls, so the timed repetitions' share of each config's wall time is
known exactly: sum(times_ms) * iterations, where iterations = (calls - 2) / repetitions (one
checked call and one calibration call precede them). Overhead per config = wall - that share;
it includes the checked call, the calibration call, the check, JSON in and out.

With --pipe the same runner is a child process spoken to as blocktune does (requests on its
stdin, answers on its file descriptor 3; the child reports each config's call count on
stderr), and the wall time is from writing the request to reading the answer: the pipes, the
process wake-ups and the child's reads and writes are in the overhead too. A second child, the
same runner written by hand without the library (the NumPy example before it), is timed config
by config in turn with it, so what the library adds is the difference of the two.

  build/pyenv/bin/python python/bench/runner_overhead.py [--configs 200] [--min-time-ms 2] [--repetitions 3] [--pipe]
"""
from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "src"))
from blocktune import runner  # noqa: E402


def child() -> None:
    """The runner of --pipe: serves stdin, answers on fd 3, and writes each config's kernel
    call count to stderr after its answer."""
    calls = [0]

    def build(req):  # type: ignore[no-untyped-def]
        def kernel(x):  # type: ignore[no-untyped-def]
            calls[0] += 1
            return x + 1.0
        return kernel

    r = runner.Runner(build, lambda req: (np.zeros(64, np.float32),), lambda req, x: x + 1.0)
    answers = os.fdopen(3, "w", buffering=1)
    for line in sys.stdin:
        calls[0] = 0
        r.serve([line], answers)
        sys.stderr.write(f"{calls[0]}\n")
        sys.stderr.flush()


def baseline_child() -> None:
    """The same runner written by hand, as examples/numpy_matmul/runner.py was before the
    library: one checked call, one calibration call, the repetitions; no library."""
    import math

    answers = os.fdopen(3, "w", buffering=1)
    x = np.zeros(64, np.float32)
    calls = [0]

    def kernel(x):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return x + 1.0

    for line in sys.stdin:
        req = json.loads(line)
        calls[0] = 0
        if not np.allclose(kernel(x), x + 1.0):
            answers.write(json.dumps({"outcome": "wrong_result", "message": "differs"}) + "\n")
            continue
        t0 = time.perf_counter()
        kernel(x)
        once = max(time.perf_counter() - t0, 1e-7)
        iters = max(1, math.ceil(req["min_time_ms"] / 1000.0 / once))
        times = []
        for _ in range(req["repetitions"]):
            t0 = time.perf_counter()
            for _ in range(iters):
                kernel(x)
            times.append((time.perf_counter() - t0) * 1000.0 / iters)
        answers.write(json.dumps({"times_ms": times}) + "\n")
        sys.stderr.write(f"{calls[0]}\n")
        sys.stderr.flush()


def request(i: int, args: argparse.Namespace) -> str:
    return json.dumps({"kernel": "trivial", "dtype": "f32", "shape": {"n": 64}, "config": {"x": i % 7},
                       "min_time_ms": args.min_time_ms, "repetitions": args.repetitions, "threads": 1}) + "\n"


class Child:
    """A runner process spoken to as blocktune does: requests on stdin, answers on fd 3."""

    def __init__(self, mode: str) -> None:
        read_fd, write_fd = os.pipe()
        self.proc = subprocess.Popen(["/bin/bash", "-c", f'exec "$0" "$1" {mode} 3>&{write_fd}', sys.executable,
                                      __file__], stdin=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(write_fd,))
        os.close(write_fd)
        self.answers = os.fdopen(read_fd)

    def overhead(self, line: str, args: argparse.Namespace) -> float:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        t0 = time.perf_counter()
        self.proc.stdin.write(line.encode())
        self.proc.stdin.flush()
        times = json.loads(self.answers.readline())["times_ms"]
        wall = time.perf_counter() - t0
        calls = int(self.proc.stderr.readline())
        return wall - sum(times) * (calls - 2) / args.repetitions / 1000.0

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def pipe_overheads(args: argparse.Namespace) -> tuple[list[float], list[float]]:
    """Library runner and hand-written runner, config by config in turn (load hits both)."""
    lib, base = Child("--child"), Child("--baseline-child")
    out_lib, out_base = [], []
    for i in range(args.configs + 1):
        line = request(i, args)
        a, b = lib.overhead(line, args), base.overhead(line, args)
        if i:  # the first config makes the inputs and imports: start-up, not per config
            out_lib.append(a)
            out_base.append(b)
    lib.close()
    base.close()
    return out_lib, out_base


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=200)
    ap.add_argument("--min-time-ms", type=float, default=2.0)
    ap.add_argument("--repetitions", type=int, default=3)
    ap.add_argument("--pipe", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--baseline-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child()
    if args.baseline_child:
        return baseline_child()
    if args.pipe:
        lib, base = pipe_overheads(args)
        report(lib, args, "blocktune.runner in a child process, through pipes")
        report(base, args, "the same runner written by hand (no library), interleaved with it")
        print(f"library minus hand-written, medians: "
              f"{(statistics.median(lib) - statistics.median(base)) * 1e3:.3f} ms per config")
        return
    calls = [0]

    def build(req):  # type: ignore[no-untyped-def]
        def kernel(x):  # type: ignore[no-untyped-def]
            calls[0] += 1
            return x + 1.0
        return kernel

    r = runner.Runner(build, lambda req: (np.zeros(64, np.float32),), lambda req, x: x + 1.0)
    overheads = []
    for i in range(args.configs):
        line = json.dumps({"kernel": "trivial", "dtype": "f32", "shape": {"n": 64}, "config": {"x": i % 7},
                           "min_time_ms": args.min_time_ms, "repetitions": args.repetitions, "threads": 1})
        out = io.StringIO()
        calls[0] = 0
        t0 = time.perf_counter()
        r.serve([line + "\n"], out)
        wall = time.perf_counter() - t0
        times = json.loads(out.getvalue())["times_ms"]
        iters = (calls[0] - 2) / args.repetitions
        timed = sum(times) * iters / 1000.0
        overheads.append(wall - timed)
    report(overheads, args, "in process")


def report(overheads: list[float], args: argparse.Namespace, how: str) -> None:
    overheads.sort()
    print(f"{args.configs} configs, min_time_ms {args.min_time_ms}, repetitions {args.repetitions}, {how}")
    print(f"overhead per config beyond the timed repetitions: median {statistics.median(overheads) * 1e3:.3f} ms, "
          f"p90 {overheads[int(0.9 * len(overheads))] * 1e3:.3f} ms, max {overheads[-1] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
