"""PyTorch peer for eph_gpu_bench: the same operations at the same sizes,
timed with CUDA events (median of the same number of runs), checked like
ours. With --eph-json, prints one table last with eph's rates, PyTorch's, and
the ratio eph / PyTorch, and writes both to --json. With --cuda-json (the
JSON lines of bench/device/cuda/cuda_bench.cu) the table also has the
hand-written CUDA kernels and the ratio eph / CUDA.

  copy          y.copy_(x)                          GB/s, read + write
  saxpy         y.add_(x, alpha=a)                  GB/s, 2 reads + 1 write
  vadd          torch.add(a, b, out=c)              GB/s, 2 reads + 1 write
  sum, reduce   torch.sum(x)                        GB/s, read
  sgemm         torch.mm(a, b), TF32 off (cuBLAS)   TFLOP/s
"""
import argparse
import json
import statistics
import sys

import torch


def time_ms(fn, runs, warmup=3):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), times


# The CUDA forms of one algorithm: sgemm_db (two k-tiles per trip, the stages
# constant) and sgemm_db_cur (one per trip, the stage in a variable) compute
# the same; the Ephapax sgemm_db is compared with the faster of the two.
CUDA_FORMS = {"sgemm_db": ["sgemm_db", "sgemm_db_cur"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--eph-json", help="eph_gpu_bench's JSON: sizes and runs come from it")
    ap.add_argument("--cuda-json", help="cuda_bench's JSON lines: a CUDA column, and sizes when no --eph-json")
    ap.add_argument("--json", help="write the combined results here")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")

    eph = {"results": []}
    if args.eph_json:
        with open(args.eph_json) as f:
            eph = json.load(f)
    cuda = []
    if args.cuda_json:
        with open(args.cuda_json) as f:
            cuda = [json.loads(line) for line in f if line.strip()]
    # Variants are compared with the PyTorch operation they compute:
    # sgemm_unrolled with sgemm, vadd4 and vadd.x4 with vadd, saxpy.x4 with saxpy.
    def base(name):
        return next((op for op in ("sgemm", "vadd", "saxpy") if name.startswith(op)), name)
    wanted = []
    for r in eph["results"] + cuda:
        if (base(r["name"]), int(r["size"])) not in wanted:
            wanted.append((base(r["name"]), int(r["size"])))
    wanted = wanted or [
        ("copy", 1 << 28), ("saxpy", 1 << 28), ("sum", 1 << 28),
        ("sgemm", 1024), ("sgemm", 4096), ("sgemm", 8192)]
    runs = int(eph.get("runs", 20))

    peers = []
    for name, size in wanted:
        g = torch.Generator(device=dev).manual_seed(size)
        if name == "copy":
            x = torch.rand(size, device=dev, generator=g) * 2 - 1
            y = torch.full_like(x, float("nan"))
            y.copy_(x)
            assert torch.equal(x, y), "copy: wrong result"
            med, ts = time_ms(lambda: y.copy_(x), runs)
            work, unit = 8.0 * size, "GB/s"
        elif name == "saxpy":
            a = 1.75
            x = torch.rand(size, device=dev, generator=g) * 2 - 1
            y = torch.rand(size, device=dev, generator=g) * 2 - 1
            want = a * x.double() + y.double()
            y.add_(x, alpha=a)
            err = ((y.double() - want).abs() / (a * x.double().abs() + (want - a * x.double()).abs() + 1e-30)).max().item()
            assert err < 1e-5, f"saxpy: error {err}"
            med, ts = time_ms(lambda: y.add_(x, alpha=a), runs)
            work, unit = 12.0 * size, "GB/s"
        elif name == "vadd":
            a = torch.rand(size, device=dev, generator=g) * 2 - 1
            b = torch.rand(size, device=dev, generator=g) * 2 - 1
            c = torch.full_like(a, float("nan"))
            torch.add(a, b, out=c)
            assert torch.equal(c, a + b), "vadd: wrong result"
            med, ts = time_ms(lambda: torch.add(a, b, out=c), runs)
            work, unit = 12.0 * size, "GB/s"
            del a, b, c
        elif name in ("sum", "reduce"):
            x = torch.rand(size, device=dev, generator=g)
            got, want = torch.sum(x).item(), x.double().sum().item()
            assert abs(got - want) / want < 1e-4, f"sum: {got} vs {want}"
            med, ts = time_ms(lambda: torch.sum(x), runs)
            work, unit = 4.0 * size, "GB/s"
            del x
        elif name == "sgemm":
            n = size
            a = torch.rand(n, n, device=dev, generator=g) * 2 - 1
            b = torch.rand(n, n, device=dev, generator=g) * 2 - 1
            c = torch.mm(a, b)
            rows = torch.randint(0, n, (256,), device=dev, generator=g)
            ref = a[rows].double() @ b.double()
            err = (torch.linalg.norm(c[rows].double() - ref) / torch.linalg.norm(ref)).item()
            assert err < 1e-5, f"sgemm {n}: error {err} (TF32 on?)"
            med, ts = time_ms(lambda: torch.mm(a, b), max(5, runs // 2) if n >= 8192 else runs)
            work, unit = 2.0 * n ** 3, "TFLOP/s"
            del a, b, c
        else:
            continue
        rate = work / (med * 1e-3) / (1e12 if unit == "TFLOP/s" else 1e9)
        peers.append({"name": name, "size": size, "unit": unit, "median_ms": med, "rate": rate, "runs_ms": ts})
        torch.cuda.empty_cache()

    print(f"\nPyTorch {torch.__version__} on {torch.cuda.get_device_name()} (TF32 off); eph_gpu_bench on "
          f"{eph.get('device', '?')} ({eph.get('driver', '?')}), {eph.get('date', '?')}; medians")
    nan = float("nan")
    def pick(rows, name, size):
        return next((r for r in rows if r["name"] == name and int(r["size"]) == size), None)
    def rate(r):
        return r["rate"] if r else nan
    def ms(r):
        return r["median_ms"] if r else nan
    print(f"{'kernel':14} {'size':>10} {'eph ms':>9} {'cuda ms':>9} {'torch ms':>9} {'eph':>8} {'cuda':>8} "
          f"{'torch':>8} {'unit':8} {'eph/cuda':>8} {'eph/torch':>9}")
    combined = []
    # One row per eph result (each against the CUDA and PyTorch figures of
    # its operation and size); without eph results, one per peer.
    rows = [(r["name"], int(r["size"])) for r in eph["results"]] or [(r["name"], int(r["size"])) for r in cuda]
    for name, size in rows:
        p = pick(peers, base(name), size)
        if p is None:
            continue
        # the CUDA kernel of the same name, else of the same operation; for an
        # algorithm written in several forms in CUDA, the fastest form
        e = pick(eph["results"], name, size)
        forms = [pick(cuda, f, size) for f in CUDA_FORMS.get(name, [name])]
        c = max((f for f in forms if f), key=lambda f: f["rate"], default=None) or pick(cuda, base(name), size)
        vs_cuda = e["rate"] / c["rate"] if e and c and c["rate"] else nan
        vs_torch = e["rate"] / p["rate"] if e and p["rate"] else nan
        print(f"{name:14} {size:>10} {ms(e):>9.4f} {ms(c):>9.4f} {p['median_ms']:>9.4f} {rate(e):>8.2f} "
              f"{rate(c):>8.2f} {p['rate']:>8.2f} {p['unit']:8} {vs_cuda:>8.1%} {vs_torch:>9.1%}")
        combined.append({"name": name, "size": size, "unit": p["unit"], "eph": e, "cuda": c, "torch": p,
                         "ratio": vs_torch, "ratio_cuda": vs_cuda})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": eph.get("device"), "driver": eph.get("driver"), "date": eph.get("date"),
                       "torch": torch.__version__, "cuda": torch.version.cuda, "results": combined}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
