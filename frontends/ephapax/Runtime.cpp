#include "frontends/ephapax/Runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>

#include "ir/OpTable.h"
#include "ir/interp/Exec.h"
#include "ir/interp/ForeignCall.h"

namespace eph::ephapax {

namespace {

using I = int64_t;
using D = double;

bool isIntLike(const ir::Type* t) { return t->isInt() || t->isBool(); }

// An owned device buffer, passed to C as its int64 handle (runtime/eph_buffer.h).
bool isOwnedDeviceBuffer(const ir::Type* t) {
  return t->isBuffer() && t->space() == ir::Space::Device && t->ownership() == ir::Ownership::Linear;
}

// The size (and alignment) of an integer-like type in C: _Bool is one byte.
unsigned cSize(const ir::Type* t) { return t->isBool() ? 1 : t->bits() / 8; }

struct Reg2 {
  uint64_t lo, hi;
};

// Integer fields laid out as C would; 0 when the struct is not all integers.
unsigned cStructSize(const ir::Type* t) {
  unsigned offset = 0, align = 1;
  for (const ir::Type* f : t->members()) {
    if (!isIntLike(f)) return 0;
    unsigned size = cSize(f);
    offset = (offset + size - 1) / size * size + size;
    align = std::max(align, size);
  }
  return (offset + align - 1) / align * align;
}

std::string verifyFfiCall(const ir::Op& op) {
  const ir::Attr* sym = op.attr("symbol");
  if (!sym || sym->kind != ir::Attr::Kind::String || sym->s.empty()) return "needs a {symbol = \"name\"} string attribute";
  std::vector<const ir::Type*> params;
  for (ir::Value* v : op.operands()) params.push_back(v->type());
  if (op.numResults() > 1) return "has at most one result";
  std::string why = ffiSignatureProblem(params, op.numResults() ? op.result(0)->type() : nullptr);
  return why;
}

template <class R, class A>
R callN(void* fn, const std::vector<A>& a) {
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

// Calls the C function fn with the op's operands and sets its result.
bool callForeign(interp::Exec& ex, const ir::Op& op, void* fn) {
  const ir::Type* rt = op.numResults() ? op.result(0)->type() : nullptr;
  bool floats = rt && rt->isFloat();
  if (!floats)
    for (ir::Value* v : op.operands()) floats |= v->type()->isFloat();
  if (floats) {
    std::vector<D> args;
    for (unsigned i = 0; i < op.numOperands(); ++i) args.push_back(ex.operand(op, i).f);
    D r = callN<D, D>(fn, args);
    return ex.setResult(op, interp::RtValue::ofFloat(rt, r));
  }
  std::vector<I> args;
  for (unsigned i = 0; i < op.numOperands(); ++i) {
    const interp::RtValue& v = ex.operand(op, i);
    args.push_back(isOwnedDeviceBuffer(op.operand(i)->type()) ? static_cast<I>(v.buffer) : v.i);
  }
  if (rt && rt->isStruct() && !rt->isUnit()) {
    // A small struct of integers comes back in two registers (x86-64 SysV
    // RAX:RDX, AArch64 x0:x1): read its fields at their C offsets.
    Reg2 r = callN<Reg2, I>(fn, args);
    unsigned char bytes[16];
    std::memcpy(bytes, &r, sizeof bytes);
    interp::RtValue out;
    out.type = rt;
    unsigned offset = 0;
    for (const ir::Type* f : rt->members()) {
      unsigned size = cSize(f);
      offset = (offset + size - 1) / size * size;
      uint64_t raw = 0;
      std::memcpy(&raw, bytes + offset, size);
      offset += size;
      int64_t v = static_cast<int64_t>(raw);
      if (f->isInt() && f->isSigned() && size < 8) v = static_cast<int64_t>(raw << (64 - 8 * size)) >> (64 - 8 * size);
      out.elems.push_back(f->isBool() ? interp::RtValue::ofBool(f, raw != 0) : interp::RtValue::ofInt(f, v));
    }
    return ex.setResult(op, std::move(out));
  }
  I r = callN<I, I>(fn, args);
  if (!rt) return true;
  if (rt->isUnit()) {
    interp::RtValue u;
    u.type = rt;
    return ex.setResult(op, u);
  }
  if (rt->isBool()) return ex.setResult(op, interp::RtValue::ofBool(rt, r != 0));
  return ex.setResult(op, interp::RtValue::ofInt(rt, r));
}

// The C function runs inside a ForeignCallScope, so that the C API of
// runtime/eph_buffer.h reaches this run's buffers; its first error is the
// op's error.
bool interpFfiCall(interp::Exec& ex, const ir::Op& op) {
  const std::string& name = op.attr("symbol")->s;
  void* fn = dlsym(RTLD_DEFAULT, name.c_str());
  if (!fn) return ex.fail(op, "extern symbol '" + name + "' is not defined (give its library with --link LIB.so)");
  interp::ForeignCall call{ex.deviceHooks(), ex.memory(), op.loc(), std::nullopt};
  bool ok;
  {
    interp::ForeignCallScope scope(call);
    ok = callForeign(ex, op, fn);
  }
  if (call.error) return ex.fail(*call.error);
  return ok;
}

// An owned device buffer passed to C is C's from then on: the call consumes it.
ir::Effect ffiEffect(const ir::Op& op, unsigned i) {
  return isOwnedDeviceBuffer(op.operand(i)->type()) ? ir::Effect::Consume : ir::Effect::None;
}

ir::OpInfo kOps[] = {
    {.name = "ephapax.ffi_call", .numOperands = ir::kVariadic, .numResults = ir::kVariadic, .flags = ir::kHostOnly,
     .effectFn = ffiEffect, .verify = verifyFfiCall, .interp = interpFfiCall,
     .summary = "call the C function {symbol} of the process (Ephapax extern functions and __ffi)"},
};

}  // namespace

std::string ffiSignatureProblem(const std::vector<const ir::Type*>& params, const ir::Type* result) {
  if (params.size() > 6) return "takes " + std::to_string(params.size()) + " arguments; extern calls take at most 6";
  bool anyFloat = result && result->isFloat(), anyInt = result && isIntLike(result);
  for (const ir::Type* t : params) {
    if (t->isFloat()) {
      if (t->bits() != 64) return "F32 arguments are not supported in extern calls (use F64)";
      anyFloat = true;
    } else if (isIntLike(t) || isOwnedDeviceBuffer(t)) {
      anyInt = true;
    } else {
      return "argument type " + t->str() +
             " cannot be passed to an extern function (integers, Bool, F64, extern handles and owned GPU buffers "
             "can)";
    }
  }
  bool smallStruct = result && result->isStruct() && !result->isUnit() && cStructSize(result) > 0 && cStructSize(result) <= 16;
  if (result && !result->isUnit() && !isIntLike(result) && !smallStruct && !(result->isFloat() && result->bits() == 64))
    return "result type " + result->str() + " cannot be returned by an extern function (integers, Bool, F64, () and tuples of at most 16 bytes of integers can)";
  if (smallStruct) anyInt = true;
  if (anyFloat && anyInt) return "mixes integer and float arguments/results, which extern calls do not support";
  if (anyFloat && (!result || !result->isFloat())) return "float arguments need an F64 result";
  return {};
}

void registerRuntimeOps() {
  static std::once_flag once;
  std::call_once(once, [] { ir::OpTable::get().add(kOps); });
}

Status loadLibrary(const std::string& path) {
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char* why = dlerror();
    return makeError({}, "cannot load library '" + path + "': " + (why ? why : "unknown error"));
  }
  return Status::ok();
}

}  // namespace eph::ephapax
