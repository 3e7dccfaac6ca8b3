#!/usr/bin/python3
"""Writes the small ONNX models and tensors the lit tests in tests/lit/onnx use,
encoding the protobuf by hand (no onnx package needed). Run from this folder:
/usr/bin/python3 gen.py. The files are committed; this says how they were made."""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../../tools/python"))
from onnxproto import FLOAT, INT64, attr_int, external_tensor, model, node, tensor, value_info, write  # noqa: E402

# tiny: y = Relu(x * w + b) reshaped to x's shape through Shape (folded at import),
# and s = Shape(x) as a second output.
x = [1.0, -2.0, 3.0, -4.0, 5.0, -6.0]
w = [0.5, 2.0, -1.0]
b = 1.0
y = [max(x[i] * w[i % 3] + b, 0.0) for i in range(6)]
tiny = model(
    [node("Mul", ["x", "w"], ["xw"], "mul"),
     node("Add", ["xw", "b"], ["xwb"], "add"),
     node("Relu", ["xwb"], ["r"], "relu"),
     node("Shape", ["x"], ["s"], "shape"),
     node("Reshape", ["r", "s"], ["y"], "reshape")],
    [tensor("w", FLOAT, [3], w), tensor("b", FLOAT, [], [b])],
    [value_info("x", FLOAT, [2, 3])],
    [value_info("y", FLOAT, [2, 3]), value_info("s", INT64, [2])])
write("tiny/model.onnx", tiny)
write("tiny/test_data_set_0/input_0.pb", tensor("x", FLOAT, [2, 3], x))
write("tiny/test_data_set_0/output_0.pb", tensor("y", FLOAT, [2, 3], y))
write("tiny/test_data_set_0/output_1.pb", tensor("s", INT64, [2], [2, 3]))
# A wrong expected output (the runner must report it), and an input of the wrong shape.
write("tiny-wrong/model.onnx", tiny)
write("tiny-wrong/test_data_set_0/input_0.pb", tensor("x", FLOAT, [2, 3], x))
write("tiny-wrong/test_data_set_0/output_0.pb", tensor("y", FLOAT, [2, 3], [v + 0.5 for v in y]))
write("tiny-wrong/test_data_set_0/output_1.pb", tensor("s", INT64, [2], [2, 3]))
write("x34.pb", tensor("x", FLOAT, [3, 4], [0.0] * 12))
write("xi64.pb", tensor("x", INT64, [2, 3], [0] * 6))
# x as .npy (numpy's format 1.0, little-endian f4, C order).
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
header += " " * (64 - 10 - len(header) - 1) + "\n"
write("x.npy", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + struct.pack("<6f", *x))

