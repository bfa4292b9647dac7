#!/usr/bin/python3
"""blocktune runner for numpy_matmul (docs/external-kernels.md).

Reads one JSON request per line on stdin, answers one JSON line per request on file
descriptor 3: {"times_ms": [...]} after checking the result against A @ B, or
{"outcome": ..., "message": ...}. Anything printed to stdout/stderr lands in blocktune's
capped runner log. Runs as long as stdin is open (runner.persistent: true).
"""
import json
import os
import sys
import time

import numpy as np

answers = os.fdopen(3, "w", buffering=1)
problems = {}


def problem(m, n, k):
    key = (m, n, k)
    if key not in problems:
        rng = np.random.default_rng(12345)
        a = rng.standard_normal((m, k), dtype=np.float32)
        b = rng.standard_normal((k, n), dtype=np.float32)
        problems.clear()  # keep one problem's buffers at a time
        problems[key] = (a, b, a @ b, np.empty((m, n), dtype=np.float32))
    return problems[key]


def blocked(a, b, c, bm, bn, bk, k_outer):
    m, k = a.shape
    n = b.shape[1]
    c.fill(0)
    if k_outer:
        for p in range(0, k, bk):
            for i in range(0, m, bm):
                for j in range(0, n, bn):
                    c[i:i + bm, j:j + bn] += a[i:i + bm, p:p + bk] @ b[p:p + bk, j:j + bn]
    else:
        for i in range(0, m, bm):
            for j in range(0, n, bn):
                acc = c[i:i + bm, j:j + bn]
                for p in range(0, k, bk):
                    acc += a[i:i + bm, p:p + bk] @ b[p:p + bk, j:j + bn]


def answer(obj):
    answers.write(json.dumps(obj) + "\n")


for line in sys.stdin:
    req = json.loads(line)
    shape, cfg = req["shape"], req["config"]
    m, n, k = shape["m"], shape["n"], shape["k"]
    bm, bn, bk, ko = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["k_outer"]
    if req["dtype"] != "f32":
        answer({"outcome": "invalid", "message": "only f32"})
        continue
    a, b, ref, c = problem(m, n, k)
    blocked(a, b, c, bm, bn, bk, ko)
    # Correctness is the runner's to check: f32 sums of k products in another order.
    if not np.allclose(c, ref, rtol=1e-4, atol=1e-3 * np.sqrt(k)):
        answer({"outcome": "wrong_result", "message": "max abs err %g" % float(np.max(np.abs(c - ref)))})
        continue
    # Calibrate iterations so one repetition lasts at least min_time_ms.
    t0 = time.perf_counter()
    blocked(a, b, c, bm, bn, bk, ko)
    once = max(time.perf_counter() - t0, 1e-7)
    iters = max(1, int(req["min_time_ms"] / 1000.0 / once + 0.999))
    times = []
    for _ in range(req["repetitions"]):
        t0 = time.perf_counter()
        for _ in range(iters):
            blocked(a, b, c, bm, bn, bk, ko)
        times.append((time.perf_counter() - t0) * 1000.0 / iters)
    answer({"times_ms": times})
