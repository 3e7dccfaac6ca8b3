#!/usr/bin/python3
# The numpy peer of eph_tensor_bench (bench/tensor/tensor_bench.cpp): times
# the same ops at the same sizes with numpy (OpenBLAS for matmul; conv2d as
# numpy users write it: im2col by stride tricks, then one matmul) and prints
# {"case": {"size": median_ms}} as JSON. Median of --runs after one warm-up.
import json
import sys
import time

import numpy as np


def case(name, size, rng):
    d = [int(x) for x in size.split('x')]
    f = np.float32
    if name == 'add':
        x, y = rng.random(d[0], f), rng.random(d[0], f)
        return lambda: x + y
    if name == 'chain':
        x, y = rng.random((d[0], d[1]), f), rng.random(d[1], f)
        return lambda: np.maximum(x * 2 + y, 0)
    if name == 'softmax':
        x = rng.random((d[0], d[1]), f)
        def run():
            e = np.exp(x - x.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        return run
    if name == 'softmax_chain':
        x, y = rng.random((d[0], d[1]), f), rng.random(d[1], f)
        def run():
            z = x * 2 + y
            e = np.exp(z - z.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        return run
    if name == 'layer_norm':
        x, s, b = rng.random((d[0], d[1]), f), rng.random(d[1], f), rng.random(d[1], f)
        def run():
            m = x.mean(axis=-1, keepdims=True)
            v = ((x - m) ** 2).mean(axis=-1, keepdims=True)
            return (x - m) / np.sqrt(v + 1e-5) * s + b
        return run
    if name == 'matmul':
        a, b = rng.random((d[0], d[0]), f), rng.random((d[0], d[0]), f)
        return lambda: a @ b
    if name == 'linear':
        m, k, n = d
        x, w, b = rng.random((m, k), f), rng.random((k, n), f), rng.random(n, f)
        return lambda: np.maximum(x @ w + b, 0)
    if name == 'conv2d':  # N C H W K, 3x3, pad 1
        n, c, h, w, k = d
        x = rng.random((n, c, h + 2, w + 2), f)
        wt = rng.random((k, c * 9), f)
        def run():
            cols = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))  # n c h w 3 3
            cols = cols.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)
            return (cols @ wt.T).reshape(n, h, w, k).transpose(0, 3, 1, 2)
        return run
    raise SystemExit('unknown case ' + name)


def main():
    runs = 7
    out = {}
    args = sys.argv[1:]
    if args and args[0].startswith('--runs='):
        runs = int(args.pop(0).split('=')[1])
    rng = np.random.default_rng(0)
    for spec in args:  # name:size,size
        name, sizes = spec.split(':')
        out[name] = {}
        for size in sizes.split(','):
            fn = case(name, size, rng)
            fn()
            times = []
            for _ in range(runs):
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) * 1e3)
            out[name][size] = sorted(times)[len(times) // 2]
    print(json.dumps(out))


main()
