#!/usr/bin/env python3
"""Benchmark (not a test): what blocktune.runner adds per config beyond the timed repetitions.
A trivial kernel (a counter increment and one small NumPy add, ~1 us) is served for N configs
through Runner.serve with real JSON request lines and answers (everything but the pipe), and
the kernel counts its calls, so the timed repetitions' share of each config's wall time is
known exactly: sum(times_ms) * iterations, where iterations = (calls - 2) / repetitions (one
checked call and one calibration call precede them). Overhead per config = wall - that share;
it includes the checked call, the calibration call, the check, JSON in and out.

  build/pyenv/bin/python python/bench/runner_overhead.py [--configs 200] [--min-time-ms 2] [--repetitions 3]
"""
from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python" / "src"))
from blocktune import runner  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--configs", type=int, default=200)
    ap.add_argument("--min-time-ms", type=float, default=2.0)
    ap.add_argument("--repetitions", type=int, default=3)
    args = ap.parse_args()
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
    overheads.sort()
    print(f"{args.configs} configs, min_time_ms {args.min_time_ms}, repetitions {args.repetitions}")
    print(f"overhead per config beyond the timed repetitions: median {statistics.median(overheads) * 1e3:.3f} ms, "
          f"p90 {overheads[int(0.9 * len(overheads))] * 1e3:.3f} ms, max {overheads[-1] * 1e3:.3f} ms")


if __name__ == "__main__":
    main()
