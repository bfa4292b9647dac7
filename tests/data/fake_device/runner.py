#!/usr/bin/env python3
"""The fake-device runner (fake_device_kernel.json): a CPU kernel that announces an accelerator,
so the device-key path (protocol line, key derivation, filing, refusal) is tested end to end on
a host without one. The kernel sums 0..n-1 in blocks of `block` elements in Python.

The identity it announces, read at start:
  BLOCKTUNE_FAKE_DEVICE         JSON of the identity (default: an NVIDIA H200, gpu.nvidia.sm90.h200);
                                "none" announces nothing (the host CPU key), anything else that
                                is not a valid identity is written as given (blocktune must
                                refuse it)
  BLOCKTUNE_FAKE_DEVICE_ROTATE  a file of identities, one JSON a line: each runner process takes
                                the first line and writes the file back without it, so a
                                restarted runner announces the next device (the file keeps its
                                last line)
  BLOCKTUNE_FAKE_EXIT_AFTER     exit (status 0) after this many answers, so blocktune starts a
                                fresh runner for the next config
"""
import itertools
import json
import os
import sys

try:
    from blocktune import runner
except ImportError:  # run from the source tree without the package installed
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "python", "src"))
    from blocktune import runner
from blocktune.device import DeviceIdentity

H200 = {"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H200", "arch": "sm90", "memory_bytes": 150754820096,
        "driver": "570.86.15", "runtime": "fake", "platform": "fake"}


def identity():
    rotate = os.environ.get("BLOCKTUNE_FAKE_DEVICE_ROTATE")
    if rotate:
        with open(rotate, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if line.strip()]
        if len(lines) > 1:
            with open(rotate, "w", encoding="utf-8") as f:
                f.write("\n".join(lines[1:]) + "\n")
        return lines[0]
    return os.environ.get("BLOCKTUNE_FAKE_DEVICE") or json.dumps(H200)


def make_inputs(req):
    return (req.shape["n"],)


def reference(req, n):
    return n * (n - 1) // 2


def build(req):
    block = req.config["block"]

    def kernel(n):
        total = 0
        for start in range(0, n, block):
            total += sum(range(start, min(start + block, n)))
        return total

    return kernel


def main():
    text = identity()
    exit_after = int(os.environ.get("BLOCKTUNE_FAKE_EXIT_AFTER", "0"))
    requests = itertools.islice(sys.stdin, exit_after) if exit_after > 0 else sys.stdin
    try:
        device = False if text == "none" else DeviceIdentity.from_json(json.loads(text))
    except ValueError:  # not JSON, or not a valid identity: announced as given, for blocktune to refuse
        device = None
    if device is not None:
        # The library's own announcement (Runner(device=...)), as a real runner makes it.
        runner.Runner(build, make_inputs, reference, device=device).serve(requests)
        return
    fd3 = os.fdopen(3, "w", buffering=1)
    r = runner.Runner(build, make_inputs, reference, device=False)
    for i, line in enumerate(requests):
        answer = r.handle(json.loads(line))
        if i == 0:
            try:
                fd3.write(json.dumps({"device": json.loads(text)}) + "\n")
            except ValueError:
                fd3.write(text + "\n")
        fd3.write(json.dumps(answer) + "\n")


if __name__ == "__main__":
    main()
