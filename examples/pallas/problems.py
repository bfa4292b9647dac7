"""The problems the runner times, one class per kernel: from a request's dims and dtype the
input shapes (so build() can compile before the inputs exist), the inputs themselves (seeded,
so every config of a bucket sees the same data), the reference's output, the kernel for a
config, and the tolerance of the check.

Inputs are made on JAX's default device. bf16 runs keep bf16 inputs and outputs (the reference
reads the same rounded inputs in f32). On a GPU an f32 dot runs as TF32 (JAX's default
precision there, in the kernels and in XLA alike), hence the f32 tolerance of 2e-3 of the
output's largest magnitude; bf16 outputs are rounded to 8 bits, hence 2e-2.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import flash_attention as fa
import grouped_matmul as gm
import ragged_paged_attention as rpa

DTYPES = {"f32": jnp.float32, "bf16": jnp.bfloat16}
TOLERANCE = {"f32": 2e-3, "bf16": 2e-2}


def dtype_of(name: str) -> Any:
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r}: these kernels run f32 and bf16")
    return DTYPES[name]


def spec(shape: tuple[int, ...], dtype: Any) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


class FlashAttention:
    """Causal self-attention, q, k, v [batch, heads, seq, head_dim]."""

    kernel = "pallas_flash_attention"
    causal = True

    @staticmethod
    def block_sizes(config: dict[str, int]) -> fa.BlockSizes:
        return fa.BlockSizes(block_q=config["block_q"], block_k=config["block_k"], num_warps=config["num_warps"],
                             num_stages=config["num_stages"])

    def check(self, config: dict[str, int], dims: dict[str, int]) -> None:
        self.block_sizes(config).check(dims["seq"], dims["seq"], dims["head_dim"])

    def specs(self, dims: dict[str, int], dtype: Any) -> list[jax.ShapeDtypeStruct]:
        shape = (dims["batch"], dims["heads"], dims["seq"], dims["head_dim"])
        return [spec(shape, dtype)] * 3

    def inputs(self, dims: dict[str, int], dtype: Any) -> tuple[jax.Array, ...]:
        rng = np.random.default_rng(1)
        shape = (dims["batch"], dims["heads"], dims["seq"], dims["head_dim"])
        return tuple(jnp.asarray(rng.standard_normal(shape, dtype=np.float32), dtype) for _ in range(3))

    def reference(self, *inputs: jax.Array) -> jax.Array:
        return jax.jit(lambda q, k, v: fa.reference(q, k, v, causal=self.causal))(*inputs)

    def function(self, config: dict[str, int], interpret: bool) -> Any:
        bs = self.block_sizes(config)
        return lambda q, k, v: fa.flash_attention(q, k, v, causal=self.causal, block_sizes=bs, interpret=interpret)


def group_sizes(m: int, groups: int) -> np.ndarray:
    """Ragged, seeded: every fourth group empty (an expert no token picked), the others uneven,
    summing to m."""
    rng = np.random.default_rng(2)
    weights = rng.uniform(0.2, 1.8, groups)
    weights[3::4] = 0.0
    sizes = np.floor(weights / weights.sum() * m).astype(np.int32)
    sizes[int(np.argmax(weights))] += m - int(sizes.sum())
    return sizes


class GroupedMatmul:
    """lhs [m, k] in `groups` ragged groups, rhs [groups, k, n]."""

    kernel = "pallas_grouped_matmul"

    @staticmethod
    def block_sizes(config: dict[str, int]) -> gm.BlockSizes:
        return gm.BlockSizes(tile_m=config["tile_m"], tile_k=config["tile_k"], tile_n=config["tile_n"],
                             num_warps=config["num_warps"], num_stages=config["num_stages"])

    def check(self, config: dict[str, int], dims: dict[str, int]) -> None:
        self.block_sizes(config).check(dims["m"], dims["k"], dims["n"])

    def specs(self, dims: dict[str, int], dtype: Any) -> list[jax.ShapeDtypeStruct]:
        m, k, n, g = dims["m"], dims["k"], dims["n"], dims["groups"]
        return [spec((m, k), dtype), spec((g, k, n), dtype), spec((g,), jnp.int32)]

    def inputs(self, dims: dict[str, int], dtype: Any) -> tuple[jax.Array, ...]:
        m, k, n, g = dims["m"], dims["k"], dims["n"], dims["groups"]
        rng = np.random.default_rng(3)
        lhs = jnp.asarray(rng.standard_normal((m, k), dtype=np.float32), dtype)
        rhs = jnp.asarray(rng.standard_normal((g, k, n), dtype=np.float32), dtype)
        return lhs, rhs, jnp.asarray(group_sizes(m, g))

    def reference(self, *inputs: jax.Array) -> jax.Array:
        return jax.jit(gm.reference)(*inputs)

    def function(self, config: dict[str, int], interpret: bool) -> Any:
        bs = self.block_sizes(config)
        return lambda lhs, rhs, sizes: gm.gmm(lhs, rhs, sizes, block_sizes=bs, interpret=interpret)


def serving_batch(tokens: int, page_size: int, pages_per_seq: int, seed: int = 4) -> dict[str, np.ndarray]:
    """A mixed serving batch of `tokens` new tokens: one prefill chunk of half of them, and one
    decode (one new token) per sequence for the other half; each sequence's cache holds a
    seeded number of tokens (at least its new ones, at most pages_per_seq pages), its pages a
    seeded permutation of the cache's."""
    rng = np.random.default_rng(seed)
    decodes = tokens // 2
    q_lens = np.array([tokens - decodes] + [1] * decodes, np.int32)
    seqs = len(q_lens)
    capacity = pages_per_seq * page_size
    kv_lens = np.array([rng.integers(q, capacity + 1) for q in q_lens], np.int32)
    cu = np.zeros(seqs + 1, np.int32)
    cu[1:] = np.cumsum(q_lens)
    pages = rng.permutation(seqs * pages_per_seq).astype(np.int32).reshape(seqs, pages_per_seq)
    return {"kv_lens": kv_lens, "page_indices": pages, "cu_q_lens": cu, "num_seqs": np.array([seqs], np.int32)}


