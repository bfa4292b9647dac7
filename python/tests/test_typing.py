"""The package is typed (py.typed): `mypy --strict` over it is clean, with the locked mypy.
The generated resolver it shares with the tables (_resolve.py) is typed by its stub
_resolve.pyi."""

from __future__ import annotations

import subprocess
import sys

from conftest import SOURCE


def test_mypy_strict_is_clean() -> None:
    src = SOURCE / "python" / "src"
    res = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", "/dev/null", "--config-file",
                          str(SOURCE / "python" / "pyproject.toml"), "-p", "blocktune"], cwd=src,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout
