#include "ir/ForeignAbi.h"

#include <algorithm>

namespace eph::ir {
namespace {

bool isIntLike(const Type* t) { return t->isInt() || t->isBool(); }

bool isOwnedDeviceBuffer(const Type* t) {
  return t->isBuffer() && t->space() == Space::Device && t->ownership() == Ownership::Linear;
}

// The size (and alignment) of an integer-like type in C: _Bool is one byte.
unsigned cSize(const Type* t) { return t->isBool() ? 1 : t->bits() / 8; }

// A struct of integers as C lays it out, when it fits two registers; empty
// fields when it does not (or is not all integers).
std::vector<CField> smallIntStruct(const Type* t) {
  std::vector<CField> fields;
  unsigned offset = 0, align = 1;
  for (const Type* f : t->members()) {
    if (!isIntLike(f)) return {};
    unsigned size = cSize(f);
    offset = (offset + size - 1) / size * size;
    fields.push_back({f, offset, size});
    offset += size;
    align = std::max(align, size);
  }
  if ((offset + align - 1) / align * align > 16) return {};
  return fields;
}

ForeignSignature fail(std::string why) {
  ForeignSignature s;
  s.problem = std::move(why);
  return s;
}

}  // namespace

ForeignSignature classifyForeignCall(std::span<const Type* const> params, const Type* result) {
  if (params.size() > kMaxForeignArgs)
    return fail("takes " + std::to_string(params.size()) + " arguments; extern calls take at most " +
                std::to_string(kMaxForeignArgs));
  ForeignSignature sig;
  // The arguments.
  bool anyFloat = result && result->isFloat(), anyInt = result && isIntLike(result);
  for (const Type* t : params) {
    if (t->isFloat()) {
      if (t->bits() != 64) return fail("F32 arguments are not supported in extern calls (use F64)");
      sig.args.push_back(CArg::F64);
      anyFloat = true;
    } else if (isIntLike(t) || isOwnedDeviceBuffer(t)) {
      sig.args.push_back(isIntLike(t) ? CArg::Int : CArg::Handle);
      anyInt = true;
    } else {
      return fail("argument type " + t->str() +
                  " cannot be passed to an extern function (integers, Bool, F64, extern handles and owned GPU "
                  "buffers can)");
    }
  }
  // The result.
  if (!result || result->isUnit()) {
    sig.result = CResult::None;
  } else if (isIntLike(result)) {
    sig.result = CResult::Int;
  } else if (result->isFloat() && result->bits() == 64) {
    sig.result = CResult::F64;
  } else if (result->isStruct() && !(sig.fields = smallIntStruct(result)).empty()) {
    sig.result = CResult::IntPair;
    anyInt = true;
  } else {
    return fail("result type " + result->str() +
                " cannot be returned by an extern function (integers, Bool, F64, () and tuples of at most 16 bytes "
                "of integers can)");
  }
  // One convention for the whole call.
  if (anyFloat && anyInt) return fail("mixes integer and float arguments/results, which extern calls do not support");
  if (anyFloat && sig.result != CResult::F64) return fail("float arguments need an F64 result");
  return sig;
}

ForeignSignature classifyForeignCall(const Op& op) {
  const Attr* sym = op.attr("symbol");
  if (!sym || sym->kind != Attr::Kind::String || sym->s.empty())
    return fail("needs a {symbol = \"name\"} string attribute");
  if (op.numResults() > 1) return fail("has at most one result");
  std::vector<const Type*> params;
  for (const Value* v : op.operands()) params.push_back(v->type());
  return classifyForeignCall(params, op.numResults() ? op.result(0)->type() : nullptr);
}

}  // namespace eph::ir
