#!/usr/bin/env python3
"""Using the tuned table from JAX code, in the seeds' style: the generated
jax_flash_attention_tuned_block_sizes module (blocktune tables generate, tables/python/) answers
infer_block_sizes(hardware key, dtype, dims) with the tuned config of this machine, a fallback
row of the same CPU family, or the spec's default, and attention() passes the answer as the
static block sizes of the jit-compiled kernel.

  python3 app.py [--tables DIR] [--hardware KEY] [--seq N] [--heads H] [--head-dim D]

DIR holds the generated module (default: this folder, which has the table generated from the
sweep in docs/python.md); KEY defaults to blocktune.device_key() (BLOCKTUNE_HARDWARE if set, else
the device JAX runs on). Prints one JSON line: the config, where it came from and the max error
against the reference.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import flash_attention as fa  # noqa: E402


def fit(block: int, seq: int) -> int:
    """The bucket rounds seq up to a power of two, so a tuned block may not divide this seq:
    halve it until it does (the kernel needs whole blocks)."""
    block = min(block, seq)
    while seq % block:
        block //= 2
    return max(block, 1)


def attention(q, k, v, *, tuned, hardware_key: str):
    """Causal self-attention with the tuned block sizes of this problem's bucket."""
    heads, seq, head_dim = q.shape
    config, source, _, bucket = tuned.infer_block_sizes(hardware_key, "f32", heads=heads, seq=seq, head_dim=head_dim)
    bq, bkv = fit(config["block_q"], seq), fit(config["block_kv"], seq)
    return fa.flash_attention(q, k, v, block_q=bq, block_kv=bkv, causal=True), config, source, bucket


def host_key() -> str:
    """This process's hardware key: blocktune.device_key(), which is BLOCKTUNE_HARDWARE if set,
    else the device JAX runs on (this host's CPU here, its key computed as the C++ does)."""
    from blocktune import device_key

    return device_key()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tables", default=HERE)
    ap.add_argument("--hardware")
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--head-dim", type=int, default=32)
    args = ap.parse_args()
    sys.path.insert(0, args.tables)
    tuned = importlib.import_module("jax_flash_attention_tuned_block_sizes")
    key = args.hardware or host_key()
    q, k, v = fa.make_inputs(args.heads, args.seq, args.head_dim, seed=7)
    out, config, source, bucket = attention(q, k, v, tuned=tuned, hardware_key=key)
    err = float(np.max(np.abs(np.asarray(out) - fa.reference(q, k, v, causal=True))))
    print(json.dumps({"hardware": key, "bucket": bucket, "config": config, "source": source,
                      "default": tuned.DEFAULT, "max_abs_err": err}))


if __name__ == "__main__":
    main()
