"""blocktune runs: import each landscape once (`blocktune import kerneltuner`), then
`blocktune simulate --budget N --json` over its seeds, stored as one JSON file per budget."""
import json
import os
import subprocess
import time

from .landscapes import landscape_name, load_landscape
from .peers import wait_while


def import_landscape(blocktune, path, workdir):
    name = landscape_name(path)
    db = os.path.join(workdir, name + ".db")
    kdir = os.path.join(workdir, name + "_kernels")
    meta = os.path.join(workdir, name + ".import.json")
    if not os.path.exists(meta):
        plain = os.path.join(workdir, name + ".json")
        doc = load_landscape(path)
        # The objective is `time` (the mean of the 32 samples) for everyone: without `times` the
        # import stores `time` itself instead of the samples' median, which would rank configs
        # (and place the optimum) slightly differently from what the peers see.
        for e in doc["cache"].values():
            e.pop("times", None)
        with open(plain, "w") as f:
            json.dump(doc, f)
        os.makedirs(kdir, exist_ok=True)
        out = subprocess.run([blocktune, "import", "kerneltuner", plain, "--db", db, "--kernel-dir", kdir, "--json"],
                             check=True, capture_output=True, text=True).stdout
        os.remove(plain)
        with open(meta, "w") as f:
            f.write(out)
    with open(meta) as f:
        kernel = json.load(f)["kernel"]
    return db, kdir, kernel


def ours_task(args):
    blocktune, db, kdir, kernel, strategy, budget, seeds, outfile, priors, pause_file = args
    if os.path.exists(outfile):
        return outfile, 0.0
    wait_while(pause_file)
    t0 = time.time()
    cmd = [blocktune, "simulate", "--kernel-dir", kdir, "--db", db, "--kernel", kernel, "--strategy", strategy,
           "--budget", str(budget), "--seeds", str(seeds), "--json"]
    if priors:
        cmd += ["--prior"] + priors
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    b = out["buckets"][0]
    elapsed = time.time() - t0
    os.makedirs(os.path.dirname(outfile), exist_ok=True)
    with open(outfile + ".tmp", "w") as f:
        json.dump({"strategy": strategy, "budget": budget, "best_ns": b[strategy]["best_ns"],
                   "optimum_ns": b["optimum_ns"], "seconds": elapsed}, f)
    os.replace(outfile + ".tmp", outfile)
    return outfile, elapsed
