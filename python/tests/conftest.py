"""Shared pytest fixtures: the build and source folders (BLOCKTUNE_BUILD_DIR and
BLOCKTUNE_SOURCE_DIR, set by ctest; defaults: the checkout's build/) and a real blocktuned on a
free port with its database in a temporary folder."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("BLOCKTUNE_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("BLOCKTUNE_BUILD_DIR", SOURCE / "build"))


@dataclass
class Daemon:
    url: str
    token: str
    db: Path
    process: subprocess.Popen[bytes]
    log: Path


def start_daemon(tmp: Path, name: str, *flags: str) -> Daemon:
    """blocktuned on a free port, its database in tmp/db. Like tests/e2e/lib.sh it records every
    exchange in BUILD/contract/exchanges/pytest_<name>.jsonl, which ctest contract_exchanges
    validates against the served OpenAPI document (BLOCKTUNE_NO_EXCHANGE_LOG=1: no record)."""
    (tmp / "db").mkdir(parents=True, exist_ok=True)
    if not os.environ.get("BLOCKTUNE_NO_EXCHANGE_LOG"):
        exchanges = BUILD / "contract" / "exchanges"
        exchanges.mkdir(parents=True, exist_ok=True)
        record = exchanges / f"pytest_{name}.jsonl"
        record.write_text("")
        flags = ("--exchange-log", str(record), *flags)
    port_file = tmp / "port"
    log = tmp / "daemon.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(BUILD / "server" / "blocktuned"), "--port", "0", "--port-file", str(port_file),
                                 "--db", str(tmp / "db" / "blocktune.db"), "--log-level", "warn", *flags],
                                stdout=out, stderr=subprocess.STDOUT)
    for _ in range(400):
        if port_file.exists() and port_file.read_text().strip():
            break
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    else:
        proc.kill()
    if not port_file.exists() or proc.poll() is not None:
        raise RuntimeError("blocktuned did not start:\n" + log.read_text())
    port = port_file.read_text().strip()
    token = (tmp / "db" / "token").read_text().strip()
    return Daemon(f"http://127.0.0.1:{port}", token, tmp / "db" / "blocktune.db", proc, log)


def stop_daemon(d: Daemon) -> None:
    d.process.terminate()
    try:
        d.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        d.process.kill()
        d.process.wait()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    # Short timing so sweeps of the tests take seconds (as tests/e2e/e2e_external.sh).
    d = start_daemon(tmp_path_factory.mktemp("daemon"), "client", "--min-repetition-ms", "2", "--repetitions", "3",
                     "--max-cv", "1000")
    yield d
    stop_daemon(d)
