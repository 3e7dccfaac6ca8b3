#!/usr/bin/env python3
# The PyTorch CUDA peer of eph_tensor_bench on the GPU machine (issue 13 item
# 7): the same ops at the same sizes as bench/tensor/tensor_bench.cpp, timed
# with CUDA events (median of --runs after warm-up, TF32 off), then a table
# of ephc (Vulkan GPU timestamps, from --eph-json) against PyTorch eager.
#   python3 torch_tensor.py --eph-json ephc.json --json torch.json
import argparse
import json

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def case(name, size):
    d = [int(x) for x in size.split('x')]
    g = torch.Generator(device='cuda').manual_seed(0)
    r = lambda *s: torch.rand(*s, device='cuda', generator=g)
    if name == 'add':
        x, y = r(d[0]), r(d[0])
        return lambda: x + y
    if name == 'chain':
        x, y = r(d[0], d[1]), r(d[1])
        return lambda: torch.relu(x * 2 + y)
    if name == 'softmax':
        x = r(d[0], d[1])
        return lambda: torch.softmax(x, -1)
    if name == 'softmax_chain':
        x, y = r(d[0], d[1]), r(d[1])
        return lambda: torch.softmax(x * 2 + y, -1)
    if name == 'layer_norm':
        x, s, b = r(d[0], d[1]), r(d[1]), r(d[1])
        return lambda: F.layer_norm(x, (d[1],), s, b, 1e-5)
    if name == 'matmul':
        a, b = r(d[0], d[0]), r(d[0], d[0])
        return lambda: a @ b
    if name == 'attention':  # B x H x S x D, f32: PyTorch's fused attention (no mask, scale 1/sqrt(D))
        q, k, v = r(*d), r(*d), r(*d)
        return lambda: F.scaled_dot_product_attention(q, k, v)
    if name == 'hgemm':  # f16 in and out, f32 sums (cuBLAS on the tensor cores)
        a, b = r(d[0], d[0]).half(), r(d[0], d[0]).half()
        return lambda: a @ b
    if name == 'linear':  # relu(x @ w + b): addmm (the bias in cuBLAS's epilogue), then relu
        m, k, n = d
        x, w, b = r(m, k), r(k, n), r(n)
        return lambda: torch.relu(torch.addmm(b, x, w))
    if name == 'conv2d':
        n, c, h, w, k = d
        x, wt = r(n, c, h, w), r(k, c, 3, 3)
        return lambda: F.conv2d(x, wt, padding=1)
    raise SystemExit('unknown case ' + name)


def time_ms(fn, runs):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--eph-json', required=True)
    ap.add_argument('--json', required=True)
    ap.add_argument('--runs', type=int, default=20)
    a = ap.parse_args()
    rows = [r for r in json.load(open(a.eph_json)) if r['target'] == 'vulkan']
    out = []
    print('| op | size | ephc kernels | ephc ms | PyTorch ms | PyTorch / ephc |')
    print('| --- | --- | ---: | ---: | ---: | ---: |')
    for r in rows:
        t = time_ms(case(r['op'], r['size']), a.runs)
        ratio = t / r['ephc_ms'] if r['ephc_ms'] > 0 else float('nan')
        out.append(dict(r, torch_ms=t, ratio=ratio))
        print(f"| {r['op']} | {r['size']} | {r['kernels']} | {r['ephc_ms']:.4f} | {t:.4f} | {ratio:.2f}× |")
    json.dump(out, open(a.json, 'w'), indent=1)


main()
