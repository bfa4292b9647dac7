"""The package as a user installs it: a wheel of ./python built offline (the locked setuptools,
no build isolation) and installed into a fresh venv with no index, where it imports with no
third-party package, is marked typed (py.typed), and carries the generator's resolver
(tables/python/blocktune_resolve.py, linked into the source tree) as a real file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import SOURCE


def test_wheel_installs_offline_into_a_fresh_venv(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(SOURCE / "python", src, symlinks=False, ignore=shutil.ignore_patterns("build", "*.egg-info"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-build-isolation", "--no-deps",
                    "--no-index", "-w", str(tmp_path / "dist"), str(src)], check=True)
    wheels = list((tmp_path / "dist").glob("blocktune-*.whl"))
    assert len(wheels) == 1
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-index",
                    "--disable-pip-version-check", str(wheels[0])], check=True)
    probe = ("import blocktune, blocktune.client, blocktune.runner, blocktune.tables, os, sys; "
             "d = os.path.dirname(blocktune.__file__); "
             "print(d); print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'jax')))")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True,
                         check=True).stdout.splitlines()
    pkg = Path(out[0])
    assert out[1] == "[]"  # standard library only
    assert (pkg / "py.typed").is_file()
    resolver = pkg / "_resolve.py"
    assert resolver.is_file() and not resolver.is_symlink()
    assert resolver.read_text() == (SOURCE / "tables" / "python" / "blocktune_resolve.py").read_text()
