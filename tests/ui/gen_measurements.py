#!/usr/bin/env python3
"""Adds one synthetic finished matmul sweep with N measurements (default 20,000) to a blocktune
database, for the dashboard's load-time check: a copy of an existing sweep's row (same kernel,
hardware and environment), one bucket, configs on a 40 x 25 x 20 grid of block sizes (not the
kernel's candidates: real sweeps do not reach 20,000 configs per bucket), a smooth landscape with
noise, 5 samples each, and one config in 50 failing with a real outcome name. Prints the new
sweep's id.
Usage: gen_measurements.py DB SOURCE_SWEEP_ID [N]"""
import math
import random
import sqlite3
import sys

db, source = sys.argv[1], int(sys.argv[2])
n = int(sys.argv[3]) if len(sys.argv) > 3 else 20000
rng = random.Random(7)
con = sqlite3.connect(db, timeout=60)
con.execute("PRAGMA busy_timeout = 60000")
# A copy of the source sweep: every column but the row id and the unique identity (uid, when the
# schema has it: a fresh one is set below).
cols = [r[1] for r in con.execute("PRAGMA table_info(sweeps)") if r[1] not in ("id", "uid")]
with con:
    cur = con.execute(f"INSERT INTO sweeps ({','.join(cols)}) SELECT {','.join(cols)} FROM sweeps WHERE id = ?", (source,))
    sid = cur.lastrowid
    if any(r[1] == "uid" for r in con.execute("PRAGMA table_info(sweeps)")):
        con.execute("UPDATE sweeps SET uid = lower(hex(randomblob(16))) WHERE id = ?", (sid,))
    bucket = "m4096_n4096_k4096_synthetic"
    con.execute("UPDATE sweeps SET status = 'done', progress_done = ?, progress_total = ?, error = '', "
                "shapes = 'm=4096,n=4096,k=4096' WHERE id = ?", (n, n, sid))
    con.execute("INSERT INTO sweep_tasks (sweep_id, ordinal, bucket, shape, planned, status, attempts) "
                "VALUES (?, 0, ?, 'm=4096,n=4096,k=4096', ?, 'done', 1)", (sid, bucket, n))
    grid = [(8 * i, 16 * j, 8 * k) for i in range(1, 41) for j in range(1, 26) for k in range(1, 21)]
    rows = []
    samples = []
    for idx, (bm, bn, bk) in enumerate(grid[:n]):
        mid = 10_000_000 + sid * 100_000 + idx
        # A bowl in log space around (96, 256, 64), with noise.
        d = (math.log2(bm / 96)) ** 2 + 0.6 * (math.log2(bn / 256)) ** 2 + 0.8 * (math.log2(bk / 64)) ** 2
        ns = 2.0e7 * (1 + 0.35 * d) * rng.uniform(0.97, 1.03)
        outcome = "ok"
        if idx % 50 == 49:
            outcome = rng.choice(["timeout", "wrong_result", "crashed", "unstable"])
        ts = "2026-11-25T10:%02d:%02d.%03dZ" % ((idx // 400) % 60, (idx // 7) % 60, idx % 1000)
        rows.append((mid, sid, bucket, "m=4096,n=4096,k=4096", f"block_m={bm},block_n={bn},block_k={bk}", outcome,
                     "" if outcome == "ok" else "synthetic " + outcome, 3, ns if outcome == "ok" else None, 0.01,
                     0.0, 0.1, ts))
        if outcome == "ok":
            samples += [(mid, r, ns * rng.uniform(0.98, 1.02)) for r in range(5)]
    con.executemany("INSERT INTO measurements (id, sweep_id, bucket, problem, config, outcome, detail, iterations, "
                    "median_ns, cv, max_abs_err, max_rel_err, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.executemany("INSERT INTO samples (measurement_id, repetition, ns_per_iteration) VALUES (?,?,?)", samples)
print(sid)
