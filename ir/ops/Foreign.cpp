// `call.c %args... {symbol = "name"} : R`: a call of the C function `name`
// of the process (frontends use it for extern functions: Ephapax `extern`
// and `__ffi`). The signatures it can have, and how each argument and the
// result cross, are ir/ForeignAbi.h's; its typing rule is that
// classification. An owned device buffer passed to C is C's from then on:
// the op consumes it. Host code only.
//
// The interpreter looks the symbol up in the process (ir/interp/ForeignCall.h;
// libraries given with `ephc run --link LIB.so` are loaded first) and calls
// it inside an interp::ForeignCallScope, so that C code reaches this run's
// device buffers through runtime/eph_buffer.h; the first error of that API is
// the op's error. Compiled host code does the same (targets/llvm/LowerHostFfi.cpp).
#include <cstdint>
#include <cstring>

#include "ir/ForeignAbi.h"
#include "ir/interp/Exec.h"
#include "ir/interp/ForeignCall.h"
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

std::string verifyCallC(const Op& op) { return classifyForeignCall(op).problem; }

// An owned device buffer passed to C is C's from then on: the call consumes it.
Effect callCEffect(const Op& op, unsigned i) {
  const Type* t = operandType(op, i);
  return t->isBuffer() && t->space() == Space::Device && t->ownership() == Ownership::Linear ? Effect::Consume
                                                                                              : Effect::None;
}

// ---- interpreter semantics -------------------------------------------------

// fn called with every argument of type A (one register each), returning R.
template <class R, class A>
R callN(void* fn, const std::vector<A>& a) {
  static_assert(kMaxForeignArgs == 6);
  switch (a.size()) {
    case 0: return reinterpret_cast<R (*)()>(fn)();
    case 1: return reinterpret_cast<R (*)(A)>(fn)(a[0]);
    case 2: return reinterpret_cast<R (*)(A, A)>(fn)(a[0], a[1]);
    case 3: return reinterpret_cast<R (*)(A, A, A)>(fn)(a[0], a[1], a[2]);
    case 4: return reinterpret_cast<R (*)(A, A, A, A)>(fn)(a[0], a[1], a[2], a[3]);
    case 5: return reinterpret_cast<R (*)(A, A, A, A, A)>(fn)(a[0], a[1], a[2], a[3], a[4]);
    default: return reinterpret_cast<R (*)(A, A, A, A, A, A)>(fn)(a[0], a[1], a[2], a[3], a[4], a[5]);
  }
}

struct Reg2 {
  uint64_t lo, hi;
};

// The fields of an IntPair result, read at their C offsets from the two registers.
interp::RtValue pairResult(const Type* rt, const ForeignSignature& sig, Reg2 r) {
  unsigned char bytes[16];
  std::memcpy(bytes, &r, sizeof bytes);
  interp::RtValue out;
  out.type = rt;
  for (const CField& f : sig.fields) {
    uint64_t raw = 0;
    std::memcpy(&raw, bytes + f.offset, f.size);
    out.elems.push_back(f.type->isBool() ? interp::RtValue::ofBool(f.type, raw != 0)
                                         : interp::RtValue::ofInt(f.type, static_cast<int64_t>(raw)));
  }
  return out;
}

// Calls the C function fn with the op's operands, as sig says, and sets its result.
bool callForeign(interp::Exec& ex, const Op& op, const ForeignSignature& sig, void* fn) {
  const Type* rt = op.numResults() ? resultType(op) : nullptr;
  if (sig.floats()) {
    std::vector<double> args;
    for (unsigned i = 0; i < op.numOperands(); ++i) args.push_back(ex.operand(op, i).f);
    return ex.setResult(op, interp::RtValue::ofFloat(rt, callN<double, double>(fn, args)));
  }
  std::vector<int64_t> args;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const interp::RtValue& v = ex.operand(op, i);
    args.push_back(sig.args[i] == CArg::Handle ? static_cast<int64_t>(v.buffer) : v.i);
  }
  switch (sig.result) {
    case CResult::IntPair: return ex.setResult(op, pairResult(rt, sig, callN<Reg2, int64_t>(fn, args)));
    case CResult::Int: {
      int64_t r = callN<int64_t, int64_t>(fn, args);
      return ex.setResult(op, rt->isBool() ? interp::RtValue::ofBool(rt, r != 0) : interp::RtValue::ofInt(rt, r));
    }
    default: {
      callN<int64_t, int64_t>(fn, args);
      if (!rt) return true;
      interp::RtValue unit;
      unit.type = rt;
      return ex.setResult(op, unit);
    }
  }
}

bool interpCallC(interp::Exec& ex, const Op& op) {
  ForeignSignature sig = classifyForeignCall(op);
  if (!sig.ok()) return ex.fail(op, sig.problem);
  std::string why;
  void* fn = interp::resolveForeignSymbol(op.attr("symbol")->s, why);
  if (!fn) return ex.fail(op, why);
  interp::ForeignCall call{ex.deviceHooks(), ex.memory(), op.loc(), std::nullopt};
  bool ok;
  {
    interp::ForeignCallScope scope(call);
    ok = callForeign(ex, op, sig, fn);
  }
  if (call.error) return ex.fail(*call.error);
  return ok;
}

OpInfo kOps[] = {
    {.name = "call.c", .numOperands = kVariadic, .numResults = kVariadic, .flags = kHostOnly,
     .effectFn = callCEffect, .verify = verifyCallC, .interp = interpCallC,
     .summary = "call.c %args... {symbol = \"name\"} : R: call the C function {symbol} of the process "
                "(libraries given with --link; Ephapax extern functions and __ffi)"},
};

}  // namespace

void registerForeignOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
