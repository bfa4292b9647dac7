#!/usr/bin/env python3
"""Part of deploy/device-check.sh: reads what the check wrote under its output folder and prints
it side by side: each sweep's wall time and efficiency, each bucket's tuned config against the
kernel's default (re-timed together by `blocktune regret --hardware KEY`, through the runner),
the Pallas flash attention against jax.nn.dot_product_attention, and the rows the generated
tables hold under the device's key. Writes report.json beside them. Exits 1 when a target is
missed: a sweep not filed under the key, fewer than --min-cells (kernel, bucket) cells under
it, a tuned row slower than the default beyond the noise, or the wall time over --limit-s.

  report.py OUT_DIR --key gpu.nvidia.sm90.h200 --elapsed-s S --limit-s 480 [--min-cells 6]
"""
import argparse
import glob
import json
import os
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def ms(x):
    return "-" if x is None else f"{x:.4f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--key", required=True)
    ap.add_argument("--elapsed-s", type=float, required=True)
    ap.add_argument("--limit-s", type=float, default=480)
    ap.add_argument("--min-cells", type=int, default=6)
    a = ap.parse_args()
    problems = []
    report = {"key": a.key, "elapsed_s": a.elapsed_s, "limit_s": a.limit_s}

    print(f"\n== sweeps (device {a.key})")
    print(f"{'kernel':32} {'dtype':5} {'status':7} {'hardware':24} {'measured':>8} {'wall s':>8} {'timed s':>8} "
          f"{'efficiency':>10}")
    sweeps = []
    for path in sorted(glob.glob(os.path.join(a.out, "sweeps", "*.json"))):
        s = load(path)
        b = s.get("breakdown") or {}
        wall, timed = b.get("wall_s", 0.0), b.get("timed_s", 0.0)
        eff = b.get("efficiency", timed / wall if wall else 0.0)
        sweeps.append({"id": s["id"], "kernel": s["kernel"], "dtype": s["dtype"], "status": s["status"],
                       "hardware": s["hardware"], "device": s.get("device"), "measured": s["progress"]["done"],
                       "wall_s": wall, "timed_s": timed, "efficiency": eff})
        print(f"{s['kernel']:32} {s['dtype']:5} {s['status']:7} {s['hardware']:24} {s['progress']['done']:8d} "
              f"{wall:8.1f} {timed:8.2f} {eff:10.2f}")
        if s["hardware"] != a.key:
            problems.append(f"sweep {s['id']} is filed under {s['hardware']}, not {a.key}")
        if s["status"] != "done":
            problems.append(f"sweep {s['id']} {s['status']}: {s.get('error', '')}")
    total_wall = sum(x["wall_s"] for x in sweeps)
    total_timed = sum(x["timed_s"] for x in sweeps)
    print(f"{'all sweeps':32} {'':5} {'':7} {'':24} {sum(x['measured'] for x in sweeps):8d} {total_wall:8.1f} "
          f"{total_timed:8.2f} {(total_timed / total_wall if total_wall else 0):10.2f}")
    report["sweeps"] = sweeps

    print("\n== tuned vs default, re-timed side by side through the runner (blocktune regret --hardware)")
    print(f"{'kernel':32} {'dtype':5} {'bucket':44} {'default ms':>10} {'tuned ms':>10} {'speedup':>8} {'noise':>6}  "
          f"tuned config")
    buckets = []
    for path in sorted(glob.glob(os.path.join(a.out, "regret", "*.json"))):
        r = load(path)
        for b in r["buckets"]:
            rows = b["rows"]
            default = next((x for x in rows if x["level"] == "default"), None)
            tuned = next((x for x in rows if x["level"] == "exact"), None)
            if default is None or tuned is None:
                continue
            entry = {"kernel": r["kernel"], "dtype": r["dtype"], "bucket": b["bucket"], "config": tuned["config"],
                     "default_ms": default.get("median_ns", 0) / 1e6 if default["outcome"] == "ok" else None,
                     "tuned_ms": tuned.get("median_ns", 0) / 1e6 if tuned["outcome"] == "ok" else None,
                     "speedup": tuned.get("speedup_vs_default"), "beyond_noise": tuned.get("beyond_noise"),
                     "detail": tuned.get("detail") or default.get("detail")}
            buckets.append(entry)
            cfg = ",".join(f"{k}={v}" for k, v in tuned["config"].items())
            sp = "-" if entry["speedup"] is None else f"{entry['speedup']:.3f}x"
            noise = "-" if entry["beyond_noise"] is None else ("beyond" if entry["beyond_noise"] else "within")
            print(f"{r['kernel']:32} {r['dtype']:5} {b['bucket']:44} {ms(entry['default_ms']):>10} "
                  f"{ms(entry['tuned_ms']):>10} {sp:>8} {noise:>6}  {cfg}"
                  + (f"  ({entry['detail']})" if entry["detail"] else ""))
            if entry["speedup"] is not None and entry["speedup"] < 1 and entry["beyond_noise"]:
                problems.append(f"{r['kernel']} {r['dtype']} {b['bucket']}: tuned is slower than the default "
                                f"beyond the noise ({entry['speedup']:.3f}x)")
    report["tuned_vs_default"] = buckets

    att_path = os.path.join(a.out, "attention.json")
    if os.path.exists(att_path):
        att = load(att_path)
        print(f"\n== flash attention (causal): Pallas, tuned and default, against jax.nn.dot_product_attention "
              f"({'fake device: not timed' if att.get('fake_device') else 'jax ' + att.get('jax', '?')})")
        print(f"{'shape':46} {'dtype':5} {'source':14} {'pallas tuned':>12} {'pallas dflt':>12} {'xla':>10} "
              f"{'cudnn':>10}")
        for r in att["rows"]:
            shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
            print(f"{shape:46} {r['dtype']:5} {r['source']:14} {ms(r.get('pallas_tuned_ms')):>12} "
                  f"{ms(r.get('pallas_default_ms')):>12} {ms(r.get('xla_ms')):>10} {ms(r.get('cudnn_ms')):>10}"
                  + "".join(f"  {n}: {r[n + '_error']}" for n in ("pallas_tuned", "pallas_default", "xla", "cudnn")
                            if r.get(n + "_error")))
        report["attention"] = att

    cells = set()
    for path in sorted(glob.glob(os.path.join(a.out, "tables", "json", "*_tuned_block_sizes.json"))):
        t = load(path)
        for row in t["rows"]:
            if row["hardware"] == a.key:
                cells.add((t["kernel"], row["dtype"], row["bucket"]))
    kb = {(k, b) for k, _, b in cells}
    print(f"\n== generated tables: {len(cells)} rows under {a.key}, {len(kb)} (kernel, bucket) cells "
          f"(at least {a.min_cells} wanted)")
    report["rows_under_key"] = len(cells)
    report["cells_under_key"] = len(kb)
    if len(kb) < a.min_cells:
        problems.append(f"only {len(kb)} (kernel, bucket) cells under {a.key}")
    print(f"== wall time {a.elapsed_s:.0f} s (limit {a.limit_s:.0f} s)")
    if a.elapsed_s > a.limit_s:
        problems.append(f"the check took {a.elapsed_s:.0f} s, over {a.limit_s:.0f} s")
    report["problems"] = problems
    with open(os.path.join(a.out, "report.json"), "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1)
    for p in problems:
        print("MISSED: " + p)
    print("device check: " + ("ok" if not problems else f"{len(problems)} target(s) missed"))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
