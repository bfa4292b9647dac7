#!/usr/bin/env python3
"""blocktune runner for the Pallas kernels of this folder (pallas_flash_attention,
pallas_grouped_matmul, pallas_ragged_paged_attention; one spec each, all naming this file), on
blocktune.runner (docs/python.md).

On a GPU, build() compiles the kernel for the config (block sizes and Triton's num_warps /
num_stages) with jit(...).lower(...).compile(), so a Triton or XLA error is compile_failed; the
library checks the output against the plain JAX reference, then times it, waiting for JAX on
every call. The runner announces the GPU (blocktune.device_identity(): gpu.nvidia.sm90.h200)
before its first answer, so blocktune files the times under the GPU's key.

Without a GPU every config is answered `invalid`: Pallas then runs only in interpret mode (the
kernel body executed op by op on the CPU), right for value and gradient tests
(python/tests/test_pallas_*.py) and meaningless as a time, so no table is made from it. TPUs
are refused the same way: these kernels are written for the Triton backend.

The spec runs `python3` from PATH: start blocktuned with a python3 that has jax first in PATH.
"""

from __future__ import annotations

import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import jax  # noqa: E402

import pallas_common as pc  # noqa: E402
import problems  # noqa: E402

try:
    from blocktune import runner
except ImportError:  # run from the source tree without the package installed
    sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "src"))
    from blocktune import runner

NOT_TIMED = ("Pallas runs only in interpret mode on a {platform} (JAX found no GPU): interpret mode executes "
             "the kernel body op by op on the CPU, so its time says nothing about the kernel on a GPU; "
             "not timed, so that no table is made from it")
TPU = "these Pallas kernels are written for the Triton backend (GPU); not timed on a TPU"


def make_runner(*, interpret: bool = False, device: Any = None) -> runner.Runner:
    """The runner; interpret=True (tests only) runs the kernels in interpret mode on the CPU
    instead of refusing them, to exercise build, check and the answers without a GPU."""

    def problem(req: runner.Request) -> Any:
        p = problems.PROBLEMS.get(req.kernel)
        if p is None:
            raise runner.Invalid(f"unknown kernel {req.kernel!r} (this runner has {sorted(problems.PROBLEMS)})")
        if req.dtype not in problems.DTYPES:
            raise runner.Invalid(f"dtype {req.dtype}: these kernels run f32 and bf16")
        return p

    def build(req: runner.Request) -> Any:
        p = problem(req)
        where = pc.platform()
        if where == "tpu" and not interpret:
            raise runner.Invalid(TPU)
        if where != "gpu" and not interpret:
            raise runner.Invalid(NOT_TIMED.format(platform=where.upper()))
        dims, dtype, config = dict(req.shape), problems.dtype_of(req.dtype), dict(req.config)
        try:
            p.check(config, dims)
        except (KeyError, ValueError) as e:  # a config this problem cannot use
            raise runner.Invalid(f"{type(e).__name__}: {e}") from e
        return jax.jit(p.function(config, interpret)).lower(*p.specs(dims, dtype)).compile()

    def make_inputs(req: runner.Request) -> tuple[Any, ...]:
        return problem(req).inputs(dict(req.shape), problems.dtype_of(req.dtype))

    def reference(req: runner.Request, *inputs: Any) -> Any:
        return problem(req).reference(*inputs)

    def check(out: Any, ref: Any, req: runner.Request) -> None:
        err = problems.max_error(out, ref)
        tol = problems.TOLERANCE[req.dtype]
        if not err <= tol:  # NaN fails
            raise runner.WrongResult(f"max |out - ref| is {err:.3g} of the output's largest magnitude (allowed {tol:g})")

    return runner.Runner(build, make_inputs, reference, check=check, block=jax.block_until_ready, device=device)


if __name__ == "__main__":
    make_runner().serve()
