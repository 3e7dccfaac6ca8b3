// Typing-rule helpers shared by the op table files (ir/ops/*.cpp). Each returns
// an empty string when the rule holds, else a message for the verifier.
#pragma once

#include <string>

#include "ir/OpTable.h"

namespace eph::ir::rules {

inline std::string typeStr(const Type* t) { return "'" + t->str() + "'"; }

inline const Type* operandType(const Op& op, unsigned i) { return op.operand(i)->type(); }
inline const Type* resultType(const Op& op, unsigned i = 0) { return op.result(i)->type(); }

// All operands and the result share one type that satisfies `pred`.
template <class Pred>
std::string sameTypeAll(const Op& op, Pred pred, const char* what) {
  const Type* t = resultType(op);
  if (!pred(t)) return "expects " + std::string(what) + ", got " + typeStr(t);
  for (unsigned i = 0; i < op.numOperands(); ++i)
    if (operandType(op, i) != t)
      return "operand " + std::to_string(i) + " has type " + typeStr(operandType(op, i)) +
             " but the result has type " + typeStr(t);
  return {};
}

inline bool isNumericOrVec(const Type* t) { return t->scalar()->isNumeric(); }
inline bool isFloatOrVec(const Type* t) { return t->scalar()->isFloat(); }
inline bool isIntOrVec(const Type* t) { return t->scalar()->isInt(); }
inline bool isIntBoolOrVec(const Type* t) { return t->scalar()->isInt() || t->scalar()->isBool(); }
inline bool isIntType(const Type* t) { return t->isInt(); }

// An attribute that must be present with the given kind.
inline std::string needAttr(const Op& op, const char* name, Attr::Kind kind, const char* what) {
  const Attr* a = op.attr(name);
  if (!a || a->kind != kind) return "needs attribute '" + std::string(name) + "' (" + what + ")";
  return {};
}

// An integer attribute `name` in [lo, hi].
inline std::string needIndexAttr(const Op& op, const char* name, int64_t lo, int64_t hi) {
  if (auto e = needAttr(op, name, Attr::Kind::Int, "an integer"); !e.empty()) return e;
  int64_t v = op.intAttr(name);
  if (v < lo || v > hi)
    return "attribute '" + std::string(name) + "' is " + std::to_string(v) + ", expected " +
           std::to_string(lo) + ".." + std::to_string(hi);
  return {};
}

// "1 argument", "2 arguments".
inline std::string countOf(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

// Types of values as a comma list: "'i32', 'f32'".
inline std::string typeList(const std::vector<const Type*>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + typeStr(ts[i]);
  return s.empty() ? "()" : s;
}

inline std::vector<const Type*> typesOf(const std::vector<Value*>& vs) {
  std::vector<const Type*> ts;
  for (Value* v : vs) ts.push_back(v->type());
  return ts;
}

inline std::vector<const Type*> resultTypes(const Op& op) { return typesOf(op.results()); }

// Can a value of type `from` be passed where `to` is expected? Equal types, or
// a buffer lent as a borrow (same element and space; read from any, write from
// linear/affine/write).
inline bool passableAs(const Type* from, const Type* to) {
  if (from == to) return true;
  if (!from->isBuffer() || !to->isBuffer()) return false;
  if (from->elem() != to->elem() || from->space() != to->space()) return false;
  if (to->ownership() == Ownership::Read) return true;
  return to->ownership() == Ownership::Write && from->ownership() != Ownership::Read;
}

}  // namespace eph::ir::rules
