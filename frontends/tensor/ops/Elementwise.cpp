// Elementwise ops: unary math, binary arithmetic with numpy broadcasting and
// type promotion, comparisons and logic (bool results), where, cast, clip.
// Each is an `element` function (Ops.h): one kernel with one invocation per
// output element, or part of a reader's kernel when the lowering fuses it.
#include <cmath>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;

std::string dt(DType t) { return std::string(dtypeName(t)); }

// Unary ops: what they accept and how they compute (in the input's compute type).
enum class Accepts { Float, Number, Signed, Bool, Int };
struct Unary {
  const char* name;
  Accepts accepts;
  Value* (*fn)(Kernel& k, Value* x, DType t);
};

Value* floatConst(Kernel& k, DType t, double v) { return k.constant(t, v); }

// round half to even: r = round-half-away(x); where |x - trunc(x)| == 0.5 and r is odd, step back toward x.
Value* roundEven(Kernel& k, Value* x, DType t) {
  Builder& b = k.b;
  Value* r = b.round(x);
  Value* half = b.eq(b.abs(b.sub(x, b.trunc(x))), floatConst(k, t, 0.5));
  Value* odd = b.ne(b.sub(r, b.mul(b.floor(b.mul(r, floatConst(k, t, 0.5))), floatConst(k, t, 2))), floatConst(k, t, 0));
  Value* back = b.sub(r, b.copysign(floatConst(k, t, 1), x));
  return b.select(b.and_(half, odd), back, r);
}

const Unary kUnary[] = {
    {"neg", Accepts::Signed, [](Kernel& k, Value* x, DType) { return k.b.neg(x); }},
    {"abs", Accepts::Number, [](Kernel& k, Value* x, DType t) {
       return isSigned(t) ? k.b.abs(x) : x; }},
    {"sign", Accepts::Number, [](Kernel& k, Value* x, DType t) {
       if (isFloat(t)) return k.b.sign(x);
       Value* zero = k.constant(t, 0);
       Value* pos = k.b.select(k.b.gt(x, zero), k.constant(t, 1), zero);
       return isSigned(t) ? k.b.select(k.b.lt(x, zero), k.constant(t, -1), pos) : pos; }},
    {"exp", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.exp(x); }},
    {"log", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.log(x); }},
    {"sqrt", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.sqrt(x); }},
    {"rsqrt", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.rsqrt(x); }},
    {"sin", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.sin(x); }},
    {"cos", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.cos(x); }},
    {"tan", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.tan(x); }},
    {"asin", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.asin(x); }},
    {"acos", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.acos(x); }},
    {"atan", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.atan(x); }},
    {"sinh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.sinh(x); }},
    {"cosh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.cosh(x); }},
    {"tanh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.tanh(x); }},
    {"asinh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.asinh(x); }},
    {"acosh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.acosh(x); }},
    {"atanh", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.atanh(x); }},
    {"erf", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.erf(x); }},
    {"floor", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.floor(x); }},
    {"ceil", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.ceil(x); }},
    {"round", Accepts::Float, roundEven},
    {"trunc", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.trunc(x); }},
    {"reciprocal", Accepts::Float, [](Kernel& k, Value* x, DType t) { return k.b.div(floatConst(k, t, 1), x); }},
    {"sigmoid", Accepts::Float, [](Kernel& k, Value* x, DType t) {
       // 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) below: no overflow either way.
       Builder& b = k.b;
       Value* one = floatConst(k, t, 1);
       Value* e = b.exp(b.neg(b.abs(x)));
       Value* pos = b.div(one, b.add(one, e));
       return b.select(b.ge(x, floatConst(k, t, 0)), pos, b.div(e, b.add(one, e))); }},
    {"relu", Accepts::Number, [](Kernel& k, Value* x, DType t) { return k.b.max(x, k.constant(t, 0)); }},
    {"softplus", Accepts::Float, [](Kernel& k, Value* x, DType t) {
       Builder& b = k.b;  // max(x, 0) + log1p(e^-|x|)
       return b.add(b.max(x, floatConst(k, t, 0)), b.log1p(b.exp(b.neg(b.abs(x))))); }},
    {"softsign", Accepts::Float, [](Kernel& k, Value* x, DType t) {
       return k.b.div(x, k.b.add(floatConst(k, t, 1), k.b.abs(x))); }},
    {"gelu", Accepts::Float, [](Kernel& k, Value* x, DType t) {
       Builder& b = k.b;  // x/2 · (1 + erf(x/√2))
       Value* e = b.erf(b.mul(x, floatConst(k, t, M_SQRT1_2)));
       return b.mul(b.mul(x, floatConst(k, t, 0.5)), b.add(floatConst(k, t, 1), e)); }},
    {"isnan", Accepts::Float, [](Kernel& k, Value* x, DType) { return k.b.ne(x, x); }},
    {"isinf", Accepts::Float, [](Kernel& k, Value* x, DType t) {
       return k.b.eq(k.b.abs(x), floatConst(k, t, INFINITY)); }},
    {"not", Accepts::Bool, [](Kernel& k, Value* x, DType) { return k.b.not_(x); }},
    {"bitnot", Accepts::Int, [](Kernel& k, Value* x, DType) { return k.b.not_(x); }},
};

