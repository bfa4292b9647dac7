"""The Pallas kernels of examples/pallas in interpret mode on the CPU, in the seeds' recipe: values
against the plain JAX reference (causal and not, f32 and bf16, ragged groups with an empty one,
a mixed prefill/decode batch with grouped query heads), gradients (jax.grad of the Pallas
backward against jax.grad of the reference; ragged paged attention is forward only), the
BlockSizes checks, and that every kernel, forward and backward, lowers to Triton for a GPU
(Pallas' Triton lowering runs without one: jit(...).trace(...).lower(lowering_platforms=("cuda",))).
Shapes are small: interpret mode runs each grid step as its own loop iteration on the CPU."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from conftest import SOURCE

sys.path.insert(0, str(SOURCE / "examples" / "pallas"))
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import flash_attention as fa  # noqa: E402
import grouped_matmul as gm  # noqa: E402
import problems  # noqa: E402
import ragged_paged_attention as rpa  # noqa: E402


def err(a: Any, b: Any) -> float:
    return float(jnp.max(jnp.abs(jnp.asarray(a, jnp.float32) - jnp.asarray(b, jnp.float32))))


def normal(seed: int, shape: tuple[int, ...], dtype: Any = jnp.float32) -> jax.Array:
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape, dtype=np.float32), dtype)


def triton_calls(fn: Any, *specs: Any) -> int:
    """The Pallas calls of fn lowered for an NVIDIA GPU (Triton IR in custom calls)."""
    text = jax.jit(fn).trace(*specs).lower(lowering_platforms=("cuda",)).as_text()
    return int(text.count("__gpu$xla.gpu.triton"))


FA_SMALL = fa.BlockSizes(block_q=32, block_k=16, block_q_dkv=16, block_kv_dkv=32, block_q_dq=32, block_kv_dq=16)


@pytest.mark.parametrize("causal", [False, True])
def test_flash_attention_values_and_gradients(causal: bool) -> None:
    q, k, v = (normal(i, (1, 2, 64, 16)) for i in range(3))
    out = jax.jit(lambda q, k, v: fa.flash_attention(q, k, v, causal=causal, block_sizes=FA_SMALL, interpret=True))
    assert err(out(q, k, v), fa.reference(q, k, v, causal=causal)) < 2e-6
    w = normal(9, (1, 2, 64, 16))  # a loss that weighs every output differently

    def loss(f: Any) -> Any:
        return jax.jit(jax.grad(lambda q, k, v: jnp.sum(f(q, k, v) * w), argnums=(0, 1, 2)))

    got = loss(lambda q, k, v: fa.flash_attention(q, k, v, causal=causal, block_sizes=FA_SMALL, interpret=True))(q, k, v)
    want = loss(lambda q, k, v: fa.reference(q, k, v, causal=causal))(q, k, v)
    for name, g, r in zip("qkv", got, want):
        assert err(g, r) < 1e-5, (name, err(g, r))


def test_flash_attention_bf16_and_cross_attention() -> None:
    q = normal(1, (2, 1, 32, 32), jnp.bfloat16)
    k, v = normal(2, (2, 1, 64, 32), jnp.bfloat16), normal(3, (2, 1, 64, 32), jnp.bfloat16)
    bs = fa.BlockSizes(block_q=16, block_k=32)
    out = jax.jit(lambda q, k, v: fa.flash_attention(q, k, v, block_sizes=bs, interpret=True))(q, k, v)
    assert out.dtype == jnp.bfloat16
    assert err(out, fa.reference(q, k, v)) < 2e-2


def test_flash_attention_block_sizes_are_checked() -> None:
    q = jnp.zeros((1, 1, 64, 16))
    with pytest.raises(ValueError, match="block_q=48: must be a power of two"):
        fa.flash_attention(q, q, q, block_sizes=fa.BlockSizes(block_q=48), interpret=True)
    with pytest.raises(ValueError, match="block_k=128 does not divide seq_k=64"):
        fa.flash_attention(q, q, q, block_sizes=fa.BlockSizes(block_k=128), interpret=True)
    with pytest.raises(ValueError, match="num_warps=3"):
        fa.flash_attention(q, q, q, block_sizes=fa.BlockSizes(num_warps=3), interpret=True)
    with pytest.raises(ValueError, match="causal attention needs seq_q == seq_k"):
        fa.flash_attention(q, jnp.zeros((1, 1, 32, 16)), jnp.zeros((1, 1, 32, 16)), causal=True, interpret=True)


def test_grouped_matmul_plan() -> None:
    # m 64 in tiles of 16; groups [10, 0, 31, 17] (58 rows): group 0 in tile 0; group 2 rows
    # 10..40 in tiles 0, 1, 2; group 3 rows 41..57 in tiles 2, 3. Six visits of 4 + 4 - 1.
    gid, tile, valid, starts, ends = (np.asarray(a) for a in gm.make_plan(jnp.array([10, 0, 31, 17]), 64, 16))
    assert list(zip(gid[valid == 1], tile[valid == 1])) == [(0, 0), (2, 0), (2, 1), (2, 2), (3, 2), (3, 3)]
    assert len(valid) == 7 and valid.sum() == 6
    assert list(starts) == [0, 10, 10, 41] and list(ends) == [10, 10, 41, 58]


GROUPS = jnp.array([10, 0, 31, 17], jnp.int32)  # an empty group, a tile shared by three, 6 rows of none
GM_SMALL = gm.BlockSizes(tile_m=16, tile_k=16, tile_n=16)


def test_grouped_matmul_values_and_gradients() -> None:
    lhs, rhs = normal(1, (64, 32)), normal(2, (4, 32, 32))
    f = jax.jit(lambda a, b, s: gm.gmm(a, b, s, block_sizes=GM_SMALL, interpret=True))
    out = f(lhs, rhs, GROUPS)
    want = gm.reference(lhs, rhs, GROUPS)
    assert err(out, want) < 1e-4
    assert err(want, jax.lax.ragged_dot(lhs, rhs, GROUPS)) < 1e-4  # the reference against JAX's own
    assert float(jnp.max(jnp.abs(out[58:]))) == 0.0
    w = normal(3, (64, 32))

    def grads(fn: Any) -> Any:
        return jax.jit(jax.grad(lambda a, b: jnp.sum(fn(a, b) * w), argnums=(0, 1)))(lhs, rhs)

    got = grads(lambda a, b: gm.gmm(a, b, GROUPS, block_sizes=GM_SMALL, interpret=True))
    ref = grads(lambda a, b: gm.reference(a, b, GROUPS))
    assert err(got[0], ref[0]) < 1e-4 and err(got[1], ref[1]) < 1e-4
    assert float(jnp.max(jnp.abs(got[1][1]))) == 0.0  # the empty group's rhs gets no gradient


def test_grouped_matmul_bf16_and_checks() -> None:
    lhs, rhs = normal(4, (32, 64), jnp.bfloat16), normal(5, (3, 64, 16), jnp.bfloat16)
    sizes = jnp.array([5, 20, 7], jnp.int32)
    bs = gm.BlockSizes(tile_m=16, tile_k=32, tile_n=16)
    out = jax.jit(lambda a, b, s: gm.gmm(a, b, s, block_sizes=bs, interpret=True))(lhs, rhs, sizes)
    assert out.dtype == jnp.bfloat16 and err(out, gm.reference(lhs, rhs, sizes)) < 0.1  # |out| ~ 8: bf16 rounding
    with pytest.raises(ValueError, match="tile_n=32 does not divide n=16"):
        gm.gmm(lhs, rhs, sizes, block_sizes=gm.BlockSizes(tile_m=16, tile_k=16, tile_n=32), interpret=True)
    with pytest.raises(ValueError, match="group_sizes"):
        gm.gmm(lhs, rhs, jnp.array([1.0, 2.0, 3.0]), interpret=True)


def rpa_inputs(dtype: Any = jnp.float32, q_heads: int = 4) -> tuple[jax.Array, ...]:
    b = problems.serving_batch(tokens=12, page_size=16, pages_per_seq=4)  # a prefill of 6, 6 decodes
    pages = (7 * 4, 16, 2, 16)
    return (normal(1, (12, q_heads, 16), dtype), normal(2, pages, dtype), normal(3, pages, dtype),
            *(jnp.asarray(b[n]) for n in ("kv_lens", "page_indices", "cu_q_lens", "num_seqs")))


@pytest.mark.parametrize("bs", [rpa.BlockSizes(16, 1), rpa.BlockSizes(16, 3), rpa.BlockSizes(32, 8)],
                         ids=["q16_p1", "q16_p3", "q32_p8"])
def test_ragged_paged_attention_values(bs: rpa.BlockSizes) -> None:
    args = rpa_inputs()
    out = jax.jit(lambda *a: rpa.ragged_paged_attention(*a, block_sizes=bs, interpret=True))(*args)
    assert err(out, rpa.reference(*args)) < 2e-6


def test_ragged_paged_attention_partial_batch_bf16() -> None:
    q, kp, vp, kv_lens, pages, cu, _ = rpa_inputs(jnp.bfloat16, q_heads=2)
    num_seqs = jnp.array([3], jnp.int32)  # the prefill and two decodes; tokens past cu[3] get zeros
    args = (q, kp, vp, kv_lens, pages, cu, num_seqs)
    out = jax.jit(lambda *a: rpa.ragged_paged_attention(*a, interpret=True))(*args)
    want = rpa.reference(*args)
    assert err(out, want) < 2e-2
    assert float(jnp.max(jnp.abs(out[int(cu[3]):].astype(jnp.float32)))) == 0.0


def test_every_kernel_lowers_to_triton() -> None:
    s = jax.ShapeDtypeStruct((2, 4, 256, 64), jnp.bfloat16)
    assert triton_calls(lambda q, k, v: fa.flash_attention(q, k, v, causal=True, interpret=False), s, s, s) == 1
    grad = jax.grad(lambda q, k, v: jnp.sum(fa.flash_attention(q, k, v, interpret=False).astype(jnp.float32)),
                    argnums=(0, 1, 2))
    assert triton_calls(grad, s, s, s) == 3  # forward, dK/dV, dQ
    mk, gkn = jax.ShapeDtypeStruct((512, 256), jnp.bfloat16), jax.ShapeDtypeStruct((8, 256, 128), jnp.bfloat16)
    sizes = jax.ShapeDtypeStruct((8,), jnp.int32)
    assert triton_calls(lambda a, b, c: gm.gmm(a, b, c, interpret=False), mk, gkn, sizes) == 1
    ggrad = jax.grad(lambda a, b, c: jnp.sum(gm.gmm(a, b, c, interpret=False).astype(jnp.float32)), argnums=(0, 1))
    assert triton_calls(ggrad, mk, gkn, sizes) == 3  # gmm, gmm of the transposed rhs, tgmm
    dims = {"tokens": 64, "q_heads": 8, "kv_heads": 2, "head_dim": 128, "page_size": 16, "pages_per_seq": 32}
    specs = problems.RaggedPagedAttention().specs(dims, jnp.bfloat16)
    assert triton_calls(lambda *a: rpa.ragged_paged_attention(*a, interpret=False), *specs) == 1
