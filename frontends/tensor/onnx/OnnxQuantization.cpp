// ONNX quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, and the integer and quantized matmul and conv
// (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv), composed of tensor ops.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

Tensor saturate(NodeCtx& c, Tensor v, DType to) {
  DType t = v.dtype();
  double lo = to == DType::U8 ? 0 : to == DType::I8 ? -128 : -2147483648.0;
  double hi = to == DType::U8 ? 255 : to == DType::I8 ? 127 : 2147483647.0;
  v = c.op("max", {c.op("min", {v, c.scalar(t, hi)}), c.scalar(t, lo)});
  return c.op("cast", {v}, {{"to", dn(to)}});
}

std::string mapQuantize(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t axis = c.i("axis", 1);
  Tensor scale = alongAxis(c, c.in(1), x.rank(), axis);
  DType to = c.present(2) ? c.dtype(2) : DType::U8;
  if (to != DType::U8 && to != DType::I8) return "quantizing to " + dn(to) + " is not supported";
  DType ft = DType::F32;
  Tensor v = c.op("round", {c.op("div", {c.cast(x, ft), c.cast(scale, ft)})});
  if (c.present(2)) v = c.op("add", {v, c.cast(alongAxis(c, c.in(2), x.rank(), axis), ft)});
  return one(c, saturate(c, v, to));
}

std::string mapDequantize(NodeCtx& c) {
  Tensor x = c.in(0);
  int64_t axis = c.i("axis", 1);
  Tensor scale = alongAxis(c, c.in(1), x.rank(), axis);
  Tensor v = c.cast(x, DType::F32);
  if (c.present(2)) v = c.op("sub", {v, c.cast(alongAxis(c, c.in(2), x.rank(), axis), DType::F32)});
  return one(c, c.op("mul", {v, c.cast(scale, DType::F32)}));
}

std::string mapDynamicQuantize(NodeCtx& c) {
  Tensor x = c.in(0);
  DType t = DType::F32;
  Tensor zero = c.scalar(t, 0);
  Tensor mx = c.op("max", {c.op("reduce_max", {x}, {{"keepdims", int64_t(0)}}), zero});
  Tensor mn = c.op("min", {c.op("reduce_min", {x}, {{"keepdims", int64_t(0)}}), zero});
  Tensor scale = c.op("div", {c.op("sub", {mx, mn}), c.scalar(t, 255)});
  Tensor zp = saturate(c, c.op("round", {c.op("sub", {zero, c.op("div", {mn, scale})})}), DType::U8);
  Tensor y = c.op("add", {c.op("round", {c.op("div", {x, scale})}), c.cast(zp, t)});
  c.outs = {saturate(c, y, DType::U8), scale, zp};
  return "";
}

// Integer and quantized matmul/conv: exact products in f64 (the operands are
// 8-bit), then the integer result or the requantized one.
Tensor centred(NodeCtx& c, size_t k, size_t zp, size_t rank, int64_t axis) {
  Tensor v = c.cast(c.in(k), DType::F64);
  if (c.present(zp)) v = c.op("sub", {v, c.cast(alongAxis(c, c.in(zp), rank, axis), DType::F64)});
  return v;
}

std::string mapMatMulInteger(NodeCtx& c) {
  Tensor a = centred(c, 0, 2, c.rank(0), 0), b = centred(c, 1, 3, c.rank(1), -1);
  return one(c, c.cast(c.op("matmul", {a, b}), DType::I32));
}

std::string mapConvInteger(NodeCtx& c) {
  Tensor x = centred(c, 0, 2, c.rank(0), 1), w = centred(c, 1, 3, c.rank(1), 0);
  return one(c, c.cast(c.op("conv", {x, w}, passAttrs(c, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})), DType::I32));
}

std::string requantize(NodeCtx& c, Tensor acc, Tensor scale, size_t yScale, size_t yZp) {
  Tensor v = c.op("round", {c.op("div", {c.op("mul", {acc, scale}), c.cast(c.in(yScale), DType::F64)})});
  DType to = c.present(yZp) ? c.dtype(yZp) : DType::U8;
  if (c.present(yZp)) v = c.op("add", {v, c.cast(c.in(yZp), DType::F64)});
  return one(c, saturate(c, v, to));
}

std::string mapQLinearMatMul(NodeCtx& c) {
  Tensor a = c.op("sub", {c.cast(c.in(0), DType::F64), c.cast(c.in(2), DType::F64)});
  Tensor b = c.op("sub", {c.cast(c.in(3), DType::F64), c.cast(c.in(5), DType::F64)});
  Tensor scale = c.cast(c.op("mul", {c.in(1), c.in(4)}), DType::F64);
  return requantize(c, c.op("matmul", {a, b}), scale, 6, 7);
}

std::string mapQLinearConv(NodeCtx& c) {
  size_t r = c.rank(0);
  Tensor x = c.op("sub", {c.cast(c.in(0), DType::F64), c.cast(c.in(2), DType::F64)});
  Tensor w = c.op("sub", {c.cast(c.in(3), DType::F64), c.cast(alongAxis(c, c.in(5), c.rank(3), 0), DType::F64)});
  Tensor acc = c.op("conv", {x, w}, passAttrs(c, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}));
  if (c.present(8)) acc = c.op("add", {acc, c.cast(alongAxis(c, c.in(8), r, 1), DType::F64)});
  Tensor scale = c.cast(c.op("mul", {alongAxis(c, c.in(4), r, 1), c.in(1)}), DType::F64);
  return requantize(c, acc, scale, 6, 7);
}

}  // namespace

std::vector<OpEntry> quantizationEntries() {
  return {
    {"MatMulInteger", 10, 99, "", mapMatMulInteger},
    {"ConvInteger", 10, 99, "auto_pad,dilations,group,kernel_shape,pads,strides", mapConvInteger},
    {"QLinearMatMul", 10, 99, "", mapQLinearMatMul},
    {"QLinearConv", 10, 99, "auto_pad,dilations,group,kernel_shape,pads,strides", mapQLinearConv},
    {"QuantizeLinear", 10, 99, "axis", mapQuantize},
    {"DequantizeLinear", 10, 99, "axis", mapDequantize},
    {"DynamicQuantizeLinear", 11, 99, "", mapDynamicQuantize},
  };
}

}  // namespace eph::tensor::onnx
