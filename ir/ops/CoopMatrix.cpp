// Cooperative matrices: a coopmat<T, R, C> is an R x C matrix held by a
// whole subgroup together (each invocation keeps a share of the elements in
// registers), so a multiply-add of two tiles runs on the matrix units of a
// GPU that has them (SPV_NV_cooperative_matrix; DeviceCaps::cooperativeMatrix
// says which shapes). Every invocation of a subgroup executes each of these
// ops together with the same operands (uniform control flow, uniform
// buffer, offset and stride); the interpreter gives every invocation the
// whole matrix, which is what that promise makes observable.
//
//   %m = coop.fill %x : coopmat<T, R, C>                every element %x
//   %m = coop.load %buf, %offset, %stride : coopmat<T, R, C>
//        element (r, c) is %buf[%offset + r * %stride + c]
//        ({col_major = 1}: %buf[%offset + c * %stride + r])
//   coop.store %buf, %offset, %stride, %m               the same places
//   %d = coop.muladd %a, %b, %c : coopmat<Tc, M, N>     a (M x K) times b (K x N) plus c
//   %h = coop.convert %m : coopmat<T2, R, C>            each element converted (floats)
//
// coopmat<T, R, C, workgroup, a|b|acc> is held by the whole workgroup
// (VK_NV_cooperative_matrix2: the driver stages it through workgroup memory
// and spreads the products over the subgroups); a multiply-add takes an `a`,
// a `b` and an `acc` of one scope, and every invocation of the workgroup
// executes each op together with the same operands.
//
// The buffers are device or workgroup buffers of T. muladd takes float
// matrices; a and b have one element type, c and the result another (f16
// times f16 into f32 is the one GPUs make fast); the interpreter sums in
// float64 and rounds once to Tc (the hardware sums in Tc: differential tests
// allow for the order).
#include "ir/interp/Exec.h"
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

std::string needMatrix(const Type* t, const char* what) {
  if (!t->isCoopMatrix()) return std::string(what) + " must be a coopmat, got " + typeStr(t);
  return {};
}

std::string verifyFill(const Op& op) {
  if (auto e = needMatrix(resultType(op), "the result"); !e.empty()) return e;
  if (operandType(op, 0) != resultType(op)->elem())
    return "fills " + typeStr(resultType(op)) + " with " + typeStr(resultType(op)->elem()) + ", not " +
           typeStr(operandType(op, 0));
  return {};
}

std::string checkAccess(const Op& op, const Type* m) {
  if (auto e = needMatrix(m, "the matrix"); !e.empty()) return e;
  const Type* b = operandType(op, 0);
  if (!b->isBuffer() || b->space() == Space::Host)
    return "operand 0 must be a device or workgroup buffer, got " + typeStr(b);
  if (b->elem() != m->elem()) return "a buffer of " + typeStr(b->elem()) + " holds no " + typeStr(m);
  for (unsigned i : {1u, 2u})
    if (!operandType(op, i)->isInt() || operandType(op, i)->bits() != 32)
      return std::string(i == 1 ? "the offset" : "the stride") + " must be a 32-bit integer, got " +
             typeStr(operandType(op, i));
  const Function* f = op.parentFunction();
  if (f && f->isHost()) return "host code cannot access a cooperative matrix";
  if (op.attr("col_major")) return needIndexAttr(op, "col_major", 0, 1);
  return {};
}

std::string verifyLoad(const Op& op) { return checkAccess(op, resultType(op)); }

std::string verifyStore(const Op& op) {
  if (auto e = checkAccess(op, operandType(op, 3)); !e.empty()) return e;
  if (operandType(op, 0)->ownership() == Ownership::Read)
    return "writes through a read-only borrow " + typeStr(operandType(op, 0));
  return {};
}

std::string verifyMulAdd(const Op& op) {
  const Type *a = operandType(op, 0), *b = operandType(op, 1), *c = operandType(op, 2);
  for (const Type* t : {a, b, c})
    if (auto e = needMatrix(t, "each operand"); !e.empty()) return e;
  if (a->coopScope() != b->coopScope() || a->coopScope() != c->coopScope())
    return "multiplies matrices of one scope, got " + typeStr(a) + ", " + typeStr(b) + " and " + typeStr(c);
  if (a->coopScope() == CoopScope::Workgroup &&
      (a->coopUse() != CoopUse::A || b->coopUse() != CoopUse::B || c->coopUse() != CoopUse::Acc))
    return "a workgroup's multiply-add takes an 'a', a 'b' and an 'acc' matrix, got " + typeStr(a) + ", " + typeStr(b) +
           " and " + typeStr(c);
  if (!a->elem()->isFloat() || !c->elem()->isFloat()) return "multiplies float matrices";
  if (a->elem() != b->elem()) return "a and b must have one element type, got " + typeStr(a) + " and " + typeStr(b);
  if (a->cols() != b->rows() || a->rows() != c->rows() || b->cols() != c->cols())
    return "shapes do not chain: " + typeStr(a) + " x " + typeStr(b) + " + " + typeStr(c);
  if (resultType(op) != c) return "the result must be " + typeStr(c);
  return {};
}

