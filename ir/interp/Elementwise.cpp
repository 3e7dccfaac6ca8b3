#include "ir/interp/Elementwise.h"

#include <cmath>

namespace eph::interp {
namespace {

// Applies f(elementA, elementB, resultElementType) -> RtValue over vectors or
// to scalars. f returns false (after failing) on a trap.
template <class F>
bool map2(const RtValue& a, const RtValue& b, const ir::Type* resultType, RtValue& out, F f) {
  if (!a.type->isVector()) return f(a, b, resultType, out);
  out = RtValue{};
  out.type = resultType;
  out.elems.resize(a.elems.size());
  for (size_t i = 0; i < a.elems.size(); ++i)
    if (!f(a.elems[i], b.elems[i], resultType->elem(), out.elems[i])) return false;
  return true;
}

template <class F>
RtValue map1(const RtValue& a, const ir::Type* resultType, F f) {
  if (!a.type->isVector()) return f(a, resultType);
  RtValue out;
  out.type = resultType;
  for (const RtValue& e : a.elems) out.elems.push_back(f(e, resultType->elem()));
  return out;
}

}  // namespace

bool applyBinary(Exec& ex, const ir::Op& op, BinaryKind k) {
  RtValue out;
  std::string error;
  bool ok = map2(ex.operand(op, 0), ex.operand(op, 1), op.result(0)->type(), out,
                 [&](const RtValue& x, const RtValue& y, const ir::Type*, RtValue& r) {
                   return binaryScalar(k, x, y, r, error);
                 });
  if (!ok) return ex.fail(op, error);
  return ex.setResult(op, std::move(out));
}

bool applyUnary(Exec& ex, const ir::Op& op, UnaryKind k) {
  return ex.setResult(op, map1(ex.operand(op, 0), op.result(0)->type(),
                               [&](const RtValue& x, const ir::Type*) { return unaryScalar(k, x); }));
}

bool applyFma(Exec& ex, const ir::Op& op) {
  const RtValue &a = ex.operand(op, 0), &b = ex.operand(op, 1), &c = ex.operand(op, 2);
  if (!a.type->isVector()) return ex.setResult(op, fmaScalar(a, b, c));
  RtValue out;
  out.type = op.result(0)->type();
  for (size_t i = 0; i < a.elems.size(); ++i) out.elems.push_back(fmaScalar(a.elems[i], b.elems[i], c.elems[i]));
  return ex.setResult(op, std::move(out));
}

bool applyCompare(Exec& ex, const ir::Op& op, CompareKind k) {
  RtValue out;
  map2(ex.operand(op, 0), ex.operand(op, 1), op.result(0)->type(), out,
       [&](const RtValue& x, const RtValue& y, const ir::Type* rt, RtValue& r) {
         r = RtValue::ofBool(rt, compareScalar(k, x, y));
         return true;
       });
  return ex.setResult(op, std::move(out));
}

bool applyCast(Exec& ex, const ir::Op& op) {
  return ex.setResult(op, map1(ex.operand(op, 0), op.result(0)->type(),
                               [](const RtValue& x, const ir::Type* to) { return castScalar(x, to); }));
}

bool applyBitcast(Exec& ex, const ir::Op& op) {
  return ex.setResult(op, bitcastValue(ex.operand(op, 0), op.result(0)->type()));
}

RtValue dotProduct(const RtValue& a, const RtValue& b) {
  double s = 0;
  for (size_t i = 0; i < a.elems.size(); ++i) s += a.elems[i].f * b.elems[i].f;
  return RtValue::ofFloat(a.type->elem(), s);
}

RtValue crossProduct(const RtValue& a, const RtValue& b) {
  const auto& x = a.elems;
  const auto& y = b.elems;
  const ir::Type* e = a.type->elem();
  RtValue r;
  r.type = a.type;
  r.elems = {RtValue::ofFloat(e, x[1].f * y[2].f - x[2].f * y[1].f),
             RtValue::ofFloat(e, x[2].f * y[0].f - x[0].f * y[2].f),
             RtValue::ofFloat(e, x[0].f * y[1].f - x[1].f * y[0].f)};
  return r;
}

namespace {
double lengthOf(const RtValue& v) {
  double s = 0;
  for (const RtValue& e : v.elems) s += e.f * e.f;
  return std::sqrt(s);
}
}  // namespace

RtValue vectorLength(const RtValue& v) { return RtValue::ofFloat(v.type->elem(), lengthOf(v)); }

RtValue normalizeVector(const RtValue& v) {
  double len = lengthOf(v);
  RtValue r;
  r.type = v.type;
  for (const RtValue& e : v.elems) r.elems.push_back(RtValue::ofFloat(v.type->elem(), e.f / len));
  return r;
}

}  // namespace eph::interp
