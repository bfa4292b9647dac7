#!/usr/bin/python3
"""blocktune runner for numpy_matmul (docs/external-kernels.md), on blocktune.runner.

The library speaks the protocol (requests on stdin, answers on file descriptor 3), makes the
inputs and the reference A @ B once per problem, checks each config's output against it, times
it honouring min_time_ms and repetitions, and maps exceptions to outcomes. This file is the
kernel: build() returns the blocked product for one config. Runs as long as stdin is open
(runner.persistent: true).
"""
import os
import sys

import numpy as np

try:
    from blocktune import runner
except ImportError:  # run from the source tree by Debian's python3 (the spec names it)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "src"))
    from blocktune import runner


def make_inputs(req):
    if req.dtype != "f32":
        raise runner.Invalid("only f32")
    m, n, k = req.shape["m"], req.shape["n"], req.shape["k"]
    rng = np.random.default_rng(12345)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    return a, b, np.empty((m, n), dtype=np.float32)


def reference(req, a, b, c):
    return a @ b


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
    return c


def build(req):
    cfg = req.config
    bm, bn, bk, ko = cfg["block_m"], cfg["block_n"], cfg["block_k"], cfg["k_outer"]
    return lambda a, b, c: blocked(a, b, c, bm, bn, bk, ko)


def check(out, ref, req):
    # f32 sums of k products in another order than NumPy's own matmul.
    atol = 1e-3 * np.sqrt(req.shape["k"])
    if not np.allclose(out, ref, rtol=1e-4, atol=atol):
        raise runner.WrongResult("max abs err %g" % float(np.max(np.abs(out - ref))))


if __name__ == "__main__":
    runner.serve(build, make_inputs, reference, check=check)
