"""The external-kernel runner protocol (docs/external-kernels.md) as a library: you give a build
function (request -> callable kernel), an input maker and a reference; serve() reads blocktune's
requests from stdin, checks each config's output against the reference, times it, and answers on
file descriptor 3.

Per config: build(request) compiles/prepares (any exception: compile_failed; Invalid: invalid);
the first call runs it on the problem's inputs and doubles as the warm-up (exception:
runtime_failed); its output is checked against reference(request, *inputs) (mismatch or
WrongResult: wrong_result); the warm-up call's own time picks the iterations of the first
repetition (no extra call), a first batch shorter than `min_time_ms` grows and is not kept, and
the first kept repetition's per-call time sets the count of the rest, each aimed 3% past
`min_time_ms`. The answer is the mean time per call of each repetition, the wall of the kept
repetitions (`timed_ms`) and everything else the request cost here (`overhead_ms`: build,
inputs, reference, warm-up, check, short batches), so that blocktune's breakdown tells the
runner's overhead from transport. Inputs and the reference's output are made once per (dtype,
shape) and kept for the next configs of the same problem (one problem at a time).

Before its first answer the runner announces the device it measures on, one line on fd 3:
{"device": {...}} (blocktune.device.DeviceIdentity), so blocktune files the measurements under
that device's key (gpu.nvidia.sm90.h200) rather than the host CPU's. The device is
blocktune.device_identity() (the one JAX, PyTorch or CuPy runs on; only a framework the runner
has imported is asked) unless `device=` says otherwise; a CPU is not announced unless given explicitly, since announcing nothing means the
host CPU too.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any

from .device import DeviceIdentity

Answer = dict[str, Any]
Device = DeviceIdentity | Mapping[str, Any] | bool | None


@dataclass(frozen=True, slots=True)
class Request:
    """One config to measure, as blocktune sends it."""

    kernel: str
    dtype: str
    shape: Mapping[str, int]
    config: Mapping[str, int]
    min_time_ms: float
    repetitions: int
    threads: int

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> Request:
        return cls(str(j["kernel"]), str(j["dtype"]), dict(j["shape"]), dict(j["config"]),
                   float(j["min_time_ms"]), int(j["repetitions"]), int(j.get("threads", 1)))


class Invalid(Exception):
    """Raise from build(): this config cannot run this problem (answered `invalid`)."""


class CompileFailed(Exception):
    """Raise anywhere in build() or a kernel call for `compile_failed` (build() errors are
    compile_failed anyway)."""


class WrongResult(Exception):
    """Raise from a check function: the output differs from the reference."""


Kernel = Callable[..., Any]
Build = Callable[[Request], Kernel]
MakeInputs = Callable[[Request], tuple[Any, ...]]
Reference = Callable[..., Any]
Check = Callable[[Any, Any, Request], None]


def close_check(rtol: float = 1e-4, atol: float = 1e-4) -> Check:
    """The default check: every element |out - ref| <= atol + rtol * |ref| (NaN fails), for
    arrays (anything with __array__, compared with NumPy, imported only then), sequences of them
    (tuples of outputs) and numbers. Raises WrongResult with the largest error."""

    def check(out: Any, ref: Any, request: Request) -> None:
        _compare(out, ref, rtol, atol, "output")

    return check


def _compare(out: Any, ref: Any, rtol: float, atol: float, what: str) -> None:
    if hasattr(ref, "__array__") or hasattr(out, "__array__"):
        import numpy as np  # only for array outputs; the package itself needs no NumPy

        a = np.asarray(out, dtype=np.float64)
        b = np.asarray(ref, dtype=np.float64)
        if a.shape != b.shape:
            raise WrongResult(f"{what}: shape {a.shape} != reference {b.shape}")
        if a.size == 0:
            return
        err = np.abs(a - b)
        bad = ~(err <= atol + rtol * np.abs(b))  # NaN compares false: bad
        if bad.any():
            i = int(np.argmax(np.where(np.isnan(err), np.inf, err)))
            raise WrongResult(f"{what}: {int(bad.sum())} of {a.size} elements differ; max abs err "
                              f"{float(err.flat[i]):g} at flat index {i}")
        return
    if isinstance(ref, (list, tuple)):
        if not isinstance(out, (list, tuple)) or len(out) != len(ref):
            raise WrongResult(f"{what}: {type(out).__name__} of another length than the reference")
        for i, (o, r) in enumerate(zip(out, ref)):
            _compare(o, r, rtol, atol, f"{what}[{i}]")
        return
    o, r = float(out), float(ref)
    if not abs(o - r) <= atol + rtol * abs(r):
        raise WrongResult(f"{what}: {o!r} != reference {r!r}")


def _message(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}"
    return text if len(text) <= 2000 else text[:2000] + "..."


# 3% past the minimum, as the C++ timing loop aims (tuner/timing/timing.cc); a call under 100 ns
# is taken as 100 ns so that a broken clock cannot ask for billions of iterations.
_AIM = 1.03
_SHORTEST_CALL_S = 1e-7


def _repetitions(call: Callable[[], Any], clock: Callable[[], float], warm_s: float, min_s: float,
                 repetitions: int) -> tuple[list[float], float]:
    """`repetitions` timed repetitions of `call`, each at least `min_s` long: (per-call ms of
    each, wall seconds of them all). The first batch's count comes from the warm-up call's time
    (usually slower than the calls after it, so the batch may fall short: then it grows, at most
    10x a step, and is not kept); the first kept repetition's per-call time sets the rest."""
    iters = max(1, math.ceil(_AIM * min_s / max(warm_s, _SHORTEST_CALL_S)))
    times: list[float] = []
    timed = 0.0
    while len(times) < repetitions:
        t0 = clock()
        for _ in range(iters):
            call()
        elapsed = clock() - t0
        if elapsed < min_s and not times:
            grow = _AIM * min_s / max(elapsed, _SHORTEST_CALL_S)
            iters = max(iters + 1, math.ceil(iters * min(grow, 10.0)))
            continue
        times.append(elapsed * 1000.0 / iters)
        timed += elapsed
        if len(times) == 1:
            iters = max(1, math.ceil(_AIM * min_s / max(elapsed / iters, _SHORTEST_CALL_S)))
    return times, timed


