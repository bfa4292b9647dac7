"""blocktune.device_key() and the identity behind it: the key derivation against the shared
vectors (tests/data/device_keys.json, which the C++ tests read too), this host's CPU key against
the daemon's (the C++ HostHardware, with and without BLOCKTUNE_ISA), the framework probes on
stand-in JAX, PyTorch and CuPy modules, the environment overrides, and the cache."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

import blocktune
from blocktune import Client, DeviceIdentity, InvalidIdentity, _host, _probe, derive_key
from conftest import SOURCE, start_daemon, stop_daemon

VECTORS = json.loads((SOURCE / "tests" / "data" / "device_keys.json").read_text())


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("BLOCKTUNE_DEVICE", "BLOCKTUNE_HARDWARE", "BLOCKTUNE_ISA"):
        monkeypatch.delenv(var, raising=False)
    _probe.reset()
    yield
    _probe.reset()


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v.get("key") or v.get("error") or "host_cpu")
def test_vectors(vector: dict[str, Any]) -> None:
    ident = vector["identity"]
    if "error" in vector:
        with pytest.raises(InvalidIdentity) as e:
            derive_key(ident)
        assert e.value.field == vector["error"]
        assert str(e.value).startswith(vector["error"] + ": ")
    elif vector.get("host_cpu"):
        assert derive_key(ident) == blocktune.host_cpu_key(1)
    else:
        assert derive_key(ident) == vector["key"]
        assert DeviceIdentity.from_json(ident).key() == vector["key"]


def test_vectors_cover_the_rules() -> None:
    keys = {v["key"] for v in VECTORS if "key" in v}
    assert {"gpu.nvidia.sm90.h200", "gpu.nvidia.sm90.h100", "gpu.nvidia.sm80.a100", "gpu.nvidia.sm86.rtx_a4000",
            "gpu.amd.gfx90a.mi250x", "gpu.amd.gfx1032.pro_w6600", "tpu.google.v5e"} <= keys
    assert all(len(k) <= 128 and all(s and s.replace("_", "a").isalnum() and s == s.lower() for s in k.split("."))
               for k in keys)
    assert sum("error" in v for v in VECTORS) >= 8


def test_identity_json_is_validated() -> None:
    good = {"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm90", "memory_bytes": 1,
            "driver": "570.86.15", "runtime": "jax 0.11.0", "platform": "jax"}
    assert DeviceIdentity.from_json(good).to_json() == good
    for bad, field in (({**good, "colour": "green"}, "device.colour"), ({**good, "memory_bytes": -1}, "device.memory_bytes"),
                       ({**good, "memory_bytes": True}, "device.memory_bytes"), ({**good, "model": 7}, "device.model"),
                       ({**good, "driver": "x" * 300}, "device.driver"), ({**good, "arch": "!!"}, "device.arch"),
                       # Control characters, refused as external/device.cc refuses them (byte 0 too).
                       ({**good, "model": "H200\n"}, "device.model"), ({**good, "runtime": "\x1b[31m"}, "device.runtime"),
                       ({**good, "platform": "\x7f"}, "device.platform")):
        with pytest.raises(InvalidIdentity) as e:
            DeviceIdentity.from_json(bad)
        assert e.value.field == field, e.value
    with pytest.raises(InvalidIdentity):
        DeviceIdentity.from_json(["gpu"])  # type: ignore[arg-type]


AMD = {"vendor_id": "AuthenticAMD", "cpu family": "25", "model": "17", "model name": "AMD EPYC 9654",
       "flags": "fpu avx2 fma avx512f avx512bw avx512dq avx512vl"}
INTEL_AVX2 = {"vendor_id": "GenuineIntel", "cpu family": "6", "model": "85", "flags": "avx avx2 fma"}


def test_cpu_key_from_cpuinfo_and_isa_override() -> None:
    amd = _host.native_cpu(AMD, "x86_64")
    assert _host.cpu_key(amd, 1) == "x86_64.avx512.amd.fam25_mod17.t1"
    assert _host.cpu_key(_host.host_cpu("avx2", amd), 4) == "x86_64.avx2.amd.fam25_mod17.t4"
    assert _host.cpu_key(_host.host_cpu("portable", amd), 1) == "x86_64.base.amd.fam25_mod17.t1"
    intel = _host.native_cpu(INTEL_AVX2, "x86_64")
    assert _host.cpu_key(intel, 2) == "x86_64.avx2.intel.fam6_mod85.t2"
    # As the C++ header: a level the CPU cannot run, or a misspelt one, is ignored.
    assert _host.host_cpu("avx512", intel).isa == "avx2"
    assert _host.host_cpu("avx-2", intel).isa == "avx2"
    no_fma = _host.native_cpu({**INTEL_AVX2, "flags": "avx2"}, "x86_64")
    assert no_fma.isa == "base"
    other = _host.native_cpu({"vendor_id": "HygonGenuine", "cpu family": "24", "model": "0"}, "x86_64")
    assert _host.cpu_key(other, 1) == "x86_64.base.other.fam24_mod0.t1"
    assert _host.cpu_key(_host.native_cpu({}, "aarch64"), 1) == "aarch64.base.unknown.fam0_mod0.t1"


@pytest.mark.parametrize("isa", ["", "avx2", "base"])
def test_cpu_key_equals_the_daemons(isa: str, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The C++ (blocktuned's HostHardware, GET /v1/hardware/host) and Python agree on this host,
    natively and with BLOCKTUNE_ISA lowering the level, at 1 and 3 threads."""
    native = _host.native_cpu()
    if isa and _host._RANK[isa] > _host._RANK[native.isa]:
        pytest.skip(f"this CPU does not run {isa}")
    if isa:
        monkeypatch.setenv("BLOCKTUNE_ISA", isa)
    monkeypatch.setenv("BLOCKTUNE_NO_EXCHANGE_LOG", "1")
    d = start_daemon(tmp_path, f"device_{isa or 'native'}")
    try:
        c = Client(d.url, token=d.token)
        for threads in (1, 3):
            assert blocktune.host_cpu_key(threads) == c.host_hardware(threads=threads)["key"]
        assert blocktune.device_key() == c.host_hardware(threads=1)["key"]
    finally:
        stop_daemon(d)


