#!/usr/bin/env bash
# End to end: blocktuned on a free port with a temporary DB; a small matmul sweep through the
# CLI; the winner looked up over HTTP; the header regenerated into a temporary folder; a small
# program that includes only that header compiled, run, and checked to give the same config;
# the generated Python table checked to agree.
# Usage: e2e_sweep_lookup_header.sh BUILD_DIR CXX
set -euo pipefail
build=$1
cxx=${2:-c++}
source "$(dirname "$0")/lib.sh"

StartDaemon --min-repetition-ms 2 --repetitions 3 --max-cv 1000 --log-level warn

curl -fsS "$url/healthz" | grep -q '"ok"'

# Mutating routes need the token.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/v1/sweeps" -d '{}')
[[ $code == 401 ]] || { echo "POST without token gave $code"; exit 1; }

"$build/client/blocktune" sweep matmul --server "$url" --token-file "$work/db/token" \
  --shape m=96,n=80,k=64 --strategy random --budget 4 --seed 7 --json >"$work/sweep.json"
grep -q '"status":"done"' "$work/sweep.json" || { cat "$work/sweep.json"; exit 1; }

hw=$(curl -fsS "$url/v1/lookup?kernel=matmul&m=96&n=80&k=64&threads=1" | tee "$work/lookup.json" |
  sed -n 's/.*"hardware":"\([^"]*\)".*/\1/p')
grep -q '"source":"tuned"' "$work/lookup.json" || { cat "$work/lookup.json"; exit 1; }
http_config=$(sed -n 's/.*"config":{"block_m":\([0-9]*\),"block_n":\([0-9]*\),"block_k":\([0-9]*\)}.*/\1 \2 \3/p' "$work/lookup.json")
[[ -n $http_config ]] || { echo "no config in lookup"; cat "$work/lookup.json"; exit 1; }

# The CLI reads the daemon's DB (WAL allows a concurrent reader) and writes a fresh table tree.
"$build/client/blocktune" tables generate --db "$work/db/blocktune.db" --out "$work/tables" >/dev/null
header="$work/tables/include/blocktune/tables/matmul_tuned_block_sizes.h"
grep -q "$hw" "$header"

cat >"$work/app.cc" <<CC
#include "matmul_tuned_block_sizes.h"
#include <cstdio>
int main() {
  namespace t = blocktune::tables;
  auto r = t::matmul::LookupBlockSizes("$hw", "f32", 96, 80, 64);
  if (r.source != t::Source::kTuned) return 2;
  // Another thread count on the same CPU borrows the row: tuned_fallback.
  auto f = t::matmul::LookupBlockSizes("${hw%.*}.t64", "f32", 96, 80, 64);
  if (f.source != t::Source::kTunedFallback) return 3;
  // Unknown hardware gets the default.
  auto d = t::matmul::LookupBlockSizes("riscv64.base.other.fam0_mod0.t1", "f32", 96, 80, 64);
  if (d.source != t::Source::kDefault) return 4;
  std::printf("%lld %lld %lld\n", (long long)r.config.block_m, (long long)r.config.block_n, (long long)r.config.block_k);
  return 0;
}
CC
"$cxx" -std=c++17 -O1 -I "$work/tables/include/blocktune/tables" "$work/app.cc" -o "$work/app"
app_config=$("$work/app")
# The generated Python table answers the same (it shares blocktune_resolve.py, the Python twin
# of resolve.h).
py_config=$(cd "$work/tables/python" && python3 -c "
import matmul_tuned_block_sizes as t
c, source, hw, bucket = t.infer_block_sizes('$hw', 'f32', m=96, n=80, k=64)
assert source == 'tuned', source
c2, source2, _, _ = t.infer_block_sizes('${hw%.*}.t64', 'f32', m=96, n=80, k=64)
assert source2 == 'tuned_fallback' and c2 == c, source2
print(c['block_m'], c['block_n'], c['block_k'])")
echo "http: $http_config  header: $app_config  python: $py_config"
[[ "$http_config" == "$app_config" ]]
[[ "$http_config" == "$py_config" ]]
