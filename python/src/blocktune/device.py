"""The device identity a runner announces and the hardware key blocktune files its measurements
under (docs/accelerators.md). This module is THE reference of the key derivation: the C++
side implements the same function and both are tested against tests/data/device_keys.json.

An identity is what a framework says about the device it runs on: kind (gpu, tpu, cpu), vendor,
model (the marketing name as reported), arch (CUDA compute capability as sm90, AMD gfx target,
TPU generation), memory, driver, runtime and framework. The key keeps what decides which block
sizes are fastest and drops what does not (driver and runtime versions, memory size, form
factor), general to specific:

    gpu.<vendor>.<arch>.<model_slug>    gpu.nvidia.sm90.h200, gpu.amd.gfx90a.mi250x
    tpu.<vendor>.<arch>                 tpu.google.v5e
    cpu                                 the host CPU's key (blocktune.device_key(), the C++'s)

Every segment is [a-z0-9_]+, the key at most 128 characters; an identity that cannot make a
valid key raises InvalidIdentity naming the field.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

KINDS = ("gpu", "tpu", "cpu")
MAX_KEY = 128
FIELDS = ("kind", "vendor", "model", "arch", "memory_bytes", "driver", "runtime", "platform")

# Vendors as frameworks spell them -> the key's vendor segment (after normalising).
VENDOR_ALIASES = {
    "nvidia_corporation": "nvidia",
    "advanced_micro_devices": "amd",
    "advanced_micro_devices_inc": "amd",
    "amd_inc": "amd",
    "intel_corporation": "intel",
    "google_llc": "google",
}
# Words of a model name that name the vendor or its brand, not the device: dropped from the slug.
BRAND_WORDS = frozenset({"nvidia", "amd", "ati", "radeon", "instinct", "geforce", "tesla", "intel", "google",
                         "corporation", "r", "tm", "gpu"})
# Form factor and memory size: the same chip in another package or with more memory keeps its
# family's slug ("NVIDIA H100 80GB HBM3" and "NVIDIA H100 PCIe" are both h100).
_PACKAGING = re.compile(r"^(sxm\d*|pcie|pci|nvl|hbm\d*e?|\d+gb|\d+g|gb)$")
_SEGMENT = re.compile(r"^[a-z0-9_]+$")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


class InvalidIdentity(ValueError):
    """An identity that cannot make a key; `field` names it ("device.arch")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def normalize(text: str) -> str:
    """Lower case, every run of characters outside [a-z0-9] one "_", none at either end."""
    return _NON_ALNUM.sub("_", text.lower()).strip("_")


def model_slug(model: str) -> str:
    """The model's family name: its words (runs of letters and digits) lower-cased, less the
    brand words (nvidia, amd, radeon, instinct, geforce, tesla, ..., the (R) and (TM) marks and
    "gpu") and the form factor and
    memory words (sxm5, pcie, nvl, hbm3, 80gb), joined by "_". "NVIDIA H200" -> h200, "NVIDIA
    A100-SXM4-40GB" -> a100, "NVIDIA RTX A4000" -> rtx_a4000, "AMD Radeon PRO W6600" ->
    pro_w6600. Empty if nothing is left."""
    words = [w for w in normalize(model).split("_") if w]
    return "_".join(w for w in words if w not in BRAND_WORDS and not _PACKAGING.match(w))


def _vendor(raw: str) -> str:
    v = normalize(raw)
    return VENDOR_ALIASES.get(v, v)


def normalize_arch(kind: str, vendor: str, raw: str) -> str:
    """The arch segment: NVIDIA's compute capability as smXY ("sm_90", "9.0", "sm90" -> sm90,
    "sm_90a" -> sm90a), an AMD gfx target without its feature flags ("gfx90a:sramecc+:xnack-"
    -> gfx90a), a TPU generation without "TPU" and with "lite" as "e" ("TPU v5 lite" -> v5e)."""
    text = raw.strip().lower()
    if kind == "gpu" and vendor == "amd":
        text = text.split(":", 1)[0]
    if kind == "gpu" and vendor == "nvidia":
        m = re.fullmatch(r"(?:sm[_ ]?)?(\d+)(?:\.(\d+))?([a-z]?)", text)
        if m:
            return f"sm{m.group(1)}{m.group(2) or ''}{m.group(3)}"
    a = normalize(text)
    if kind == "tpu":
        a = re.sub(r"^tpu_?", "", a)
        a = re.sub(r"^(v\d+)_?lite$", r"\1e", a)
        a = re.sub(r"^(v\d+)_([a-z])$", r"\1\2", a)
    return a


