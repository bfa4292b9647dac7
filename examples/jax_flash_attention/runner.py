#!/usr/bin/env python3
"""blocktune runner for jax_flash_attention (causal self-attention), on blocktune.runner (docs/python.md).

build() compiles flash_attention for the config's static block sizes (jit lower + compile, so
an XLA error is compile_failed, not a failure of the first call); the library checks the
compiled program's output against the float64 reference, then times it, waiting for JAX's
asynchronous result on every call (jax.block_until_ready). The spec runs `python3` from PATH:
start blocktuned (or `blocktune sweep --local`) with a python3 that has jax first in PATH, e.g.
build/pyenv/bin (deploy/python-env.sh).
"""
import os
import sys

import jax

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flash_attention as fa  # noqa: E402

from blocktune import runner  # noqa: E402


def make_inputs(req):
    if req.dtype != "f32":
        raise runner.Invalid("only f32")
    s = req.shape
    return fa.make_inputs(s["heads"], s["seq"], s["head_dim"])


def reference(req, q, k, v):
    return fa.reference(q, k, v, causal=True)


def build(req):
    s, c = req.shape, req.config
    if s["seq"] % c["block_q"] or s["seq"] % c["block_kv"]:
        raise runner.Invalid("seq is not a multiple of the block sizes")
    spec = jax.ShapeDtypeStruct((s["heads"], s["seq"], s["head_dim"]), jax.numpy.float32)
    return fa.flash_attention.lower(spec, spec, spec, block_q=c["block_q"], block_kv=c["block_kv"],
                                    causal=True).compile()


if __name__ == "__main__":
    runner.serve(build, make_inputs, reference, check=runner.close_check(rtol=1e-3, atol=1e-4),
                 block=jax.block_until_ready)