std::string verifyConvert(const Op& op) {
  const Type *m = operandType(op, 0), *r = resultType(op);
  for (const Type* t : {m, r})
    if (auto e = needMatrix(t, "the operand and the result"); !e.empty()) return e;
  if (!m->elem()->isFloat() || !r->elem()->isFloat()) return "converts float matrices";
  if (m->rows() != r->rows() || m->cols() != r->cols() || m->coopScope() != r->coopScope() ||
      m->coopUse() != r->coopUse())
    return "converts " + typeStr(m) + " to a matrix of its shape, scope and use, not " + typeStr(r);
  return {};
}

// The buffer index of element (r, c).
interp::RtValue at(const Op& op, const interp::RtValue& offset, const interp::RtValue& stride, unsigned r,
                   unsigned c) {
  bool colMajor = op.attr("col_major") && op.intAttr("col_major");
  interp::RtValue i = offset;  // the offset's type (its sign), the value unwrapped
  i.i = offset.i + (colMajor ? int64_t(c) * stride.i + r : int64_t(r) * stride.i + c);
  return i;
}

bool interpFill(interp::Exec& ex, const Op& op) {
  interp::RtValue m;
  m.type = resultType(op);
  m.elems.assign(size_t(m.type->rows()) * m.type->cols(), ex.operand(op, 0));
  return ex.setResult(op, std::move(m));
}

bool interpLoad(interp::Exec& ex, const Op& op) {
  interp::RtValue m;
  m.type = resultType(op);
  m.elems.resize(size_t(m.type->rows()) * m.type->cols());
  for (unsigned r = 0; r < m.type->rows(); ++r)
    for (unsigned c = 0; c < m.type->cols(); ++c)
      if (!ex.readElement(op, ex.operand(op, 0), at(op, ex.operand(op, 1), ex.operand(op, 2), r, c),
                          m.elems[size_t(r) * m.type->cols() + c]))
        return false;
  return ex.setResult(op, std::move(m));
}

bool interpStore(interp::Exec& ex, const Op& op) {
  const interp::RtValue& m = ex.operand(op, 3);
  for (unsigned r = 0; r < m.type->rows(); ++r)
    for (unsigned c = 0; c < m.type->cols(); ++c)
      if (!ex.writeElement(op, ex.operand(op, 0), at(op, ex.operand(op, 1), ex.operand(op, 2), r, c),
                           m.elems[size_t(r) * m.type->cols() + c]))
        return false;
  return true;
}

bool interpMulAdd(interp::Exec& ex, const Op& op) {
  const interp::RtValue &a = ex.operand(op, 0), &b = ex.operand(op, 1), &c = ex.operand(op, 2);
  unsigned M = a.type->rows(), K = a.type->cols(), N = b.type->cols();
  interp::RtValue d;
  d.type = c.type;
  d.elems.reserve(size_t(M) * N);
  for (unsigned i = 0; i < M; ++i)
    for (unsigned j = 0; j < N; ++j) {
      double s = c.elems[size_t(i) * N + j].f;
      for (unsigned k = 0; k < K; ++k) s += a.elems[size_t(i) * K + k].f * b.elems[size_t(k) * N + j].f;
      d.elems.push_back(interp::RtValue::ofFloat(c.type->elem(), s));
    }
  return ex.setResult(op, std::move(d));
}

bool interpConvert(interp::Exec& ex, const Op& op) {
  interp::RtValue m = ex.operand(op, 0);
  m.type = resultType(op);
  for (interp::RtValue& e : m.elems) e = interp::RtValue::ofFloat(m.type->elem(), e.f);
  return ex.setResult(op, std::move(m));
}

OpInfo kOps[] = {
    {.name = "coop.fill", .numOperands = 1, .numResults = 1, .flags = kPure | kKernelOnly, .verify = verifyFill,
     .interp = interpFill, .summary = "a cooperative matrix with every element %x",
     .diffTest = "CoopMatrix.TileProductsAgreeWithTheInterpreter"},
    {.name = "coop.load", .numOperands = 3, .numResults = 1, .flags = kReadOnly | kKernelOnly,
     .effects = {Effect::Read, Effect::None}, .verify = verifyLoad, .interp = interpLoad,
     .summary = "coop.load %buf, %offset, %stride: element (r, c) from %buf[%offset + r * %stride + c] "
                "({col_major = 1}: c * %stride + r)",
     .diffTest = "CoopMatrix.TileProductsAgreeWithTheInterpreter"},
    {.name = "coop.store", .numOperands = 4, .numResults = 0, .flags = kKernelOnly,
     .effects = {Effect::Write, Effect::None}, .verify = verifyStore, .interp = interpStore,
     .summary = "coop.store %buf, %offset, %stride, %m: the places coop.load reads",
     .diffTest = "CoopMatrix.TileProductsAgreeWithTheInterpreter"},
    {.name = "coop.muladd", .numOperands = 3, .numResults = 1, .flags = kPure | kKernelOnly,
     .verify = verifyMulAdd, .interp = interpMulAdd, .summary = "coop.muladd %a, %b, %c: a b + c of cooperative matrices",
     .diffTest = "CoopMatrix.TileProductsAgreeWithTheInterpreter"},
    {.name = "coop.convert", .numOperands = 1, .numResults = 1, .flags = kPure | kKernelOnly,
     .verify = verifyConvert, .interp = interpConvert,
     .summary = "coop.convert %m: each element of a float cooperative matrix converted to the result's type",
     .diffTest = "CoopMatrix.WorkgroupMatricesAgreeWithTheInterpreter"},
};

}  // namespace

void registerCoopMatrixOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
