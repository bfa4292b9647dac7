"""Which device this process's kernels run on, as JAX, PyTorch or CuPy report it, and its key:
blocktune.device_identity() and blocktune.device_key().

Order: JAX (jax.devices()[0] when its platform is a GPU or TPU), else PyTorch (torch.cuda's
current device), else CuPy (its current device), else this host's CPU. A framework already
imported is asked first; one not yet imported is imported only if it is installed and the host
has accelerator device files (/dev/nvidiactl, /dev/kfd, /dev/accel*, /dev/vfio/<n>), so a
CPU-only host pays no framework import (blocktune.runner asks only those already imported: the
kernel's own framework is loaded by its first answer, and a NumPy kernel on a GPU host is a CPU
kernel). Environment, read once, on the first call:
  BLOCKTUNE_DEVICE    cpu (no framework is asked or imported), jax, torch or cupy (only that
                      one, imported if need be), auto (the default)
  BLOCKTUNE_HARDWARE  a key device_key() answers as given (lookups' override; the identity a
                      runner announces is not changed by it)
Answers are cached: device_key() costs one dict lookup after its first call (docs/python.md).
"""

from __future__ import annotations

import glob
import importlib
import importlib.util
import os
import platform as _platform
import sys
from typing import Any

from . import _host
from .device import DeviceIdentity, InvalidIdentity, derive_key, normalize_arch

DEVICE_ENV = "BLOCKTUNE_DEVICE"
HARDWARE_ENV = "BLOCKTUNE_HARDWARE"
FRAMEWORKS = ("jax", "torch", "cupy")
_TPU_GENERATIONS = {"tpu v5 lite": "v5e", "tpu v5e": "v5e", "tpu v5": "v5p", "tpu v5p": "v5p",
                    "tpu v6 lite": "v6e", "tpu v6e": "v6e", "tpu v4 lite": "v4i", "tpu7x": "v7x"}


def _nvidia_driver() -> str:
    """The NVIDIA kernel module's version ("570.86.15"), empty if not loaded."""
    try:
        with open("/proc/driver/nvidia/version", encoding="utf-8", errors="replace") as f:
            words = f.readline().split()
    except OSError:
        return ""
    for i, w in enumerate(words):  # "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.86.15  <date>"
        if w == "Module" and i + 1 < len(words):
            return words[i + 1]
    return ""


def _nvidia_memory(ordinal: int) -> int:
    """Total memory of CUDA device `ordinal` from the driver API (libcuda), 0 if unavailable."""
    try:
        import ctypes

        cuda = ctypes.CDLL("libcuda.so.1")
        dev = ctypes.c_int()
        size = ctypes.c_size_t()
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), ordinal):
            return 0
        if cuda.cuDeviceTotalMem_v2(ctypes.byref(size), dev):
            return 0
        return int(size.value)
    except (OSError, AttributeError):
        return 0


def _vendor_of(name: str, hip: bool) -> str:
    low = name.lower()
    if hip or low.startswith(("amd", "radeon")) or "instinct" in low:
        return "amd"
    if "intel" in low:
        return "intel"
    return "nvidia"


def from_jax(jax: Any) -> DeviceIdentity | None:
    """jax.devices()[0] if it is a GPU or TPU."""
    d = jax.devices()[0]
    plat = str(d.platform).lower()
    version = f"jax {getattr(jax, '__version__', '?')}"
    try:
        version += f", {str(d.client.platform_version).strip().splitlines()[-1]}"
    except (AttributeError, IndexError):
        pass
    kind_name = str(getattr(d, "device_kind", ""))
    if plat == "tpu":
        gen = _TPU_GENERATIONS.get(kind_name.lower().strip(), kind_name)
        return DeviceIdentity("tpu", "google", kind_name, normalize_arch("tpu", "google", gen),
                              _jax_memory(d), "", version, "jax")
    if plat not in ("gpu", "cuda", "rocm"):
        return None
    vendor = _vendor_of(kind_name, plat == "rocm")
    cc = str(getattr(d, "compute_capability", "") or "")
    memory = _nvidia_memory(int(getattr(d, "local_hardware_id", d.id) or 0)) if vendor == "nvidia" else 0
    return DeviceIdentity("gpu", vendor, kind_name, cc, memory or _jax_memory(d),
                          _nvidia_driver() if vendor == "nvidia" else "", version, "jax")


def _jax_memory(d: Any) -> int:
    try:
        stats = d.memory_stats() or {}
        return int(stats.get("bytes_limit", 0))
    except Exception:  # noqa: BLE001 - memory is provenance only; a backend without stats has none
        return 0


