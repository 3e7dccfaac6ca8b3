#!/usr/bin/env python3
"""PyTorch autograd peer of eph_value_bench (issue 12 item 8, GPU side).

The same float64 problem as bench/value/ValueBench.h, built the same way:
  edge   r_e = |p_i - p_j| - L_e over the edges of a triangulated W x H grid
         (right, down, diagonal per vertex, in vertex order; the first N),
         L_e = 1 + 0.01 (e mod 13)
  hinge  r_q = signed dihedral angle across the diagonal (v00, v11) of quad q
         between triangles (v00, v11, v10) and (v00, v01, v11), - 0.01 (q mod 5)
One evaluation: p.grad = None, the residuals, (Σr).backward(): the residuals
and the gradient of their sum, as eph_value_bench's @vg0 + @vg0.g. Timed
with CUDA events around --iters evaluations, --runs times; the median.
`eager` is plain PyTorch; `compiled` is torch.compile of the residual
function (default mode), when it compiles.

With --eph-json (eph_value_bench's JSON of the same run) it checks that
both computed the same thing (Σr, Σ|g| and Σ g_k sin(k) to 1e-9 relative)
and prints the ratios.

  python3 bench/device/torch_value.py [--family edge|hinge] [--sizes 1000000,4000000]
      [--runs 7] [--iters 20] [--no-compile] [--eph-json F] [--json OUT]
"""
import argparse
import json
import math
import statistics
import sys
import time

import numpy as np

try:
    import torch
except ImportError:  # --numpy-check needs only numpy
    torch = None


