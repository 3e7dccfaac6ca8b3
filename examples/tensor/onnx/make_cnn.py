#!/usr/bin/python3
"""Writes examples/tensor/onnx/cnn: a small CNN as an ONNX model (opset 13)
with seeded weights, one input and the expected output computed here in
float64 with numpy, laid out as an ONNX backend test (model.onnx,
test_data_set_0/input_0.pb, output_0.pb), so that `ephc onnx-test` checks it
and `ephc run` runs it. The files are committed; this says how they were made.

    x[2,1,8,8] -> Conv 4x3x3 pad 1 -> Relu -> MaxPool 2x2 -> Flatten
               -> Gemm 64->10 (transB) -> Softmax
"""
import os
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../../tools/python"))
from onnxproto import FLOAT, attr_int, attr_ints, model, node, tensor, value_info, write  # noqa: E402

rng = np.random.default_rng(7)
x = rng.standard_normal((2, 1, 8, 8)).astype(np.float32)
w1 = (rng.standard_normal((4, 1, 3, 3)) / 3).astype(np.float32)
b1 = (rng.standard_normal(4) / 10).astype(np.float32)
w2 = (rng.standard_normal((10, 64)) / 8).astype(np.float32)
b2 = (rng.standard_normal(10) / 10).astype(np.float32)

# The reference, in float64.
xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
conv = np.zeros((2, 4, 8, 8))
for n in range(2):
    for k in range(4):
        for i in range(8):
            for j in range(8):
                conv[n, k, i, j] = np.sum(xp[n, :, i:i + 3, j:j + 3] * w1[k]) + b1[k]
pool = np.maximum(conv, 0).reshape(2, 4, 4, 2, 4, 2).max(axis=(3, 5))
logits = pool.reshape(2, 64) @ w2.astype(np.float64).T + b2
e = np.exp(logits - logits.max(axis=1, keepdims=True))
y = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)

cnn = model(
    [node("Conv", ["x", "w1", "b1"], ["c"], "conv",
          [attr_ints("kernel_shape", [3, 3]), attr_ints("pads", [1, 1, 1, 1])]),
     node("Relu", ["c"], ["r"], "relu"),
     node("MaxPool", ["r"], ["p"], "pool", [attr_ints("kernel_shape", [2, 2]), attr_ints("strides", [2, 2])]),
     node("Flatten", ["p"], ["f"], "flatten", [attr_int("axis", 1)]),
     node("Gemm", ["f", "w2", "b2"], ["l"], "fc", [attr_int("transB", 1)]),
     node("Softmax", ["l"], ["y"], "softmax", [attr_int("axis", -1)])],
    [tensor("w1", FLOAT, [4, 1, 3, 3], w1.ravel().tolist()), tensor("b1", FLOAT, [4], b1.tolist()),
     tensor("w2", FLOAT, [10, 64], w2.ravel().tolist()), tensor("b2", FLOAT, [10], b2.tolist())],
    [value_info("x", FLOAT, [2, 1, 8, 8])],
    [value_info("y", FLOAT, [2, 10])])
out = os.path.join(here, "cnn")
write(os.path.join(out, "model.onnx"), cnn)
write(os.path.join(out, "test_data_set_0/input_0.pb"), tensor("x", FLOAT, [2, 1, 8, 8], x.ravel().tolist()))
write(os.path.join(out, "test_data_set_0/output_0.pb"), tensor("y", FLOAT, [2, 10], y.ravel().tolist()))
