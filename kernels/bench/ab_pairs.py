#!/usr/bin/env python3
"""Ratio-of-pairs A/B of benchmark binaries built from different commits.

    kernels/bench/ab_pairs.py FILTER ROUNDS BIN... [ISA=avx2|avx512 in the environment]

Runs each binary (a Google Benchmark program of kernels/bench) in turn, ROUNDS times, each run
with 3 randomly interleaved repetitions under `chrt -f 10`; within one repetition it takes the
speedup baseline time / our time (names and baselines as kernels/bench/compare.py reads them)
and prints, per case and binary, the median of those ratios and how many there were. A ratio taken inside one repetition cancels the
slow drift of a shared VM that a ratio of two medians keeps. ISA=avx2 (the default) forces
--isa=avx2 and OpenBLAS's Haswell kernels; ISA=avx512 runs both natively.
"""
import collections
import json
import os
import statistics
import subprocess
import sys

from compare import BASELINES, split  # the benchmark name scheme, written once


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    filt, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    isa = os.environ.get('ISA', 'avx2')
    env = dict(os.environ)
    env.pop('OPENBLAS_L2_SIZE', None)
    if isa == 'avx2':
        env['OPENBLAS_CORETYPE'] = 'Haswell'
    else:
        env.pop('OPENBLAS_CORETYPE', None)
    res = {b: collections.defaultdict(list) for b in bins}
    for _ in range(rounds):
        for b in bins:
            out = subprocess.run(['chrt', '-f', '10', b, f'--isa={isa}', f'--benchmark_filter={filt}',
                                  '--benchmark_repetitions=3', '--benchmark_min_time=0.15',
                                  '--benchmark_enable_random_interleaving=true', '--benchmark_format=json'],
                                 env=env, capture_output=True, text=True, check=True).stdout
            reps = collections.defaultdict(dict)  # (case, threads, repetition) -> impl -> real_time
            for bm in json.loads(out)['benchmarks']:
                if bm.get('run_type') != 'iteration':
                    continue
                name = bm['run_name'].removesuffix('/real_time')
                impl, case, threads, config = split(name)
                key = 'baseline' if impl in BASELINES and not config else impl + '/' + config
                reps[(f'{case}/t{threads}', bm['repetition_index'])].setdefault(key, bm['real_time'])
            for (case, _), d in reps.items():
                base = d.get('baseline')
                for impl, t in d.items():
                    if impl != 'baseline' and base:
                        res[b][(case, impl)].append(base / t)  # speedup, as compare.py
    print('case impl ' + ' '.join(os.path.basename(b) for b in bins))
    for key in sorted(set(k for b in bins for k in res[b])):
        cols = ['%.3f(%d)' % (statistics.median(res[b][key]), len(res[b][key])) if res[b][key] else '-' for b in bins]
        print(key[0], key[1], ' '.join(cols))
    return 0


if __name__ == '__main__':
    sys.exit(main())
