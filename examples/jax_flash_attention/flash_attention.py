"""Flash attention in JAX, blocked like the Pallas seeds: queries in blocks of block_q (a
sequential lax.map over query blocks), keys/values streamed in blocks of block_kv (a lax.scan
with the online softmax: running max, running sum and rescaled accumulator per query row), so
no [seq_q, seq_kv] score matrix exists beyond one (block_q x block_kv) tile per head. The block
sizes are static arguments of the jit-compiled function: each pair is its own XLA program,
which is what blocktune tunes. reference() is the oracle: plain softmax attention in float64
NumPy."""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np


@functools.partial(jax.jit, static_argnames=("block_q", "block_kv", "causal"))
def flash_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, block_q: int, block_kv: int,
                    causal: bool = False) -> jax.Array:
    """softmax(q k^T / sqrt(d) [+ causal mask]) v for q, k, v [heads, seq, head_dim] (f32);
    seq must be a multiple of both block sizes."""
    heads, seq_q, d = q.shape
    seq_kv = k.shape[1]
    if seq_q % block_q or seq_kv % block_kv:
        raise ValueError(f"seq_q {seq_q} / seq_kv {seq_kv} not multiples of block_q {block_q} / block_kv {block_kv}")
    nq, nkv = seq_q // block_q, seq_kv // block_kv
    scale = 1.0 / math.sqrt(d)
    kb = k.reshape(heads, nkv, block_kv, d).transpose(1, 0, 2, 3)  # [nkv, heads, block_kv, d]
    vb = v.reshape(heads, nkv, block_kv, d).transpose(1, 0, 2, 3)
    qb = (q * scale).reshape(heads, nq, block_q, d).transpose(1, 0, 2, 3)  # [nq, heads, block_q, d]

    def one_query_block(args: tuple[jax.Array, jax.Array]) -> jax.Array:
        qi, iq = args  # [heads, block_q, d], the block's index
        rows = iq * block_q + jnp.arange(block_q) + (seq_kv - seq_q)  # bottom-right aligned mask

        def step(carry: tuple[jax.Array, jax.Array, jax.Array], kv: tuple[jax.Array, jax.Array, jax.Array]):
            m, l, acc = carry
            kj, vj, jk = kv
            s = jnp.einsum("hqd,hkd->hqk", qi, kj)
            if causal:
                cols = jk * block_kv + jnp.arange(block_kv)
                s = jnp.where(cols[None, None, :] <= rows[None, :, None], s, -jnp.inf)
            m_new = jnp.maximum(m, s.max(-1))
            # A row with every key masked so far keeps m = -inf: subtract 0 instead (p = 0).
            m_safe = jnp.where(jnp.isfinite(m_new), m_new, 0.0)
            p = jnp.exp(s - m_safe[..., None])
            corr = jnp.exp(jnp.where(jnp.isfinite(m), m - m_safe, -jnp.inf))
            l = l * corr + p.sum(-1)
            acc = acc * corr[..., None] + jnp.einsum("hqk,hkd->hqd", p, vj)
            return (m_new, l, acc), None

        init = (jnp.full((heads, block_q), -jnp.inf, q.dtype), jnp.zeros((heads, block_q), q.dtype),
                jnp.zeros((heads, block_q, d), q.dtype))
        (m, l, acc), _ = jax.lax.scan(step, init, (kb, vb, jnp.arange(nkv)))
        return jnp.where(l[..., None] > 0, acc / jnp.where(l > 0, l, 1.0)[..., None], 0.0)

    out = jax.lax.map(one_query_block, (qb, jnp.arange(nq)))  # [nq, heads, block_q, d]
    return out.transpose(1, 0, 2, 3).reshape(heads, seq_q, d)


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> np.ndarray:
    """The oracle: scores, softmax and weighted sum in float64."""
    q64, k64, v64 = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    s = np.einsum("hqd,hkd->hqk", q64, k64) / math.sqrt(q.shape[-1])
    if causal:
        seq_q, seq_kv = q.shape[1], k.shape[1]
        mask = np.arange(seq_kv)[None, :] <= np.arange(seq_q)[:, None] + (seq_kv - seq_q)
        s = np.where(mask[None], s, -np.inf)
    m = s.max(-1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    p = np.exp(s - m)
    denom = p.sum(-1, keepdims=True)
    return np.einsum("hqk,hkd->hqd", p, v64) / np.where(denom > 0, denom, 1.0)


def make_inputs(heads: int, seq: int, head_dim: int, seed: int = 0) -> tuple[jax.Array, jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    return tuple(jnp.asarray(rng.uniform(-1.0, 1.0, (heads, seq, head_dim)).astype(np.float32)) for _ in range(3))
