#!/usr/bin/python3
"""Writes the small ONNX models and tensors the lit tests in tests/lit/onnx use,
encoding the protobuf by hand (no onnx package needed). Run from this folder:
/usr/bin/python3 gen.py. The files are committed; this says how they were made."""
import os
import struct


def varint(n):
    n &= (1 << 64) - 1
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def key(field, wire):
    return varint(field << 3 | wire)


def f_varint(field, n):
    return key(field, 0) + varint(n)


def f_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return key(field, 2) + varint(len(data)) + data


def f_float(field, x):
    return key(field, 5) + struct.pack("<f", x)


FLOAT, INT64, BOOL = 1, 7, 9


def tensor(name, dtype, dims, values):
    body = b"".join(f_varint(1, d) for d in dims) + f_varint(2, dtype) + f_bytes(8, name)
    if dtype == FLOAT:
        raw = struct.pack("<%df" % len(values), *values)
    elif dtype == INT64:
        raw = struct.pack("<%dq" % len(values), *values)
    else:
        raw = bytes(values)
    return body + f_bytes(9, raw)


def value_info(name, dtype, dims):
    shape = b"".join(f_bytes(1, f_varint(1, d) if isinstance(d, int) else f_bytes(2, d)) for d in dims)
    tensor_type = f_varint(1, dtype) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def attr_int(name, v):
    return f_bytes(1, name) + f_varint(3, v) + f_varint(20, 2)


def node(op, inputs, outputs, name, attrs=()):
    return (b"".join(f_bytes(1, i) for i in inputs) + b"".join(f_bytes(2, o) for o in outputs) +
            f_bytes(3, name) + f_bytes(4, op) + b"".join(f_bytes(5, a) for a in attrs))


def model(nodes, inits, inputs, outputs, opset=13):
    graph = (b"".join(f_bytes(1, n) for n in nodes) + f_bytes(2, "g") + b"".join(f_bytes(5, t) for t in inits) +
             b"".join(f_bytes(11, v) for v in inputs) + b"".join(f_bytes(12, v) for v in outputs))
    return f_varint(1, 8) + f_bytes(2, "ephc-gen") + f_bytes(7, graph) + f_bytes(8, f_varint(2, opset))


def write(path, data):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


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