class RaggedPagedAttention:
    """q [tokens, q_heads, head_dim] over a paged cache of k/v [pages, page_size, kv_heads, d]."""

    kernel = "pallas_ragged_paged_attention"

    @staticmethod
    def block_sizes(config: dict[str, int]) -> rpa.BlockSizes:
        return rpa.BlockSizes(num_queries_per_block=config["num_queries_per_block"],
                              num_kv_pages_per_block=config["num_kv_pages_per_block"],
                              num_warps=config["num_warps"], num_stages=config["num_stages"])

    def check(self, config: dict[str, int], dims: dict[str, int]) -> None:
        self.block_sizes(config).check(dims["page_size"], dims["pages_per_seq"], dims["head_dim"])
        if dims["q_heads"] % dims["kv_heads"]:
            raise ValueError(f"q_heads={dims['q_heads']} is not a multiple of kv_heads={dims['kv_heads']}")

    def specs(self, dims: dict[str, int], dtype: Any) -> list[jax.ShapeDtypeStruct]:
        t, ps, pps = dims["tokens"], dims["page_size"], dims["pages_per_seq"]
        seqs = 1 + t // 2  # the prefill chunk and one decode per other token (serving_batch)
        pages = (seqs * pps, ps, dims["kv_heads"], dims["head_dim"])
        return [spec((t, dims["q_heads"], dims["head_dim"]), dtype), spec(pages, dtype), spec(pages, dtype),
                spec((seqs,), jnp.int32), spec((seqs, pps), jnp.int32), spec((seqs + 1,), jnp.int32),
                spec((1,), jnp.int32)]

    def inputs(self, dims: dict[str, int], dtype: Any) -> tuple[jax.Array, ...]:
        s = self.specs(dims, dtype)
        rng = np.random.default_rng(5)
        q, kp, vp = (jnp.asarray(rng.standard_normal(x.shape, dtype=np.float32), dtype) for x in s[:3])
        b = serving_batch(dims["tokens"], dims["page_size"], dims["pages_per_seq"])
        return (q, kp, vp, *(jnp.asarray(b[n]) for n in ("kv_lens", "page_indices", "cu_q_lens", "num_seqs")))

    def reference(self, *inputs: jax.Array) -> jax.Array:
        return jax.jit(rpa.reference)(*inputs)

    def function(self, config: dict[str, int], interpret: bool) -> Any:
        bs = self.block_sizes(config)
        return lambda *a: rpa.ragged_paged_attention(*a, block_sizes=bs, interpret=interpret)


PROBLEMS = {p.kernel: p for p in (FlashAttention(), GroupedMatmul(), RaggedPagedAttention())}


def max_error(out: Any, ref: Any) -> float:
    """max |out - ref| / max(1, max |ref|), in f64."""
    a = np.asarray(jnp.asarray(out, jnp.float32), np.float64)
    b = np.asarray(jnp.asarray(ref, jnp.float32), np.float64)
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))
