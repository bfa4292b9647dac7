#!/usr/bin/env bash
# Two independent `blocktune adapt` runs of one profile (two deploy/bench-adapt.sh work folders,
# each with its adapt.db and adapt-LEVEL.json): do they choose the same config per bucket, or
# configs within --tolerance (2%) of each other? Issue 39's target: at least 95% of buckets.
#
#   deploy/compare-adapt.sh WORK_A WORK_B [--isa LEVEL] [--tolerance 0.02] [--medians]
#
# Sweeps are matched by kernel, dtype and thread count; for every bucket where the two chose
# different configs, both configs are timed again here side by side, 11 interleaved repetitions
# of at least 20 ms (`blocktune sweeps compare --remeasure`: the median of their per-cycle
# ratios in one interleaved round, the paired figure `blocktune regret` and the decision rounds
# use), so neither run's noisy minute decides. --medians judges by the runs' stored medians instead (B's measurements of both
# configs, or A's when B never measured A's choice): no kernel runs, but the two medians come
# from different moments of one run. Run it on a quiet machine; with --isa the kernels are
# re-timed at that level (BLOCKTUNE_ISA). Prints one line per bucket that differs and the
# summary; writes WORK_A/compare-LEVEL.json.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: deploy/compare-adapt.sh WORK_A WORK_B [--isa LEVEL] [--tolerance 0.02] [--medians]" >&2; exit 2; }
(($# >= 2)) || usage
a=$1 b=$2
shift 2
isa="" tolerance=0.02 remeasure=--remeasure
while (($#)); do
  case $1 in
    --isa) isa=$2; shift 2 ;;
    --tolerance) tolerance=$2; shift 2 ;;
    --medians) remeasure=""; shift ;;
    *) usage ;;
  esac
done
bt=$PWD/build/client/blocktune
[[ -x $bt ]] || { echo "build first: deploy/build.sh" >&2; exit 2; }
level=${isa:-native}
for w in "$a" "$b"; do
  [[ -f $w/adapt.db && -f $w/adapt-$level.json ]] || { echo "$w: no adapt.db or adapt-$level.json (run deploy/bench-adapt.sh --work $w${isa:+ --isa $isa})" >&2; exit 2; }
done

# kernel dtype threads sweep_a sweep_b, one line per sweep both runs made.
pairs=$(python3 - "$a/adapt-$level.json" "$b/adapt-$level.json" <<'PY'
import json, sys
def sweeps(path):
    return {(s["kernel"], s["dtype"], s["threads"]): s["sweep"] for s in json.load(open(path))["sweeps"]}
sa, sb = sweeps(sys.argv[1]), sweeps(sys.argv[2])
for key in sorted(set(sa) & set(sb)):
    print(*key, sa[key], sb[key])
PY
)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
mode="judged by the runs' stored medians"
[[ -n $remeasure ]] && mode="re-timed side by side here (11 interleaved repetitions of >= 20 ms, paired)"
echo "== $level: $(wc -l <<<"$pairs") sweeps of each run; differing choices $mode; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
while read -r kernel dtype threads sa sb; do
  [[ -n $kernel ]] || continue
  BLOCKTUNE_ISA=${isa:-${BLOCKTUNE_ISA:-}} "$bt" sweeps compare --db-a "$a/adapt.db" --sweep-a "$sa" \
    --db-b "$b/adapt.db" --sweep-b "$sb" --tolerance "$tolerance" $remeasure ${remeasure:+--repetitions 11} --json \
    >"$out/$kernel-$dtype-t$threads.json"
done <<<"$pairs"

python3 - "$out" "$a/compare-$level.json" "$tolerance" "${remeasure:-medians}" <<'PY'
import glob, json, os, sys
folder, report, tolerance, how = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
rows, same, within, outside, unjudged = [], 0, 0, 0, 0
for path in sorted(glob.glob(f"{folder}/*.json")):
    name = os.path.basename(path)[:-5]
    r = json.load(open(path))
    for g in r["buckets"]:
        kind = "same" if g["chosen_a"] == g["chosen_b"] else ("within" if g["within"] else "OUTSIDE")
        same += kind == "same"
        within += kind == "within"
        outside += kind == "OUTSIDE"
        rows.append({"sweep": name, **g, "agreement": kind})
        if kind != "same":
            print(f"{name} {g['bucket']}: A {g['chosen_a']} B {g['chosen_b']} A/B - 1 = {100 * g['slowdown']:+.2f}% "
                  f"(by {g['judged_by']}) {kind}")
    for bucket in r["unjudged"]:
        unjudged += 1
        rows.append({"sweep": name, "bucket": bucket, "agreement": "unjudged"})
        print(f"{name} {bucket}: could not be judged")
n = same + within + outside
judge = "re-timed side by side (interleaved, regret's timing)" if how == "--remeasure" else "stored medians"
print(f"two-run agreement: {same + within} of {n} buckets ({100 * (same + within) / max(n, 1):.0f}%) chose the same "
      f"config ({same}) or configs within {100 * tolerance:.0f}% ({within}); {outside} outside; {unjudged} unjudged; "
      f"differences judged by {judge}")
json.dump({"tolerance": tolerance, "judged_by": judge, "same": same, "within": within, "outside": outside,
           "unjudged": unjudged, "buckets": rows}, open(report, "w"), indent=1)
PY
