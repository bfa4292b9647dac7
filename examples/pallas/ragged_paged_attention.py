"""Ragged paged attention in Pallas, the serving kernel: one batch mixes sequences at different
stages (a prefill chunk of many new tokens, decodes of one), their queries concatenated in one
ragged array, their keys and values in a paged cache. A plain JAX reference, a BlockSizes with
num_queries_per_block / num_kv_pages_per_block (the names of JAX's TPU kernel) and a default,
and the kernel behind the reference's API. Forward only: a serving kernel has no backward (JAX's
own ragged paged attention has none either), so there is no gradient check for this one.

Inputs, as in vLLM and JAX's kernel (keys and values in two caches rather than one combined):
  q            [tokens, q_heads, head_dim]      every sequence's new tokens, sequence after sequence
  k_pages      [pages, page_size, kv_heads, head_dim], v_pages alike
  kv_lens      [max_seqs] int32                 tokens of each sequence in the cache, new ones included
  page_indices [max_seqs, pages_per_seq] int32  the cache pages of each sequence, in order
  cu_q_lens    [max_seqs + 1] int32             sequence s's new tokens are q[cu_q_lens[s]:cu_q_lens[s+1]]
  num_seqs     [1] int32                        sequences in use; tokens past cu_q_lens[num_seqs] get 0
The new tokens are the last ones of their sequence: new token i of sequence s (q_len of them)
sits at position kv_lens[s] - q_len + i and attends causally to positions 0..itself (so
kv_lens[s] >= q_len). Query heads share key/value heads in groups (GQA): q_heads % kv_heads == 0.

The kernel runs one program per (query head, visit), a visit being one block of up to
num_queries_per_block rows of one sequence (a plan from cu_q_lens, as the grouped matmul's:
at most tokens / block + max_seqs visits, the spare ones store nothing). Each program walks its
sequence's pages, num_kv_pages_per_block per loop step, with the online softmax, and stops at
the last page its last row can see. A step's pages are separate [page_size, head_dim] loads
(a page's index is read from page_indices, so pages need not be adjacent) folded into one
softmax update.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import pallas_common as pc

F32 = jnp.float32
_NT = (((1,), (1,)), ((), ()))  # a @ b.T
_MASKED = -1e30  # finite: a row that sees nothing yet keeps exp() at 0 instead of NaN


@dataclasses.dataclass(frozen=True, slots=True)
class BlockSizes:
    num_queries_per_block: int = 16
    num_kv_pages_per_block: int = 4  # more than pages_per_seq runs as pages_per_seq
    num_warps: int = 4
    num_stages: int = 2

    @classmethod
    def get_default(cls) -> BlockSizes:
        return cls()

    def check(self, page_size: int, pages_per_seq: int, head_dim: int) -> None:
        pc.check_pow2("num_queries_per_block", self.num_queries_per_block)
        if not isinstance(self.num_kv_pages_per_block, int) or not 1 <= self.num_kv_pages_per_block <= 64:
            raise ValueError(f"num_kv_pages_per_block={self.num_kv_pages_per_block!r}: must be in 1..64 (unrolled)")
        pc.check_pow2("page_size", page_size)
        pc.check_pow2("head_dim", head_dim)
        pc.check_launch(self.num_warps, self.num_stages)


def reference(q: jax.Array, k_pages: jax.Array, v_pages: jax.Array, kv_lens: jax.Array, page_indices: jax.Array,
              cu_q_lens: jax.Array, num_seqs: jax.Array, *, sm_scale: float | None = None) -> jax.Array:
    """Every token attends to its sequence's keys gathered from the pages, plain JAX, f32."""
    tokens, q_heads, d = q.shape
    _, page_size, kv_heads, _ = k_pages.shape
    scale = 1.0 / math.sqrt(d) if sm_scale is None else sm_scale
    t = jnp.arange(tokens)
    seq = jnp.clip(jnp.searchsorted(cu_q_lens[1:], t, side="right"), 0, kv_lens.shape[0] - 1)
    live = t < cu_q_lens[num_seqs[0]]
    q_len = cu_q_lens[seq + 1] - cu_q_lens[seq]
    pos = kv_lens[seq] - q_len + (t - cu_q_lens[seq])  # each token's position in its sequence
    keys = k_pages[page_indices[seq]].reshape(tokens, -1, kv_heads, d).astype(F32)  # [T, P*ps, Hkv, d]
    vals = v_pages[page_indices[seq]].reshape(tokens, -1, kv_heads, d).astype(F32)
    group = q_heads // kv_heads
    keys, vals = jnp.repeat(keys, group, axis=2), jnp.repeat(vals, group, axis=2)
    s = jnp.einsum("thd,tkhd->thk", q.astype(F32), keys) * scale
    kpos = jnp.arange(keys.shape[1])
    visible = (kpos[None, :] <= pos[:, None]) & (kpos[None, :] < kv_lens[seq][:, None])
    s = jnp.where(visible[:, None, :], s, -jnp.inf)
    out = jnp.einsum("thk,tkhd->thd", jax.nn.softmax(s, axis=-1), vals)
    return jnp.where(live[:, None, None], out, 0).astype(q.dtype)


