#!/usr/bin/env python3
"""The runner of `deploy/device-check.sh --fake-device`: stands in for examples/pallas/runner.py
on a host without a GPU, so the device check's whole path (the device line, sweeps filed under
the GPU's key, the generated tables, the re-timing against the default) runs end to end.

It speaks the runner protocol (docs/external-kernels.md) for the three Pallas specs, announces
an NVIDIA H200 on fd 3 before its first answer (or the identity in BLOCKTUNE_FAKE_DEVICE), and
answers each config with times from a cost model of that GPU instead of running anything: a
roofline (989 TFLOP/s bf16, 495 TF32, 4.8 TB/s) scaled by how well the config's tiles, warps
and pipeline stages use it and by how evenly its programs fill 132 SMs, 1% of seeded noise per
repetition. A config whose tiles need more than 227 KiB of shared memory is compile_failed, as
Triton fails it. It sleeps as long as a real runner's repetitions would take (each at least
min_time_ms), so the sweep's wall time is that of a device that fast. Standard library only; the model is not a measurement.
"""
import hashlib
import json
import math
import os
import sys
import time

H200 = {"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm90", "memory_bytes": 150754820096,
        "driver": "fake", "runtime": "fake device (deploy/device_check/fake_runner.py)", "platform": "fake"}
SMS = 132
SMEM = 227 * 1024
PEAK = {"bf16": 989e12, "f32": 495e12}  # TF32 dots for f32
BANDWIDTH = 4.8e12
LAUNCH_S = 4e-6


def fill(programs):
    """How evenly `programs` fill the SMs: 1 for whole waves, less for a last partial wave."""
    waves = math.ceil(programs / SMS)
    return programs / (waves * SMS)


def warp_fit(warps, tile_elems):
    """Warps suited to a tile: about one per 2048 output elements, 2 to 8."""
    ideal = max(2, min(8, tile_elems // 2048))
    return 1 / (1 + 0.3 * abs(math.log2(warps / ideal)))


STAGES = {1: 0.72, 2: 0.9, 3: 1.0, 4: 0.96}


def flash(shape, dtype, c):
    b, h, s, d = shape["batch"], shape["heads"], shape["seq"], shape["head_dim"]
    size = 2 if dtype == "bf16" else 4
    bq, bk, w, st = c["block_q"], c["block_k"], c["num_warps"], c["num_stages"]
    smem = (bq + 2 * bk * st) * d * size
    if smem > SMEM:
        return None, f"shared memory: {smem // 1024} KiB needed, {SMEM // 1024} KiB per block on sm90"
    flops = 2 * b * h * s * s * d  # causal: half of 4 * b * h * s^2 * d
    tile = min(1.0, bq * bk / (128 * 64)) ** 0.4
    eff = 0.72 * tile * warp_fit(w, bq * d) * STAGES[st] * fill(b * h * (s // bq))
    return flops / (PEAK[dtype] * eff) + LAUNCH_S, None


def grouped_matmul(shape, dtype, c):
    m, k, n, g = shape["m"], shape["k"], shape["n"], shape["groups"]
    size = 2 if dtype == "bf16" else 4
    tm, tk, tn, w, st = c["tile_m"], c["tile_k"], c["tile_n"], c["num_warps"], c["num_stages"]
    smem = (tm + tn) * tk * size * st
    if smem > SMEM:
        return None, f"shared memory: {smem // 1024} KiB needed, {SMEM // 1024} KiB per block on sm90"
    flops = 2 * m * k * n
    # Visits of tiles straddling groups (one per group boundary) and the tile shape's reuse.
    visits = m // tm + g
    tile = min(1.0, tm * tn / (128 * 128)) ** 0.45 * min(1.0, tk / 64) ** 0.2
    eff = 0.7 * tile * warp_fit(w, tm * tn) * STAGES[st] * fill(visits * (n // tn)) * (m / tm) / visits
    return flops / (PEAK[dtype] * eff) + LAUNCH_S, None


def ragged_paged_attention(shape, dtype, c):
    t, qh, kvh, d = shape["tokens"], shape["q_heads"], shape["kv_heads"], shape["head_dim"]
    page, pages = shape["page_size"], shape["pages_per_seq"]
    size = 2 if dtype == "bf16" else 4
    nq, npg, w, st = c["num_queries_per_block"], c["num_kv_pages_per_block"], c["num_warps"], c["num_stages"]
    smem = (nq + 2 * npg * page * st) * d * size
    if smem > SMEM:
        return None, f"shared memory: {smem // 1024} KiB needed, {SMEM // 1024} KiB per block on sm90"
    # Memory bound: the cache a decode reads, half the tokens' sequences at full length.
    cache = (t // 2 + 1) * pages * page * kvh * d * 2 * size
    kv_tile = npg * page
    reuse = min(1.0, kv_tile / 64) ** 0.5 * min(1.0, nq / 32) ** 0.2
    eff = 0.8 * reuse * warp_fit(w, nq * d) * STAGES[st] * fill(max(1, t // nq) * kvh)
    return cache / (BANDWIDTH * eff) + LAUNCH_S, None


MODELS = {"pallas_flash_attention": flash, "pallas_grouped_matmul": grouped_matmul,
          "pallas_ragged_paged_attention": ragged_paged_attention}


def noise(req, rep):
    h = hashlib.sha256(json.dumps([req["kernel"], req["dtype"], req["shape"], req["config"], rep],
                                  sort_keys=True).encode()).digest()
    return 1 + 0.01 * (int.from_bytes(h[:4], "little") / 2**32 - 0.5) * 2


def answer(req):
    model = MODELS.get(req["kernel"])
    if model is None:
        return {"outcome": "invalid", "message": f"the fake device models {sorted(MODELS)}, not {req['kernel']}"}
    seconds, failure = model(req["shape"], req["dtype"], req["config"])
    if failure is not None:
        return {"outcome": "compile_failed", "message": failure}
    times = [seconds * 1e3 * noise(req, r) for r in range(max(1, int(req.get("repetitions", 1))))]
    # A real runner loops each repetition to at least min_time_ms; so long does this one take.
    time.sleep(sum(max(t, float(req.get("min_time_ms", 0))) for t in times) / 1e3)
    return {"times_ms": times}


def main():
    identity = os.environ.get("BLOCKTUNE_FAKE_DEVICE") or json.dumps(H200)
    out = os.fdopen(3, "w", buffering=1)
    announced = False
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = answer(json.loads(line))
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
            reply = {"outcome": "runtime_failed", "message": f"fake runner: {type(e).__name__}: {e}"}
        if not announced:
            out.write(json.dumps({"device": json.loads(identity)}) + "\n")
            announced = True
        out.write(json.dumps(reply) + "\n")


if __name__ == "__main__":
    main()
