#!/usr/bin/python3
# A BERT-like encoder exported to ONNX from PyTorch (issue 14 item 5), with
# random weights (seed 0), as a backend-test folder:
#   OUT/model.onnx, OUT/test_data_set_0/input_0.pb (input_ids, int64 [B, S]),
#   OUT/test_data_set_0/output_0.pb (the last hidden state, f32 [B, S, D],
#   PyTorch CPU in float32).
# `ephc onnx-test OUT` checks it; eph_tensor_bench --onnx OUT times it and
# bench/device/torch_bert.py times the same model in PyTorch.
#   bert_export.py OUT [--batch B] [--seq S] [--hidden D] [--layers L] [--heads H]
import argparse
import math
import os
import sys

try:
    import torch
    import torch.nn as nn
except ImportError:  # the ctest that exports a small model skips (77) without it, unless it is required
    print('bert_export.py: PyTorch is not installed (Debian: python3-torch)', file=sys.stderr)
    sys.exit(1 if os.environ.get('EPH_REQUIRE_TORCH') == '1' else 77)


class Layer(nn.Module):
    """One post-norm BERT layer: self-attention, residual, LayerNorm, GELU MLP, residual, LayerNorm."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.up, self.down = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def forward(self, x):
        b, s, d = x.shape
        h, dh = self.heads, d // self.heads
        split = lambda t: t.reshape(b, s, h, dh).transpose(1, 2)  # [b, h, s, dh]
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, s, d)
        x = self.ln1(x + self.o(ctx))
        return self.ln2(x + self.down(torch.nn.functional.gelu(self.up(x))))


class Encoder(nn.Module):
    def __init__(self, vocab, seq, d, layers, heads):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layers = nn.ModuleList(Layer(d, heads, 4 * d) for _ in range(layers))
        self.register_buffer('positions', torch.arange(seq).unsqueeze(0))

    def forward(self, ids):
        x = self.ln(self.tok(ids) + self.pos(self.positions))
        for layer in self.layers:
            x = layer(x)
        return x


def varint(v):
    out = b''
    while True:
        byte, v = v & 0x7F, v >> 7
        out += bytes([byte | (0x80 if v else 0)])
        if not v:
            return out


def tensor_proto(t, name, dtype_code):
    """An ONNX TensorProto: dims (1), data_type (2), name (8), raw_data (9)."""
    body = b''.join(b'\x08' + varint(d) for d in t.shape)
    body += b'\x10' + varint(dtype_code)
    body += b'\x42' + varint(len(name)) + name.encode()
    raw = t.contiguous().numpy().tobytes()
    return body + b'\x4a' + varint(len(raw)) + raw


def add_model_args(ap):
    """The model's sizes, as bert_peer.py takes them too."""
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--seq', type=int, default=128)
    ap.add_argument('--hidden', type=int, default=256)
    ap.add_argument('--layers', type=int, default=2)
    ap.add_argument('--heads', type=int, default=4)
    ap.add_argument('--vocab', type=int, default=1000)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('out')
    add_model_args(ap)
    a = ap.parse_args()
    torch.manual_seed(0)
    model = Encoder(a.vocab, a.seq, a.hidden, a.layers, a.heads).eval()
    ids = torch.randint(0, a.vocab, (a.batch, a.seq), dtype=torch.int64)
    with torch.no_grad():
        want = model(ids)
    os.makedirs(os.path.join(a.out, 'test_data_set_0'), exist_ok=True)
    torch.onnx.export(model, (ids,), os.path.join(a.out, 'model.onnx'), input_names=['input_ids'],
                      output_names=['hidden'], opset_version=17, do_constant_folding=True)
    with open(os.path.join(a.out, 'test_data_set_0', 'input_0.pb'), 'wb') as f:
        f.write(tensor_proto(ids, 'input_ids', 7))  # INT64
    with open(os.path.join(a.out, 'test_data_set_0', 'output_0.pb'), 'wb') as f:
        f.write(tensor_proto(want, 'hidden', 1))  # FLOAT
    print(f'{a.out}: batch {a.batch}, seq {a.seq}, hidden {a.hidden}, layers {a.layers}, heads {a.heads}, '
          f'{sum(p.numel() for p in model.parameters())} parameters')


if __name__ == '__main__':
    main()
