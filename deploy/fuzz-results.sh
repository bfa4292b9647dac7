#!/usr/bin/env bash
# Builds server/fuzz/results_fuzzer.cc with clang 19 (libFuzzer + AddressSanitizer + UBSan) and
# runs it for a bounded time on a corpus seeded with real POST /v1/results bodies. Exit 0: no
# crash, no sanitizer report, no broken codec promise (see the target). Prints libFuzzer's final
# stats. clang 19, not 14 as for deploy/fuzz-request.sh: the results codec returns Result<T>
# (std::expected), which clang 14 cannot compile with libstdc++ 12.
# Everything that handles JSON (the whole wire library: server/wire/*.cc, guards/guards.cc) and the
# ingest checks (tuner/check.cc) are compiled here with coverage and sanitizers; the rest they
# call (kernel specs, the names of outcomes and strategies; no JSON) is linked from the GCC
# build's static libraries, so BUILD_DIR must be built first. Not the GCC build's wire library:
# nlohmann's ordered_map has a different layout under the two compilers (ASan reported a
# new-delete-type-mismatch, 24 vs 32 bytes, on the first input when the two were mixed).
# Usage: deploy/fuzz-results.sh [SECONDS] [BUILD_DIR] [OUT_DIR]
set -euo pipefail
secs=${1:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${2:-$root/build}" && pwd)
out=${3:-$build/fuzz-results}
"$root/deploy/install-deps.sh" clang-19 libclang-rt-19-dev >/dev/null
mkdir -p "$out/corpus"
libs=()
for l in store/libblocktune_store.a tuner/libblocktune_tuner.a kernels/libblocktune_kernels.a; do
  [[ -f $build/$l ]] || { echo "FAIL: $build/$l is missing; build the tree first"; exit 1; }
  libs+=("$build/$l")
done
flags=(-std=c++23 -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -I "$root" -I "$root/tables/include" -I "$build/generated")
srcs=(server/fuzz/results_fuzzer.cc server/wire/*.cc server/guards/guards.cc tuner/check.cc)
mkdir -p "$out/obj"
# Two compilers at a time (the machine's cores).
objs=()
running=0
for s in "${srcs[@]}"; do
  o="$out/obj/$(echo "$s" | tr / _).o"
  objs+=("$o")
  clang++-19 "${flags[@]}" -c "$root/$s" -o "$o" &
  running=$((running + 1))
  if ((running == 2)); then wait -n || { echo "FAIL: compiling the fuzz target"; exit 1; }; running=$((running - 1)); fi
done
while ((running > 0)); do wait -n || { echo "FAIL: compiling the fuzz target"; exit 1; }; running=$((running - 1)); done
clang++-19 -fsanitize=fuzzer,address,undefined "${objs[@]}" \
  -Wl,--start-group "${libs[@]}" -Wl,--end-group $(pkg-config --libs sqlite3 spdlog) -lmuparser -pthread \
  -o "$out/results_fuzzer"
# Seeds: a valid batch (what push sends), a failure outcome, an invalid record, an empty batch.
hw='{"key":"x86_64.avx2.amd.fam25_mod1.t1","arch":"x86_64","isa":"avx2","vendor":"amd","family":25,"model":1,"model_name":"cpu","cores":2,"l1d_bytes":32768,"l2_bytes":524288,"l3_bytes":0,"threads":1}'
sweep='{"uid":"0123456789abcdef","host":"h","kernel":"matmul","dtype":"f32","threads":1,"strategy":"random","budget":2,"budget_seconds":0,"seed":1,"shapes":[{"m":64,"n":64,"k":64}],"shard_index":0,"shard_count":1,"status":"done","progress_total":2,"error":"","bucket_version":1,"created_at":"t","started_at":"","finished_at":"","environment":{"load_average":"","affinity":"","governor":"","compiler":"","build_flags":"","tool_version":"v"}}'
m() { printf '{"bucket":"%s","problem":{"m":64,"n":64,"k":64},"config":%s,"outcome":"%s","detail":"","iterations":10,"median_ns":%s,"cv":0.05,"max_abs_err":0,"max_rel_err":0.1,"samples_ns":[%s],"created_at":"t","fingerprint":null}' "$@"; }
ok=$(m m64_n64_k64 '{"block_m":48,"block_n":128,"block_k":128}' ok 1100 '1000,1100,1200')
crash=$(m m64_n64_k64 '{"block_m":96,"block_n":128,"block_k":128}' crashed 0 '')
bad=$(m m999_n1_k1 '{"block_m":-96,"block_n":7,"block_k":0}' ok 1e-305 '-5')
printf '{"batch_id":"b:1-2","sweep":%s,"hardware":%s,"measurements":[%s,%s]}' "$sweep" "$hw" "$ok" "$crash" >"$out/corpus/valid"
printf '{"batch_id":"b:3","sweep":%s,"hardware":%s,"measurements":[%s]}' "$sweep" "$hw" "$bad" >"$out/corpus/invalid"
printf '{"batch_id":"b:empty","sweep":%s,"hardware":%s,"measurements":[]}' "$sweep" "$hw" >"$out/corpus/empty"
printf '{"batch_id":"b","sweep_id":1,"measurements":2,"inserted":2,"replayed":false,"winners":1}' >"$out/corpus/answer"
"$out/results_fuzzer" -max_total_time="$secs" -artifact_prefix="$out/" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 \
  "$out/corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|results codec promise)" || true
grep -q "Done [0-9]* runs in" "$out/fuzz.log" || { echo "FAIL: fuzzer did not finish cleanly"; tail -30 "$out/fuzz.log"; exit 1; }
echo "PASS: $(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$out/fuzz.log")"
