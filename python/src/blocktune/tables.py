"""Lookups in blocktune's generated tables without a daemon: the Python modules
(tables/python/<kernel>_tuned_block_sizes.py) or the JSON files (tables/json/), answered with the
precedence of the C++ header (tuned -> tuned_fallback -> default, never another ISA level or
vendor). Lookups default to this process's device key (blocktune.device_key()). The
precedence is not written here: a Python table answers through its own generated
infer_block_sizes, a JSON table through blocktune._resolve, which is the generator's
blocktune_resolve.py itself (a link to tables/python/blocktune_resolve.py in the source tree).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from . import _resolve
from ._probe import device_key

Config = dict[str, int]


@dataclass(frozen=True, slots=True)
class Resolution:
    """A table's answer: config, source (tuned, tuned_fallback, default), the key of the row
    that answered (None for the default) and the problem's bucket id."""

    config: Config
    source: str
    hardware: str | None
    bucket: str


class Table:
    """One kernel's table. lookup(hardware_key, dtype, **dims) answers like the C++ header's
    LookupBlockSizes; every dim of `bucket_dims` is required. hardware_key None (the default)
    is this process's device: blocktune.device_key() (the GPU or TPU JAX, PyTorch or CuPy runs
    on, else this host's CPU at 1 thread; BLOCKTUNE_HARDWARE overrides it)."""

    def __init__(self, kernel: str, params: tuple[str, ...], default: Config,
                 bucket_dims: tuple[tuple[str, str, int, int], ...], bucket_version: int,
                 rows: dict[tuple[str, str, str], Config],
                 infer: Callable[..., tuple[Any, str, str | None, str]]) -> None:
        self.kernel = kernel
        self.params = params
        self.default = default
        self.bucket_dims = bucket_dims
        self.bucket_version = bucket_version
        self.rows = rows  # (hardware, dtype, bucket) -> config
        self._infer = infer

    def lookup(self, hardware_key: str | None = None, dtype: str = "f32", **dims: int) -> Resolution:
        if hardware_key is None:
            hardware_key = device_key()
        missing = [d[0] for d in self.bucket_dims if d[0] not in dims]
        if missing:
            raise KeyError(f"{self.kernel}: missing dims {missing} (needs {[d[0] for d in self.bucket_dims]})")
        config, source, hw, bucket = self._infer(hardware_key, dtype, **dims)
        return Resolution(dict(config), source, hw, bucket)

    def bucket_id(self, **dims: int) -> str:
        return _resolve.bucket_id(self.bucket_dims, dims)


def load_python(path: str | os.PathLike[str]) -> Table:
    """A generated <kernel>_tuned_block_sizes.py (its blocktune_resolve.py beside it)."""
    p = Path(path)
    mod = _import_file(p)
    kernel = p.name.removesuffix("_tuned_block_sizes.py")
    rows = {k: dict(v[0]) for k, v in mod.TUNED.items()}
    return Table(kernel, tuple(mod.PARAMS), dict(mod.DEFAULT), tuple(mod.BUCKET_DIMS), int(mod.BUCKET_VERSION),
                 rows, mod.infer_block_sizes)


def load_json(path: str | os.PathLike[str]) -> Table:
    """A generated <kernel>_tuned_block_sizes.json."""
    with open(path, encoding="utf-8") as f:
        j = json.load(f)
    dims = tuple((d["name"], d["rounding"], int(d["min"]), int(d["max"])) for d in j["bucket_dims"])
    default = {k: int(v) for k, v in j["default"].items()}
    # The Python modules' TUNED layout: (hardware, dtype, bucket) -> (config, ...).
    tuned = {(r["hardware"], r["dtype"], r["bucket"]): ({k: int(v) for k, v in r["config"].items()},)
             for r in j["rows"]}
    table = _resolve.Table(tuned, default, dims)

    def infer(hardware_key: str, dtype: str, **values: int) -> tuple[Any, str, str | None, str]:
        return table.lookup(hardware_key, dtype, _resolve.bucket_values(dims, values))

    rows = {k: dict(v[0]) for k, v in tuned.items()}
    return Table(str(j["kernel"]), tuple(j["params"]), default, dims, int(j["bucket_version"]), rows, infer)


def load(path: str | os.PathLike[str]) -> Table:
    """load_python or load_json by the file's extension."""
    return load_json(path) if str(path).endswith(".json") else load_python(path)


def load_dir(directory: str | os.PathLike[str]) -> dict[str, Table]:
    """Every *_tuned_block_sizes.py or .json table of a folder (tables/python or tables/json), by kernel."""
    out: dict[str, Table] = {}
    for p in sorted(Path(directory).iterdir()):
        if p.name.endswith("_tuned_block_sizes.py") or p.name.endswith("_tuned_block_sizes.json"):
            t = load(p)
            out[t.kernel] = t
    return out


def _import_file(path: Path) -> ModuleType:
    # The generated module imports blocktune_resolve from beside itself (its sys.path fallback),
    # so its folder is on sys.path while it loads. Python caches that module by name: the first
    # folder's serves later ones too, which is the same text (the generator writes one file).
    folder = str(path.parent.resolve())
    name = f"_blocktune_table_{abs(hash((folder, path.name)))}"
    if name in sys.modules:
        return sys.modules[name]
    added = folder not in sys.path
    if added:
        sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {path}")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    finally:
        if added:
            sys.path.remove(folder)
    return mod
