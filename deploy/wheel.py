#!/usr/bin/env python3
"""Writes blocktune's platform wheel from a staged install (deploy/wheel.sh makes the stage):
the Python package from python/src/blocktune, the three static binaries as the wheel's scripts
(pip puts them in the environment's bin/, so blocktune and blocktuned are on PATH and
blocktune-worker sits beside blocktuned, where it looks for it), and the stage's share/ as
data (the environment's share/blocktune: tables, kernel-spec schema, examples). Standard library
only; the metadata comes from python/pyproject.toml.

    wheel.py --stage DIR --package python/src/blocktune --pyproject python/pyproject.toml \
             --tag manylinux_2_36_x86_64 --out dist

Reproducible: entries sorted, every timestamp SOURCE_DATE_EPOCH (default 2020-01-01), so two
runs on the same stage give the same bytes. Symbolic links are stored as the files they name
(a wheel has no links). Prints the wheel's path.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import os
import stat
import sys
import time
import tomllib
import zipfile
from pathlib import Path

SCRIPTS = ("blocktune", "blocktuned", "blocktune-worker")


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _files(root: Path) -> list[Path]:
    """Every file under root (links followed), sorted, without bytecode caches."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        out.extend(Path(dirpath) / f for f in sorted(filenames) if not f.endswith(".pyc"))
    return out


def _metadata(project: dict, readme: str) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {project['name']}",
        f"Version: {project['version']}",
        f"Summary: {project['description']}",
        f"Requires-Python: {project['requires-python']}",
    ]
    lines += [f"Classifier: {c}" for c in project.get("classifiers", [])]
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    lines.append("Description-Content-Type: text/markdown")
    return "\n".join(lines) + "\n\n" + readme


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stage", required=True, type=Path, help="a staged install: bin/, share/")
    ap.add_argument("--package", required=True, type=Path, help="python/src/blocktune")
    ap.add_argument("--pyproject", required=True, type=Path)
    ap.add_argument("--tag", required=True, help="platform tag, e.g. manylinux_2_36_x86_64")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args()

    project = tomllib.loads(args.pyproject.read_text(encoding="utf-8"))["project"]
    name, version = project["name"], project["version"]
    readme = (args.pyproject.parent / project["readme"]).read_text(encoding="utf-8")
    dist_info = f"{name}-{version}.dist-info"
    data = f"{name}-{version}.data"
    wheel_tag = f"py3-none-{args.tag}"

    entries: list[tuple[str, bytes, int]] = []  # (archive name, bytes, unix mode)
    for f in _files(args.package):
        entries.append((f"{name}/{f.relative_to(args.package).as_posix()}", f.read_bytes(), 0o644))
    for s in SCRIPTS:
        entries.append((f"{data}/scripts/{s}", (args.stage / "bin" / s).read_bytes(), 0o755))
    share = args.stage / "share"
    for f in _files(share):
        mode = 0o755 if os.stat(f).st_mode & stat.S_IXUSR else 0o644
        entries.append((f"{data}/data/share/{f.relative_to(share).as_posix()}", f.read_bytes(), mode))
    entries.sort(key=lambda e: e[0])
    entries.append((f"{dist_info}/METADATA", _metadata(project, readme).encode(), 0o644))
    wheel = ("Wheel-Version: 1.0\nGenerator: blocktune deploy/wheel.py\nRoot-Is-Purelib: false\n"
             f"Tag: {wheel_tag}\n")
    entries.append((f"{dist_info}/WHEEL", wheel.encode(), 0o644))
    record = "".join(f"{n},{_record_hash(b)},{len(b)}\n" for n, b, _ in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode(), 0o644))

    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "1577836800"))
    stamp = time.gmtime(max(epoch, 315532800))[:6]  # zip cannot store dates before 1980
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"{name}-{version}-{wheel_tag}.whl"
    tmp = path.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for arcname, content, mode in entries:
            info = zipfile.ZipInfo(arcname, date_time=stamp)
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, content)
    tmp.replace(path)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
