#!/usr/bin/env python3
"""Benchmark (not a test): blocktune.Client.lookup per call against a raw http.client keep-alive
GET of the same URL to the same daemon, interleaved call by call in one process, so load on the
machine hits both alike. Prints the median per-call time of each and the ratio Client / raw
(target <= 1.2). The raw request reads the body; a third column also parses it with json.loads
(what any caller does with it).

  build/pyenv/bin/python python/bench/client_overhead.py [--url URL] [--rounds 30] [--calls 200]

Without --url it starts build/server/blocktuned on a free port with a temporary database.
"""
from __future__ import annotations

import argparse
import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python" / "src"))
from blocktune import Client  # noqa: E402

DIMS = {"m": 1000, "n": 1000, "k": 1000}


def start_daemon(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    port_file = tmp / "port"
    proc = subprocess.Popen([str(ROOT / "build" / "server" / "blocktuned"), "--port", "0", "--port-file",
                             str(port_file), "--db", str(tmp / "blocktune.db"), "--log-level", "warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(400):
        if port_file.exists() and port_file.read_text().strip():
            return proc, f"http://127.0.0.1:{port_file.read_text().strip()}"
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("blocktuned did not start")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=200)
    args = ap.parse_args()
    proc = None
    tmp = tempfile.TemporaryDirectory()
    url = args.url
    if url is None:
        proc, url = start_daemon(Path(tmp.name))
    try:
        parts = urllib.parse.urlsplit(url)
        client = Client(url)
        raw = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        target = "/v1/lookup?" + urllib.parse.urlencode({"kernel": "matmul", **DIMS})
        headers = {"Accept": "application/json"}

        def raw_get(parse: bool) -> None:
            raw.request("GET", target, headers=headers)
            data = raw.getresponse().read()
            if parse:
                json.loads(data)

        calls = [lambda: client.lookup("matmul", **DIMS), lambda: raw_get(False), lambda: raw_get(True)]
        assert client.lookup("matmul", **DIMS).bucket == "m1024_n1024_k1024"
        for fn in calls * 200:  # warm both connections
            fn()
        # Interleaved call by call (the three in a rotating order), each call timed alone: a
        # load spike on this shared machine lands on all three alike, and the medians drop it.
        times: list[list[float]] = [[], [], []]
        clock = time.perf_counter
        for i in range(args.rounds * args.calls):
            for j in range(3):
                which = (i + j) % 3
                t0 = clock()
                calls[which]()
                times[which].append(clock() - t0)
        mc, mr, mp = (statistics.median(t) for t in times)
        n = len(times[0])
        print(f"{n} calls each, interleaved, {url}")
        print(f"Client.lookup           {mc * 1e6:8.1f} us/call (median)")
        print(f"raw http.client GET     {mr * 1e6:8.1f} us/call   Client / raw        = {mc / mr:.3f}")
        print(f"raw GET + json.loads    {mp * 1e6:8.1f} us/call   Client / raw+parse  = {mc / mp:.3f}")
        q = [statistics.quantiles(t, n=10) for t in times]
        print(f"p10 / p90: Client {q[0][0] * 1e6:.1f} / {q[0][-1] * 1e6:.1f} us, raw {q[1][0] * 1e6:.1f} / "
              f"{q[1][-1] * 1e6:.1f} us (ratio of p10s {q[0][0] / q[1][0]:.3f})")
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait()
        tmp.cleanup()


if __name__ == "__main__":
    main()
