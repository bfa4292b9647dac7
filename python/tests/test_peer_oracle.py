"""A peer oracle for blocktune's five kernels: each kernel's reference (the plain C++ oracle the
tuner verifies every config against, run by tests/python/reference_oracle on inputs written
here) against JAX's own implementation on the same random inputs, JAX in float64 so that the
difference is the reference's own error plus its f32 output rounding:
jnp.matmul; jax.nn.dot_product_attention (grouped-query, causal and not) with a jnp logsumexp
for the LSE; a jnp softmax cross-entropy with z-loss and its jax.grad; jax.lax.ragged_dot; and a
gather of each sequence's pages + jax.nn.dot_product_attention with the bottom-right causal mask
for ragged paged attention. The max abs and rel errors per kernel are printed and written to
BUILD/peer_oracle.json."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402

from conftest import BUILD  # noqa: E402

RESULTS: dict[str, dict[str, float]] = {}
RNG = np.random.default_rng(2026)


def run_reference(kernel: str, tmp: Path, inputs: dict[str, np.ndarray], outputs: dict[str, tuple[int, ...]],
                  **dims: float) -> dict[str, np.ndarray]:
    for name, a in inputs.items():
        a.astype("<i4" if a.dtype.kind == "i" else "<f4").tofile(tmp / f"{name}.bin")
    subprocess.run([str(BUILD / "tests" / "python" / "reference_oracle"), kernel, str(tmp),
                    *[f"{k}={v}" for k, v in dims.items()]], check=True)
    return {n: np.fromfile(tmp / f"{n}.out.bin", dtype="<f4").reshape(shape) for n, shape in outputs.items()}


def compare(kernel: str, name: str, ours: np.ndarray, theirs: jax.Array, rel_tol: float = 2e-6) -> None:
    """Max abs error, and max rel error relative to the output's largest magnitude (elements
    near zero make an elementwise ratio meaningless)."""
    t = np.asarray(theirs, dtype=np.float64)
    assert ours.shape == t.shape, (kernel, name, ours.shape, t.shape)
    abs_err = float(np.max(np.abs(ours - t)))
    rel_err = abs_err / max(float(np.max(np.abs(t))), 1e-30)
    RESULTS[f"{kernel}.{name}"] = {"max_abs_err": abs_err, "max_rel_err": rel_err}
    print(f"{kernel}.{name}: max abs err {abs_err:.3g}, max rel err {rel_err:.3g}")
    assert rel_err <= rel_tol, (kernel, name, abs_err, rel_err)


def uniform(*shape: int) -> np.ndarray:
    return RNG.uniform(-1.0, 1.0, shape).astype(np.float32)


def test_matmul(tmp_path: Path) -> None:
    m, n, k = 67, 45, 130
    a, b = uniform(m, k), uniform(k, n)
    out = run_reference("matmul", tmp_path, {"a": a, "b": b}, {"c": (m, n)}, m=m, n=n, k=k)
    compare("matmul", "c", out["c"], jnp.matmul(jnp.asarray(a, jnp.float64), jnp.asarray(b, jnp.float64)))


@pytest.mark.parametrize("causal, seq_q, seq_kv", [(False, 40, 72), (True, 64, 64)])
def test_flash_attention(tmp_path: Path, causal: bool, seq_q: int, seq_kv: int) -> None:
    batch, heads, kv_heads, d = 2, 4, 2, 32
    q, k, v = uniform(batch, heads, seq_q, d), uniform(batch, kv_heads, seq_kv, d), uniform(batch, kv_heads, seq_kv, d)
    out = run_reference("flash_attention", tmp_path, {"q": q, "k": k, "v": v},
                        {"o": (batch, heads, seq_q, d), "lse": (batch, heads, seq_q)}, batch=batch, heads=heads,
                        kv_heads=kv_heads, seq_q=seq_q, seq_kv=seq_kv, head_dim=d, causal=int(causal))
    # JAX's layout is [batch, seq, heads, head_dim]; query head n reads kv head n // (heads / kv_heads).
    tq, tk, tv = (jnp.asarray(x, jnp.float64).transpose(0, 2, 1, 3) for x in (q, k, v))
    o = jax.nn.dot_product_attention(tq, tk, tv, is_causal=causal).transpose(0, 2, 1, 3)
    scores = jnp.einsum("bhqd,bhkd->bhqk", jnp.asarray(q, jnp.float64),
                        jnp.repeat(jnp.asarray(k, jnp.float64), heads // kv_heads, axis=1)) / np.sqrt(d)
    if causal:
        scores = jnp.where(jnp.tril(jnp.ones((seq_q, seq_kv), bool)), scores, -jnp.inf)
    tag = "causal" if causal else "full"
    compare("flash_attention", f"o_{tag}", out["o"], o)
    compare("flash_attention", f"lse_{tag}", out["lse"], jax.nn.logsumexp(scores, axis=-1))


def test_fused_cross_entropy(tmp_path: Path) -> None:
    b, h, v, z = 24, 48, 200, 1e-2
    x, w = uniform(b, h), uniform(h, v)
    labels = RNG.integers(0, v, b).astype(np.int32)
    labels[[3, 17]] = -1  # ignored rows
    dloss = RNG.uniform(0.5, 1.5, b).astype(np.float32)
    out = run_reference("fused_cross_entropy", tmp_path, {"x": x, "w": w, "labels": labels, "dloss": dloss},
                        {"loss": (b,), "lse": (b,), "dx": (b, h), "dw": (h, v)}, b=b, h=h, v=v, z_loss_weight=z)
    lab = jnp.asarray(labels)

    def losses(x64: jax.Array, w64: jax.Array) -> tuple[jax.Array, jax.Array]:
        logits = x64 @ w64
        lse = jax.nn.logsumexp(logits, axis=-1)
        picked = jnp.take_along_axis(logits, jnp.maximum(lab, 0)[:, None], axis=-1)[:, 0]
        return jnp.where(lab >= 0, lse - picked + z * lse * lse, 0.0), lse

    x64, w64, d64 = (jnp.asarray(a, jnp.float64) for a in (x, w, dloss))
    loss, lse = losses(x64, w64)
    dx, dw = jax.grad(lambda a, bb: jnp.sum(losses(a, bb)[0] * d64), argnums=(0, 1))(x64, w64)
    compare("fused_cross_entropy", "loss", out["loss"], loss)
    compare("fused_cross_entropy", "lse", out["lse"], lse)
    compare("fused_cross_entropy", "dx", out["dx"], dx)
    compare("fused_cross_entropy", "dw", out["dw"], dw)


def test_grouped_matmul(tmp_path: Path) -> None:
    if not hasattr(jax.lax, "ragged_dot"):
        pytest.skip("this JAX has no jax.lax.ragged_dot")
    m, k, n, groups = 90, 40, 36, 5
    sizes = np.array([20, 0, 31, 7, 22], np.int32)  # sum 80 < m: the last 10 rows are zero
    lhs, rhs = uniform(m, k), uniform(groups, k, n)
    out = run_reference("grouped_matmul", tmp_path, {"group_sizes": sizes, "lhs": lhs, "rhs": rhs},
                        {"out": (m, n)}, m=m, k=k, n=n, groups=groups)
    theirs = jax.lax.ragged_dot(jnp.asarray(lhs, jnp.float64), jnp.asarray(rhs, jnp.float64), jnp.asarray(sizes))
    assert np.all(out["out"][80:] == 0)
    compare("grouped_matmul", "out", out["out"], theirs)


def test_ragged_paged_attention(tmp_path: Path) -> None:
    heads, kv_heads, d, page_size, pages_per_seq = 4, 2, 32, 8, 6
    kv_lens = np.array([37, 8, 45], np.int32)
    q_lens = np.array([37, 1, 5], np.int32)  # a prefill, a decode, a chunked prefill
    num_seqs, num_pages = len(kv_lens), 24
    cu = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    total = int(cu[-1])
    pages = RNG.permutation(num_pages)[:num_seqs * pages_per_seq].reshape(num_seqs, pages_per_seq).astype(np.int32)
    q = uniform(total, heads, d)
    kp, vp = uniform(num_pages, page_size, kv_heads, d), uniform(num_pages, page_size, kv_heads, d)
    out = run_reference("ragged_paged_attention", tmp_path,
                        {"q": q, "k_pages": kp, "v_pages": vp, "kv_lens": kv_lens, "page_indices": pages,
                         "cu_q_lens": cu}, {"out": (total, heads, d)},
                        num_seqs=num_seqs, total_q_tokens=total, num_pages=num_pages, page_size=page_size,
                        pages_per_seq=pages_per_seq, heads=heads, kv_heads=kv_heads, head_dim=d)
    parts = []
    for s in range(num_seqs):
        kv_len, q_len = int(kv_lens[s]), int(q_lens[s])
        # Gather the sequence's pages into contiguous K, V [kv_len, kv_heads, d].
        k_seq = jnp.asarray(kp, jnp.float64)[pages[s]].reshape(-1, kv_heads, d)[:kv_len]
        v_seq = jnp.asarray(vp, jnp.float64)[pages[s]].reshape(-1, kv_heads, d)[:kv_len]
        q_seq = jnp.asarray(q[cu[s]:cu[s + 1]], jnp.float64)
        # The queries are the last q_len tokens: query i sees kv positions <= kv_len - q_len + i.
        mask = jnp.arange(kv_len)[None, :] <= (kv_len - q_len + jnp.arange(q_len))[:, None]
        parts.append(jax.nn.dot_product_attention(q_seq[None], k_seq[None], v_seq[None], mask=mask[None, None])[0])
    compare("ragged_paged_attention", "out", out["out"], jnp.concatenate(parts))


def test_write_summary() -> None:
    """Runs last (file order): the errors of every comparison above, for docs/python.md."""
    assert len(RESULTS) == 11, sorted(RESULTS)
    (BUILD / "peer_oracle.json").write_text(json.dumps(RESULTS, indent=1, sort_keys=True) + "\n")
