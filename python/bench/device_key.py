#!/usr/bin/env python3
"""Benchmark (not a test): what blocktune.device_key() costs, the first call (detection: the CPU
from /proc/cpuinfo, or a framework asked for its device) and every later one (a dict lookup),
next to an empty Python function call of the same signature in the same run, so what the cache
adds over calling anything at all can be read off the ratio. Each figure is the best of
--repeat runs of --number calls (timeit's convention: the least disturbed run).

  build/pyenv/bin/python python/bench/device_key.py [--number 200000] [--repeat 7] [--device cpu|auto|jax]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--number", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--device", default="auto", help="BLOCKTUNE_DEVICE for the run")
    args = ap.parse_args()
    os.environ["BLOCKTUNE_DEVICE"] = args.device
    t0 = time.perf_counter()
    import blocktune

    key = blocktune.device_key()
    first = time.perf_counter() - t0

    def empty(threads: int = 1) -> str:
        return "x"

    cached = min(timeit.repeat(blocktune.device_key, number=args.number, repeat=args.repeat)) / args.number
    call = min(timeit.repeat(empty, number=args.number, repeat=args.repeat)) / args.number
    print(f"key {key} ({blocktune.device_identity().platform or 'no framework'})")
    print(f"first call (import blocktune + detection) {first * 1e3:.1f} ms")
    print(f"device_key() cached   {cached * 1e9:7.0f} ns/call")
    print(f"empty function call   {call * 1e9:7.0f} ns/call   ratio {cached / call:.2f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
