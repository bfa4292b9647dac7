#!/usr/bin/env bash
# Renders the dependency picture of docs/design.md from CMake's own target graph (cmake
# --graphviz: every library and executable of the product and what it links), so the picture
# cannot drift from the build. Tests, benchmarks and the fuzz/bench helpers are left out.
# schema/ builds nothing; its INTERFACE target blocktune_schema (top-level CMakeLists.txt), which
# the libraries that embed its files link, is drawn as the leaf they point down at.
# Installs graphviz (dot) through deploy/install-deps.sh.
#   deploy/docs-graph.sh [SOURCE_DIR] [OUT.png]
# Defaults: this checkout, docs/img/dependencies.png. The "before" picture of docs/design.md
# was made from the tree before issue 25 with: git worktree add /tmp/b 7e53c05 &&
#   deploy/docs-graph.sh /tmp/b docs/img/dependencies-before.png
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$(cd "${1:-$root}" && pwd)
out=${2:-$root/docs/img/dependencies.png}
command -v dot >/dev/null || "$root/deploy/install-deps.sh" graphviz >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Read by cmake --graphviz from the build directory.
cat >"$work/CMakeGraphVizOptions.cmake" <<'OPTS'
set(GRAPHVIZ_GRAPH_NAME "blocktune")
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
set(GRAPHVIZ_CUSTOM_TARGETS FALSE)
# Aliases and helper programs that are not part of the product's structure.
# Third-party libraries other than SQLite and muparser are left out too: SQLite is the one the
# picture has to show (who links it), muparser the external kernels' own.
set(GRAPHVIZ_IGNORE_TARGETS "^blocktune::" "^bare_server$" "^cpp_transpose_runner$" "^blocktune_version$"
    "^Threads::Threads$" "^PkgConfig::" "httplib" "^fmt::fmt$" "^spdlog::spdlog$"
    "^nlohmann_json::nlohmann_json$" "^CLI11::CLI11$")
OPTS
cmake -S "$src" -B "$work" -G Ninja -DBLOCKTUNE_BUILD_TESTS=OFF -DBLOCKTUNE_BUILD_BENCHMARKS=OFF \
  -DBLOCKTUNE_STATIC_RUNTIME=OFF --graphviz="$work/deps.dot" >"$work/configure.log"
# Drawn through, not as nodes: the blocktune_dep_* links to third-party libraries
# (cmake/static_runtime.cmake) and the executables' OBJECT libraries (their sources). An edge
# into one of them continues, with its style, to what the node links; to an ignored target, it ends.
python3 - "$work/deps.dot" <<'PY'
import re, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
node = re.compile(r'^\s*"(node\d+)" \[ label = "([^"\\]*)[^]]*shape = (\w+)')
edge = re.compile(r'^\s*"(node\d+)" -> "(node\d+)"(.*)$')
through = {m[1] for m in map(node.match, lines) if m and (m[2].startswith("blocktune_dep_") or m[3] == "hexagon")}
out = {}
for m in map(edge.match, lines):
    if m:
        out.setdefault(m[1], []).append((m[2], m[3]))
def ends(n, attr, seen=()):
    for to, _ in out.get(n, []):
        if to in through and to not in seen:
            yield from ends(to, attr, seen + (to,))
        elif to not in through:
            yield to, attr
kept, drawn = [], set()
for line in lines:
    m, e = node.match(line), edge.match(line)
    if m and m[1] in through:
        continue
    if e and (e[1] in through):
        continue
    if e and e[2] in through:
        for to, attr in ends(e[2], e[3]):
            if (e[1], to) not in drawn:
                drawn.add((e[1], to))
                kept.append(f'    "{e[1]}" -> "{to}"{attr}')
        continue
    kept.append(line)
open(path, "w").write("\n".join(kept) + "\n")
PY
mkdir -p "$(dirname "$out")"
# Dependencies below their users (the floors), libraries as boxes, executables as ovals.
dot -Grankdir=TB -Granksep=0.6 -Gdpi=110 -Nfontname=Helvetica -Tpng "$work/deps.dot" -o "$out"
echo "$out"