def from_torch(torch: Any) -> DeviceIdentity | None:
    """torch.cuda's current device (CUDA or ROCm builds)."""
    if not torch.cuda.is_available():
        return None
    i = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(i)
    hip = bool(getattr(torch.version, "hip", None))
    arch = str(getattr(p, "gcnArchName", "")) if hip else f"sm{p.major}{p.minor}"
    runtime = f"torch {torch.__version__}, " + (f"hip {torch.version.hip}" if hip else f"cuda {torch.version.cuda}")
    vendor = _vendor_of(str(p.name), hip)
    return DeviceIdentity("gpu", vendor, str(p.name), arch, int(p.total_memory),
                          _nvidia_driver() if vendor == "nvidia" else "", runtime, "torch")


def from_cupy(cupy: Any) -> DeviceIdentity | None:
    """CuPy's current device."""
    rt = cupy.cuda.runtime
    if rt.getDeviceCount() < 1:
        return None
    dev = cupy.cuda.Device().id
    p = rt.getDeviceProperties(dev)
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    hip = bool(getattr(rt, "is_hip", False))
    arch = p.get("gcnArchName", b"").decode() if hip else f"sm{p['major']}{p['minor']}"
    runtime = f"cupy {cupy.__version__}, {'hip' if hip else 'cuda'} {rt.runtimeGetVersion()}"
    vendor = _vendor_of(name, hip)
    driver = _nvidia_driver() if vendor == "nvidia" else str(rt.driverGetVersion())
    return DeviceIdentity("gpu", vendor, name, arch, int(p["totalGlobalMem"]), driver, runtime, "cupy")


_PROBES = {"jax": from_jax, "torch": from_torch, "cupy": from_cupy}


def has_accelerator_files() -> bool:
    """Device files of an NVIDIA or AMD GPU or a TPU: worth importing a framework to ask it."""
    return (os.path.exists("/dev/nvidiactl") or os.path.exists("/dev/kfd") or bool(glob.glob("/dev/accel*"))
            or bool(glob.glob("/dev/vfio/[0-9]*")))


def cpu_identity(framework: str = "") -> DeviceIdentity:
    """This host's CPU as an identity (its key is host_cpu_key; the fields are provenance)."""
    cpu = _host.host_cpu()
    return DeviceIdentity("cpu", cpu.vendor, cpu.model_name, cpu.arch, _host.memory_bytes(), "",
                          f"python {_platform.python_version()}", framework)


def detect(mode: str | None = None, *, imported_only: bool = False) -> DeviceIdentity:
    """Asks the frameworks (see the module docstring); uncached. imported_only: ask only the
    frameworks already imported, whatever the host has (a runner: its kernel's framework is
    loaded by then, and one it does not use must not name the device). An unknown
    BLOCKTUNE_DEVICE is a ValueError."""
    mode = (os.environ.get(DEVICE_ENV) or "auto") if mode is None else mode
    if mode not in ("auto", "cpu") + FRAMEWORKS:
        raise ValueError(f"{DEVICE_ENV}={mode!r}: must be auto, cpu, jax, torch or cupy")
    if mode == "cpu":
        return cpu_identity()
    names = FRAMEWORKS if mode == "auto" else (mode,)
    imported = [n for n in names if n in sys.modules]
    candidates = list(imported)
    if mode != "auto" or (not imported_only and has_accelerator_files()):
        candidates += [n for n in names if n not in imported and importlib.util.find_spec(n) is not None]
    asked: list[str] = []
    for name in candidates:
        asked.append(name)
        try:
            found = _PROBES[name](importlib.import_module(name))
        except InvalidIdentity:
            raise
        except Exception:  # noqa: BLE001 - a framework that fails to answer is one that sees no device
            if mode != "auto":
                raise
            continue
        if found is not None:
            return found
    return cpu_identity(asked[0] if asked else "")  # the framework that found the CPU, if one was asked


_IDENTITY: dict[bool, DeviceIdentity] = {}
_KEYS: dict[int, str] = {}


def device_identity(*, refresh: bool = False, imported_only: bool = False) -> DeviceIdentity:
    """The device this process's kernels run on (cached; refresh=True asks again).
    imported_only=True asks only frameworks already imported (what blocktune.runner uses)."""
    if refresh or imported_only not in _IDENTITY:
        if refresh:
            _IDENTITY.clear()
            _KEYS.clear()
        _IDENTITY[imported_only] = detect(imported_only=imported_only)
    return _IDENTITY[imported_only]


def device_key(threads: int = 1) -> str:
    """The hardware key of device_identity(): gpu.nvidia.sm90.h200, tpu.google.v5e, or this host's
    CPU key at `threads` threads (as the C++ computes it); BLOCKTUNE_HARDWARE if set. Cached."""
    key = _KEYS.get(threads)
    if key is None:
        override = os.environ.get(HARDWARE_ENV)
        key = override if override else derive_key(device_identity(), threads=threads)
        _KEYS[threads] = key
    return key


def reset() -> None:
    """Forget every cached answer (tests that change the environment)."""
    _IDENTITY.clear()
    _KEYS.clear()
    _host.reset()