@dataclasses.dataclass(frozen=True, slots=True)
class DeviceIdentity:
    """One device as the runner's framework sees it (the protocol's {"device": {...}} line)."""

    kind: str
    vendor: str
    model: str
    arch: str
    memory_bytes: int = 0
    driver: str = ""
    runtime: str = ""
    platform: str = ""

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> DeviceIdentity:
        """Validated: the fields' types, and that the identity makes a key."""
        if not isinstance(j, Mapping):
            raise InvalidIdentity("device", f"must be an object, not {type(j).__name__}")
        unknown = sorted(set(j) - set(FIELDS))
        if unknown:
            raise InvalidIdentity(f"device.{unknown[0]}", f"unknown field (known: {', '.join(FIELDS)})")
        values: dict[str, Any] = {}
        for f in FIELDS:
            v = j.get(f, 0 if f == "memory_bytes" else "")
            if f == "memory_bytes":
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise InvalidIdentity("device.memory_bytes", f"must be an integer >= 0, not {v!r}")
            elif not isinstance(v, str):
                raise InvalidIdentity(f"device.{f}", f"must be a string, not {type(v).__name__}")
            elif len(v) > 256:
                raise InvalidIdentity(f"device.{f}", f"longer than 256 characters ({len(v)})")
            elif (bad := next((i for i, ch in enumerate(v.encode()) if ch < 0x20 or ch == 0x7F), None)) is not None:
                # As the C++ side (external/device.cc) refuses it: a newline or an escape in a
                # name would reach logs, generated tables' comments and the dashboard.
                raise InvalidIdentity(f"device.{f}", f"control character at byte {bad}")
            values[f] = v
        ident = cls(**values)
        derive_key(ident)  # raises for an identity that makes no key
        return ident

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def key(self, threads: int = 1) -> str:
        """derive_key(self): a CPU's key is the host's at `threads` threads."""
        return derive_key(self, threads=threads)


def _segment(field: str, value: str) -> str:
    if not value:
        raise InvalidIdentity(f"device.{field}", "empty (nothing of [a-z0-9] in it)")
    if not _SEGMENT.match(value):
        raise InvalidIdentity(f"device.{field}", f"{value!r} is not [a-z0-9_]+")
    return value


def derive_key(identity: DeviceIdentity | Mapping[str, Any], *, threads: int = 1) -> str:
    """The hardware key of a device: gpu.<vendor>.<arch>.<model_slug>, tpu.<vendor>.<arch>, or
    for kind cpu this host's CPU key (blocktune.host_cpu_key(threads), what the C++ computes).
    Raises InvalidIdentity naming the field that cannot make a segment."""
    if isinstance(identity, DeviceIdentity):
        ident: Mapping[str, Any] = dataclasses.asdict(identity)
    elif isinstance(identity, Mapping):
        ident = identity
    else:
        raise InvalidIdentity("device", f"must be an object, not {type(identity).__name__}")
    kind = ident.get("kind")
    if kind not in KINDS:
        raise InvalidIdentity("device.kind", f"{kind!r} is not one of {', '.join(KINDS)}")
    if kind == "cpu":
        from ._host import host_cpu_key

        return host_cpu_key(threads)
    for f in ("vendor", "arch") + (("model",) if kind == "gpu" else ()):
        if not isinstance(ident.get(f), str):
            raise InvalidIdentity(f"device.{f}", "required, a string")
    vendor = _segment("vendor", _vendor(ident["vendor"]))
    arch = _segment("arch", normalize_arch(str(kind), vendor, ident["arch"]))
    parts = [str(kind), vendor, arch]
    if kind == "gpu":
        parts.append(_segment("model", model_slug(ident["model"])))
    key = ".".join(parts)
    if len(key) > MAX_KEY:
        raise InvalidIdentity("device", f"key {key[:40]}... is {len(key)} characters, over {MAX_KEY}")
    return key
