"""Flash attention in Pallas (forward and backward), in the seeds' recipe: a plain JAX
reference, a BlockSizes dataclass with a default, and the kernel behind the reference's API.

Layout [batch, heads, seq, head_dim]. The forward runs one program per (batch, head, query
block of block_q rows) and streams the keys and values in blocks of block_k through a fori_loop
with the online softmax (running max m, running sum l, rescaled accumulator), so the [seq, seq]
score matrix is never stored; it also writes the log-sum-exp of every row for the backward.
Causal attention (query i sees keys 0..i, top-left aligned) stops each program's loop at the
last key block its rows can see, which halves the work. The backward is FlashAttention-2's: one
kernel per key block accumulates dK and dV over the query blocks, another per query block
accumulates dQ over the key blocks, both recomputing P = exp(S - lse) instead of storing it.
Matmuls accumulate in f32 whatever the input dtype (f32 or bf16).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl

import pallas_common as pc

F32 = jnp.float32
_NT = (((1,), (1,)), ((), ()))  # a @ b.T
_TN = (((0,), (0,)), ((), ()))  # a.T @ b


@dataclasses.dataclass(frozen=True, slots=True)
class BlockSizes:
    """Rows per block of each kernel, and Triton's launch parameters (shared by the three)."""

    block_q: int = 64  # forward: query rows per program
    block_k: int = 64  # forward: key/value rows per loop step
    block_q_dkv: int = 32  # dK/dV kernel: query rows per loop step
    block_kv_dkv: int = 32  # dK/dV kernel: key/value rows per program
    block_q_dq: int = 32  # dQ kernel: query rows per program
    block_kv_dq: int = 32  # dQ kernel: key/value rows per loop step
    num_warps: int = 4
    num_stages: int = 2

    @classmethod
    def get_default(cls) -> BlockSizes:
        return cls()

    def check(self, seq_q: int, seq_k: int, head_dim: int) -> None:
        """Raises ValueError naming the field that this problem cannot use."""
        for name, dim_name, dim in (("block_q", "seq_q", seq_q), ("block_k", "seq_k", seq_k),
                                    ("block_q_dkv", "seq_q", seq_q), ("block_kv_dkv", "seq_k", seq_k),
                                    ("block_q_dq", "seq_q", seq_q), ("block_kv_dq", "seq_k", seq_k)):
            value = getattr(self, name)
            pc.check_pow2(name, value)
            pc.check_divides(name, value, dim_name, dim)
        pc.check_pow2("head_dim", head_dim)
        pc.check_launch(self.num_warps, self.num_stages)