def make_plan(cu_q_lens: jax.Array, num_seqs: jax.Array, tokens: int, block: int) -> tuple[jax.Array, ...]:
    """The visits (sequence, first token row, valid) as int32 arrays of length
    cdiv(tokens, block) + max_seqs, in JAX (traceable under jit)."""
    max_seqs = cu_q_lens.shape[0] - 1
    q_lens = jnp.where(jnp.arange(max_seqs) < num_seqs[0], cu_q_lens[1:] - cu_q_lens[:-1], 0)
    blocks = (q_lens + block - 1) // block
    visit_end = jnp.cumsum(blocks)
    visits = -(-tokens // block) + max_seqs
    t = jnp.arange(visits, dtype=jnp.int32)
    s = jnp.minimum(jnp.searchsorted(visit_end, t, side="right").astype(jnp.int32), max_seqs - 1)
    valid = (t < visit_end[-1]).astype(jnp.int32)
    row0 = cu_q_lens[s] + (t - (visit_end[s] - blocks[s])) * block
    return jnp.where(valid == 1, s, 0), jnp.where(valid == 1, row0, 0).astype(jnp.int32), valid


def _kernel(seq_ref, row_ref, valid_ref, kv_lens_ref, pages_ref, cu_ref, q_ref, k_ref, v_ref, zeros_ref, o_ref, *,  # type: ignore[no-untyped-def]
            scale, group, block_q, pages_per_step, page_size, pages_per_seq):
    del zeros_ref  # the output's initial value (aliased): rows no visit stores stay zero
    hq = pl.program_id(0)
    t = pl.program_id(1)
    hkv = hq // group

    @pl.when(valid_ref[t] == 1)
    def _() -> None:
        s = seq_ref[t]
        row0 = row_ref[t]
        q_start, q_end = cu_ref[s], cu_ref[s + 1]
        kv_len = kv_lens_ref[s]
        first_pos = kv_len - (q_end - q_start) + (row0 - q_start)  # position of this block's first row
        last_pos = first_pos + jnp.minimum(block_q, q_end - row0) - 1
        q = q_ref[pl.ds(row0, block_q), hq, :]
        d = q.shape[-1]
        qpos = first_pos + lax.broadcasted_iota(jnp.int32, (block_q, page_size), 0)

        def body(j, carry):  # type: ignore[no-untyped-def]
            m, l, acc = carry
            scores, values = [], []
            for p in range(pages_per_step):  # unrolled: the step's pages, one softmax update
                slot = j * pages_per_step + p
                page = pages_ref[s, jnp.minimum(slot, pages_per_seq - 1)]
                k = k_ref[page, :, hkv, :]
                values.append(v_ref[page, :, hkv, :])
                sc = lax.dot_general(q, k, _NT, preferred_element_type=F32) * scale
                kpos = slot * page_size + lax.broadcasted_iota(jnp.int32, (block_q, page_size), 1)
                scores.append(jnp.where((kpos <= qpos) & (kpos < kv_len), sc, _MASKED))
            m_new = m
            for sc in scores:
                m_new = jnp.maximum(m_new, jnp.max(sc, axis=1))
            alpha = jnp.exp(m - m_new)
            l, acc = l * alpha, acc * alpha[:, None]
            for sc, v in zip(scores, values):
                pr = jnp.exp(sc - m_new[:, None])
                l = l + jnp.sum(pr, axis=1)
                acc = acc + jnp.dot(pr.astype(v.dtype), v, preferred_element_type=F32)
            return m_new, l, acc

        span = page_size * pages_per_step
        steps = jnp.minimum(last_pos, kv_len - 1) // span + 1
        init = (jnp.full((block_q,), -jnp.inf, F32), jnp.zeros((block_q,), F32), jnp.zeros((block_q, d), F32))
        _, l, acc = lax.fori_loop(0, steps, body, init)
        rows = row0 + lax.broadcasted_iota(jnp.int32, (block_q, d), 0)
        plgpu.store(o_ref.at[pl.ds(row0, block_q), hq, :], (acc / l[:, None]).astype(o_ref.dtype),
                    mask=rows < q_end)


def ragged_paged_attention(q: jax.Array, k_pages: jax.Array, v_pages: jax.Array, kv_lens: jax.Array,
                           page_indices: jax.Array, cu_q_lens: jax.Array, num_seqs: jax.Array, *,
                           sm_scale: float | None = None, block_sizes: BlockSizes | None = None,
                           interpret: bool | None = None) -> jax.Array:
    """As reference(); interpret=None interprets when JAX's default device is not a GPU."""
    tokens, q_heads, d = q.shape
    _, page_size, kv_heads, _ = k_pages.shape
    if k_pages.shape != v_pages.shape or k_pages.shape[3] != d or q_heads % kv_heads:
        raise ValueError(f"shapes q {q.shape}, k_pages {k_pages.shape}, v_pages {v_pages.shape}: want "
                         "[tokens, q_heads, d] and [pages, page_size, kv_heads, d], q_heads a multiple of kv_heads")
    max_seqs, pages_per_seq = page_indices.shape
    if kv_lens.shape != (max_seqs,) or cu_q_lens.shape != (max_seqs + 1,) or num_seqs.shape != (1,):
        raise ValueError(f"kv_lens {kv_lens.shape}, cu_q_lens {cu_q_lens.shape}, num_seqs {num_seqs.shape}: want "
                         f"[{max_seqs}], [{max_seqs + 1}], [1] for page_indices {page_indices.shape}")
    bs = block_sizes or BlockSizes.get_default()
    bs.check(page_size, pages_per_seq, d)
    interpret = pc.resolve_interpret(interpret)
    scale = 1.0 / math.sqrt(d) if sm_scale is None else float(sm_scale)
    block = bs.num_queries_per_block
    plan = make_plan(cu_q_lens, num_seqs, tokens, block)
    # A block's rows are read and stored whole: pad so that the last block of the last
    # sequence stays inside the arrays (its rows past the sequence are not stored).
    padded = jnp.pad(q, ((0, block), (0, 0), (0, 0)))
    kernel = functools.partial(_kernel, scale=scale, group=q_heads // kv_heads, block_q=block,
                               pages_per_step=min(bs.num_kv_pages_per_block, pages_per_seq), page_size=page_size,
                               pages_per_seq=pages_per_seq)
    out = pl.pallas_call(
        kernel, grid=(q_heads, plan[0].shape[0]),
        out_shape=jax.ShapeDtypeStruct(padded.shape, q.dtype),
        input_output_aliases={9: 0},
        compiler_params=pc.compiler_params(bs.num_warps, bs.num_stages, interpret),
        interpret=interpret, name="ragged_paged_attention",
    )(*plan, kv_lens.astype(jnp.int32), page_indices.astype(jnp.int32), cu_q_lens.astype(jnp.int32), padded,
      k_pages, v_pages, jnp.zeros_like(padded))
    return out[:tokens]
