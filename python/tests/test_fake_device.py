"""The device line of the runner protocol from the runner's side: blocktune.runner announces
{"device": ...} once, before its first answer, when given an identity or when it detects an
accelerator, and nothing on a CPU; the fake-device runner (tests/data/fake_device, for the
C++ side's end-to-end tests) announces what its environment says, through real pipes and fd 3."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from blocktune import DeviceIdentity, InvalidIdentity, _probe, derive_key, runner
from conftest import SOURCE

FAKE = SOURCE / "tests" / "data" / "fake_device"
H100 = {"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "arch": "sm90", "memory_bytes": 0,
        "driver": "", "runtime": "", "platform": "fake"}


def req(n: int, block: int = 4) -> str:
    return json.dumps({"kernel": "fake_device_kernel", "dtype": "f32", "shape": {"n": n}, "config": {"block": block},
                       "min_time_ms": 0.05, "repetitions": 2, "threads": 1}) + "\n"


def run_fake(requests: list[str], **env: str) -> list[dict[str, Any]]:
    """The fake runner as blocktune runs it: requests on stdin, answers read from its fd 3."""
    r, w = os.pipe()
    base = {k: v for k, v in os.environ.items() if not k.startswith("BLOCKTUNE_")}
    proc = subprocess.Popen([sys.executable, str(FAKE / "runner.py")], cwd=FAKE, stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, pass_fds=(w, 3), preexec_fn=lambda: os.dup2(w, 3),
                            env={**base, **env})
    os.close(w)
    assert proc.stdin is not None
    proc.stdin.write("".join(requests).encode())
    proc.stdin.close()
    with os.fdopen(r) as answers:
        lines = answers.read().splitlines()
    assert proc.wait(timeout=60) == 0
    return [json.loads(line) if line.startswith("{") else {"raw": line} for line in lines]


def test_fake_runner_announces_an_h200_first() -> None:
    out = run_fake([req(100), req(100, 64)])
    assert len(out) == 3 and set(out[0]) == {"device"}
    assert derive_key(out[0]["device"]) == "gpu.nvidia.sm90.h200"
    assert all("times_ms" in a for a in out[1:])


def test_fake_runner_environment() -> None:
    assert ["device" in a for a in run_fake([req(10)], BLOCKTUNE_FAKE_DEVICE="none")] == [False]
    bad = run_fake([req(10)], BLOCKTUNE_FAKE_DEVICE='{"kind": "gpu", "vendor": "nvidia"}')
    with pytest.raises(InvalidIdentity):
        derive_key(bad[0]["device"])
    assert run_fake([req(10)], BLOCKTUNE_FAKE_DEVICE="not json")[0] == {"raw": "not json"}


def test_fake_runner_rotates_devices_across_restarts(tmp_path: Path) -> None:
    rotate = tmp_path / "devices"
    rotate.write_text(json.dumps(DeviceIdentity.from_json(H100).to_json()).replace("H100 80GB HBM3", "H200") + "\n" +
                      json.dumps(H100) + "\n")
    first = run_fake([req(10), req(10)], BLOCKTUNE_FAKE_DEVICE_ROTATE=str(rotate), BLOCKTUNE_FAKE_EXIT_AFTER="1")
    assert len(first) == 2 and derive_key(first[0]["device"]) == "gpu.nvidia.sm90.h200"  # exited after one answer
    second = run_fake([req(10)], BLOCKTUNE_FAKE_DEVICE_ROTATE=str(rotate))
    assert derive_key(second[0]["device"]) == "gpu.nvidia.sm90.h100"


def _serve(r: runner.Runner, n: int) -> list[dict[str, Any]]:
    out = io.StringIO()
    r.serve([req(10)] * n, out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


TIMES = ["times_ms", "timed_ms", "overhead_ms"]  # a measured answer's keys


def test_library_announces_once_and_only_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    def make(**kw: Any) -> runner.Runner:
        return runner.Runner(lambda q: (lambda n: n * (n - 1) // 2), lambda q: (q.shape["n"],),
                             lambda q, n: n * (n - 1) // 2, **kw)

    explicit = _serve(make(device=H100), 2)
    assert [list(a) for a in explicit] == [["device"], TIMES, TIMES]
    assert DeviceIdentity.from_json(explicit[0]["device"]).key() == "gpu.nvidia.sm90.h100"
    _probe.reset()
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "cpu")  # detection finds the CPU: nothing announced
    assert [list(a) for a in _serve(make(), 2)] == [TIMES, TIMES]
    assert [list(a) for a in _serve(make(device=False), 1)] == [TIMES]
    with pytest.raises(InvalidIdentity, match="device.model"):
        make(device={**H100, "model": "NVIDIA"})
    # A framework the runner imported that runs on a GPU: that GPU is announced.
    gpu = types.SimpleNamespace(platform="gpu", device_kind="NVIDIA H200", compute_capability="9.0", id=0,
                                local_hardware_id=0, memory_stats=lambda: {},
                                client=types.SimpleNamespace(platform_version="cuda 12080"))
    monkeypatch.setitem(sys.modules, "jax", types.SimpleNamespace(__version__="0.11.0", devices=lambda: [gpu]))
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "auto")
    _probe.reset()
    found = _serve(make(), 1)
    assert DeviceIdentity.from_json(found[0]["device"]).key() == "gpu.nvidia.sm90.h200"
    # A detection that fails answers runtime_failed rather than timing under the wrong key.
    monkeypatch.setenv("BLOCKTUNE_DEVICE", "nonsense")
    _probe.reset()
    failed = _serve(make(), 1)
    assert failed[0]["outcome"] == "runtime_failed" and "device identity" in failed[0]["message"]
    _probe.reset()
