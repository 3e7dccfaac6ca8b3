#!/usr/bin/env python3
"""Whole-process start-up: `ephc run PROGRAM` on the interpreter, on the cpu
target with an empty kernel cache (cold) and with the cache filled by an
earlier run (warm). Each configuration runs --runs times; the table gives the
median wall time and median CPU time (user + sys of the child), and the
ratios to the interpreter. The cache directory is a fresh temporary directory
given through EPH_PIPELINE_CACHE (runtime/DiskCache.h), emptied before every
cold run.

  python3 bench/startup_bench.py --ephc build/tools/ephc/ephc --runs 9 \\
      --json bench/results/startup-DATE.json
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
import time


def run_once(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out.stderr}")
    return wall, cpu, out.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ephc", default="build/tools/ephc/ephc")
    ap.add_argument("--program", default="examples/ephapax/saxpy.eph")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--label", default="", help="a note kept in the JSON (e.g. before/after)")
    args = ap.parse_args()

    cache = tempfile.mkdtemp(prefix="eph-startup-bench-")
    env = dict(os.environ, EPH_PIPELINE_CACHE=cache)
    env.pop("EPH_HOST", None)
    base = [args.ephc, "run", args.program]

    def empty_cache():
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)

    configs = [
        ("interp", base + ["--target=interp"], None),
        ("cpu cold", base + ["--target=cpu"], empty_cache),
        ("cpu warm", base + ["--target=cpu"], None),
    ]
    rows = []
    expected = None
    for name, cmd, before in configs:
        if name == "cpu warm":
            empty_cache()
            run_once(cmd, env)  # fills the cache
        walls, cpus = [], []
        for _ in range(args.runs):
            if before:
                before()
            wall, cpu, out = run_once(cmd, env)
            if expected is None:
                expected = out
            elif out != expected:
                raise SystemExit(f"{name}: output {out!r} differs from {expected!r}")
            walls.append(wall)
            cpus.append(cpu)
        rows.append({"config": name, "wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus),
                     "wall_min_s": min(walls), "wall_max_s": max(walls), "runs": args.runs})
    shutil.rmtree(cache, ignore_errors=True)

    interp = rows[0]
    print(f"{args.ephc} run {args.program}, median of {args.runs}")
    print(f"| config | wall s | CPU s | wall / interp | CPU / interp |")
    print(f"| --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        r["wall_vs_interp"] = r["wall_s"] / interp["wall_s"]
        r["cpu_vs_interp"] = r["cpu_s"] / interp["cpu_s"]
        print(f"| {r['config']} | {r['wall_s']:.3f} | {r['cpu_s']:.3f} | {r['wall_vs_interp']:.2f}x | "
              f"{r['cpu_vs_interp']:.2f}x |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ephc": args.ephc, "program": args.program, "label": args.label,
                       "host": os.uname().nodename, "cpus": os.cpu_count(),
                       "load_average": os.getloadavg(), "rows": rows}, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()
