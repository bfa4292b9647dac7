#!/usr/bin/env python3
"""Ratio tables from the kernel benchmarks' Google Benchmark JSON output.

Every benchmark program registers each of our rows next to its baseline, named
    <impl>/<case...>/t<threads>[/<config>]
where baselines have no config part (openblas, materialised_openblas, unfused_openblas,
openblas_per_group, openblas_padded, gather_flash) and our rows end in a config such as
bm96_bn512_bk256_default or bm48_bn512_bk512_tuned. This script pairs each of our rows with
every baseline of the same case and thread count and prints, per pair, the speedup
(baseline median time / our median time: above 1 means ours is faster), plus the fraction of
the FLOP roofline (fma_peak_<isa> x threads, from roofline_bench run at the same ISA level) and,
where a row reports GBps, of the measured DRAM read rate (stream_read_<isa> x threads). Only medians are used, so run the benchmarks with
--benchmark_repetitions and --benchmark_enable_random_interleaving (deploy/bench-kernels.sh does).

    kernels/bench/compare.py results/*.json [--markdown]
"""
import json
import math
import re
import sys

BASELINES = {
    "openblas", "materialised_openblas", "unfused_openblas", "openblas_per_group", "openblas_padded",
    "gather_flash",
}
PEAK_PREFIXES = ("fma_peak_", "stream_read_")
THREADS = re.compile(r"^t(\d+)$")


def load(paths):
    rows = {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        for b in data.get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"])
            if name.endswith("/real_time"):
                name = name[: -len("/real_time")]
            rows[(path, name)] = b
    return rows


def split(name):
    parts = name.split("/")
    for i, p in enumerate(parts):
        m = THREADS.match(p)
        if m:
            return parts[0], "/".join(parts[1:i]), int(m.group(1)), "/".join(parts[i + 1:])
    return parts[0], "/".join(parts[1:]), 1, ""


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    rows = load(paths)
    peak_gflops = peak_gbps = None
    peak_names = []
    baselines = {}
    ours = []
    for (path, name), b in sorted(rows.items()):
        impl, case, threads, config = split(name)
        if impl.startswith(PEAK_PREFIXES):
            peak_names.append(impl)
            if impl.startswith("fma"):
                peak_gflops = b.get("GFLOPs")
            else:
                peak_gbps = b.get("GBps")
            continue
        kernel = path.rsplit("/", 1)[-1].split(".")[0]
        if impl in BASELINES and not config:
            baselines.setdefault((kernel, case, threads), []).append((impl, b))
        elif config:
            ours.append((kernel, impl, case, threads, config, b))

    print("| kernel | case | threads | ours (config) | baseline | ours | baseline | speedup | FLOP roofline | read roofline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    speedups = {}
    for kernel, impl, case, threads, config, b in ours:
        for base_impl, base in baselines.get((kernel, case, threads), []):
            speedup = base["real_time"] / b["real_time"]
            speedups.setdefault((kernel, base_impl, config.endswith("tuned")), []).append(speedup)
            gf = b.get("GFLOPs")
            roof = f"{gf / (peak_gflops * threads):.0%}" if gf and peak_gflops else ""
            gb = b.get("GBps")
            read = f"{gb / (peak_gbps * threads):.0%}" if gb and peak_gbps else ""
            unit = "GFLOP/s"
            ours_v = f"{gf:.1f}" if gf else f"{b['real_time']:.3g} {b.get('time_unit', '')}"
            base_v = f"{base['GFLOPs']:.1f}" if base.get("GFLOPs") else f"{base['real_time']:.3g} {base.get('time_unit', '')}"
            print(f"| {kernel} | {case} | {threads} | {impl} {config} | {base_impl} | {ours_v} | {base_v} | "
                  f"{speedup:.2f}x | {roof} | {read} |")
    print()
    if peak_gflops:
        fma = next((n for n in peak_names if n.startswith("fma")), "")
        read = next((n for n in peak_names if n.startswith("stream")), "")
        print(f"FMA peak ({fma}, one core, same run): {peak_gflops:.1f} GFLOP/s", end="")
        print(f"; DRAM read ({read}, one core): {peak_gbps:.1f} GB/s" if peak_gbps else "")
    print()
    print("| kernel | baseline | rows | geomean speedup | min | max |")
    print("|---|---|---|---|---|---|")
    for (kernel, base_impl, tuned), v in sorted(speedups.items()):
        g = math.exp(sum(math.log(x) for x in v) / len(v))
        label = base_impl + (" (tuned rows)" if tuned else "")
        print(f"| {kernel} | {label} | {len(v)} | {g:.2f}x | {min(v):.2f}x | {max(v):.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