class Runner:
    """The protocol's state: the current problem's inputs and reference output. handle() answers
    one request (a dict as read from stdin) with the dict to write back; serve() loops."""

    def __init__(self, build: Build, make_inputs: MakeInputs, reference: Reference, *,
                 check: Check | None = None, block: Callable[[Any], Any] | None = None,
                 clock: Callable[[], float] = time.perf_counter, device: Device = None) -> None:
        self.build = build
        self.make_inputs = make_inputs
        self.reference = reference
        self.check = check or close_check()
        # JAX and other asynchronous frameworks return before the work is done: block(output)
        # waits for it (jax.block_until_ready); every timed call is blocked on.
        self.block = block or (lambda out: out)
        self.clock = clock
        self._problem: tuple[Any, ...] | None = None
        self._inputs: tuple[Any, ...] | None = None
        self._expected: Any = None
        # device: None asks blocktune.device_identity(imported_only=True) at the first answer
        # (the kernel's framework is loaded and has found its device by then; a framework the
        # kernel does not import is not asked) and announces it unless it is the CPU; an identity (or its
        # JSON) is announced as given, validated now; False announces nothing.
        self._device: DeviceIdentity | None = None
        self._announce = device is not False
        if isinstance(device, DeviceIdentity):
            self._device = DeviceIdentity.from_json(device.to_json())
        elif isinstance(device, Mapping):
            self._device = DeviceIdentity.from_json(device)
        elif device not in (None, True, False):
            raise TypeError(f"device must be a DeviceIdentity, its JSON, None or False, not {type(device).__name__}")
        self._explicit = self._device is not None

    def device_line(self) -> str | None:
        """The {"device": ...} line to write before the first answer, or None (a CPU found by
        detection, or device=False). Detection errors propagate."""
        if not self._announce:
            return None
        if self._device is None:
            from ._probe import device_identity

            self._device = device_identity(imported_only=True)
        if self._device.kind == "cpu" and not self._explicit:
            return None
        return json.dumps({"device": self._device.to_json()})

    def _prepare(self, req: Request) -> None:
        key = (req.dtype, tuple(sorted(req.shape.items())))
        if self._problem != key:
            self._problem = None
            self._inputs = self._expected = None  # free the last problem's buffers first
            self._inputs = tuple(self.make_inputs(req))
            self._expected = self.reference(req, *self._inputs)
            self._problem = key

    def handle(self, raw: Mapping[str, Any]) -> Answer:
        start = self.clock()
        answer = self._handle(raw)
        if "times_ms" in answer:
            answer["overhead_ms"] = max(0.0, (self.clock() - start) * 1000.0 - answer["timed_ms"])
        else:
            answer["overhead_ms"] = (self.clock() - start) * 1000.0
        return answer

    def _handle(self, raw: Mapping[str, Any]) -> Answer:
        try:
            req = Request.from_json(raw)
        except (KeyError, TypeError, ValueError) as e:
            return {"outcome": "runtime_failed", "message": f"malformed request: {_message(e)}"}
        try:
            fn = self.build(req)
        except Invalid as e:
            return {"outcome": "invalid", "message": str(e)}
        except Exception as e:  # noqa: BLE001 - every failure of a build is the config's outcome
            return {"outcome": "compile_failed", "message": _message(e)}
        try:
            self._prepare(req)
        except Invalid as e:
            return {"outcome": "invalid", "message": str(e)}
        except Exception as e:  # noqa: BLE001
            return {"outcome": "runtime_failed", "message": "inputs or reference: " + _message(e)}
        inputs, block, clock = self._inputs or (), self.block, self.clock
        try:
            t0 = clock()
            out = block(fn(*inputs))  # warm-up and the output checked
            warm = clock() - t0
        except CompileFailed as e:
            return {"outcome": "compile_failed", "message": str(e)}
        except Exception as e:  # noqa: BLE001
            return {"outcome": "runtime_failed", "message": _message(e)}
        try:
            self.check(out, self._expected, req)
        except WrongResult as e:
            return {"outcome": "wrong_result", "message": str(e)}
        except Exception as e:  # noqa: BLE001 - a check that cannot compare is a wrong result too
            return {"outcome": "wrong_result", "message": _message(e)}
        del out
        try:
            times, timed = _repetitions(lambda: block(fn(*inputs)), clock, warm, req.min_time_ms / 1000.0,
                                        max(1, req.repetitions))
        except Exception as e:  # noqa: BLE001
            return {"outcome": "runtime_failed", "message": _message(e)}
        return {"times_ms": times, "timed_ms": timed * 1000.0}

    def serve(self, requests: Iterable[str] | None = None, answers: IO[str] | None = None) -> None:
        """Answers every request line of `requests` (default stdin) on `answers` (default file
        descriptor 3, as blocktune runs it; stdout when fd 3 is not open, for trying by hand).
        Returns when stdin closes."""
        if requests is None:
            requests = sys.stdin
        if answers is None:
            try:
                answers = os.fdopen(3, "w", buffering=1)
            except OSError:
                answers = sys.stdout
        announced = False
        for line in requests:
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                answer = self.handle(raw)
            except Exception as e:  # noqa: BLE001 - a runner bug must still answer
                traceback.print_exc()
                answer = {"outcome": "runtime_failed", "message": _message(e)}
            if not announced:
                try:
                    device = self.device_line()
                except Exception as e:  # noqa: BLE001 - no line would file a GPU's times under the CPU
                    traceback.print_exc()
                    answer = {"outcome": "runtime_failed", "message": "device identity: " + _message(e)}
                else:
                    announced = True
                    if device is not None:
                        answers.write(device + "\n")
            answers.write(json.dumps(answer) + "\n")
            answers.flush()


def serve(build: Build, make_inputs: MakeInputs, reference: Reference, *, check: Check | None = None,
          block: Callable[[Any], Any] | None = None, device: Device = None) -> None:
    """Runner(build, make_inputs, reference, check=..., block=..., device=...).serve(): the whole
    runner program in one call (see the module docstring)."""
    Runner(build, make_inputs, reference, check=check, block=block, device=device).serve()
