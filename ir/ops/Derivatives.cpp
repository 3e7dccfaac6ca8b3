// Derivative rules of the built-in ops (the autodiff pass, passes/Autodiff.h,
// reads them through OpInfo::derivative). Each rule emits IR with the builder
// of its DiffContext; the operands and results it sees are the primal values
// at that point. Conventions at the kinks (docs/autodiff.md):
//   abs'(0) = +1; min/max: a tie gives 0 to both operands;
//   floor, ceil, round, trunc, sign, compares: 0; select: the chosen branch only;
//   rem (float, a - b*trunc(a/b)): 1 to a, 0 to b;
//   pow(x, y): d/dx = y*x^(y-1) (0 when y == 0), d/dy = x^y*log(x) for x > 0, else 0;
//   sqrt'(0) = +inf, as the formula gives (and 0*inf = NaN with a zero adjoint);
//   copysign(a, b): +-1 to a (the sign of the result over a's), 0 to b.
// Values of integer or bool type carry no derivative: casts to integers and
// compares give 0; integer arithmetic is never differentiated.
#include <cmath>
#include <numbers>

#include "ir/Builder.h"

namespace eph::ir {
namespace {

using V = Value*;
using Vs = std::vector<Value*>;

// Small emitter over a DiffContext's builder: arithmetic on values of one type
// (a float or a float vector), constants splatted to that type.
struct E {
  Builder& b;
  V k(const Type* t, double x) {
    if (!t->isVector()) return b.constFloat(t, x);
    V s = b.constFloat(t->elem(), x);
    return b.op("vec.make", Vs(t->count(), s), t);
  }
  V splat(V s, const Type* t) { return t->isVector() ? b.op("vec.make", Vs(t->count(), s), t) : s; }
  V bin(std::string_view n, V x, V y) { return b.op(n, {x, y}, x->type()); }
  V add(V x, V y) { return bin("add", x, y); }
  V sub(V x, V y) { return bin("sub", x, y); }
  V mul(V x, V y) { return bin("mul", x, y); }
  V div(V x, V y) { return bin("div", x, y); }
  V un(std::string_view n, V x) { return b.op(n, {x}, x->type()); }
  V neg(V x) { return un("neg", x); }
  V sq(V x) { return mul(x, x); }
  V cmp(std::string_view n, V x, V y) {
    const Type* t = x->type();
    const Type* bt = b.context().boolType();
    return b.op(n, {x, y}, t->isVector() ? b.context().vectorType(bt, t->count()) : bt);
  }
  // c ? x : y elementwise (select takes a bool; vectors go lane by lane).
  V sel(V c, V x, V y) {
    const Type* t = x->type();
    if (!t->isVector()) return b.op("select", {c, x, y}, t);
    Vs lanes;
    for (unsigned i = 0; i < t->count(); ++i) {
      Attr at = Attr::integer(i);
      auto ex = [&](V v) { return b.op("vec.extract", {v}, v->type()->elem(), {{"index", at}}); };
      lanes.push_back(b.op("select", {ex(c), ex(x), ex(y)}, t->elem()));
    }
    return b.op("vec.make", lanes, t);
  }
  // x + y where either may be null (zero).
  V sum(V x, V y) { return !x ? y : !y ? x : add(x, y); }
  V scale(V g, V d) { return d ? mul(g, d) : nullptr; }
};

// ---- elementwise ops by their partial derivatives ---------------------------

// A unary op's derivative f'(x) given x and r = f(x); null means 0.
using Partial1 = V (*)(E& e, V x, V r);
template <Partial1 D>
Vs rev1(const DiffContext& c, std::span<V const> adj) {
  E e{c.b};
  return {e.scale(adj[0], D(e, c.operands[0], c.results[0]))};
}
template <Partial1 D>
Vs fwd1(const DiffContext& c, std::span<V const> tan) {
  E e{c.b};
  return {tan[0] ? e.scale(tan[0], D(e, c.operands[0], c.results[0])) : nullptr};
}
template <Partial1 D>
const DerivativeRules kUnary{rev1<D>, fwd1<D>};

// A binary op's partials (d/dx, d/dy) given x, y and r; null means 0.
using Partial2 = std::pair<V, V> (*)(E& e, V x, V y, V r, bool wantX, bool wantY);
template <Partial2 D>
Vs rev2(const DiffContext& c, std::span<V const> adj) {
  E e{c.b};
  auto [dx, dy] = D(e, c.operands[0], c.operands[1], c.results[0], true, true);
  return {e.scale(adj[0], dx), e.scale(adj[0], dy)};
}
template <Partial2 D>
Vs fwd2(const DiffContext& c, std::span<V const> tan) {
  E e{c.b};
  auto [dx, dy] = D(e, c.operands[0], c.operands[1], c.results[0], tan[0] != nullptr, tan[1] != nullptr);
  return {e.sum(tan[0] ? e.scale(tan[0], dx) : nullptr, tan[1] ? e.scale(tan[1], dy) : nullptr)};
}
template <Partial2 D>
const DerivativeRules kBinary{rev2<D>, fwd2<D>};

V zero1(E&, V, V) { return nullptr; }
V dNeg(E& e, V x, V) { return e.k(x->type(), -1); }
V dAbs(E& e, V x, V) {
  const Type* t = x->type();
  return e.sel(e.cmp("lt", x, e.k(t, 0)), e.k(t, -1), e.k(t, 1));
}
V dSqrt(E& e, V, V r) { return e.div(e.k(r->type(), 0.5), r); }
V dRsqrt(E& e, V, V r) { return e.mul(e.k(r->type(), -0.5), e.mul(r, e.sq(r))); }
V dExp(E&, V, V r) { return r; }
V dLog(E& e, V x, V) { return e.div(e.k(x->type(), 1), x); }
V dSin(E& e, V x, V) { return e.un("cos", x); }
V dCos(E& e, V x, V) { return e.neg(e.un("sin", x)); }
V dTan(E& e, V, V r) { return e.add(e.k(r->type(), 1), e.sq(r)); }
V dTanh(E& e, V, V r) { return e.sub(e.k(r->type(), 1), e.sq(r)); }
V dAsin(E& e, V x, V) { return e.un("rsqrt", e.sub(e.k(x->type(), 1), e.sq(x))); }
V dAcos(E& e, V x, V) { return e.neg(dAsin(e, x, nullptr)); }
V dAtan(E& e, V x, V) { return e.div(e.k(x->type(), 1), e.add(e.k(x->type(), 1), e.sq(x))); }
V dSinh(E& e, V x, V) { return e.un("cosh", x); }
V dCosh(E& e, V x, V) { return e.un("sinh", x); }
V dAsinh(E& e, V x, V) { return e.un("rsqrt", e.add(e.sq(x), e.k(x->type(), 1))); }
V dAcosh(E& e, V x, V) { return e.un("rsqrt", e.sub(e.sq(x), e.k(x->type(), 1))); }
V dAtanh(E& e, V x, V) { return e.div(e.k(x->type(), 1), e.sub(e.k(x->type(), 1), e.sq(x))); }
V dErf(E& e, V x, V) {
  return e.mul(e.k(x->type(), 2 / std::sqrt(std::numbers::pi)), e.un("exp", e.neg(e.sq(x))));
}
V dExp2(E& e, V, V r) { return e.mul(r, e.k(r->type(), std::numbers::ln2)); }
V dLog2(E& e, V x, V) { return e.div(e.k(x->type(), 1), e.mul(x, e.k(x->type(), std::numbers::ln2))); }
V dLog1p(E& e, V x, V) { return e.div(e.k(x->type(), 1), e.add(e.k(x->type(), 1), x)); }
V dExpm1(E& e, V, V r) { return e.add(r, e.k(r->type(), 1)); }

std::pair<V, V> dRem(E& e, V x, V, V, bool, bool) { return {e.k(x->type(), 1), nullptr}; }
std::pair<V, V> dMin(E& e, V x, V y, V, bool wx, bool wy) {
  const Type* t = x->type();
  V one = e.k(t, 1), zero = e.k(t, 0);
  return {wx ? e.sel(e.cmp("lt", x, y), one, zero) : nullptr, wy ? e.sel(e.cmp("lt", y, x), one, zero) : nullptr};
}
std::pair<V, V> dMax(E& e, V x, V y, V, bool wx, bool wy) {
  const Type* t = x->type();
  V one = e.k(t, 1), zero = e.k(t, 0);
  return {wx ? e.sel(e.cmp("gt", x, y), one, zero) : nullptr, wy ? e.sel(e.cmp("gt", y, x), one, zero) : nullptr};
}
std::pair<V, V> dPow(E& e, V x, V y, V r, bool wx, bool wy) {
  const Type* t = x->type();
  V zero = e.k(t, 0);
  V dx = nullptr, dy = nullptr;
  if (wx) {
    V p = e.mul(y, e.bin("pow", x, e.sub(y, e.k(t, 1))));
    dx = e.sel(e.cmp("eq", y, zero), zero, p);
  }
  if (wy) {
    // log(x) is -inf or NaN for x <= 0: the select keeps those out (0 there).
    V pos = e.cmp("gt", x, zero);
    V safe = e.sel(pos, x, e.k(t, 1));
    dy = e.sel(pos, e.mul(r, e.un("log", safe)), zero);
  }
  return {dx, dy};
}
std::pair<V, V> dAtan2(E& e, V a, V b, V, bool, bool) {
  V s = e.add(e.sq(a), e.sq(b));
  return {e.div(b, s), e.neg(e.div(a, s))};
}
std::pair<V, V> dCopysign(E& e, V a, V, V r, bool, bool) {
  const Type* t = a->type();
  return {e.sel(e.cmp("eq", r, a), e.k(t, 1), e.k(t, -1)), nullptr};
}

// ---- ops written out ---------------------------------------------------------

Vs revAdd(const DiffContext&, std::span<V const> g) { return {g[0], g[0]}; }
Vs fwdAdd(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  return {e.sum(t[0], t[1])};
}
Vs revSub(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  return {g[0], e.neg(g[0])};
}
Vs fwdSub(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  return {t[1] ? (t[0] ? e.sub(t[0], t[1]) : e.neg(t[1])) : t[0]};
}
Vs revMul(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  return {e.mul(g[0], c.operands[1]), e.mul(g[0], c.operands[0])};
}
Vs fwdMul(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  return {e.sum(t[0] ? e.mul(t[0], c.operands[1]) : nullptr, t[1] ? e.mul(c.operands[0], t[1]) : nullptr)};
}
// d(x/y) = dx/y - r*dy/y.
Vs revDiv(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  V gy = e.div(g[0], c.operands[1]);
  return {gy, e.neg(e.mul(gy, c.results[0]))};
}
Vs fwdDiv(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  V num = e.sum(t[0], t[1] ? e.neg(e.mul(c.results[0], t[1])) : nullptr);
  return {num ? e.div(num, c.operands[1]) : nullptr};
}
Vs revFma(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  return {e.mul(g[0], c.operands[1]), e.mul(g[0], c.operands[0]), g[0]};
}
Vs fwdFma(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  V s = e.sum(t[0] ? e.mul(t[0], c.operands[1]) : nullptr, t[1] ? e.mul(c.operands[0], t[1]) : nullptr);
  return {e.sum(s, t[2])};
}
Vs revSelect(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  V zero = e.k(g[0]->type(), 0);
  V cond = c.operands[0];
  return {nullptr, e.sel(cond, g[0], zero), e.sel(cond, zero, g[0])};
}
Vs fwdSelect(const DiffContext& c, std::span<V const> t) {
  if (!t[1] && !t[2]) return {nullptr};
  E e{c.b};
  const Type* ty = c.results[0]->type();
  return {e.sel(c.operands[0], t[1] ? t[1] : e.k(ty, 0), t[2] ? t[2] : e.k(ty, 0))};
}
bool floaty(const Type* t) { return t->scalar()->isFloat(); }
// A cast between float types passes the derivative through (converted); to or
// from an integer or bool there is none.
Vs revCast(const DiffContext& c, std::span<V const> g) {
  if (!floaty(c.operands[0]->type()) || !floaty(c.results[0]->type())) return {nullptr};
  return {c.b.op("cast", {g[0]}, c.operands[0]->type())};
}
Vs fwdCast(const DiffContext& c, std::span<V const> t) {
  if (!t[0] || !floaty(c.results[0]->type())) return {nullptr};
  return {c.b.op("cast", {t[0]}, c.results[0]->type())};
}
Vs revNone(const DiffContext& c, std::span<V const>) { return Vs(c.operands.size(), nullptr); }
Vs fwdNone(const DiffContext& c, std::span<V const>) { return Vs(c.results.size(), nullptr); }

// ---- vector ops --------------------------------------------------------------

Attr indexOf(const DiffContext& c) { return *c.op.attr("index"); }
V zeroOf(E& e, const Type* t) { return e.k(t, 0); }

Vs revVecMake(const DiffContext& c, std::span<V const> g) {
  Vs out;
  for (unsigned i = 0; i < c.operands.size(); ++i)
    out.push_back(c.b.op("vec.extract", {g[0]}, c.operands[i]->type(), {{"index", Attr::integer(i)}}));
  return out;
}
Vs fwdVecMake(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  bool any = false;
  for (V v : t) any |= v != nullptr;
  if (!any) return {nullptr};
  Vs lanes;
  for (unsigned i = 0; i < t.size(); ++i) lanes.push_back(t[i] ? t[i] : zeroOf(e, c.operands[i]->type()));
  return {c.b.op("vec.make", lanes, c.results[0]->type())};
}
Vs revVecExtract(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  const Type* vt = c.operands[0]->type();
  return {c.b.op("vec.insert", {zeroOf(e, vt), g[0]}, vt, {{"index", indexOf(c)}})};
}
Vs fwdVecExtract(const DiffContext& c, std::span<V const> t) {
  return {c.b.op("vec.extract", {t[0]}, c.results[0]->type(), {{"index", indexOf(c)}})};
}
Vs revVecInsert(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  const Type* vt = c.operands[0]->type();
  return {c.b.op("vec.insert", {g[0], zeroOf(e, vt->elem())}, vt, {{"index", indexOf(c)}}),
          c.b.op("vec.extract", {g[0]}, vt->elem(), {{"index", indexOf(c)}})};
}
Vs fwdVecInsert(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  const Type* vt = c.operands[0]->type();
  return {c.b.op("vec.insert", {t[0] ? t[0] : zeroOf(e, vt), t[1] ? t[1] : zeroOf(e, vt->elem())}, vt,
                 {{"index", indexOf(c)}})};
}
Vs revDot(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  V s = e.splat(g[0], c.operands[0]->type());
  return {e.mul(s, c.operands[1]), e.mul(s, c.operands[0])};
}
Vs fwdDot(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  const Type* st = c.results[0]->type();
  auto dot = [&](V x, V y) { return c.b.op("dot", {x, y}, st); };
  return {e.sum(t[0] ? dot(t[0], c.operands[1]) : nullptr, t[1] ? dot(c.operands[0], t[1]) : nullptr)};
}
// d(a x b) = da x b + a x db; the adjoint of a is b x g, of b is g x a.
Vs revCross(const DiffContext& c, std::span<V const> g) {
  const Type* t = c.results[0]->type();
  return {c.b.op("cross", {c.operands[1], g[0]}, t), c.b.op("cross", {g[0], c.operands[0]}, t)};
}
Vs fwdCross(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  const Type* ty = c.results[0]->type();
  auto cr = [&](V x, V y) { return c.b.op("cross", {x, y}, ty); };
  return {e.sum(t[0] ? cr(t[0], c.operands[1]) : nullptr, t[1] ? cr(c.operands[0], t[1]) : nullptr)};
}
Vs revLength(const DiffContext& c, std::span<V const> g) {
  E e{c.b};
  V v = c.operands[0];
  return {e.mul(e.splat(e.div(g[0], c.results[0]), v->type()), v)};
}
Vs fwdLength(const DiffContext& c, std::span<V const> t) {
  E e{c.b};
  return {e.div(c.b.op("dot", {c.operands[0], t[0]}, c.results[0]->type()), c.results[0])};
}
// n = v/|v|: the adjoint of v is (g - n (n.g)) / |v|, the tangent (dv - n (n.dv)) / |v|.
V projectOut(const DiffContext& c, V w) {
  E e{c.b};
  V v = c.operands[0], n = c.results[0];
  const Type* st = v->type()->elem();
  V len = c.b.op("length", {v}, st);
  V nd = c.b.op("dot", {n, w}, st);
  V perp = e.sub(w, e.mul(e.splat(nd, v->type()), n));
  return e.mul(perp, e.splat(e.div(e.k(st, 1), len), v->type()));
}
Vs revNormalize(const DiffContext& c, std::span<V const> g) { return {projectOut(c, g[0])}; }
Vs fwdNormalize(const DiffContext& c, std::span<V const> t) { return {projectOut(c, t[0])}; }

const DerivativeRules kAdd{revAdd, fwdAdd}, kSub{revSub, fwdSub}, kMul{revMul, fwdMul}, kDiv{revDiv, fwdDiv},
    kFma{revFma, fwdFma}, kSelect{revSelect, fwdSelect}, kCast{revCast, fwdCast}, kNone{revNone, fwdNone},
    kVecMake{revVecMake, fwdVecMake}, kVecExtract{revVecExtract, fwdVecExtract},
    kVecInsert{revVecInsert, fwdVecInsert}, kDot{revDot, fwdDot}, kCross{revCross, fwdCross},
    kLength{revLength, fwdLength}, kNormalize{revNormalize, fwdNormalize};

}  // namespace

void registerDerivatives(OpTable& t) {
  const std::pair<OpId, const DerivativeRules*> rules[] = {
      {OpId::Add, &kAdd}, {OpId::Sub, &kSub}, {OpId::Mul, &kMul}, {OpId::Div, &kDiv},
      {OpId::Rem, &kBinary<dRem>}, {OpId::Min, &kBinary<dMin>}, {OpId::Max, &kBinary<dMax>},
      {OpId::Neg, &kUnary<dNeg>}, {OpId::Abs, &kUnary<dAbs>},
      {OpId::Eq, &kNone}, {OpId::Ne, &kNone}, {OpId::Lt, &kNone}, {OpId::Le, &kNone}, {OpId::Gt, &kNone},
      {OpId::Ge, &kNone}, {OpId::Select, &kSelect}, {OpId::Cast, &kCast},
      {OpId::Sqrt, &kUnary<dSqrt>}, {OpId::Rsqrt, &kUnary<dRsqrt>}, {OpId::Exp, &kUnary<dExp>},
      {OpId::Log, &kUnary<dLog>}, {OpId::Sin, &kUnary<dSin>}, {OpId::Cos, &kUnary<dCos>},
      {OpId::Tan, &kUnary<dTan>}, {OpId::Tanh, &kUnary<dTanh>}, {OpId::Floor, &kUnary<zero1>},
      {OpId::Ceil, &kUnary<zero1>}, {OpId::Pow, &kBinary<dPow>}, {OpId::Asin, &kUnary<dAsin>},
      {OpId::Acos, &kUnary<dAcos>}, {OpId::Atan, &kUnary<dAtan>}, {OpId::Atan2, &kBinary<dAtan2>},
      {OpId::Sinh, &kUnary<dSinh>}, {OpId::Cosh, &kUnary<dCosh>}, {OpId::Asinh, &kUnary<dAsinh>},
      {OpId::Acosh, &kUnary<dAcosh>}, {OpId::Atanh, &kUnary<dAtanh>}, {OpId::Erf, &kUnary<dErf>},
      {OpId::Exp2, &kUnary<dExp2>}, {OpId::Log2, &kUnary<dLog2>}, {OpId::Log1p, &kUnary<dLog1p>},
      {OpId::Expm1, &kUnary<dExpm1>}, {OpId::Round, &kUnary<zero1>}, {OpId::Trunc, &kUnary<zero1>},
      {OpId::Sign, &kUnary<zero1>}, {OpId::Copysign, &kBinary<dCopysign>}, {OpId::Fma, &kFma},
      {OpId::VecMake, &kVecMake}, {OpId::VecExtract, &kVecExtract}, {OpId::VecInsert, &kVecInsert},
      {OpId::Dot, &kDot}, {OpId::Cross, &kCross}, {OpId::Length, &kLength}, {OpId::Normalize, &kNormalize},
  };
  for (auto [id, r] : rules) t.setDerivative(id, r);
}

}  // namespace eph::ir
