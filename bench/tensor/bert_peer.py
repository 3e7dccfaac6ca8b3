#!/usr/bin/env python3
# The PyTorch peer of the BERT-like encoder (bench/tensor/bert_export.py's
# Encoder, same sizes and seed): eager fp32 inference under no_grad, TF32 off,
# on the CPU (--threads N) or CUDA; median of --runs after warm-up (CUDA
# events on CUDA, the host clock on the CPU). Prints JSON:
#   {"model": "...", "device": "cpu|cuda", "threads": N, "ms": median}
#   bert_peer.py --device cpu --threads 2 --batch 1 --seq 128 --hidden 256 --layers 2 --heads 4
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bert_export import Encoder, add_model_args  # noqa: E402

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--device', default='cpu')
    ap.add_argument('--threads', type=int, default=0)
    ap.add_argument('--runs', type=int, default=20)
    add_model_args(ap)
    ap.add_argument('--label', default='')
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = Encoder(a.vocab, a.seq, a.hidden, a.layers, a.heads).eval().to(a.device)
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), dtype=torch.int64).to(a.device)
    cuda = a.device == 'cuda'
    times, walls = [], []
    with torch.no_grad():
        start = time.perf_counter()
        while len(times) < a.runs:
            t0 = time.perf_counter()
            if cuda:
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                model(ids)
                e1.record()
                torch.cuda.synchronize()
                ms = e0.elapsed_time(e1)
            else:
                model(ids)
                ms = (time.perf_counter() - t0) * 1e3
            wall = (time.perf_counter() - t0) * 1e3  # the forward and the wait for it, on the host's clock
            if time.perf_counter() - start > (2.0 if cuda else 0.3):  # warm-up, as eph_tensor_bench
                times.append(ms)
                walls.append(wall)
    times.sort()
    walls.sort()
    # ms: CUDA events around the forward (the GPU's timeline); wall_ms: the
    # forward until synchronize returns, as eph_tensor_bench's wall time.
    print(json.dumps({'model': a.label, 'device': a.device, 'threads': torch.get_num_threads(),
                      'torch': torch.__version__, 'ms': times[len(times) // 2], 'wall_ms': walls[len(walls) // 2]}))


if __name__ == '__main__':
    main()