def reference(q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False,
              sm_scale: float | None = None) -> jax.Array:
    """softmax(Q K^T * scale [+ causal mask]) V in plain JAX, in f32."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else sm_scale
    s = jnp.einsum("bhqd,bhkd->bhqk", q.astype(F32), k.astype(F32)) * scale
    if causal:
        mask = jnp.arange(q.shape[2])[:, None] >= jnp.arange(k.shape[2])[None, :]
        s = jnp.where(mask, s, -jnp.inf)
    p = jax.nn.softmax(s, axis=-1)
    return jnp.einsum("bhqk,bhkd->bhqd", p, v.astype(F32)).astype(q.dtype)


def _mask(s: jax.Array, q0: jax.Array, k0: jax.Array) -> jax.Array:
    qpos = q0 + lax.broadcasted_iota(jnp.int32, s.shape, 0)
    kpos = k0 + lax.broadcasted_iota(jnp.int32, s.shape, 1)
    return jnp.where(qpos >= kpos, s, -jnp.inf)


def _fwd_kernel(q_ref, k_ref, v_ref, o_ref, lse_ref, *, scale, causal, block_q, block_k, seq_k):  # type: ignore[no-untyped-def]
    i = pl.program_id(2)
    q = q_ref[...]
    d = q.shape[-1]

    def body(j, carry):  # type: ignore[no-untyped-def]
        m, l, acc = carry
        k = k_ref[pl.ds(j * block_k, block_k), :]
        v = v_ref[pl.ds(j * block_k, block_k), :]
        s = lax.dot_general(q, k, _NT, preferred_element_type=F32) * scale
        if causal:
            s = _mask(s, i * block_q, j * block_k)
        m_new = jnp.maximum(m, jnp.max(s, axis=1))
        alpha = jnp.exp(m - m_new)
        p = jnp.exp(s - m_new[:, None])
        l_new = alpha * l + jnp.sum(p, axis=1)
        acc = acc * alpha[:, None] + jnp.dot(p.astype(v.dtype), v, preferred_element_type=F32)
        return m_new, l_new, acc

    n = seq_k // block_k
    if causal:  # the last key block any row of this query block sees
        n = jnp.minimum(n, ((i + 1) * block_q + block_k - 1) // block_k)
    init = (jnp.full((block_q,), -jnp.inf, F32), jnp.zeros((block_q,), F32), jnp.zeros((block_q, d), F32))
    m, l, acc = lax.fori_loop(0, n, body, init)
    o_ref[...] = (acc / l[:, None]).astype(o_ref.dtype)
    lse_ref[...] = m + jnp.log(l)


def _row(block: int, d: int | None = None) -> pl.BlockSpec:
    """A block of `block` rows of [batch, heads, seq(, d)], program (b, h, i) -> rows i."""
    if d is None:
        return pl.BlockSpec((None, None, block), lambda b, h, i: (b, h, i))
    return pl.BlockSpec((None, None, block, d), lambda b, h, i: (b, h, i, 0))


def _whole(seq: int, d: int) -> pl.BlockSpec:
    """The whole sequence of one (batch, head): the kernel slices it in its loop."""
    return pl.BlockSpec((None, None, seq, d), lambda b, h, i: (b, h, 0, 0))


def _forward(q, k, v, causal, scale, bs, interpret):  # type: ignore[no-untyped-def]
    b, h, sq, d = q.shape
    sk = k.shape[2]
    kernel = functools.partial(_fwd_kernel, scale=scale, causal=causal, block_q=bs.block_q, block_k=bs.block_k,
                               seq_k=sk)
    return pl.pallas_call(
        kernel, grid=(b, h, sq // bs.block_q),
        in_specs=[_row(bs.block_q, d), _whole(sk, d), _whole(sk, d)],
        out_specs=[_row(bs.block_q, d), _row(bs.block_q)],
        out_shape=[jax.ShapeDtypeStruct(q.shape, q.dtype), jax.ShapeDtypeStruct((b, h, sq), F32)],
        compiler_params=pc.compiler_params(bs.num_warps, bs.num_stages, interpret),
        interpret=interpret, name="flash_attention_fwd")(q, k, v)


def _dkv_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dk_ref, dv_ref, *, scale, causal,  # type: ignore[no-untyped-def]
                block_q, block_k, seq_q):
    j = pl.program_id(2)
    k = k_ref[...]
    v = v_ref[...]
    d = k.shape[-1]

    def body(i, carry):  # type: ignore[no-untyped-def]
        dk, dv = carry
        rows = pl.ds(i * block_q, block_q)
        q = q_ref[rows, :]
        do = do_ref[rows, :]
        s = lax.dot_general(q, k, _NT, preferred_element_type=F32) * scale
        if causal:
            s = _mask(s, i * block_q, j * block_k)
        p = jnp.exp(s - lse_ref[rows][:, None])
        dv = dv + lax.dot_general(p.astype(do.dtype), do, _TN, preferred_element_type=F32)
        dp = lax.dot_general(do, v, _NT, preferred_element_type=F32)
        ds = p * (dp - delta_ref[rows][:, None])
        dk = dk + lax.dot_general(ds.astype(q.dtype), q, _TN, preferred_element_type=F32)
        return dk, dv

    # Causal: query blocks before the first one that sees this key block contribute nothing.
    start = (j * block_k) // block_q if causal else 0
    zeros = jnp.zeros((block_k, d), F32)
    dk, dv = lax.fori_loop(start, seq_q // block_q, body, (zeros, zeros))
    dk_ref[...] = (dk * scale).astype(dk_ref.dtype)
    dv_ref[...] = dv.astype(dv_ref.dtype)


def _dq_kernel(q_ref, k_ref, v_ref, do_ref, lse_ref, delta_ref, dq_ref, *, scale, causal, block_q, block_k,  # type: ignore[no-untyped-def]
               seq_k):
    i = pl.program_id(2)
    q = q_ref[...]
    do = do_ref[...]
    lse = lse_ref[...]
    delta = delta_ref[...]

    def body(j, dq):  # type: ignore[no-untyped-def]
        cols = pl.ds(j * block_k, block_k)
        k = k_ref[cols, :]
        v = v_ref[cols, :]
        s = lax.dot_general(q, k, _NT, preferred_element_type=F32) * scale
        if causal:
            s = _mask(s, i * block_q, j * block_k)
        p = jnp.exp(s - lse[:, None])
        dp = lax.dot_general(do, v, _NT, preferred_element_type=F32)
        ds = p * (dp - delta[:, None])
        return dq + jnp.dot(ds.astype(k.dtype), k, preferred_element_type=F32)

    n = seq_k // block_k
    if causal:
        n = jnp.minimum(n, ((i + 1) * block_q + block_k - 1) // block_k)
    dq = lax.fori_loop(0, n, body, jnp.zeros(q.shape, F32))
    dq_ref[...] = (dq * scale).astype(dq_ref.dtype)


def _backward(q, k, v, o, lse, do, causal, scale, bs, interpret):  # type: ignore[no-untyped-def]
    b, h, sq, d = q.shape
    sk = k.shape[2]
    delta = jnp.sum(o.astype(F32) * do.astype(F32), axis=-1)  # rowsum(dO * O), [b, h, sq]
    params = pc.compiler_params(bs.num_warps, bs.num_stages, interpret)
    dkv = functools.partial(_dkv_kernel, scale=scale, causal=causal, block_q=bs.block_q_dkv, block_k=bs.block_kv_dkv,
                            seq_q=sq)
    whole_q, whole_rows = _whole(sq, d), pl.BlockSpec((None, None, sq), lambda b_, h_, j: (b_, h_, 0))
    dk, dv = pl.pallas_call(
        dkv, grid=(b, h, sk // bs.block_kv_dkv),
        in_specs=[whole_q, _row(bs.block_kv_dkv, d), _row(bs.block_kv_dkv, d), whole_q, whole_rows, whole_rows],
        out_specs=[_row(bs.block_kv_dkv, d), _row(bs.block_kv_dkv, d)],
        out_shape=[jax.ShapeDtypeStruct(k.shape, k.dtype), jax.ShapeDtypeStruct(v.shape, v.dtype)],
        compiler_params=params, interpret=interpret, name="flash_attention_dkv")(q, k, v, do, lse, delta)
    dqk = functools.partial(_dq_kernel, scale=scale, causal=causal, block_q=bs.block_q_dq, block_k=bs.block_kv_dq,
                            seq_k=sk)
    dq = pl.pallas_call(
        dqk, grid=(b, h, sq // bs.block_q_dq),
        in_specs=[_row(bs.block_q_dq, d), _whole(sk, d), _whole(sk, d), _row(bs.block_q_dq, d),
                  _row(bs.block_q_dq), _row(bs.block_q_dq)],
        out_specs=_row(bs.block_q_dq, d),
        out_shape=jax.ShapeDtypeStruct(q.shape, q.dtype),
        compiler_params=params, interpret=interpret, name="flash_attention_dq")(q, k, v, do, lse, delta)
    return dq, dk, dv


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4, 5, 6))
def _flash(q, k, v, causal, scale, bs, interpret):  # type: ignore[no-untyped-def]
    return _forward(q, k, v, causal, scale, bs, interpret)[0]


def _flash_fwd(q, k, v, causal, scale, bs, interpret):  # type: ignore[no-untyped-def]
    o, lse = _forward(q, k, v, causal, scale, bs, interpret)
    return o, (q, k, v, o, lse)


def _flash_bwd(causal, scale, bs, interpret, res, do):  # type: ignore[no-untyped-def]
    q, k, v, o, lse = res
    return _backward(q, k, v, o, lse, do, causal, scale, bs, interpret)


_flash.defvjp(_flash_fwd, _flash_bwd)


def flash_attention(q: jax.Array, k: jax.Array, v: jax.Array, *, causal: bool = False,
                    sm_scale: float | None = None, block_sizes: BlockSizes | None = None,
                    interpret: bool | None = None) -> jax.Array:
    """Attention of q [batch, heads, seq_q, d] over k, v [batch, heads, seq_k, d], as
    reference(); differentiable (jax.grad runs the Pallas backward). interpret=None interprets
    when JAX's default device is not a GPU."""
    if q.ndim != 4 or k.shape != v.shape or q.shape[:2] != k.shape[:2] or q.shape[3] != k.shape[3]:
        raise ValueError(f"shapes q {q.shape}, k {k.shape}, v {v.shape}: want [b, h, s, d] with k, v alike")
    if causal and q.shape[2] != k.shape[2]:
        raise ValueError(f"causal attention needs seq_q == seq_k (got {q.shape[2]} and {k.shape[2]})")
    bs = block_sizes or BlockSizes.get_default()
    bs.check(q.shape[2], k.shape[2], q.shape[3])
    scale = 1.0 / math.sqrt(q.shape[-1]) if sm_scale is None else float(sm_scale)
    return _flash(q, k, v, bool(causal), scale, bs, pc.resolve_interpret(interpret))
