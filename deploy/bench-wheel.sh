#!/usr/bin/env bash
# The wheel's programs side by side with the source build's (docs/install.md#same-build): packs
# the wheel from BUILD_DIR's static runtime (deploy/wheel.sh --no-build), installs it into a fresh
# venv, then
#   - lookups: both blocktuned, each on an empty database, asked for every checked-in row of every
#     kernel (under its own hardware key and bucket) and for a spread of shapes on this host; the
#     answers must be identical JSON;
#   - sweeps: the same `blocktune sweep matmul --local --strategy random` (same seed, so the same
#     configs) with each build, alternating ROUNDS times; per config the ratio of the two builds'
#     median times (wheel / source), their geometric mean and spread, and each sweep's wall time.
# A benchmark, not a test: the numbers move with the machine's load (printed).
#   deploy/bench-wheel.sh [--build-dir build] [--rounds 3] [--shape m=256,n=256,k=256] [--budget 20]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$src/build
rounds=3
shape=m=256,n=256,k=256
budget=20
while (($#)); do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--rounds N] [--shape DIMS] [--budget N]" >&2; exit 2 ;;
  esac
done
build=$(cd "$build" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

"$src/deploy/wheel.sh" --build-dir "$build" --no-build --out "$work/dist" >/dev/null
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index --disable-pip-version-check "$work"/dist/*.whl
declare -A bin=([source]=$build/client [wheel]=$work/venv/bin)
declare -A daemon=([source]=$build/server/blocktuned [wheel]=$work/venv/bin/blocktuned)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for b in source wheel; do
  printf '%-7s blocktune %5.1f MB, blocktuned %5.1f MB; needs %s\n' "$b" \
    "$(stat -c %s "${bin[$b]}/blocktune" | awk '{print $1 / 1e6}')" "$(stat -c %s "${daemon[$b]}" | awk '{print $1 / 1e6}')" \
    "$(readelf -d "${daemon[$b]}" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
done
# Start-up: 50 runs of `blocktune --version`, alternating.
python3 - "${bin[source]}/blocktune" "${bin[wheel]}/blocktune" <<'PY'
import subprocess, sys, time
t = {a: [] for a in sys.argv[1:]}
for _ in range(50):
    for a in sys.argv[1:]:
        s = time.perf_counter(); subprocess.run([a, "--version"], stdout=subprocess.DEVNULL, check=True)
        t[a].append(time.perf_counter() - s)
med = [sorted(v)[len(v) // 2] * 1e3 for v in t.values()]
print(f"blocktune --version, median of 50: source {med[0]:.2f} ms, wheel {med[1]:.2f} ms")
PY

# --- lookups -------------------------------------------------------------------------------------
declare -A url
for b in source wheel; do
  mkdir -p "$work/$b"
  "${daemon[$b]}" --port 0 --port-file "$work/$b/port" --db "$work/$b/db/blocktune.db" --log-level warn >"$work/$b/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 200); do [[ -s $work/$b/port ]] && break; sleep 0.05; done
  url[$b]=http://127.0.0.1:$(cat "$work/$b/port")
done
python3 - "${url[source]}" "${url[wheel]}" "$src/tables/json" <<'PY'
import itertools, json, pathlib, sys, urllib.request
a, b, tables = sys.argv[1:]
queries = []
for f in sorted(pathlib.Path(tables).glob("*.json")):
    t = json.load(open(f))
    for r in t["rows"]:
        dims = {}
        rest = r["bucket"]
        for d in t["bucket_dims"]:  # bucket ids are name+value joined by "_", in bucket_dims order
            name = d["name"]
            assert rest.startswith(name), (rest, name)
            value, _, rest = rest[len(name):].partition("_")
            dims[name] = value
        q = "&".join(f"{k}={v}" for k, v in dims.items())
        queries.append(f"kernel={t['kernel']}&dtype={r['dtype']}&hardware={r['hardware']}&{q}")
for m, n, k, th in itertools.product((1, 100, 1000, 5000), (64, 1000, 4096), (1, 512, 3000), (1, 2)):
    queries.append(f"kernel=matmul&m={m}&n={n}&k={k}&threads={th}")
same = 0
for q in queries:
    ans = [json.load(urllib.request.urlopen(f"{u}/v1/lookup?{q}")) for u in (a, b)]
    assert ans[0] == ans[1], (q, ans)
    same += 1
print(f"lookups: {same} of {len(queries)} answers identical (every checked-in row of every kernel, and 72 host matmul shapes)")
PY

# --- sweeps --------------------------------------------------------------------------------------
for r in $(seq "$rounds"); do
  for b in source wheel; do
    rm -f "$work/$b/sweep.db"
    start=$(date +%s.%N)
    (cd "$work/$b" && "${bin[$b]}/blocktune" sweep matmul --local --db sweep.db --shape "$shape" --threads 1 \
      --strategy random --budget "$budget" --seed 1 --json >"sweep$r.json")
    end=$(date +%s.%N)
    sqlite3 -separator ' ' "$work/$b/sweep.db" \
      "SELECT config, outcome, IFNULL(median_ns, 0), IFNULL(fingerprint, '-') FROM measurements ORDER BY config" >"$work/$b/m$r.txt"
    echo "$r $b $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$start" "$end")" >>"$work/walls.txt"
  done
done
python3 - "$work" "$rounds" "$shape" "$budget" <<'PY'
import math, statistics, sys
work, rounds, shape, budget = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(b, r):  # config -> (median ns, fingerprint, outcome)
    return {c: (float(t), fp, o) for c, o, t, fp in (l.split() for l in open(f"{work}/{b}/m{r}.txt"))}
logs, bests, walls = [], [], {"source": [], "wheel": []}
for line in open(f"{work}/walls.txt"):
    r, b, w = line.split(); walls[b].append(float(w))
for r in range(1, rounds + 1):
    s, w = load("source", r), load("wheel", r)
    assert s.keys() == w.keys(), "the two builds evaluated different configs"
    fps = {fp for _, fp, o in list(s.values()) + list(w.values()) if o == "ok"}
    assert len(fps) == 1, f"fingerprints differ: {fps}"
    both = [c for c in s if s[c][2] == "ok" and w[c][2] == "ok"]
    logs += [math.log(w[c][0] / s[c][0]) for c in both]
    best = {b: min(v[0] for c, v in d.items() if c in both) / 1e3 for b, d in (("source", s), ("wheel", w))}
    bests.append(math.log(best["wheel"] / best["source"]))
    print(f"round {r}: {len(s)} configs, {len(both)} ok in both; best {best['source']:.1f} us (source) vs "
          f"{best['wheel']:.1f} us (wheel); "
          f"sweep wall {walls['source'][r - 1]:.1f} s vs {walls['wheel'][r - 1]:.1f} s")
g = math.exp(statistics.fmean(logs))
q = statistics.quantiles(logs, n=10)
print(f"sweep matmul --local --shape {shape} --strategy random --budget {budget} --seed 1, {rounds} alternations:")
print(f"  per-config median time, wheel / source: geometric mean {g:.3f}, "
      f"10th-90th percentile {math.exp(q[0]):.3f}-{math.exp(q[-1]):.3f} over {len(logs)} pairs")
print(f"  best config's median time, wheel / source: geometric mean {math.exp(statistics.fmean(bests)):.3f} over {rounds} rounds")
print(f"  sweep wall time, wheel / source: {statistics.fmean(walls['wheel']) / statistics.fmean(walls['source']):.3f}")
PY
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
