"""This host's CPU key, computed exactly as the C++ computes it (tables/include/blocktune/tables/
host_cpu.h: DetectHostCpu and HardwareKey), and the CPU's DeviceIdentity.

The key is arch.isa.vendor.fam<F>_mod<M>.t<threads> (x86_64.avx512.amd.fam25_mod17.t1). The C++
reads CPUID; Python reads the same facts from Linux's /proc/cpuinfo, which the kernel fills from
CPUID with the same arithmetic (family = base + extended family when the base is 0xf; model =
extended model << 4 + base model for families 6 and 0xf up) and whose flags, like GCC's
__builtin_cpu_supports, leave out AVX levels the OS does not enable. ISA level: avx512 needs
avx512f, avx512bw, avx512dq and avx512vl; avx2 needs avx2 and fma; else base. BLOCKTUNE_ISA
lowers it as the header does (a level this CPU runs; "portable" is base; anything else is
ignored, as the header ignores it). ctest pytest_device compares this key with the daemon's.
"""

from __future__ import annotations

import os
import platform
import sys
from dataclasses import dataclass

ISA_ENV = "BLOCKTUNE_ISA"
_RANK = {"base": 0, "portable": 0, "avx2": 1, "avx512": 2}


@dataclass(frozen=True, slots=True)
class HostCpu:
    arch: str = "unknown"
    isa: str = "base"
    vendor: str = "unknown"
    family: int = 0
    model: int = 0
    model_name: str = ""


def _cpuinfo(path: str = "/proc/cpuinfo") -> dict[str, str]:
    """The first processor's fields."""
    fields: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    if fields:
                        break
                    continue
                name, _, value = line.partition(":")
                fields.setdefault(name.strip(), value.strip())
    except OSError:
        pass
    return fields


def native_cpu(cpuinfo: dict[str, str] | None = None, machine: str | None = None) -> HostCpu:
    """What the CPU is, ignoring BLOCKTUNE_ISA (the C++'s DetectNativeCpu)."""
    machine = platform.machine() if machine is None else machine
    if machine in ("x86_64", "AMD64", "amd64", "i386", "i686", "x86"):
        info = _cpuinfo() if cpuinfo is None else cpuinfo
        arch = "x86_64" if sys.maxsize > 2**32 else "x86"
        vendor_id = info.get("vendor_id", "")
        vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}.get(vendor_id, "other" if vendor_id else "unknown")
        flags = set(info.get("flags", "").split())
        if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
            isa = "avx512"
        elif {"avx2", "fma"} <= flags:
            isa = "avx2"
        else:
            isa = "base"
        return HostCpu(arch, isa, vendor, _int(info.get("cpu family")), _int(info.get("model")),
                       info.get("model name", ""))
    if machine in ("aarch64", "arm64"):
        return HostCpu(arch="aarch64")
    return HostCpu()


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def host_cpu(env: str | None = None, native: HostCpu | None = None) -> HostCpu:
    """The CPU as kernels see it: native_cpu lowered to BLOCKTUNE_ISA's level if that is a level
    this CPU runs (the C++'s DetectHostCpu)."""
    cpu = native_cpu() if native is None else native
    forced = os.environ.get(ISA_ENV) if env is None else env
    if forced:
        level = "base" if forced == "portable" else forced
        rank = _RANK.get(level, -1)
        if 0 <= rank <= _RANK[cpu.isa]:
            cpu = HostCpu(cpu.arch, level, cpu.vendor, cpu.family, cpu.model, cpu.model_name)
    return cpu


def cpu_key(cpu: HostCpu, threads: int) -> str:
    """The C++'s HardwareKey(cpu, threads)."""
    return f"{cpu.arch}.{cpu.isa}.{cpu.vendor}.fam{cpu.family}_mod{cpu.model}.t{threads}"


_HOST: HostCpu | None = None


def host_cpu_key(threads: int = 1) -> str:
    """This host's CPU key at `threads` threads; the CPU (and BLOCKTUNE_ISA) read once per process,
    as the C++'s HostKeys does."""
    global _HOST
    if _HOST is None:
        _HOST = host_cpu()
    return cpu_key(_HOST, threads)


def memory_bytes() -> int:
    """MemTotal of /proc/meminfo, 0 if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def reset() -> None:
    """Forget the detected CPU (tests that change BLOCKTUNE_ISA)."""
    global _HOST
    _HOST = None
