#!/usr/bin/env bash
# Installs every Debian 12 package blocktune needs to build, run, test and benchmark, plus any
# package named on the command line (the scripts for optional jobs pass theirs:
# deploy/test-aarch64.sh, deploy/check-warnings.sh).
# Idempotent: packages already present are skipped, so rerunning costs one dpkg query.
#   deploy/install-deps.sh [EXTRA_PACKAGE...]
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libsqlite3-dev sqlite3
  nlohmann-json3-dev
  libcpp-httplib-dev
  libspdlog-dev
  libgtest-dev libgmock-dev
  libbenchmark-dev
  libcli11-dev
  libopenblas-dev   # baseline for benchmarks only; blocktune never links it into a product
  curl              # used by e2e scripts and the README's smoke check
  procps            # ps: the fault-worker e2e test watches the daemon's child processes
  python3           # the e2e test checks the generated Python tables; malformed-request corpus
  wrk               # deploy/bench-lookup.sh: lookup throughput vs a bare cpp-httplib server
  clang-14 libclang-rt-14-dev  # deploy/fuzz-request.sh: libFuzzer target on request decoding
  clang-format      # deploy/format.sh and the ctest `format`: the tree is in .clang-format's style
  chromium          # tests/ui: the dashboard's browser test drives it headless through playwright-core
  nginx openssl     # deploy/nginx/blocktune.conf and its e2e test (TLS front, slow clients)
  slurm-wlm munge   # deploy/slurm/ and its test: a single-node Slurm cluster on 127.0.0.1
  libmuparser-dev   # restrictions of external kernel specs (kernels/external)
  # The static runtime (cmake/static_runtime.cmake, the wheel's programs): static archives, and
  # dpkg-source for the Debian source packages of the libraries that have none.
  libssl-dev zlib1g-dev libbrotli-dev dpkg-dev xz-utils
  python3-numpy     # examples/numpy_matmul: the NumPy runner the external-kernel e2e test sweeps
  python3-venv      # deploy/python-env.sh: build/pyenv, the venv of the Python package's tests (python/)
)

# The contract tests (tests/contract: Redocly CLI lint of the served OpenAPI document, ajv over
# recorded exchanges) run on node >= 18.17 with npm; their npm packages are pinned in
# tests/contract/package-lock.json and installed by the test suite with `npm ci`. Debian 12
# ships nodejs 18.20 and npm 9.2. A machine whose node comes from elsewhere (NodeSource's
# nodejs bundles npm and conflicts with Debian's npm package) keeps it: asked for only when the
# command is missing.
command -v node >/dev/null 2>&1 || packages+=(nodejs)
command -v npm >/dev/null 2>&1 || packages+=(npm)
packages+=("$@")

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  sudo_cmd=()
  if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