bool accepts(Accepts a, DType t) {
  switch (a) {
    case Accepts::Float: return isFloat(t);
    case Accepts::Number: return isFloat(t) || isInt(t);
    case Accepts::Signed: return isFloat(t) || (isInt(t) && isSigned(t));
    case Accepts::Bool: return t == DType::Bool;
    case Accepts::Int: return isInt(t);
  }
  return false;
}

std::string acceptsText(Accepts a) {
  switch (a) {
    case Accepts::Float: return "a float tensor";
    case Accepts::Number: return "a numeric tensor";
    case Accepts::Signed: return "a float or signed integer tensor";
    case Accepts::Bool: return "a bool tensor";
    case Accepts::Int: return "an integer tensor";
  }
  return "";
}

// Binary ops compute in the promoted type of their inputs (`cmp`: the result is bool).
enum class BinKind { Arith, Compare, Logic, IntOnly };
struct Binary {
  const char* name;
  BinKind kind;
  Value* (*fn)(Kernel& k, Value* a, Value* b, DType t);
};

Value* pyMod(Kernel& k, Value* a, Value* b, DType t) {
  // Python's %: the result has the divisor's sign. r = a rem b; r != 0 and sign(r) != sign(b): r + b.
  Builder& bb = k.b;
  Value* r = bb.rem(a, b);
  if (!isSigned(t)) return r;
  Value* zero = k.constant(t, 0);
  Value* fix = bb.and_(bb.ne(r, zero), bb.ne(bb.lt(r, zero), bb.lt(b, zero)));
  return bb.select(fix, bb.add(r, b), r);
}

