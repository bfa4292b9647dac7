"""Grouped matmul in the Megablox style, in Pallas: the Mixture-of-Experts product where the rows
of lhs [m, k] are sorted by expert into contiguous ragged groups (group_sizes [groups], int32) and
group g's rows are multiplied by its own rhs[g] [k, n]. A plain JAX reference, a BlockSizes with
tile_m / tile_k / tile_n and a default, and the kernels (forward and backward) behind the
reference's API.

Zero-padding every group to the largest would waste the padded rows' FLOPs; instead, as Megablox
does, a small plan computed from group_sizes lists the (group, m tile) pairs that hold rows: a
tile of tile_m rows that straddles a group boundary is visited once per group it holds rows of,
and each visit stores only its group's rows (a masked store into an output that starts at
zero, so rows past sum(group_sizes) stay zero). At most m / tile_m + groups - 1 visits; the
grid has that many, and the spare ones (when fewer tiles straddle) store nothing. Each visit
loops over k in tile_k steps for its tile_n columns.

The backward is two grouped products: d_lhs = gmm(d_out, rhs transposed per group), and
d_rhs[g] = lhs_g^T d_out_g, a "transposed" grouped matmul (tgmm) with one program per (group,
k tile, n tile) that loops over its group's m tiles, masking the rows of other groups. An empty
group gets a zero gradient. group_sizes gets none (it is integer).
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental import pallas as pl
from jax.experimental.pallas import triton as plgpu

import pallas_common as pc

F32 = jnp.float32
_TN = (((0,), (0,)), ((), ()))  # a.T @ b


@dataclasses.dataclass(frozen=True, slots=True)
class BlockSizes:
    """Megablox's tiling (tm, tk, tn) and Triton's launch parameters."""

    tile_m: int = 64
    tile_k: int = 64
    tile_n: int = 64
    num_warps: int = 4
    num_stages: int = 2

    @classmethod
    def get_default(cls) -> BlockSizes:
        return cls()

    def check(self, m: int, k: int, n: int) -> None:
        for name, dim_name, dim in (("tile_m", "m", m), ("tile_k", "k", k), ("tile_n", "n", n)):
            pc.check_pow2(name, getattr(self, name))
            pc.check_divides(name, getattr(self, name), dim_name, dim)
        pc.check_launch(self.num_warps, self.num_stages)


def reference(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array) -> jax.Array:
    """Row r of the output is lhs[r] @ rhs[g] for the group g holding row r (groups in order,
    group_sizes[g] rows each); rows past sum(group_sizes) are zero. Plain JAX, f32."""
    ends = jnp.cumsum(group_sizes.astype(jnp.int32))
    row_group = jnp.searchsorted(ends, jnp.arange(lhs.shape[0]), side="right")  # groups for a row past the end
    every = jnp.einsum("mk,gkn->gmn", lhs.astype(F32), rhs.astype(F32))
    onehot = (row_group[None, :] == jnp.arange(rhs.shape[0])[:, None]).astype(F32)
    return jnp.einsum("gm,gmn->mn", onehot, every).astype(lhs.dtype)


def make_plan(group_sizes: jax.Array, m: int, tile_m: int) -> tuple[jax.Array, ...]:
    """The visits, as int32 arrays of length m / tile_m + groups - 1: the group and m tile of
    each visit (spare visits: group 0, tile 0, valid 0), and each group's [start, end) rows.
    Runs in JAX (traceable under jit), like Megablox's make_group_metadata."""
    groups = group_sizes.shape[0]
    sizes = group_sizes.astype(jnp.int32)
    total = jnp.cumsum(sizes)
    starts = jnp.minimum(total - sizes, m)  # rows past m (sum(group_sizes) > m) belong to no visit
    ends = jnp.minimum(total, m)
    first = starts // tile_m
    counts = jnp.where(ends > starts, (ends - 1) // tile_m - first + 1, 0)
    visit_end = jnp.cumsum(counts)
    visits = m // tile_m + groups - 1
    t = jnp.arange(visits, dtype=jnp.int32)
    g = jnp.minimum(jnp.searchsorted(visit_end, t, side="right").astype(jnp.int32), groups - 1)
    valid = (t < visit_end[-1]).astype(jnp.int32)
    tile = jnp.where(valid == 1, first[g] + t - (visit_end[g] - counts[g]), 0)
    return jnp.where(valid == 1, g, 0), tile.astype(jnp.int32), valid, starts, ends


def _gmm_kernel(gid_ref, tile_ref, valid_ref, start_ref, end_ref, lhs_ref, rhs_ref, zeros_ref, out_ref, *,  # type: ignore[no-untyped-def]
                tile_m, tile_k, tile_n, k):
    del zeros_ref  # the output's initial value (aliased): rows no visit stores stay zero
    t = pl.program_id(0)
    col0 = pl.program_id(1) * tile_n
    g = gid_ref[t]
    row0 = tile_ref[t] * tile_m

    @pl.when(valid_ref[t] == 1)
    def _() -> None:
        def body(i, acc):  # type: ignore[no-untyped-def]
            x = lhs_ref[pl.ds(row0, tile_m), pl.ds(i * tile_k, tile_k)]
            w = rhs_ref[g, pl.ds(i * tile_k, tile_k), pl.ds(col0, tile_n)]
            return acc + jnp.dot(x, w, preferred_element_type=F32)

        acc = lax.fori_loop(0, k // tile_k, body, jnp.zeros((tile_m, tile_n), F32))
        rows = row0 + lax.broadcasted_iota(jnp.int32, (tile_m, tile_n), 0)
        mine = (rows >= start_ref[g]) & (rows < end_ref[g])
        plgpu.store(out_ref.at[pl.ds(row0, tile_m), pl.ds(col0, tile_n)], acc.astype(out_ref.dtype), mask=mine)


def _gmm(lhs, rhs, group_sizes, bs, interpret):  # type: ignore[no-untyped-def]
    m, k = lhs.shape
    n = rhs.shape[2]
    plan = make_plan(group_sizes, m, bs.tile_m)
    kernel = functools.partial(_gmm_kernel, tile_m=bs.tile_m, tile_k=bs.tile_k, tile_n=bs.tile_n, k=k)
    return pl.pallas_call(
        kernel, grid=(plan[0].shape[0], n // bs.tile_n),
        out_shape=jax.ShapeDtypeStruct((m, n), lhs.dtype),
        input_output_aliases={7: 0},
        compiler_params=pc.compiler_params(bs.num_warps, bs.num_stages, interpret),
        interpret=interpret, name="gmm")(*plan, lhs, rhs, jnp.zeros((m, n), lhs.dtype))


def _tgmm_kernel(start_ref, end_ref, lhs_ref, dout_ref, out_ref, *, tile_m, tile_k, tile_n):  # type: ignore[no-untyped-def]
    g = pl.program_id(0)
    k0 = pl.program_id(1) * tile_k
    n0 = pl.program_id(2) * tile_n
    start = start_ref[g]
    end = end_ref[g]

    def body(i, acc):  # type: ignore[no-untyped-def]
        rows = pl.ds(i * tile_m, tile_m)
        r = i * tile_m + lax.broadcasted_iota(jnp.int32, (tile_m, tile_k), 0)
        x = lhs_ref[rows, pl.ds(k0, tile_k)]
        x = jnp.where((r >= start) & (r < end), x, jnp.zeros_like(x))
        y = dout_ref[rows, pl.ds(n0, tile_n)]
        return acc + lax.dot_general(x, y, _TN, preferred_element_type=F32)

    # The m tiles holding the group's rows; none for an empty group.
    lo = start // tile_m
    hi = jnp.where(end > start, (end + tile_m - 1) // tile_m, lo)
    acc = lax.fori_loop(lo, hi, body, jnp.zeros((tile_k, tile_n), F32))
    out_ref[...] = acc.astype(out_ref.dtype)


def _tgmm(lhs, dout, group_sizes, groups, bs, interpret):  # type: ignore[no-untyped-def]
    m, k = lhs.shape
    n = dout.shape[1]
    _, _, _, starts, ends = make_plan(group_sizes, m, bs.tile_m)
    kernel = functools.partial(_tgmm_kernel, tile_m=bs.tile_m, tile_k=bs.tile_k, tile_n=bs.tile_n)
    return pl.pallas_call(
        kernel, grid=(groups, k // bs.tile_k, n // bs.tile_n),
        in_specs=[pl.no_block_spec] * 4,
        out_specs=pl.BlockSpec((None, bs.tile_k, bs.tile_n), lambda g, i, j: (g, i, j)),
        out_shape=jax.ShapeDtypeStruct((groups, k, n), lhs.dtype),
        compiler_params=pc.compiler_params(bs.num_warps, bs.num_stages, interpret),
        interpret=interpret, name="tgmm")(starts, ends, lhs, dout)


@functools.partial(jax.custom_vjp, nondiff_argnums=(3, 4))
def _grouped(lhs, rhs, group_sizes, bs, interpret):  # type: ignore[no-untyped-def]
    return _gmm(lhs, rhs, group_sizes, bs, interpret)


def _grouped_fwd(lhs, rhs, group_sizes, bs, interpret):  # type: ignore[no-untyped-def]
    return _gmm(lhs, rhs, group_sizes, bs, interpret), (lhs, rhs, group_sizes)


def _grouped_bwd(bs, interpret, res, dout):  # type: ignore[no-untyped-def]
    lhs, rhs, group_sizes = res
    # d_lhs = d_out [m, n] x rhs[g]^T [n, k]: the same kernel with k and n (and their tiles) swapped.
    swapped = dataclasses.replace(bs, tile_k=bs.tile_n, tile_n=bs.tile_k)
    dlhs = _gmm(dout, jnp.swapaxes(rhs, 1, 2), group_sizes, swapped, interpret)
    drhs = _tgmm(lhs, dout, group_sizes, rhs.shape[0], bs, interpret)
    # group_sizes is integer: its cotangent is float0 zeros.
    return dlhs, drhs, jnp.zeros(group_sizes.shape, jax.dtypes.float0)


_grouped.defvjp(_grouped_fwd, _grouped_bwd)


def gmm(lhs: jax.Array, rhs: jax.Array, group_sizes: jax.Array, *, block_sizes: BlockSizes | None = None,
        interpret: bool | None = None) -> jax.Array:
    """lhs [m, k] rows grouped by group_sizes [groups] (int32, sum <= m), rhs [groups, k, n]
    -> [m, n] in lhs's dtype, as reference(); differentiable in lhs and rhs. interpret=None
    interprets when JAX's default device is not a GPU."""
    if lhs.ndim != 2 or rhs.ndim != 3 or rhs.shape[1] != lhs.shape[1]:
        raise ValueError(f"shapes lhs {lhs.shape}, rhs {rhs.shape}: want [m, k] and [groups, k, n]")
    if group_sizes.shape != (rhs.shape[0],) or not jnp.issubdtype(group_sizes.dtype, jnp.integer):
        raise ValueError(f"group_sizes {group_sizes.shape} {group_sizes.dtype}: want [{rhs.shape[0]}] integers")
    bs = block_sizes or BlockSizes.get_default()
    bs.check(lhs.shape[0], lhs.shape[1], rhs.shape[2])
    return _grouped(lhs, rhs, group_sizes.astype(jnp.int32), bs, pc.resolve_interpret(interpret))