def _fake_jax(platform: str, kind: str, cc: str = "") -> types.ModuleType:
    dev = types.SimpleNamespace(platform=platform, device_kind=kind, compute_capability=cc, id=0,
                                local_hardware_id=0, memory_stats=lambda: {"bytes_limit": 123},
                                client=types.SimpleNamespace(platform_version="cuda 12080"))
    return types.SimpleNamespace(__version__="0.11.0", devices=lambda: [dev])  # type: ignore[return-value]


def test_probes_on_stand_in_frameworks() -> None:
    h200 = _probe.from_jax(_fake_jax("gpu", "NVIDIA H200", "9.0"))
    assert h200 is not None and h200.key() == "gpu.nvidia.sm90.h200"
    assert (h200.platform, h200.runtime) == ("jax", "jax 0.11.0, cuda 12080")
    v5e = _probe.from_jax(_fake_jax("tpu", "TPU v5 lite"))
    assert v5e is not None and v5e.key() == "tpu.google.v5e" and v5e.memory_bytes == 123
    assert _probe.from_jax(_fake_jax("cpu", "cpu")) is None
    mi = _probe.from_jax(_fake_jax("rocm", "AMD Instinct MI250X", "gfx90a"))
    assert mi is not None and mi.key() == "gpu.amd.gfx90a.mi250x"

    props = types.SimpleNamespace(name="NVIDIA A100-SXM4-40GB", major=8, minor=0, total_memory=40 << 30)
    torch = types.SimpleNamespace(__version__="2.9.0", version=types.SimpleNamespace(cuda="12.8", hip=None),
                                  cuda=types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                                                             get_device_properties=lambda i: props))
    a100 = _probe.from_torch(torch)
    assert a100 is not None and a100.key() == "gpu.nvidia.sm80.a100" and a100.memory_bytes == 40 << 30
    torch.cuda.is_available = lambda: False
    assert _probe.from_torch(torch) is None

    rt = types.SimpleNamespace(getDeviceCount=lambda: 1, runtimeGetVersion=lambda: 12080, driverGetVersion=lambda: 12080,
                               getDeviceProperties=lambda i: {"name": b"NVIDIA RTX A4000", "major": 8, "minor": 6,
                                                               "totalGlobalMem": 16 << 30}, is_hip=False)
    cupy = types.SimpleNamespace(__version__="13.6.0", cuda=types.SimpleNamespace(runtime=rt, Device=lambda: types.SimpleNamespace(id=0)))
    a4000 = _probe.from_cupy(cupy)
    assert a4000 is not None and a4000.key() == "gpu.nvidia.sm86.rtx_a4000"


