#!/usr/bin/env bash
# Builds server/fuzz/request_fuzzer.cc with clang 14 (libFuzzer + AddressSanitizer + UBSan) and
# runs it for a bounded time on a corpus seeded with real requests. Exit 0: no crash, no
# sanitizer report, no broken scanner promise. Prints libFuzzer's final stats line.
# Usage: deploy/fuzz-request.sh [SECONDS] [OUT_DIR]
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$root/build-fuzz}
mkdir -p "$out/corpus"
clang++-14 -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I "$root" "$root/server/fuzz/request_fuzzer.cc" "$root/server/guards/guards.cc" -o "$out/request_fuzzer"
seed() { printf '%b' "$2" >"$out/corpus/$1"; }
seed sweep 'Host: 127.0.0.1\nContent-Length: 90\n\n{"kernel":"matmul","shapes":[{"m":8,"n":8,"k":8}],"strategy":"random","budget":1}'
seed batch 'Host: localhost:8787\n\n{"queries":[{"kernel":"matmul","dims":{"m":1,"n":2,"k":3},"config":{"block_m":48}}]}'
seed override 'Host: [::1]:80\n\n{"kernel":"matmul","hardware":"*","bucket":"m8_n8_k8","config":{"block_m":48},"reason":"r","expires_at":null}'
seed deep 'Host: 127.0.0.1\n\n[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]'
seed chunked 'Transfer-Encoding: chunked\nContent-Encoding: gzip\n\n"\\u00e9\\ud83d\\ude00"'
"$out/request_fuzzer" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  "$out/corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY)" || true
grep -q "Done [0-9]* runs in" "$out/fuzz.log" || { echo "FAIL: fuzzer did not finish cleanly"; tail -30 "$out/fuzz.log"; exit 1; }
echo "PASS: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$out/fuzz.log")"
