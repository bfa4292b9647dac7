"""blocktune.tables against the generated C++ headers: every checked-in row of every kernel is
looked up (its own key, dtype and bucket, plus keys around it: other thread counts, another CPU
model, another ISA level and vendor, a prefix; and shapes one below and one above each bucket
dim) through the Python tables, the JSON tables and the headers (tests/python/table_lookups.cc),
and all three must give the same config, source, matched key and bucket."""

from __future__ import annotations

import subprocess

import pytest

from blocktune import tables
from conftest import BUILD, SOURCE

# Every kernel with a checked-in table (tests/python/table_lookups.cc answers for each).
KERNELS = sorted(p.name.removesuffix("_tuned_block_sizes.py")
                 for p in (SOURCE / "tables" / "python").glob("*_tuned_block_sizes.py"))


def dims_of(table: tables.Table, bucket: str) -> dict[str, int]:
    out, rest = {}, bucket
    for name, _, _, _ in table.bucket_dims:
        assert rest.startswith(name), (bucket, name)
        head, _, rest = rest[len(name):].partition("_")
        out[name] = int(head)
    return out


def keys_around(key: str) -> list[str]:
    p = key.split(".")
    keys = {key, ".".join(p[:-1]), key + ".extra"}
    if len(p) == 5:
        keys.update(".".join(p[:4] + [t]) for t in ("t1", "t2", "t3"))
        keys.add(".".join(p[:3] + ["fam99_mod99", p[4]]))
        keys.add(".".join(p[:2] + ["other"] + p[3:]))
        keys.update(".".join([p[0], isa] + p[2:]) for isa in ("avx512", "avx2", "base"))
    return sorted(keys)


def queries(table: tables.Table) -> list[tuple[str, str, dict[str, int]]]:
    out = []
    seen = set()
    for (hw, dtype, bucket) in sorted(table.rows):
        base = dims_of(table, bucket)
        shapes = [base]
        for name, _, lo, hi in table.bucket_dims:
            shapes.append({**base, name: max(lo, base[name] - 1)})
            shapes.append({**base, name: min(hi, base[name] + 1)})
        for key in keys_around(hw):
            for d in ("f32", "bf16"):
                for s in shapes:
                    q = (key, d, tuple(s[n] for n, _, _, _ in table.bucket_dims))
                    if q not in seen:
                        seen.add(q)
                        out.append((key, d, s))
    return out


@pytest.mark.parametrize("kernel", KERNELS)
def test_same_answers_as_the_cpp_header(kernel: str) -> None:
    py = tables.load_python(SOURCE / "tables" / "python" / f"{kernel}_tuned_block_sizes.py")
    js = tables.load_json(SOURCE / "tables" / "json" / f"{kernel}_tuned_block_sizes.json")
    assert py.rows == js.rows and py.default == js.default and py.bucket_dims == js.bucket_dims
    assert py.rows, "no checked-in rows"
    qs = queries(py)
    lines = "".join(f"{kernel} {k} {d} " + " ".join(str(s[n]) for n, _, _, _ in py.bucket_dims) + "\n"
                    for k, d, s in qs)
    cpp = subprocess.run([str(BUILD / "tests" / "python" / "table_lookups")], input=lines, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert len(cpp) == len(qs)
    sources = set()
    for (key, dtype, dims), line in zip(qs, cpp):
        source, hw, bucket, cfg = line.split(" ")
        expected = tables.Resolution({k: int(v) for k, v in (kv.split("=") for kv in cfg.split(","))}, source,
                                     None if hw == "-" else hw, bucket)
        assert py.lookup(key, dtype, **dims) == expected, (key, dtype, dims)
        assert js.lookup(key, dtype, **dims) == expected, (key, dtype, dims)
        sources.add(source)
    assert sources == {"tuned", "tuned_fallback", "default"}  # every level of the chain was exercised
    # And each row answers for itself, exactly.
    for (hw, dtype, bucket), config in py.rows.items():
        r = js.lookup(hw, dtype, **dims_of(py, bucket))
        assert (r.source, r.hardware, r.bucket, r.config) == ("tuned", hw, bucket, config)


def test_load_dir_and_missing_dim() -> None:
    for folder in ("python", "json"):
        ts = tables.load_dir(SOURCE / "tables" / folder)
        assert sorted(ts) == KERNELS
    t = tables.load(SOURCE / "tables" / "json" / "matmul_tuned_block_sizes.json")
    with pytest.raises(KeyError):
        t.lookup("x86_64.avx2", "f32", m=1, n=1)
    d = t.lookup("riscv64.base.other.fam0_mod0.t1", "f32", m=1000, n=1000, k=1000)
    assert d.source == "default" and d.config == t.default and d.hardware is None
