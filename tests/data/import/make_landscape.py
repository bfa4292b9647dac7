#!/usr/bin/env python3
"""Writes a synthetic Kernel Tuner cache (1.x layout, failures under __error__) of a GPU-like
tiled kernel for `blocktune simulate` on imported data (docs/external-kernels.md#simulate).

SYNTHETIC: the times come from a model below, not from a GPU. 7 x 6 x 6 x 5 x 2 x 3 = 7560
configs, of which the restriction 32 <= block_size_x * block_size_y <= 1024 keeps 5760 (Kernel
Tuner does not store restricted configs); 3 failure regions: register spill (compile failed),
shared memory overflow (runtime failed), an unsupported variant (invalid). Deterministic.
  make_landscape.py OUT.json
"""
import itertools
import json
import math
import random
import sys

bx_values = [16, 32, 48, 64, 96, 128, 256]
by_values = [1, 2, 4, 8, 16, 32]
tx_values = [1, 2, 3, 4, 6, 8]
ty_values = [1, 2, 3, 4, 8]
shmem_values = [0, 1]
variant_values = [0, 1, 2]
keys = ["block_size_x", "block_size_y", "tile_size_x", "tile_size_y", "use_shmem", "variant"]
rng = random.Random(20261125)

cache = {}
for bx, by, tx, ty, sh, var in itertools.product(bx_values, by_values, tx_values, ty_values, shmem_values, variant_values):
    threads = bx * by
    if not 32 <= threads <= 1024:
        continue
    entry = dict(zip(keys, [bx, by, tx, ty, sh, var]))
    key = ",".join(str(v) for v in entry.values())
    error = None
    if threads * tx * ty > 16384:
        error = "CompilationFailedConfig"          # registers: too many outputs per block
    elif sh and threads * ty * 4 > 6144:
        error = "RuntimeFailedConfig"              # shared memory per block exceeded
    elif var == 2 and tx == 3:
        error = "InvalidConfig"                    # variant 2 needs an even tile
    if error:
        entry["time"] = 1e20
        entry["__error__"] = error
    else:
        occupancy = min(1.0, threads / 256.0) * (1.0 if threads <= 512 else 0.85)
        work = 1.0 / (tx * ty) ** 0.45 + 0.08 * (tx * ty) ** 0.6   # reuse vs register pressure
        coalesce = 1.0 if bx >= 32 else 1.6
        shared = 0.78 if sh else 1.0
        odd = 1.12 if bx % 3 == 0 or tx % 3 == 0 or ty % 3 == 0 else 1.0
        var_f = [1.0, 0.93, 0.97][var] * (1.1 if var == 1 and sh == 0 else 1.0)
        t = 2.0 * work * coalesce * shared * odd * var_f / occupancy
        times = [t * math.exp(rng.gauss(0, 0.02)) for _ in range(5)]
        entry["time"] = sum(times) / len(times)
        entry["times"] = times
    cache[key] = entry

doc = {
    "version": "1.1",
    "device_name": "Synthetic GPU model (not measured)",
    "kernel_name": "synthetic_tiled",
    "problem_size": [4096, 4096],
    "tune_params_keys": keys,
    "tune_params": dict(zip(keys, [bx_values, by_values, tx_values, ty_values, shmem_values, variant_values])),
    "objective": "time",
    "cache": cache,
}
with open(sys.argv[1], "w") as f:
    json.dump(doc, f)
print(len(cache), "configs,", sum(1 for e in cache.values() if "__error__" in e), "failed", file=sys.stderr)
