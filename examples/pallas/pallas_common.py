"""What the three Pallas kernels of this folder share: where they run (Triton on a GPU, the
interpreter on a CPU), the Triton compiler parameters, and block-size checks that fail with a
message naming the field rather than deep inside the lowering.

The kernels are written for Pallas' Triton backend (one program per output block, a fori_loop
over the reduction inside it), which is also what `interpret=True` runs on the CPU for value and
gradient tests. Triton needs every block dimension to be a power of two, and its dot at least 16
in each dimension; the checks below apply those rules in interpret mode too, so a test on the CPU
refuses what the GPU would refuse.
"""

from __future__ import annotations

import jax
from jax.experimental.pallas import triton as plgpu


def platform() -> str:
    """The platform of JAX's default device: "gpu", "tpu" or "cpu"."""
    p = jax.devices()[0].platform
    return "gpu" if p in ("gpu", "cuda", "rocm") else p


def resolve_interpret(interpret: bool | None) -> bool:
    """interpret=None means: interpret when JAX's default device is not a GPU."""
    return platform() != "gpu" if interpret is None else bool(interpret)


def compiler_params(num_warps: int, num_stages: int, interpret: bool) -> plgpu.CompilerParams | None:
    """Triton's launch parameters; none in interpret mode, where they mean nothing."""
    if interpret:
        return None
    return plgpu.CompilerParams(num_warps=num_warps, num_stages=num_stages)


def check_pow2(name: str, value: int, least: int = 16) -> None:
    """A Triton block dimension: a power of two, at least `least` (16 for a dot's operands)."""
    if not isinstance(value, int) or value < least or value & (value - 1):
        raise ValueError(f"{name}={value!r}: must be a power of two >= {least} (a Triton block dimension)")


def check_divides(name: str, block: int, dim_name: str, dim: int) -> None:
    if dim % block:
        raise ValueError(f"{name}={block} does not divide {dim_name}={dim}")


def check_launch(num_warps: int, num_stages: int) -> None:
    if num_warps not in (1, 2, 4, 8, 16):
        raise ValueError(f"num_warps={num_warps!r}: must be 1, 2, 4, 8 or 16")
    if not isinstance(num_stages, int) or not 1 <= num_stages <= 8:
        raise ValueError(f"num_stages={num_stages!r}: must be an integer in 1..8")