def test_detect_asks_imported_frameworks_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "jax", _fake_jax("cpu", "cpu"))
    props = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0, total_memory=141 << 30)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        __version__="2.9.0", version=types.SimpleNamespace(cuda="12.8", hip=None),
        cuda=types.SimpleNamespace(is_available=lambda: True, current_device=lambda: 0,
                                   get_device_properties=lambda i: props)))
    assert blocktune.device_key() == "gpu.nvidia.sm90.h200"  # JAX sees only the CPU; PyTorch the GPU
    assert blocktune.device_identity().platform == "torch"
    monkeypatch.setitem(sys.modules, "jax", _fake_jax("gpu", "NVIDIA H100 80GB HBM3", "9.0"))
    assert blocktune.device_key() == "gpu.nvidia.sm90.h200"  # cached
    assert blocktune.device_identity(refresh=True).key() == "gpu.nvidia.sm90.h100"
    assert blocktune.device_key() == "gpu.nvidia.sm90.h100"
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "cpu")
    assert blocktune.device_identity(refresh=True).kind == "cpu"
    assert blocktune.device_key(2) == blocktune.host_cpu_key(2)
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "tensorflow")
    with pytest.raises(ValueError, match="BLOCKTUNE_DEVICE='tensorflow'"):
        blocktune.device_identity(refresh=True)


def test_hardware_env_overrides_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BLOCKTUNE_HARDWARE", "gpu.nvidia.sm90.h200")
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "cpu")
    assert blocktune.device_key() == "gpu.nvidia.sm90.h200"
    assert blocktune.device_identity().kind == "cpu"  # what a runner announces is unchanged


def _run(code: str, **env: str) -> str:
    e = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKTUNE_")}
    res = subprocess.run([sys.executable, "-c", code], env={**e, **env}, capture_output=True, text=True, check=True)
    return res.stdout.strip()


def test_no_framework_is_imported_to_find_the_cpu() -> None:
    code = "import sys, blocktune; k = blocktune.device_key(); print(k, 'jax' in sys.modules, 'torch' in sys.modules)"
    key, jax_imported, torch_imported = _run(code, BLOCKTUNE_DEVICE="cpu").split()
    assert key == blocktune.host_cpu_key(1) and jax_imported == torch_imported == "False"
    if not _probe.has_accelerator_files():  # auto on a host without GPU/TPU device files: the same
        assert _run(code).split() == [key, "False", "False"]
    # Asked for JAX, it is imported; JAX on a CPU-only host runs on the CPU.
    if _probe.has_accelerator_files():
        return
    assert _run(code, BLOCKTUNE_DEVICE="jax").split() == [key, "True", "False"]
    # With GPU device files (pretended here), auto imports an installed framework to ask it,
    # but imported_only (what a runner uses) asks only those already imported.
    pretend = ("import sys, blocktune; from blocktune import _probe; _probe.has_accelerator_files = lambda: True; "
               "i = blocktune.device_identity(imported_only=True); print(i.kind, 'jax' in sys.modules); "
               "j = blocktune.device_identity(); print(j.kind, j.platform, 'jax' in sys.modules)")
    assert _run(pretend).split() == ["cpu", "False", "cpu", "jax", "True"]


def test_tables_look_up_this_devices_key_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from blocktune import tables

    row = "x86_64.avx2.amd.fam25_mod1.t1"  # a checked-in matmul row (tables/)
    monkeypatch.setenv("BLOCKTUNE_HARDWARE", row)
    for path in ("json/matmul_tuned_block_sizes.json", "python/matmul_tuned_block_sizes.py"):
        t = tables.load(SOURCE / "tables" / path)
        r = t.lookup(dtype="f32", m=128, n=128, k=128)
        assert (r.source, r.hardware) == ("tuned", row), path
        assert r == t.lookup(row, "f32", m=128, n=128, k=128)
    monkeypatch.setenv("BLOCKTUNE_HARDWARE", "gpu.nvidia.sm90.h200")  # no GPU row: the default, never a CPU's
    _probe.reset()
    r = tables.load(SOURCE / "tables" / "json" / "matmul_tuned_block_sizes.json").lookup(dtype="f32", m=128, n=128,
                                                                                          k=128)
    assert (r.source, r.hardware) == ("default", None)
