#!/usr/bin/env bash
# Forcing an ISA level end to end: `blocktune bench --isa base` and `sweep --local --isa base`
# (configs run in blocktune-worker processes, which inherit the level) file their results under
# x86_64.base.*; a daemon started with --isa base reports and looks up that key; a level above
# the CPU's, or a misspelt one (flag or BLOCKTUNE_ISA), is a usage error (exit 2), never a
# measurement of the native path under another name.
# Usage: e2e_isa.sh BUILD_DIR
set -euo pipefail
build=$1
bt=$build/client/blocktune
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; cat "$work"/out "$work"/err 2>/dev/null || true; exit 1; }

"$bt" bench matmul --isa base --shape m=64,n=64,k=64 --repetitions 2 --min-time-ms 1 --json >"$work/out"
grep -q '"hardware":"[a-z0-9_]*\.base\.' "$work/out" || fail "bench --isa base did not report a base key"
grep -q '"verified":true' "$work/out" || fail "bench --isa base did not verify"

"$bt" sweep matmul --local --isa base --db "$work/local.db" --shape m=64,n=64,k=64 --threads 1 \
  --strategy random --budget 3 --min-repetition-ms 1 --repetitions 2 --json >"$work/out"
grep -q '"hardware":"[a-z0-9_]*\.base\.' "$work/out" || fail "sweep --local --isa base was not filed under a base key"
grep -q '"status":"done"' "$work/out" || fail "sweep --local --isa base did not finish"

rc=0; BLOCKTUNE_ISA=sse9 "$bt" bench matmul --shape m=64,n=64,k=64 >"$work/out" 2>"$work/err" || rc=$?
[[ $rc == 2 ]] || fail "BLOCKTUNE_ISA=sse9 exited $rc, expected 2"
grep -q "sse9" "$work/err" || fail "the error does not name the bad level"
native=$("$bt" bench matmul --shape m=8,n=8,k=8 --repetitions 1 --min-time-ms 1 --json | sed -n 's/.*"hardware":"[a-z0-9_]*\.\([a-z0-9]*\)\..*/\1/p')
if [[ $native != avx512 ]]; then
  rc=0; "$bt" bench matmul --isa avx512 --shape m=64,n=64,k=64 >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc == 2 ]] || fail "--isa avx512 on a $native CPU exited $rc, expected 2"
  rc=0; "$build/server/blocktuned" --isa avx512 --port 0 --db "$work/refused/x.db" >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc == 2 ]] || fail "blocktuned --isa avx512 on a $native CPU exited $rc, expected 2"
  [[ ! -e $work/refused/x.db ]] || fail "blocktuned created a database before refusing --isa"
fi

StartDaemon --isa base --max-cv 1000
curl -sf "$url/v1/hardware/host" >"$work/out" || fail "GET /v1/hardware/host"
grep -q '"isa":"base"' "$work/out" || fail "the daemon started with --isa base does not report it"
# A sweep through that daemon runs in its workers at base and files its winner under base.
"$bt" sweep matmul --server "$url" --token-file "$work/db/token" --shape m=64,n=64,k=64 --threads 1 \
  --strategy random --budget 2 --json >"$work/out"
grep -q '"hardware":"[a-z0-9_]*\.base\.' "$work/out" || fail "a sweep through blocktuned --isa base was not filed under base"
# --max-cv 1000: no config is judged unstable, so the sweep has a winner to look for.
"$bt" tuned --server "$url" --kernel matmul --json >"$work/out"
grep -q '\.base\.' "$work/out" || fail "the tuned row of that sweep is not under a base key"
curl -sf "$url/v1/lookup?kernel=matmul&m=64&n=64&k=64&threads=1" >"$work/out" || fail "GET /v1/lookup"
grep -q '"source":"tuned"' "$work/out" || fail "the daemon's own (base) key did not find its row"
# A sweep request names its own level (any the CPU runs, here above the daemon's base): its
# workers run it and its results are filed under it. A level above the CPU's is a 4xx naming isa.
if [[ $native != base ]]; then
  "$bt" sweep matmul --server "$url" --token-file "$work/db/token" --isa "$native" --shape m=64,n=64,k=64 \
    --threads 1 --strategy random --budget 2 --json >"$work/out"
  grep -q "\"hardware\":\"[a-z0-9_]*\\.$native\\." "$work/out" || fail "a sweep with isa $native was not filed under $native"
fi
if [[ $native != avx512 ]]; then
  rc=0; "$bt" sweep matmul --server "$url" --token-file "$work/db/token" --isa avx512 --shape m=64,n=64,k=64 \
    --threads 1 --strategy random --budget 2 --json >"$work/out" 2>"$work/err" || rc=$?
  [[ $rc == 4 ]] || fail "a sweep with isa avx512 on a $native CPU exited $rc, expected 4 (refused)"
  grep -q '"path":"isa"' "$work/out" "$work/err" || grep -q 'isa' "$work/err" || fail "the refusal does not name isa"
fi
echo "e2e_isa: ok (native level $native)"
