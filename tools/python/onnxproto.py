"""Hand encoding of ONNX protobuf messages (ModelProto, GraphProto, NodeProto,
TensorProto, ValueInfoProto) for scripts that write small models and tensors
without the onnx Python package: tests/lit/onnx/Inputs/gen.py and
examples/tensor/onnx/make_cnn.py."""
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


FLOAT, INT64, BOOL = 1, 7, 9  # TensorProto.DataType


def tensor(name, dtype, dims, values):
    body = b"".join(f_varint(1, d) for d in dims) + f_varint(2, dtype) + f_bytes(8, name)
    if dtype == FLOAT:
        raw = struct.pack("<%df" % len(values), *values)
    elif dtype == INT64:
        raw = struct.pack("<%dq" % len(values), *values)
    else:
        raw = bytes(values)
    return body + f_bytes(9, raw)


def external_tensor(name, dtype, dims, location, offset=None, length=None):
    """A TensorProto whose data is in the file `location` (external_data, 13; data_location EXTERNAL, 14)."""
    body = b"".join(f_varint(1, d) for d in dims) + f_varint(2, dtype) + f_bytes(8, name)
    entries = [("location", location)]
    if offset is not None:
        entries.append(("offset", str(offset)))
    if length is not None:
        entries.append(("length", str(length)))
    body += b"".join(f_bytes(13, f_bytes(1, k) + f_bytes(2, v)) for k, v in entries)
    return body + f_varint(14, 1)


def value_info(name, dtype, dims):
    shape = b"".join(f_bytes(1, f_varint(1, d) if isinstance(d, int) else f_bytes(2, d)) for d in dims)
    tensor_type = f_varint(1, dtype) + f_bytes(2, shape)
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor_type))


def attr_int(name, v):
    return f_bytes(1, name) + f_varint(3, v) + f_varint(20, 2)


def attr_float(name, v):
    return f_bytes(1, name) + f_float(2, v) + f_varint(20, 1)


def attr_ints(name, vs):
    return f_bytes(1, name) + b"".join(f_varint(8, v) for v in vs) + f_varint(20, 7)


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
