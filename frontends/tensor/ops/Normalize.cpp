// The normalisations (see Ops.h and docs/tensor.md, "Reductions and
// normalisation"): layer norm, batch and instance norm, mean-variance and Lp
// normalisation, over the row kernels of ReduceKernels.h (Reduce.cpp says
// how rows are reduced). Each computes per-row statistics (a mean and an
// inverse standard deviation, or a norm) and maps over x reading them
// broadcast; a long row of layer norm is one cooperative kernel.
#include <cmath>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"
#include "frontends/tensor/ops/ReduceKernels.h"

namespace eph::tensor {

namespace reduce {
namespace {

// Per-row mean and 1/sqrt(variance + epsilon) of x over the reduced axes (`mvn`:
// 1/(sqrt(variance) + 1e-9) instead, as ONNX's MeanVarianceNormalization).
Values meanAndScale(Lowering& l, const Node& n, const Operand& x, const std::vector<bool>& red, bool mvn) {
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t R = reducedCount(x.shape, red), rows = numel(keep);
  const std::vector<Loop> loops = loopsOf(x, red);
  const DType S = statType(x.dtype);
  const double eps = n.attrs.f("epsilon", 1e-5);
  std::string key = mvn ? "mvn" : "eps=" + std::to_string(eps);
  return launch(l, n.op + "_stats", key, keep, std::span(&x, 1), {{S, rows}, {S, rows}}, [&](Kernel& k, const Values& out) {
    Builder& b = k.b;
    auto [mean, q] = meanAndSquares(k, 0, rowBase(k, 0, red), loops, R, S);
    Value* var = b.div(q, k.constant(S, double(R)));
    Value* scale = mvn ? b.div(k.constant(S, 1), b.add(b.sqrt(var), k.constant(S, 1e-9)))
                       : b.div(k.constant(S, 1), b.sqrt(b.add(var, k.constant(S, eps))));
    b.store(out[0], k.linear, mean);
    b.store(out[1], k.linear, scale);
  });
}

// (x - mean) * scale [* gamma + beta], with statistics over `red`; gamma and
// beta (ops[1], ops[2] when present) are operands already laid over x's shape.
Expected<Value*> normalise(Lowering& l, const Node& n, const Operand& x, const std::vector<bool>& red, bool mvn,
                           std::vector<Operand> params) {
  const DType S = statType(x.dtype);
  const int64_t R = reducedCount(x.shape, red);
  if (R >= kCoopMin) {
    std::vector<Operand> ops = {x};
    for (Operand& p : params) ops.push_back(p);
    const double eps = n.attrs.f("epsilon", 1e-5);
    return coopRows(l, n.op, mvn ? "mvn" : "eps=" + std::to_string(eps), x.shape, red, ops, n.dtype,
                    [&](Row& row) -> Values {
                      Kernel& k = row.k;
                      Builder& b = k.b;
                      auto [mean, q] = rowMeanAndSquares(row, S);
                      Value* var = b.div(q, k.constant(S, double(R)));
                      Value* scale = mvn ? b.div(k.constant(S, 1), b.add(b.sqrt(var), k.constant(S, 1e-9)))
                                         : b.div(k.constant(S, 1), b.sqrt(b.add(var, k.constant(S, eps))));
                      return {mean, scale};
                    },
                    [&](Builder& b, Row& row, Value* r, const Values& st) -> Value* {
                      ir::Context& ctx = row.k.ctx;
                      Value* v = b.mul(b.sub(row.load(b, 0, r), st[0]), st[1]);
                      if (ops.size() > 1) v = b.mul(v, castTo(b, ctx, row.load(b, 1, r), S));
                      if (ops.size() > 2) v = b.add(v, castTo(b, ctx, row.load(b, 2, r), S));
                      return v;
                    });
  }
  Values st = meanAndScale(l, n, x, red, mvn);
  std::vector<Operand> ops = {x, statOperand(st[0], S, x.shape, red), statOperand(st[1], S, x.shape, red)};
  for (Operand& p : params) ops.push_back(p);
  Value* y = l.map(n, ops, [&](Kernel& k) {
    Builder& b = k.b;
    Value* v = b.mul(b.sub(k.convert(k.loadBroadcast(0), x.dtype, S), k.loadBroadcast(1)), k.loadBroadcast(2));
    if (ops.size() > 3) v = b.mul(v, k.convert(k.loadBroadcast(3), ops[3].dtype, S));
    if (ops.size() > 4) v = b.add(v, k.convert(k.loadBroadcast(4), ops[4].dtype, S));
    return v;
  });
  for (Value* s : st) l.free(s);
  return y;
}

std::string wantFloat(const Program& p, const Node& n, size_t i, const char* what) {
  DType t = p.node(n.inputs[i]).dtype;
  if (!isFloat(t)) return n.op + ": " + what + " must be a float tensor, not " + dt(t);
  return "";
}

std::string inferLayerNorm(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (std::string e = wantFloat(p, n, i, i == 0 ? "x" : i == 1 ? "scale" : "bias"); !e.empty()) return e;
  int64_t a = n.attrs.i("axis", -1), ax = a;
  if (!normaliseAxis(ax, x.shape.size())) return "layer_norm: axis " + num(a) + " is out of range for " + shapeText(x.shape);
  Shape tail(x.shape.begin() + ax, x.shape.end());
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Shape& s = p.node(n.inputs[i]).shape;
    auto b = broadcastShapes(s, tail);
    if (!b || *b != tail)
      return std::string("layer_norm: ") + (i == 1 ? "scale " : "bias ") + shapeText(s) +
             " does not broadcast to the normalised shape " + shapeText(tail) + " of x " + shapeText(x.shape);
  }
  n.dtype = x.dtype;
  n.shape = x.shape;
  return "";
}

Expected<Value*> lowerLayerNorm(Lowering& l, const Node& n, std::span<const Operand> in) {
  int64_t ax = n.attrs.i("axis", -1);
  normaliseAxis(ax, in[0].shape.size());
  std::vector<bool> red(in[0].shape.size(), false);
  for (size_t d = size_t(ax); d < red.size(); ++d) red[d] = true;
  // x may stay fused where a cooperative row kernel reads it; the rest is stored.
  std::vector<Value*> temps;
  const std::vector<Operand> ins = stored(l, in, reducedCount(in[0].shape, red) >= kCoopMin, temps);
  std::vector<Operand> params;
  for (size_t i = 1; i < ins.size(); ++i) params.push_back(broadcastOperand(ins[i], ins[0].shape));
  auto y = normalise(l, n, ins[0], red, false, params);
  for (Value* t : temps) l.free(t);
  return y;
}

// x[N, C, ...] and per-channel parameters of shape [C].
std::string inferChannels(const Program& p, Node& n, const std::vector<const char*>& names) {
  const Node& x = p.node(n.inputs[0]);
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (std::string e = wantFloat(p, n, i, names[i]); !e.empty()) return e;
  if (x.shape.size() < 2) return n.op + ": x " + shapeText(x.shape) + " must have a batch and a channel dimension [N, C, ...]";
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    const Shape& s = p.node(n.inputs[i]).shape;
    if (s != Shape{x.shape[1]})
      return n.op + ": " + names[i] + " " + shapeText(s) + " must be [" + num(x.shape[1]) + "], one per channel of x " +
             shapeText(x.shape);
  }
  n.dtype = x.dtype;
  n.shape = x.shape;
  return "";
}

Expected<Value*> lowerBatchNorm(Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<Operand> ops = {x};
  for (size_t i = 1; i < 5; ++i) ops.push_back(channelOperand(in[i], x.shape));
  const DType S = statType(x.dtype);
  const double eps = n.attrs.f("epsilon", 1e-5);
  return l.map(n, ops, [&](Kernel& k) {
    Builder& b = k.b;
    auto ld = [&](size_t i) { return k.convert(k.loadBroadcast(i), ops[i].dtype, S); };
    Value* v = b.div(b.sub(ld(0), ld(3)), b.sqrt(b.add(ld(4), k.constant(S, eps))));
    return b.add(b.mul(v, ld(1)), ld(2));
  });
}

Expected<Value*> lowerInstanceNorm(Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red(x.shape.size(), false);
  for (size_t d = 2; d < red.size(); ++d) red[d] = true;
  return normalise(l, n, x, red, false, {channelOperand(in[1], x.shape), channelOperand(in[2], x.shape)});
}

std::vector<int64_t> mvnAxes(const Node& n) { return n.attrs.ints("axes", {0, 2, 3}); }

Expected<Value*> lowerMvn(Lowering& l, const Node& n, std::span<const Operand> in) {
  std::vector<bool> red;
  markAxes(n.op, mvnAxes(n), in[0].shape, red);
  return normalise(l, n, in[0], red, true, {});
}

Expected<Value*> lowerLp(Lowering& l, const Node& n, std::span<const Operand> in) {
  const Operand& x = in[0];
  std::vector<bool> red;
  oneAxis(n, x.shape, "axis", -1, red);
  const bool p1 = n.attrs.i("p", 2) == 1;
  const Shape keep = reducedShape(x.shape, red, true);
  const int64_t R = reducedCount(x.shape, red);
  const std::vector<Loop> loops = loopsOf(x, red);
  const DType S = statType(x.dtype);
  if (R >= kCoopMin) {
    return coopRows(l, n.op, p1 ? "p1" : "p2", x.shape, red, in.first(1), n.dtype, [&](Row& row) -> Values {
      Value* s = row.reduce(Comb::Sum, S, row.k.constant(S, 0), [&](Builder& b, Value* x) { return p1 ? b.abs(x) : b.mul(x, x); });
      return {p1 ? s : row.k.b.sqrt(s)};
    }, [&](Builder& b, Row& row, Value* r, const Values& st) -> Value* { return b.div(row.load(b, 0, r), st[0]); });
  }
  Values st = launch(l, n.op + "_norm", p1 ? "p1" : "p2", keep, in.first(1), {{S, numel(keep)}}, [&](Kernel& k, const Values& out) {
    Value* s = fold(k, 0, rowBase(k, 0, red), loops, R, {k.constant(S, 0)},
                    [&](Builder& b, Value* x, Value*, const Values& a) -> Values {
                      return {b.add(a[0], p1 ? b.abs(x) : b.mul(x, x))};
                    })[0];
    k.b.store(out[0], k.linear, p1 ? s : k.b.sqrt(s));
  });
  std::vector<Operand> ops = {x, statOperand(st[0], S, x.shape, red)};
  Value* y = l.map(n, ops, [&](Kernel& k) { return k.b.div(k.convert(k.loadBroadcast(0), x.dtype, S), k.loadBroadcast(1)); });
  l.free(st[0]);
  return y;
}

}  // namespace
}  // namespace reduce

