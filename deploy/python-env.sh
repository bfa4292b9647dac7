#!/usr/bin/env bash
# Creates the Python environment the tests and examples run in: a venv (default build/pyenv)
# with every package of python/requirements-dev.lock installed by hash (jax, jaxlib, numpy,
# pytest and their dependencies; pip refuses a file whose sha256 is not in the lock), then the
# blocktune package from ./python, built offline with the locked setuptools (no build isolation,
# no dependencies: it has none at run time). Idempotent: the lock is installed again only when
# it changed (its sha256 is kept in the venv), the package on every call (~3 s), so the venv
# always has the working tree's package.
#   deploy/python-env.sh [VENV_DIR]
# Needs Debian's python3 and python3-venv (deploy/install-deps.sh) and PyPI the first time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build/pyenv}
lock=$root/python/requirements-dev.lock
# Debian's interpreter: the one the runner examples name (/usr/bin/python3), 3.11 on Debian 12.
python=${BLOCKTUNE_PYTHON:-/usr/bin/python3}

if [[ ! -x "$venv/bin/python" ]]; then
  "$python" -m venv "$venv"
fi
want=$(sha256sum "$lock" | cut -d' ' -f1)
have=$(cat "$venv/.lock.sha256" 2>/dev/null || true)
if [[ "$want" != "$have" ]]; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --require-hashes --only-binary :all: -r "$lock"
  echo "$want" >"$venv/.lock.sha256"
fi
# A private build directory: setuptools would otherwise write python/build/ into the source tree.
build_tmp=$(mktemp -d)
trap 'rm -rf "$build_tmp"' EXIT
cp -rL "$root/python/." "$build_tmp/"
rm -rf "$build_tmp/build" "$build_tmp"/src/*.egg-info
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --no-build-isolation --no-deps --force-reinstall "$build_tmp"
