#!/usr/bin/env bash
# Lookup throughput of blocktuned against a bare cpp-httplib server with the same socket
# options (server/bench/bare_server.cc), side by side with wrk on loopback: 16 connections,
# rounds alternating bare/blocktuned so machine drift hits both; then again while a sweep is
# writing measurements into blocktuned's database. Prints req/s and p99 per round and the
# ratio of medians. KIND `miss` asks for a hardware key nothing is tuned for, so every lookup is
# answered with the default and counted as a miss (GET /v1/misses); `hit` (the default) asks for
# this host's key, a tuned row where the checked-in table has one for this CPU.
# Usage: deploy/bench-lookup.sh [BUILD_DIR] [SECONDS_PER_ROUND] [ROUNDS] [hit|miss]
set -euo pipefail
build=${1:-build}
secs=${2:-10}
rounds=${3:-3}
kind=${4:-hit}
[[ $kind == hit || $kind == miss ]] || { echo "KIND must be hit or miss"; exit 2; }
command -v wrk >/dev/null || { echo "wrk not installed (deploy/install-deps.sh)"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

"$build/server/blocktuned" --port 0 --port-file "$work/ours.port" --db "$work/db/blocktune.db" \
  --http-threads 64 --log-level warn >"$work/ours.log" 2>&1 &
pids+=($!)
"$build/server/bare_server" --port-file "$work/bare.port" --threads 64 >"$work/bare.log" 2>&1 &
pids+=($!)
for _ in $(seq 200); do [[ -s $work/ours.port && -s $work/bare.port ]] && break; sleep 0.05; done
ours="http://127.0.0.1:$(cat "$work/ours.port")"
bare="http://127.0.0.1:$(cat "$work/bare.port")"
query="/v1/lookup?kernel=matmul&m=1000&n=1000&k=1000&threads=1"
if [[ $kind == miss ]]; then query+="&hardware=zz.untuned.t1"; fi
curl -fsS "$ours$query" >/dev/null
curl -fsS "$bare$query" >/dev/null

# wrk prints "Requests/sec: N" and, with --latency, " 99%  X.XXms|us"; normalise p99 to ms.
run() {
  local out
  out=$(wrk -t2 -c16 -d"${secs}s" --latency "$1$query")
  local rps p99
  rps=$(awk '/Requests\/sec:/ {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/, "", v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/, "", v)} else if (v ~ /s$/) {sub(/s$/, "", v); v*=1000}; print v}' <<<"$out")
  echo "$rps $p99"
}

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

phase() {
  local label=$1
  : >"$work/$label.ours" ; : >"$work/$label.bare"
  for r in $(seq "$rounds"); do
    read -r b_rps b_p99 < <(run "$bare")
    read -r o_rps o_p99 < <(run "$ours")
    printf '%-14s round %d  bare %9.0f req/s p99 %6.3f ms | blocktuned %9.0f req/s p99 %6.3f ms\n' \
      "$label" "$r" "$b_rps" "$b_p99" "$o_rps" "$o_p99"
    echo "$b_rps $b_p99" >>"$work/$label.bare"
    echo "$o_rps $o_p99" >>"$work/$label.ours"
  done
  local b o bp op
  b=$(cut -d' ' -f1 "$work/$label.bare" | median)
  o=$(cut -d' ' -f1 "$work/$label.ours" | median)
  bp=$(cut -d' ' -f2 "$work/$label.bare" | median)
  op=$(cut -d' ' -f2 "$work/$label.ours" | median)
  printf '%-14s median   bare %9.0f req/s p99 %6.3f ms | blocktuned %9.0f req/s p99 %6.3f ms | ratio %.2f\n' \
    "$label" "$b" "$bp" "$o" "$op" "$(awk -v a="$o" -v b="$b" 'BEGIN {print a / b}')"
}

echo "wrk -t2 -c16 -d${secs}s --latency, $rounds rounds, GET $query"
phase idle

# A sweep that writes measurements for the whole second phase (exhaustive over 4 buckets).
token=$(cat "$work/db/token")
curl -fsS -X POST "$ours/v1/sweeps" -H "Authorization: Bearer $token" \
  -d '{"kernel":"matmul","shapes":[{"m":64,"n":64,"k":64},{"m":128,"n":128,"k":128},{"m":256,"n":64,"k":64},{"m":64,"n":256,"k":64}]}' >/dev/null
sleep 1
phase during_sweep
echo "sweep progress at the end: $(curl -fsS "$ours/v1/sweeps/1" | sed -n 's/.*"progress":{"done":\([0-9]*\),"total":\([0-9]*\).*/\1 of \2 measurements/p')"
