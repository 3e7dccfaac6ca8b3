#include "frontends/ephapax/Runtime.h"

#include <dlfcn.h>

#include <cstdint>
#include <mutex>

#include "ir/OpTable.h"
#include "ir/interp/Exec.h"

namespace eph::ephapax {

namespace {

using I = int64_t;
using D = double;

bool isIntLike(const ir::Type* t) { return t->isInt() || t->isBool(); }

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

bool interpFfiCall(interp::Exec& ex, const ir::Op& op) {
  const std::string& name = op.attr("symbol")->s;
  void* fn = dlsym(RTLD_DEFAULT, name.c_str());
  if (!fn) return ex.fail(op, "extern symbol '" + name + "' is not defined (give its library with --link LIB.so)");
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
  for (unsigned i = 0; i < op.numOperands(); ++i) args.push_back(ex.operand(op, i).i);
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

const ir::OpInfo kOps[] = {
    {.name = "ephapax.ffi_call", .numOperands = ir::kVariadic, .numResults = ir::kVariadic, .flags = ir::kHostOnly,
     .verify = verifyFfiCall, .interp = interpFfiCall,
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
    } else if (isIntLike(t)) {
      anyInt = true;
    } else {
      return "argument type " + t->str() + " cannot be passed to an extern function (integers, Bool, F64 and extern handles can)";
    }
  }
  if (result && !result->isUnit() && !isIntLike(result) && !(result->isFloat() && result->bits() == 64))
    return "result type " + result->str() + " cannot be returned by an extern function";
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