using namespace reduce;

void addNormOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "layer_norm",
                 .minInputs = 2,
                 .maxInputs = 3,
                 .infer = inferLayerNorm,
                 .lower = lowerLayerNorm,
                 .fusesInputs = true});  // as softmax's
  ops.push_back({.name = "batch_norm",
                 .minInputs = 5,
                 .maxInputs = 5,
                 .infer = [](const Program& p, Node& n) { return inferChannels(p, n, {"x", "scale", "bias", "mean", "var"}); },
                 .lower = lowerBatchNorm});
  ops.push_back({.name = "instance_norm",
                 .minInputs = 3,
                 .maxInputs = 3,
                 .infer = [](const Program& p, Node& n) { return inferChannels(p, n, {"x", "scale", "bias"}); },
                 .lower = lowerInstanceNorm});
  ops.push_back({.name = "mean_variance_normalization",
                 .infer = [](const Program& p, Node& n) -> std::string {
                   const Node& x = p.node(n.inputs[0]);
                   if (std::string e = wantFloat(p, n, 0, "x"); !e.empty()) return e;
                   std::vector<bool> red;
                   if (std::string e = markAxes(n.op, mvnAxes(n), x.shape, red); !e.empty()) return e;
                   n.dtype = x.dtype;
                   n.shape = x.shape;
                   return "";
                 },
                 .lower = lowerMvn});
  ops.push_back({.name = "lp_normalization",
                 .infer = [](const Program& p, Node& n) -> std::string {
                   const Node& x = p.node(n.inputs[0]);
                   if (std::string e = wantFloat(p, n, 0, "x"); !e.empty()) return e;
                   int64_t pw = n.attrs.i("p", 2);
                   if (pw != 1 && pw != 2) return "lp_normalization: p must be 1 or 2, not " + num(pw);
                   std::vector<bool> red;
                   if (std::string e = oneAxis(n, x.shape, "axis", -1, red); !e.empty()) return e;
                   n.dtype = x.dtype;
                   n.shape = x.shape;
                   return "";
                 },
                 .lower = lowerLp});
}

}  // namespace eph::tensor
