#!/usr/bin/env bash
# Judges `blocktune adapt` the way a new machine meets it (issue 22): this host's CPU model is
# taken out of a copy of the checked-in table, so adapt starts from other machines' rows only;
# adapt runs under its time budget; then every bucket's new row is timed interleaved against
# the row the checked-in table had for this host (exhaustive sweeps for matmul, flash_attention
# and ragged_paged_attention f32; seeded random samples otherwise, see deploy/retune-tables.sh)
# and the kernel's default, with `blocktune regret` (the same decision-round timing as a sweep).
#
#   deploy/bench-adapt.sh [--isa LEVEL] [--budget-minutes M] [--work DIR] [--threads 1,2] [--kernel K]...
#                         [--judge-repetitions N]
#
# The judge: each bucket's rows timed in one interleaved round of N (11) repetitions of >= 20 ms.
# Its figures are paired (timing/paired.h, what the decision rounds use): a row's paired gain g
# over the default is 1 - the median of its per-cycle ratios to the default, so "adapt vs
# default" is 1 / (1 - g) and "reference time / adapt time" is (1 - g_ref) / (1 - g_adapt); a row
# is SLOWER when g < 0 beyond its pair's band. Each config's own median moves with whatever hit
# its repetitions: on the 2-core Zen 4 of 2026-12-07 two judgings of the same rows by medians (7
# repetitions) disagreed on "within 2%" in 8 of 62 buckets. The medians' figures are printed too.
#
# --work DIR keeps the table copy and the database: run the native level first and then
# `--isa avx2` with the same DIR, and the second profile draws on the first's rows as a real
# second profile on one host would. Prints adapt's wall time, one line per bucket and the
# summary the issue asks for (within 2% of the reference on >= 90% of buckets, never slower
# than the default beyond the noise, geomean over the default at least the reference's minus
# 1%), and how the decision rounds decided (rows kept at the default, verdicts that took extra
# rounds); everything is also left in DIR (adapt.json, regret/*.json, summary.md). Publishing the
# rows is a separate, gated step it prints at the end. Two independent runs (two DIRs) are
# compared with deploy/compare-adapt.sh DIR_A DIR_B [--isa LEVEL].
set -euo pipefail
cd "$(dirname "$0")/.."
isa="" budget=15 work="" threads=1,2 judge_reps=11
kernel_args=()
while (($#)); do
  case $1 in
    --isa) isa=$2; shift 2 ;;
    --budget-minutes) budget=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --kernel) kernel_args+=(--kernel "$2"); shift 2 ;;
    --judge-repetitions) judge_reps=$2; shift 2 ;;
    *) echo "usage: deploy/bench-adapt.sh [--isa LEVEL] [--budget-minutes M] [--work DIR] [--threads 1,2] [--kernel K]... [--judge-repetitions N]" >&2
       exit 2 ;;
  esac
done
bt=$PWD/build/client/blocktune
[[ -x $bt ]] || { echo "build first: deploy/build.sh" >&2; exit 2; }
work=${work:-$(mktemp -d /tmp/bench-adapt.XXXXXX)}
mkdir -p "$work/regret"
isa_args=()
[[ -n $isa ]] && isa_args=(--isa "$isa")
level=${isa:-native}

# This CPU's model component ("amd.fam25_mod17"): every row of it, at any ISA level and thread
# count, is this host's own and leaves the copy (kept aside as the reference).
model=$(python3 - <<'PY'
fields = {}
for line in open("/proc/cpuinfo"):
    if ":" in line:
        k, v = (s.strip() for s in line.split(":", 1))
        fields.setdefault(k, v)
vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(fields.get("vendor_id", ""), "other")
print(f"{vendor}.fam{int(fields['cpu family'])}_mod{int(fields['model'])}")
PY
)
if [[ ! -f $work/tables/tuned_entries.jsonl ]]; then
  mkdir -p "$work/tables"
  cp -r tables/. "$work/tables/"
  python3 - "$work" "$model" <<'PY'
import json, sys
work, model = sys.argv[1:]
keep, own = [], []
for line in open(f"{work}/tables/tuned_entries.jsonl"):
    row = json.loads(line)
    (own if f".{model}." in row["hardware"] else keep).append(line)
open(f"{work}/tables/tuned_entries.jsonl", "w").writelines(keep)
open(f"{work}/reference.jsonl", "w").writelines(own)
print(f"table copy: {len(keep)} rows of other machines; {len(own)} rows of this CPU ({model}) set aside as the reference")
PY
fi

