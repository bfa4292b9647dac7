#!/usr/bin/env python3
"""Part of deploy/device-check.sh: the Pallas flash attention of examples/pallas, with the block
sizes the generated table gives this device (tables/python/pallas_flash_attention_tuned_block_sizes.py,
looked up with blocktune.device_key()) and with its default, against jax.nn.dot_product_attention's
XLA and cuDNN implementations, causal, on the shapes the check swept. Each is compiled once and
timed as the median of `--repetitions` runs of calls looped to at least `--min-time-ms`, the four
of a shape interleaved (one repetition of each in turn), so drift hits them alike.

  attention.py --tables DIR --shape batch=4,heads=16,seq=1024,head_dim=64 [--shape ...]
               --dtype bf16 [--dtype f32] [--fake-device] [--repetitions 5] [--min-time-ms 20]

Writes one JSON object to stdout: {"key": ..., "rows": [{shape, dtype, bucket, source, config,
"pallas_tuned_ms", "pallas_default_ms", "xla_ms", "cudnn_ms", ...}]}, a time null with a
"<name>_error" where that implementation did not run (cuDNN's attention takes no f32). With
--fake-device nothing is timed: the table is looked up under the fake device's key (the
generated module's path) and every time is null.
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "..")


def parse_shape(text):
    dims = {}
    for part in text.split(","):
        name, value = part.split("=")
        dims[name] = int(value)
    return dims


def table(tables_dir):
    sys.path.insert(0, os.path.join(tables_dir, "python"))
    return importlib.import_module("pallas_flash_attention_tuned_block_sizes")


def timer(fn, args, block, min_time_ms):
    """Calls per repetition so one lasts at least min_time_ms (from one call timed alone)."""
    block(fn(*args))
    t0 = time.perf_counter()
    block(fn(*args))
    once = max(time.perf_counter() - t0, 1e-7)
    iters = max(1, int(min_time_ms / 1000 / once + 0.999))

    def one():
        t = time.perf_counter()
        for _ in range(iters):
            out = fn(*args)
        block(out)
        return (time.perf_counter() - t) / iters * 1e3

    return one


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", required=True)
    ap.add_argument("--shape", action="append", required=True)
    ap.add_argument("--dtype", action="append", required=True)
    ap.add_argument("--fake-device", action="store_true")
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time-ms", type=float, default=20)
    a = ap.parse_args()
    t = table(a.tables)
    rows = []
    if a.fake_device:
        key = os.environ.get("BLOCKTUNE_FAKE_KEY", "gpu.nvidia.sm90.h200")
        for shape in map(parse_shape, a.shape):
            for dtype in a.dtype:
                config, source, hw, bucket = t.infer_block_sizes(key, dtype, **shape)
                rows.append({"shape": shape, "dtype": dtype, "bucket": bucket, "source": source, "config": config,
                             "pallas_tuned_ms": None, "pallas_default_ms": None, "xla_ms": None, "cudnn_ms": None,
                             "note": "fake device: nothing timed"})
        json.dump({"key": key, "fake_device": True, "rows": rows}, sys.stdout)
        return

    import jax
    import jax.numpy as jnp

    sys.path.insert(0, os.path.join(SRC, "examples", "pallas"))
    sys.path.insert(0, os.path.join(SRC, "python", "src"))
    import blocktune
    import problems

    key = blocktune.device_key()
    fa = problems.FlashAttention()
    for shape in map(parse_shape, a.shape):
        for dtype in a.dtype:
            config, source, hw, bucket = t.infer_block_sizes(key, dtype, **shape)
            q, k, v = fa.inputs(shape, problems.dtype_of(dtype))
            # jax.nn.dot_product_attention takes [batch, seq, heads, head_dim].
            qt, kt, vt = (jnp.swapaxes(x, 1, 2) for x in (q, k, v))
            impls = {
                "pallas_tuned": (jax.jit(fa.function(config, False)), (q, k, v)),
                "pallas_default": (jax.jit(fa.function(dict(t.DEFAULT), False)), (q, k, v)),
            }
            for name in ("xla", "cudnn"):
                impls[name] = (jax.jit(lambda q, k, v, name=name: jax.nn.dot_product_attention(
                    q, k, v, is_causal=True, implementation=name)), (qt, kt, vt))
            row = {"shape": shape, "dtype": dtype, "bucket": bucket, "source": source, "config": config}
            runs = {}
            for name, (fn, args) in impls.items():
                try:
                    runs[name] = timer(fn, args, jax.block_until_ready, a.min_time_ms)
                except Exception as e:  # noqa: BLE001 - an implementation this JAX or dtype lacks
                    row[name + "_ms"] = None
                    row[name + "_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
            samples = {name: [] for name in runs}
            for _ in range(a.repetitions):
                for name, one in runs.items():
                    samples[name].append(one())
            for name, s in samples.items():
                row[name + "_ms"] = statistics.median(s)
            rows.append(row)
    json.dump({"key": key, "fake_device": False, "jax": jax.__version__, "rows": rows}, sys.stdout)


if __name__ == "__main__":
    main()