const Binary kBinary[] = {
    {"add", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.add(a, b); }},
    {"sub", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.sub(a, b); }},
    {"mul", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.mul(a, b); }},
    {"div", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.div(a, b); }},
    {"pow", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType t) {
       if (isFloat(t)) return k.b.pow(a, b);
       // Integer power by repeated squaring over the bits of b (b < 0 gives 0 unless a is ±1; here: 0).
       Builder& bb = k.b;
       Value* one = k.constant(t, 1);
       Value* zero = k.constant(t, 0);
       ir::Op* loop = bb.forOp(k.i32(0), k.i32(int(bits(t))), k.i32(1), {one, a, b},
                               [&](Builder& lb, Value*, const ir::Values& c) -> ir::Values {
                                 Value* odd = lb.ne(lb.and_(c[2], one), zero);
                                 Value* r = lb.select(odd, lb.mul(c[0], c[1]), c[0]);
                                 return {r, lb.mul(c[1], c[1]), lb.shr(c[2], one)};
                               });
       Value* r = loop->result(0);
       return isSigned(t) ? bb.select(bb.lt(b, zero), zero, r) : r; }},
    {"min", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType t) {
       if (!isFloat(t)) return k.b.min(a, b);
       // NaN wins, as in numpy and ONNX.
       return k.b.select(k.b.ne(a, a), a, k.b.select(k.b.ne(b, b), b, k.b.min(a, b))); }},
    {"max", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType t) {
       if (!isFloat(t)) return k.b.max(a, b);
       return k.b.select(k.b.ne(a, a), a, k.b.select(k.b.ne(b, b), b, k.b.max(a, b))); }},
    {"mod", BinKind::Arith, pyMod},
    {"fmod", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.rem(a, b); }},
    {"atan2", BinKind::Arith, [](Kernel& k, Value* a, Value* b, DType) { return k.b.atan2(a, b); }},
    {"eq", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.eq(a, b); }},
    {"ne", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.ne(a, b); }},
    {"lt", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.lt(a, b); }},
    {"le", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.le(a, b); }},
    {"gt", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.gt(a, b); }},
    {"ge", BinKind::Compare, [](Kernel& k, Value* a, Value* b, DType) { return k.b.ge(a, b); }},
    {"and", BinKind::Logic, [](Kernel& k, Value* a, Value* b, DType) { return k.b.and_(a, b); }},
    {"or", BinKind::Logic, [](Kernel& k, Value* a, Value* b, DType) { return k.b.or_(a, b); }},
    {"xor", BinKind::Logic, [](Kernel& k, Value* a, Value* b, DType) { return k.b.xor_(a, b); }},
    {"bitand", BinKind::IntOnly, [](Kernel& k, Value* a, Value* b, DType) { return k.b.and_(a, b); }},
    {"bitor", BinKind::IntOnly, [](Kernel& k, Value* a, Value* b, DType) { return k.b.or_(a, b); }},
    {"bitxor", BinKind::IntOnly, [](Kernel& k, Value* a, Value* b, DType) { return k.b.xor_(a, b); }},
    {"shl", BinKind::IntOnly, [](Kernel& k, Value* a, Value* b, DType) { return k.b.shl(a, b); }},
    {"shr", BinKind::IntOnly, [](Kernel& k, Value* a, Value* b, DType) { return k.b.shr(a, b); }},
};

// The shape of inputs broadcast together, or an error naming every shape.
std::string broadcastAll(const Program& p, const Node& n, Shape& out) {
  out = {};
  for (uint32_t in : n.inputs) {
    auto s = broadcastShapes(out, p.node(in).shape);
    if (!s) {
      std::string shapes;
      for (uint32_t x : n.inputs) shapes += (shapes.empty() ? "" : " and ") + shapeText(p.node(x).shape);
      return n.op + ": shapes " + shapes + " cannot be broadcast together";
    }
    out = *s;
  }
  return "";
}

}  // namespace

