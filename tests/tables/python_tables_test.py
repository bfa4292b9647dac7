#!/usr/bin/env python3
"""The generated Python tables (tables/python) against a linear reference over their own rows.

infer_block_sizes answers from a Table that resolves each queried (key, dtype) once and rounds
the dims in generated code; this checks every answer (config, source, matched key, bucket id)
against a scan of every row per chain level written here from the precedence in
blocktune/tables/resolve.h, for keys around every row key (other thread counts, other models,
other ISA levels and vendors, prefixes, extensions), every dtype and shapes around every row's
bucket (each dim one below, one above, 0 and huge), asked twice so the second answer comes from
the memo. Usage: python_tables_test.py TABLES_PYTHON_DIR
"""
import importlib
import itertools
import os
import sys


def ref_round(dim, v):
    name, rounding, lo, hi = dim
    v = min(max(int(v), lo), hi)
    if rounding == "pow2_ceil":
        p = 1
        while p < v:
            p *= 2
        v = min(p, hi)
    return v


def ref_chain(key):
    parts = key.split(".")
    chain = [key]
    if len(parts) >= 5:
        chain.append(".".join(parts[:-1]))
    if len(parts) >= 4:
        chain.append(".".join(parts[:3]))
    return chain


def ref_infer(mod, key, dtype, dims):
    values = [ref_round(d, dims[d[0]]) for d in mod.BUCKET_DIMS]
    bucket = "_".join(d[0] + str(v) for d, v in zip(mod.BUCKET_DIMS, values))
    for level, prefix in enumerate(ref_chain(key)):
        hits = sorted(hw for (hw, dt, b) in mod.TUNED if dt == dtype and b == bucket and
                      (hw == prefix if level == 0 else (hw == prefix or hw.startswith(prefix + "."))))
        if hits:
            return mod.TUNED[(hits[0], dtype, bucket)][0], "tuned" if level == 0 else "tuned_fallback", hits[0], bucket
    return mod.DEFAULT, "default", None, bucket


def bucket_values(mod, bucket):
    out, rest = {}, bucket
    for name, _, _, _ in mod.BUCKET_DIMS:
        assert rest.startswith(name), (bucket, name)
        rest = rest[len(name):]
        digits = rest.split("_", 1)
        out[name] = int(digits[0])
        rest = digits[1] if len(digits) > 1 else ""
    return out


def keys_around(row_keys):
    keys = {"", "x86_64", "x86_64.avx2", "x86_64.avx2.amd", "riscv64.base.other.fam0_mod0.t1"}
    for k in row_keys:
        p = k.split(".")
        keys.update({k, k + ".extra", ".".join(p[:-1])})
        if len(p) == 5:
            keys.update(".".join(p[:4] + [t]) for t in ("t1", "t2", "t3", "t64"))
            keys.add(".".join(p[:3] + ["fam99_mod99", p[4]]))
            keys.add(".".join(p[:2] + ["via"] + p[3:]))
            keys.update(".".join([p[0], isa] + p[2:]) for isa in ("avx512", "avx2", "base"))
            keys.add(".".join(["aarch64"] + p[1:]))
    return sorted(keys)


def check(mod):
    shapes = set()
    for (_, _, b) in mod.TUNED:
        base = bucket_values(mod, b)
        shapes.add(tuple(sorted(base.items())))
        for name in base:
            for v in (base[name] - 1, base[name] + 1, 0, 1 << 40):
                s = dict(base)
                s[name] = v
                shapes.add(tuple(sorted(s.items())))
    keys = keys_around({hw for (hw, _, _) in mod.TUNED})
    counts = {"tuned": 0, "tuned_fallback": 0, "default": 0}
    for key, dtype, shape in itertools.product(keys, ("f32", "bf16", "f16", ""), sorted(shapes)):
        dims = dict(shape)
        want = ref_infer(mod, key, dtype, dims)
        for attempt in range(2):
            got = mod.infer_block_sizes(key, dtype, **dims)
            assert got == want, (mod.__name__, key, dtype, dims, attempt, got, want)
            assert got[3] == mod.bucket_id(**dims), (got[3], mod.bucket_id(**dims))
        counts[got[1]] += 1
        got[0]["mutated"] = 1  # the answer is the caller's copy: the table is not changed
    assert counts["tuned"] and counts["tuned_fallback"] and counts["default"], (mod.__name__, counts)
    return counts


def main():
    folder = sys.argv[1]
    sys.path.insert(0, folder)
    names = sorted(f[:-3] for f in os.listdir(folder) if f.endswith("_tuned_block_sizes.py"))
    assert names, "no generated tables in " + folder
    for name in names:
        counts = check(importlib.import_module(name))
        print(name, counts)


if __name__ == "__main__":
    main()