def make_mesh(family, n):
    if family == "edge":
        W = int(math.sqrt(n / 3.0)) + 2
        H = n // (3 * (W - 1)) + 3
    else:
        W = int(math.sqrt(float(n))) + 2
        H = n // (W - 1) + 2
    V = W * H
    v = np.arange(V, dtype=np.int64)
    x = (v % W).astype(np.float64)
    y = (v // W).astype(np.float64)
    vf = v.astype(np.float64)
    xyz = np.stack([x + 0.1 * np.sin(0.7 * vf), y + 0.1 * np.cos(1.3 * vf),
                    0.2 * np.sin(0.05 * x) * np.cos(0.07 * y) + 0.05 * np.sin(0.9 * vf)], axis=1)
    right = (v % W) + 1 < W
    down = (v // W) + 1 < H
    if family == "edge":
        to = np.stack([v + 1, v + W, v + W + 1], axis=1)
        ok = np.stack([right, down, right & down], axis=1)
        src = np.repeat(v[:, None], 3, axis=1)
        a, b = src[ok][:n], to[ok][:n]  # row-major: vertex order, then right, down, diagonal
        if len(a) != n:
            sys.exit("torch_value.py: grid too small (a bug)")
        e = np.arange(n)
        return xyz, np.stack([a, b], axis=1), 1.0 + 0.01 * (e % 13)
    q = v[right & down][:n]
    if len(q) != n:
        sys.exit("torch_value.py: grid too small (a bug)")
    return xyz, np.stack([q, q + W + 1, q + 1, q + W], axis=1), 0.01 * (np.arange(n) % 5)


def edge_residuals(p, idx, rest):
    d = p[idx[:, 0]] - p[idx[:, 1]]
    return torch.linalg.vector_norm(d, dim=1) - rest


def hinge_residuals(p, idx, rest):
    a, b, c, d = (p[idx[:, k]] for k in range(4))
    e, u, w = b - a, c - a, d - a
    n1 = torch.linalg.cross(u, e)
    n2 = torch.linalg.cross(e, w)
    m = torch.linalg.cross(n1, n2)
    el = torch.linalg.vector_norm(e, dim=1)
    return torch.atan2((m * e).sum(1) / el, (n1 * n2).sum(1)) - rest


def numpy_checksums(family, n):
    """The edge family's checksums in numpy (no GPU): checks here, before a
    device call, that this file builds ValueBench.h's problem."""
    xyz, idx, rest = make_mesh(family, n)
    if family != "edge":
        sys.exit("--numpy-check: edge only")
    d = xyz[idx[:, 0]] - xyz[idx[:, 1]]
    ln = np.sqrt((d * d).sum(1))
    g = np.zeros_like(xyz)
    np.add.at(g, idx[:, 0], d / ln[:, None])
    np.add.at(g, idx[:, 1], -d / ln[:, None])
    g = g.reshape(-1)
    return {"sum_r": float((ln - rest).sum()), "sum_abs_grad": float(np.abs(g).sum()),
            "grad_dot_sin": float((g * np.sin(np.arange(g.size, dtype=np.float64))).sum())}


def time_it(step, runs, iters):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    # Warm-up: 300 ms (clocks climb), as eph_value_bench.
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.3:
        step()
        torch.cuda.synchronize()
    out = []
    for _ in range(runs):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(iters):
            step()
        e.record()
        torch.cuda.synchronize()
        out.append(s.elapsed_time(e) / iters)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--family", default="edge", choices=["edge", "hinge"])
    ap.add_argument("--sizes", default="1000000,4000000")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--eph-json")
    ap.add_argument("--json")
    ap.add_argument("--numpy-check", action="store_true", help="compare numpy's checksums with --eph-json's; no torch")
    args = ap.parse_args()
    if args.numpy_check:
        worst = 0.0
        for r in json.load(open(args.eph_json))["results"]:
            c = numpy_checksums(args.family, r["residuals"])
            diff = max(abs(r[k] - c[k]) / max(1.0, abs(c[k])) for k in c)
            worst = max(worst, diff)
            print(f"{r['residuals']}: {c} vs ephc: relative difference {diff:.1e}")
        sys.exit(0 if worst <= 1e-9 else 1)
    dev = torch.device("cuda")
    name = torch.cuda.get_device_name(0)
    eph = {}
    if args.eph_json:
        for r in json.load(open(args.eph_json))["results"]:
            eph[r["residuals"]] = r
    fn = edge_residuals if args.family == "edge" else hinge_residuals
    results = []
    for n in (int(float(s)) for s in args.sizes.split(",")):
        xyz, idx, rest = make_mesh(args.family, n)
        p = torch.tensor(xyz, dtype=torch.float64, device=dev).requires_grad_()
        idx_t = torch.tensor(idx, dtype=torch.int64, device=dev)
        rest_t = torch.tensor(rest, dtype=torch.float64, device=dev)
        row = {"residuals": n, "params": int(xyz.size)}
        variants = [("eager", fn)]
        if not args.no_compile:
            variants.append(("compiled", torch.compile(fn)))
        for vname, f in variants:
            def step():
                p.grad = None
                f(p, idx_t, rest_t).sum().backward()
            try:
                t0 = time.perf_counter()
                step()
                torch.cuda.synchronize()
                first = time.perf_counter() - t0
                r = f(p, idx_t, rest_t).detach()
                g = p.grad.detach().reshape(-1)
                sums = {"sum_r": r.sum().item(), "sum_abs_grad": g.abs().sum().item(),
                        "grad_dot_sin": (g * torch.sin(torch.arange(g.numel(), device=dev, dtype=torch.float64))).sum().item()}
                times = time_it(step, args.runs, args.iters)
            except Exception as ex:  # torch.compile may be unavailable
                print(f"{vname} {n}: failed: {type(ex).__name__}: {str(ex)[:300]}", file=sys.stderr)
                continue
            row[vname] = {"ms": statistics.median(times), "runs_ms": times, "first_call_s": first, **sums}
            print(f"torch {vname} {args.family} {n}: {row[vname]['ms']:.4f} ms (first call {first:.1f} s)",
                  file=sys.stderr)
        if n in eph and "eager" in row:
            e, t = eph[n], row["eager"]
            agree = max(abs(e[k] - t[k]) / max(1.0, abs(t[k])) for k in ("sum_r", "sum_abs_grad", "grad_dot_sin"))
            row["checksum_rel_diff"] = agree
            row["ephc_wall_ms"], row["ephc_gpu_ms"] = e["wall_ms"], e["gpu_ms"]
            row["speedup_wall_vs_eager"] = t["ms"] / e["wall_ms"]
            row["speedup_gpu_vs_eager"] = t["ms"] / e["gpu_ms"] if e["gpu_ms"] > 0 else None
            if "compiled" in row:
                row["speedup_wall_vs_compiled"] = row["compiled"]["ms"] / e["wall_ms"]
        results.append(row)
        del p, idx_t, rest_t
        torch.cuda.empty_cache()

    print(f"PyTorch {torch.__version__} on {name}: {args.family}, float64, residuals + gradient of the sum "
          f"(median of {args.runs} x {args.iters})")
    print(f"{'N':>10} {'torch ms':>10} {'compiled':>10} {'ephc wall':>10} {'ephc gpu':>10} {'x wall':>8} {'x gpu':>8} "
          f"{'x compiled':>10} {'checksums':>10}")
    ok = True
    for r in results:
        t = r.get("eager", {}).get("ms", float("nan"))
        c = r.get("compiled", {}).get("ms", float("nan"))
        diff = r.get("checksum_rel_diff")
        if diff is not None and diff > 1e-9:
            ok = False
        print(f"{r['residuals']:>10} {t:>10.4f} {c:>10.4f} {r.get('ephc_wall_ms', float('nan')):>10.4f} "
              f"{r.get('ephc_gpu_ms', float('nan')):>10.4f} {r.get('speedup_wall_vs_eager', float('nan')):>7.2f}x "
              f"{(r.get('speedup_gpu_vs_eager') or float('nan')):>7.2f}x "
              f"{r.get('speedup_wall_vs_compiled', float('nan')):>9.2f}x "
              f"{'-' if diff is None else f'{diff:.1e}':>10}")
    if args.json:
        json.dump({"bench": "torch_value", "device": name, "torch": torch.__version__, "family": args.family,
                   "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": args.runs,
                   "iters": args.iters, "results": results}, open(args.json, "w"), indent=1)
    if not ok:
        print("torch_value.py: the checksums differ from eph_value_bench's", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