echo "== adapt ($level, budget $budget min, threads $threads) in $work" >&2
thread_args=()
for t in ${threads//,/ }; do thread_args+=(--threads "$t"); done
start=$(date +%s.%N)
"$bt" adapt --local --db "$work/adapt.db" --tables "$work/tables" --budget-minutes "$budget" "${isa_args[@]}" \
  "${thread_args[@]}" "${kernel_args[@]}" --json >"$work/adapt-$level.json"
wall=$(python3 -c "import time,sys; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$start")
echo "adapt wall time: $wall s (budget $budget min), load $(cut -d' ' -f1-3 /proc/loadavg)"

# The comparison table: adapt's rows under this host's keys as they are, the reference rows under
# a placeholder model of the same vendor and ISA level ("_mod99999"), so `regret` times both, and
# the default, in one interleaved round per bucket (its levels exact and other_model).
python3 - "$work" "$model" <<'PY'
import json, sys
work, model = sys.argv[1:]
rows = []
for line in open(f"{work}/tables/tuned_entries.jsonl"):
    row = json.loads(line)
    if f".{model}." in row["hardware"]:
        rows.append(row)
for line in open(f"{work}/reference.jsonl"):
    row = json.loads(line)
    row["hardware"] = row["hardware"].replace(f".{model}.", f".{model.split('_mod')[0]}_mod99999.")
    rows.append(row)
with open(f"{work}/compare.jsonl", "w") as f:
    for row in rows:
        f.write(json.dumps(row, separators=(",", ":")) + "\n")
PY

kernels=$(python3 -c "import json,sys; print(' '.join(sorted({json.loads(l)['kernel']+':'+json.loads(l)['dtype'] for l in open(sys.argv[1])})))" \
  "$work/compare.jsonl")
for kd in $kernels; do
  for t in ${threads//,/ }; do
    k=${kd%%:*} d=${kd##*:}
    out="$work/regret/$level-$k-$d-t$t.json"
    "$bt" regret "$k" --dtype "$d" --threads "$t" "${isa_args[@]}" --table "$work/compare.jsonl" \
      --repetitions "$judge_reps" --json >"$out" \
      2>"$out.err" || rm -f "$out"
  done
done

python3 - "$work" "$level" "$wall" "$budget" "$model" <<'PY'
import glob, json, math, sys
work, level, wall, budget, model = sys.argv[1:]
lines, n, within, within_medians, slower, ref_n = [], 0, 0, 0, 0, 0
def speedup(row):  # over the default, paired: 1 / (1 - paired gain)
    return 1 / (1 - row["paired_gain"])
log_new, log_ref, log_both_new, both = 0.0, 0.0, 0.0, 0
for path in sorted(glob.glob(f"{work}/regret/{level}-*.json")):
    name = path.rsplit("/", 1)[1][len(level) + 1:-5]
    report = json.load(open(path))
    ref_key = report["hardware"].replace(f".{model}.", f".{model.split('_mod')[0]}_mod99999.")
    for b in report["buckets"]:
        new = next((r for r in b["rows"] if r["hardware"] == report["hardware"]), None)
        ref = next((r for r in b["rows"] if r["hardware"] == ref_key), None)
        if not new or new.get("outcome") != "ok":
            continue
        n += 1
        s_new = speedup(new)
        log_new += math.log(s_new)
        bad = new["paired_gain"] < 0 and new["beyond_noise"]
        slower += bad
        text = f"| {name} | {b['bucket']} | {s_new:.3f}{' SLOWER' if bad else ''} |"
        if ref and ref.get("outcome") == "ok":
            ref_n += 1
            ratio = s_new / speedup(ref)
            by_medians = ref["median_ns"] / new["median_ns"]
            within += ratio >= 1 / 1.02
            within_medians += by_medians >= 1 / 1.02
            log_ref += math.log(speedup(ref))
            log_both_new += math.log(s_new)
            both += 1
            text += (f" {speedup(ref):.3f} | {ratio:.3f}{'' if ratio >= 1 / 1.02 else ' (>2% behind)'} "
                     f"| {by_medians:.3f} |")
        else:
            text += " - | - | - |"
        lines.append(text)
out = [f"adapt {level}: {wall} s for a {budget}-minute budget; {n} buckets",
       "", "| kernel-dtype-threads | bucket | adapt vs default | reference vs default | reference time / adapt time "
       "| the same by medians |",
       "|---|---|---|---|---|---|", *lines, ""]
if n:
    out.append(f"never slower than the default beyond the noise: {n - slower} of {n} buckets")
if both:
    out.append(f"within 2% of the reference: {within} of {ref_n} buckets ({100 * within / ref_n:.0f}%); "
               f"by the medians {within_medians} ({100 * within_medians / ref_n:.0f}%)")
    out.append(f"geomean over the default on those {both}: adapt {math.exp(log_both_new / both):.3f}, "
               f"reference {math.exp(log_ref / both):.3f}")
# How this run's decision rounds decided (final_rounds, one row per candidate; the round's
# decision text, verdict and rounds repeated on each).
import sqlite3
sweeps = [s["sweep"] for s in json.load(open(f"{work}/adapt-{level}.json"))["sweeps"]]
if sweeps:
    db = sqlite3.connect(f"{work}/adapt.db")
    marks = ",".join("?" * len(sweeps))
    rounds = db.execute(f"SELECT sweep_id, bucket, MAX(decision), MAX(rounds) FROM final_rounds "
                        f"WHERE sweep_id IN ({marks}) GROUP BY sweep_id, bucket", sweeps).fetchall()
    kept_default = sum(1 for r in rounds if r[2].startswith("kept default"))
    extra = sum(1 for r in rounds if (r[3] or 1) > 1)
    out.append(f"decision rounds: {len(rounds)}; kept the default in {kept_default}; "
               f"{extra} took extra rounds for a close verdict")
text = "\n".join(out)
print(text)
open(f"{work}/summary-{level}.md", "w").write(text + "\n")
PY
echo
echo "publish through the regression gate (times each new row against the checked-in one):"
echo "  build/client/blocktune tables generate --db $work/adapt.db --out tables   # every ISA level of this CPU"