void addElementwiseOps(std::vector<OpDef>& ops) {
  for (const Unary& u : kUnary) {
    OpDef d;
    d.name = u.name;
    d.infer = [u](const Program& p, Node& n) -> std::string {
      const Node& x = p.node(n.inputs[0]);
      if (!accepts(u.accepts, x.dtype)) return n.op + " wants " + acceptsText(u.accepts) + ", not " + dt(x.dtype);
      n.dtype = std::string_view(u.name) == "isnan" || std::string_view(u.name) == "isinf" ? DType::Bool : x.dtype;
      n.shape = x.shape;
      return "";
    };
    d.element = [u](Kernel& k, const Node&, std::span<const Operand> in) { return u.fn(k, k.loadBroadcast(0), in[0].dtype); };
    ops.push_back(std::move(d));
  }
  for (const Binary& bin : kBinary) {
    OpDef d;
    d.name = bin.name;
    d.minInputs = d.maxInputs = 2;
    d.infer = [bin](const Program& p, Node& n) -> std::string {
      DType a = p.node(n.inputs[0]).dtype, b = p.node(n.inputs[1]).dtype;
      DType t = promote(a, b);
      if (bin.kind == BinKind::Logic && (a != DType::Bool || b != DType::Bool))
        return n.op + " wants bool tensors, not " + dt(a) + " and " + dt(b);
      if (bin.kind == BinKind::IntOnly && !isInt(t)) return n.op + " wants integer tensors, not " + dt(a) + " and " + dt(b);
      if (bin.kind == BinKind::Arith && t == DType::Bool) return n.op + " wants numeric tensors, not bool";
      if (std::string_view(bin.name) == "atan2" && !isFloat(t)) return "atan2 wants float tensors, not " + dt(t);
      n.dtype = bin.kind == BinKind::Compare ? DType::Bool : t;
      return broadcastAll(p, n, n.shape);
    };
    d.element = [bin](Kernel& k, const Node&, std::span<const Operand> in) {
      DType t = promote(in[0].dtype, in[1].dtype);
      Value* a = k.convert(k.loadBroadcast(0), in[0].dtype, t);
      Value* b = k.convert(k.loadBroadcast(1), in[1].dtype, t);
      return bin.fn(k, a, b, t);
    };
    ops.push_back(std::move(d));
  }

  // where(cond, a, b): cond is bool; a and b promote; all three broadcast.
  OpDef where;
  where.name = "where";
  where.minInputs = where.maxInputs = 3;
  where.infer = [](const Program& p, Node& n) -> std::string {
    if (p.node(n.inputs[0]).dtype != DType::Bool)
      return "where wants a bool condition, not " + dt(p.node(n.inputs[0]).dtype);
    n.dtype = promote(p.node(n.inputs[1]).dtype, p.node(n.inputs[2]).dtype);
    return broadcastAll(p, n, n.shape);
  };
  where.element = [](Kernel& k, const Node& n, std::span<const Operand> in) {
    return k.b.select(k.loadBroadcast(0), k.convert(k.loadBroadcast(1), in[1].dtype, n.dtype),
                      k.convert(k.loadBroadcast(2), in[2].dtype, n.dtype));
  };
  ops.push_back(std::move(where));

  // cast {to = "f32"}: float to integer truncates toward zero (NaN gives 0 on
  // every target, as the IR's cast); to bool: x != 0.
  OpDef cast;
  cast.name = "cast";
  cast.infer = [](const Program& p, Node& n) -> std::string {
    auto to = dtypeFromName(n.attrs.s("to"));
    if (!to) return "cast: unknown dtype '" + n.attrs.s("to") + "'";
    n.dtype = *to;
    n.shape = p.node(n.inputs[0]).shape;
    return "";
  };
  cast.element = [](Kernel& k, const Node& n, std::span<const Operand> in) {
    return k.convert(k.loadBroadcast(0), in[0].dtype, n.dtype);
  };
  ops.push_back(std::move(cast));

  // clip(x, lo, hi): the bounds are tensors broadcast with x (scalars usually); NaN stays NaN.
  OpDef clip;
  clip.name = "clip";
  clip.minInputs = clip.maxInputs = 3;
  clip.infer = [](const Program& p, Node& n) -> std::string {
    n.dtype = p.node(n.inputs[0]).dtype;
    for (int i = 1; i < 3; ++i)
      if (p.node(n.inputs[i]).dtype != n.dtype)
        return "clip: the bounds must have the dtype of x (" + dt(n.dtype) + "), not " + dt(p.node(n.inputs[i]).dtype);
    std::string why = broadcastAll(p, n, n.shape);
    if (why.empty() && n.shape != p.node(n.inputs[0]).shape)
      return "clip: the bounds " + shapeText(p.node(n.inputs[1]).shape) + " and " + shapeText(p.node(n.inputs[2]).shape) +
             " would broadcast x " + shapeText(p.node(n.inputs[0]).shape) + " to " + shapeText(n.shape);
    return why;
  };
  clip.element = [](Kernel& k, const Node&, std::span<const Operand>) {
    Value* x = k.loadBroadcast(0);
    Value* lo = k.loadBroadcast(1);
    Value* hi = k.loadBroadcast(2);
    Value* r = k.b.select(k.b.lt(x, lo), lo, x);
    return k.b.select(k.b.gt(r, hi), hi, r);
  };
  ops.push_back(std::move(clip));
}

}  // namespace eph::tensor