# Errors: truncated, an unsupported op, an unsupported attribute, an undefined
# input, a symbolic input dimension, an opset too new.
write("truncated.onnx", tiny[: len(tiny) // 2])
write("unsupported-op.onnx", model([node("NonZero", ["x"], ["y"], "nz")], [], [value_info("x", FLOAT, [2, 3])],
                                   [value_info("y", INT64, [2, 3])]))
write("unsupported-attr.onnx", model([node("Relu", ["x"], ["y"], "relu", [attr_int("alpha", 2)])], [],
                                     [value_info("x", FLOAT, [2, 3])], [value_info("y", FLOAT, [2, 3])]))
write("undefined-input.onnx", model([node("Add", ["x", "nowhere"], ["y"], "add")], [],
                                    [value_info("x", FLOAT, [2, 3])], [value_info("y", FLOAT, [2, 3])]))
write("bad-shapes.onnx", model([node("Add", ["x", "z"], ["y"], "add")], [],
                               [value_info("x", FLOAT, [2, 3]), value_info("z", FLOAT, [4])],
                               [value_info("y", FLOAT, [2, 3])]))
write("symbolic.onnx", model([node("Relu", ["x"], ["y"], "relu")], [], [value_info("x", FLOAT, ["N", 4])],
                             [value_info("y", FLOAT, ["N", 4])]))
write("opset99.onnx", model([node("Relu", ["x"], ["y"], "relu")], [], [value_info("x", FLOAT, [2, 3])],
                            [value_info("y", FLOAT, [2, 3])], opset=99))

# external: tiny's graph with w's data in a file beside the model (at offset 8
# of weights.bin, as PyTorch 2 exports big models) and b's in its own file.
def with_external(w_location, w_offset=8, w_length=12):
    return model(
        [node("Mul", ["x", "w"], ["xw"], "mul"),
         node("Add", ["xw", "b"], ["xwb"], "add"),
         node("Relu", ["xwb"], ["r"], "relu"),
         node("Shape", ["x"], ["s"], "shape"),
         node("Reshape", ["r", "s"], ["y"], "reshape")],
        [external_tensor("w", FLOAT, [3], w_location, w_offset, w_length),
         external_tensor("b", FLOAT, [], "b.bin")],
        [value_info("x", FLOAT, [2, 3])],
        [value_info("y", FLOAT, [2, 3]), value_info("s", INT64, [2])])


write("external/model.onnx", with_external("weights.bin"))
write("external/weights.bin", b"\0" * 8 + struct.pack("<3f", *w) + b"\0" * 4)
write("external/b.bin", struct.pack("<f", b))
write("external/test_data_set_0/input_0.pb", tensor("x", FLOAT, [2, 3], x))
write("external/test_data_set_0/output_0.pb", tensor("y", FLOAT, [2, 3], y))
write("external/test_data_set_0/output_1.pb", tensor("s", INT64, [2], [2, 3]))
# Errors: a location outside the model's folder, a missing file, data past the end.
write("external/escape.onnx", with_external("../x34.pb"))
write("external/missing.onnx", with_external("nowhere.bin"))
write("external/short.onnx", with_external("weights.bin", 16, 12))

# MelWeightMatrix whose upper edge (the sample rate) maps past the DFT's last bin.
write("melweight-past-nyquist.onnx", model(
    [node("MelWeightMatrix", ["m", "n", "r", "lo", "hi"], ["w"], "mel")],
    [tensor("m", INT64, [], [8]), tensor("n", INT64, [], [16]), tensor("r", INT64, [], [8192]),
     tensor("lo", FLOAT, [], [0.0]), tensor("hi", FLOAT, [], [8192.0])],
    [], [value_info("w", FLOAT, [9, 8])], opset=17))

# dynamic: x has a symbolic first dimension ('batch'), kept dynamic by `ephc
# check|lower` and by `ephc run --dynamic`: y = Relu(x·W + B) reshaped through
# Shape (N folded at import as a nominal extent), s = ReduceSum(y, axis 1).
# Integer values, so every target prints the same digits.
W = [[1, -2, 0], [0, 1, 3], [2, 0, -1], [-1, 1, 1]]
B = [1, -3, 2]
dyn = model(
    [node("MatMul", ["x", "W"], ["xw"], "matmul"),
     node("Add", ["xw", "B"], ["xwb"], "add"),
     node("Relu", ["xwb"], ["r"], "relu"),
     node("Shape", ["r"], ["rs"], "shape"),
     node("Reshape", ["r", "rs"], ["y"], "reshape"),
     node("ReduceSum", ["y", "axes"], ["s"], "sum", [attr_int("keepdims", 0)])],
    [tensor("W", FLOAT, [4, 3], [v for row in W for v in row]), tensor("B", FLOAT, [3], B),
     tensor("axes", INT64, [1], [1])],
    [value_info("x", FLOAT, ["batch", 4])],
    [value_info("y", FLOAT, ["batch", 3]), value_info("s", FLOAT, ["batch"])])
write("dynamic.onnx", dyn)
for n in (2, 5):
    xs = [float((3 * i + 1) % 7 - 3) for i in range(n * 4)]
    write("xb%d.pb" % n, tensor("x", FLOAT, [n, 4], xs))
    ys = [max(sum(xs[r * 4 + k] * W[k][c] for k in range(4)) + B[c], 0.0) for r in range(n) for c in range(3)]
    print("xb%d: y =" % n, ys, "s =", [sum(ys[r * 3:r * 3 + 3]) for r in range(n)])
write("two-symbolic.onnx", model([node("Relu", ["x"], ["y"], "relu")], [], [value_info("x", FLOAT, ["N", "M"])],
                                 [value_info("y", FLOAT, ["N", "M"])]))

# Malformed models the importer must reject with an error, not a crash (found
# by mutation fuzzing, 2026-11-29): a node with fewer inputs than its op needs
# or an empty name for a needed one, an RNN whose R is not 3-D, an
# initializer whose dims claim far more data than it has.
write("missing-input.onnx", model([node("Add", ["x"], ["y"], "add")], [], [value_info("x", FLOAT, [2, 3])],
                                  [value_info("y", FLOAT, [2, 3])]))
write("empty-input.onnx", model([node("BatchNormalization", ["x", "", "", "", ""], ["y"], "bn")], [],
                                [value_info("x", FLOAT, [1, 3])], [value_info("y", FLOAT, [1, 3])]))
write("rnn-rank.onnx", model([node("RNN", ["x", "W", "R"], ["y"], "rnn")],
                             [tensor("W", FLOAT, [1, 1, 1], [1.0]), tensor("R", FLOAT, [1], [1.0])],
                             [value_info("x", FLOAT, [1, 1, 1])], [value_info("y", FLOAT, [1, 1, 1, 1])]))
write("huge-initializer.onnx", model([node("Add", ["x", "w"], ["y"], "add")], [tensor("w", FLOAT, [1 << 36], [1.0])],
                                     [value_info("x", FLOAT, [2, 3])], [value_info("y", FLOAT, [2, 3])]))
# External data that is a folder, or whose offset + length overflows.
write("external/folder.onnx", with_external("."))
write("external/overflow.onnx", with_external("weights.bin", 1, (1 << 63) - 1))
# .npy inputs whose header claims more than the file has, or dims too large to count.
def npy(shape_text, data=b""):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape_text
    h += " " * (64 - 10 - len(h) - 1) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + data


write("huge.npy", npy("(68719476736,)"))
write("wrap.npy", npy("(4294967296, 4294967296)"))
write("digits.npy", npy("(123456789012345678901234,)"))
