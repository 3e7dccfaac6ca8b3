// Pass 1 of the Ephapax checker: calls (named functions, constructors, closures),
// instantiation of generic functions and constructors, and the builtins
// (GPU ids, atomics, math, vectors and matrices, casts, transfers).
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

#include <algorithm>

namespace eph::ephapax::checking {

// ---- instantiation ------------------------------------------------------------
// Instantiates a generic function's type: fresh variables for its parameters.
Ty* TypeChecker::instantiate(FnDecl& f, std::vector<Ty*>& inst) {
  std::vector<std::pair<int, Ty*>> subst;
  for (Ty* p : f.typeParamTys) {
    Ty* v = T.var(p->regionVar);
    inst.push_back(v);
    subst.push_back({p->id, v});
  }
  return subst.empty() ? f.type : substitute(T, f.type, subst);
}

// A constructor's type: its data type with fresh arguments, and its fields.
Ty* TypeChecker::instantiateCtor(TypeDecl* d, int variant, std::vector<Ty*>& fields, std::vector<Ty*>& inst) {
  for (size_t i = 0; i < d->paramTys.size(); ++i) inst.push_back(T.var(d->paramTys[i]->regionVar));
  Ty* result = T.named(d, inst);
  if (variant >= 0 && static_cast<size_t>(variant) < d->ctorTys.size()) fields = ctorFields(T, result, variant);
  return result;
}

// ---- calls --------------------------------------------------------------------
// A view parameter (GPUBuffer<T>) takes `&b` / `&mut b` of an owned buffer
// (lent for the call) or the owned buffer itself (consumed by the call), as a
// dispatch does (docs/ephapax-gpu.md, Types). True when `got` is such a
// buffer for `want` and their element types unify.
bool TypeChecker::viewArgument(Ty* want, Ty* got) {
  Ty* w = core(want);
  Ty* g = core(got);
  if (w->kind != Ty::Gpu || w->gpu != Ty::View) return false;
  if (g->kind == Ty::Ref) g = core(g->args[0]);
  if (g->kind != Ty::Gpu || g->gpu == Ty::View) return false;
  return unify(T, w->args[0], g->args[0]);
}

Ty* TypeChecker::inferCall(Expr& e) {
  Expr& callee = *e.kids[0];
  size_t nargs = e.kids.size() - 1;
  if (callee.kind == ExprKind::Var && (isBuiltinName(callee.name) || builtinOverLibrary(e))) {
    callee.kernelCode = inKernel_;
    return inferBuiltinCall(e);
  }
  Ty* ft = infer(callee);
  if (callee.kind == ExprKind::Var && !callee.binding && callee.refKind == Expr::Fn) {
    noteCall(e, callee.global);
    FnDecl& g = *c_.prog.fns[callee.global];
    // A launcher is specialised per function argument, like a kernel (E215).
    if (g.gpuRole == FnDecl::Launcher)
      for (size_t i = 0; i < g.params.size() && i + 1 < e.kids.size(); ++i)
        if (core(g.paramTys[i])->kind == Ty::Fn) pendingFnArgs_.push_back({e.kids[i + 1].get(), g.name});
  }
  // Named functions and constructors take exactly their parameters.
  if (callee.kind == ExprKind::Var && !callee.binding && (callee.refKind == Expr::Fn || callee.refKind == Expr::Extern || callee.refKind == Expr::Ctor)) {
    size_t want = 0;
    std::string what;
    if (callee.refKind == Expr::Ctor) {
      auto& [d, v] = c_.ctors[callee.name];
      want = d->ctorTys[v].size();
      what = "constructor `" + callee.name + "`";
    } else {
      want = c_.prog.fns[callee.global]->params.size();
      what = "`" + callee.name + "`";
    }
    if (nargs != want) {
      error("E106", e.span, what + " takes " + std::to_string(want) + " argument" + (want == 1 ? "" : "s") +
                                ", got " + std::to_string(nargs));
      for (size_t i = 1; i < e.kids.size(); ++i) infer(*e.kids[i]);
      Ty* r = ft;
      for (size_t i = 0; i < std::max<size_t>(want, callee.refKind == Expr::Ctor ? 0 : 1); ++i) {
        r = resolve(r);
        if (r->kind != Ty::Fn) break;
        r = r->args[1];
      }
      return r;
    }
  }
  if (nargs == 0) {
    Ty* r = T.var();
    if (!unify(T, ft, T.fn(T.unit(), r))) {
      error("E101", callee.span, "only functions can be called; this has type " + show(ft));
      return T.error();
    }
    return r;
  }
  Ty* cur = ft;
  std::vector<std::pair<Expr*, std::string>> fnArgs;
  fnArgs.swap(pendingFnArgs_);
  for (size_t i = 1; i < e.kids.size(); ++i) {
    Ty* a = infer(*e.kids[i]);
    for (auto& [arg, to] : fnArgs)
      if (arg == e.kids[i].get()) checkFunctionValue(*arg, "launcher `" + to + "`");
    Ty* c = resolve(cur);
    if (c->kind == Ty::Error) continue;
    if (c->kind == Ty::Var) {
      Ty* r = T.var();
      if (!unify(T, c, T.fn(a, r))) {
        error("E101", callee.span, "only functions can be called; this has type " + show(ft));
        return T.error();
      }
      cur = r;
      continue;
    }
    if (c->kind != Ty::Fn) {
      if (i == 1) error("E101", callee.span, "only functions can be called; this has type " + show(ft));
      else error("E106", e.span, "too many arguments: the function takes " + std::to_string(i - 1));
      return T.error();
    }
    if (viewArgument(c->args[0], a)) {
      cur = c->args[1];
      continue;
    }
    if (!unify(T, c->args[0], a))
      mismatch(e.kids[i]->span, c->args[0], a, " (argument " + std::to_string(i) + ")");
    cur = c->args[1];
  }
  return cur;
}

// ---- builtins -------------------------------------------------------------------
const std::map<std::string, TypeChecker::BuiltinInfo>& TypeChecker::builtinTable() {
  static const std::map<std::string, BuiltinInfo> t = {
      {"global_id", {Expr::GlobalIdOf, 1}}, {"local_id", {Expr::LocalIdOf, 1}}, {"group_id", {Expr::GroupIdOf, 1}},
      {"num_groups", {Expr::NumGroupsOf, 1}}, {"group_size", {Expr::GroupSizeOf, 1}}, {"barrier", {Expr::Barrier, 0}},
      {"atomic_add", {Expr::AtomicAdd, 3}}, {"atomic_min", {Expr::AtomicMin, 3}}, {"atomic_max", {Expr::AtomicMax, 3}},
      {"atomic_xchg", {Expr::AtomicXchg, 3}}, {"atomic_cas", {Expr::AtomicCas, 4}},
      {"sqrt", {Expr::Sqrt, 1}}, {"exp", {Expr::Exp, 1}}, {"log", {Expr::Log, 1}}, {"sin", {Expr::Sin, 1}},
      {"cos", {Expr::Cos, 1}}, {"tan", {Expr::Tan, 1}}, {"tanh", {Expr::Tanh, 1}}, {"floor", {Expr::Floor, 1}},
      {"ceil", {Expr::Ceil, 1}}, {"abs", {Expr::Abs, 1}}, {"pow", {Expr::Pow, 2}}, {"min", {Expr::Min, 2}},
      {"max", {Expr::Max, 2}}, {"dot", {Expr::Dot, 2}}, {"cross", {Expr::Cross, 2}}, {"length", {Expr::Length, 1}},
      {"normalize", {Expr::Normalize, 1}},
      {"asin", {Expr::FloatMath1, 1}}, {"acos", {Expr::FloatMath1, 1}}, {"atan", {Expr::FloatMath1, 1}},
      {"sinh", {Expr::FloatMath1, 1}}, {"cosh", {Expr::FloatMath1, 1}}, {"asinh", {Expr::FloatMath1, 1}},
      {"acosh", {Expr::FloatMath1, 1}}, {"atanh", {Expr::FloatMath1, 1}}, {"erf", {Expr::FloatMath1, 1}},
      {"exp2", {Expr::FloatMath1, 1}}, {"log2", {Expr::FloatMath1, 1}}, {"log1p", {Expr::FloatMath1, 1}},
      {"expm1", {Expr::FloatMath1, 1}}, {"round", {Expr::FloatMath1, 1}}, {"trunc", {Expr::FloatMath1, 1}},
      {"sign", {Expr::FloatMath1, 1}}, {"atan2", {Expr::FloatMath2, 2}}, {"copysign", {Expr::FloatMath2, 2}},
      {"fma", {Expr::Fma, 3}},
      {"vec2", {Expr::MakeVec, -1}}, {"vec3", {Expr::MakeVec, -1}}, {"vec4", {Expr::MakeVec, -1}},
      {"mat2", {Expr::MakeMat, -1}}, {"mat3", {Expr::MakeMat, -1}}, {"mat4", {Expr::MakeMat, -1}},
      {"i32", {Expr::Cast, 1}}, {"i64", {Expr::Cast, 1}}, {"u32", {Expr::Cast, 1}}, {"f32", {Expr::Cast, 1}},
      {"f64", {Expr::Cast, 1}}, {"len", {Expr::Len, 1}},
      {"h2d", {Expr::H2D, 1}}, {"d2h", {Expr::D2H, 1}}, {"free_gpu", {Expr::FreeGpu, 1}},
      {"read_gpu", {Expr::ReadGpu, 2}}, {"write_gpu", {Expr::WriteGpu, 3}},
      {"to_device", {Expr::ToDevice, 2}},
      {"device_count", {Expr::DeviceCount, 0}},
      {"array", {Expr::Array, 2}},
  };
  return t;
}

// A builtin unless a local, function, constant or constructor has the name.
bool TypeChecker::isBuiltinName(const std::string& name) {
  return builtinTable().count(name) && !lookupLocal(name) && !c_.fnIndex.count(name) && !c_.constIndex.count(name);
}

// `dot` is both a builtin (of two vectors) and a function of `import gpu`
// (of two buffers, `dot(&a, &b)`): a call whose first argument is not a
// borrow or a GPU buffer variable is the builtin's, unless the program
// itself declares `dot`.
bool TypeChecker::builtinOverLibrary(const Expr& call) {
  const Expr& callee = *call.kids[0];
  if (callee.name != "dot" || call.kids.size() < 2 || lookupLocal(callee.name) || c_.constIndex.count(callee.name))
    return false;
  auto it = c_.fnIndex.find(callee.name);
  if (it == c_.fnIndex.end() || c_.prog.fns[it->second]->span.file == 0) return false;
  const Expr& a = *call.kids[1];
  if (a.kind == ExprKind::Borrow) return false;
  if (a.kind == ExprKind::Var)
    if (Binding* b = lookupLocal(a.name); b && core(b->ty)->kind == Ty::Gpu) return false;
  return true;
}

bool TypeChecker::isFloatish(Ty* t) {
  Ty* r = core(t);
  return (r->kind == Ty::Prim && (r->prim == Prim::F32 || r->prim == Prim::F64)) || (r->kind == Ty::Var && r->floatLit) ||
         r->kind == Ty::Vec || r->kind == Ty::Error;
}

// The device index of allocate_gpu_on / to_device: an integer literal 0..255
// (the IR's `alloc {device = k}`), so that it is known when lowering.
void TypeChecker::deviceIndex(const Expr& k, Ty* t, const std::string& name) {
  if (k.kind != ExprKind::IntLit || k.ival < 0 || k.ival > 255) {
    error("E101", k.span, "`" + name + "` takes a device index 0..255 (an integer literal) as its first argument",
          "write the device's number, e.g. `" + name + "(1, ..)`; device 0 is the default device");
    return;
  }
  expectTy(k.span, T.prim(Prim::I32), t, " (a device index)");
}

Ty* TypeChecker::inferBuiltinCall(Expr& e) {
  Expr& callee = *e.kids[0];
  const std::string& name = callee.name;
  BuiltinInfo info = builtinTable().at(name);
  e.builtin = info.b;
  callee.builtin = info.b;
  std::vector<Ty*> a;
  for (size_t i = 1; i < e.kids.size(); ++i) a.push_back(infer(*e.kids[i]));
  size_t n = a.size();
  if (info.arity >= 0 && n != static_cast<size_t>(info.arity)) {
    error("E106", e.span, "`" + name + "` takes " + std::to_string(info.arity) + " argument" +
                              (info.arity == 1 ? "" : "s") + ", got " + std::to_string(n));
    return T.error();
  }
  auto argSpan = [&](size_t i) { return e.kids[i + 1]->span; };
  auto f32 = [&]() { return T.prim(Prim::F32); };
  switch (info.b) {
    case Expr::GlobalIdOf: case Expr::LocalIdOf: case Expr::GroupIdOf: case Expr::NumGroupsOf: case Expr::GroupSizeOf: {
      kernelOnly(e.span, "`" + name + "`");
      const Expr& d = *e.kids[1];
      if (d.kind != ExprKind::IntLit || d.ival < 0 || d.ival > 2)
        error("E101", d.span, "`" + name + "` takes a dimension 0, 1 or 2 (a literal)");
      expectTy(d.span, T.prim(Prim::I32), a[0]);
      return intVar();
    }
    case Expr::Barrier:
      kernelOnly(e.span, "`barrier()`");
      return T.unit();
    case Expr::AtomicAdd: case Expr::AtomicMin: case Expr::AtomicMax: case Expr::AtomicXchg: case Expr::AtomicCas: {
      kernelOnly(e.span, "`" + name + "`");
      Ty* elem = gpuElementOf(a[0], argSpan(0));
      if (!elem) {
        error("E101", argSpan(0), "`" + name + "` works on a GPU buffer or workgroup array, not " + show(a[0]));
        return T.error();
      }
      expectTy(argSpan(1), T.prim(Prim::I32), a[1], " (an index)");
      for (size_t i = 2; i < n; ++i) expectTy(argSpan(i), elem, a[i], " (the element type)");
      Ty* r = core(elem);
      bool floatOk = info.b == Expr::AtomicAdd || info.b == Expr::AtomicXchg;
      bool isFloat = r->kind == Ty::Prim && (r->prim == Prim::F32 || r->prim == Prim::F64);
      if (r->kind == Ty::Param && !r->regionVar)
        numeric_.require(r, "`" + name + "`", argSpan(0));
      else if (r->kind != Ty::Var && !(isNumeric(r) && (floatOk || !isFloat)) && r->kind != Ty::Error)
        error("E101", argSpan(0), "`" + name + "` works on " + std::string(floatOk ? "I32, U32, I64, F32 or F64" : "I32, U32 or I64") +
                                      " elements, not " + show(r));
      return elem;
    }
    case Expr::FloatMath2: case Expr::Fma:  // arguments of one float type
      for (size_t i = 1; i < n; ++i)
        if (!unify(T, a[0], a[i])) {
          mismatch(argSpan(i), a[0], a[i], " (`" + name + "` takes values of one type)");
          return T.error();
        }
      [[fallthrough]];
    case Expr::Sqrt: case Expr::Exp: case Expr::Log: case Expr::Sin: case Expr::Cos: case Expr::Tan:
    case Expr::Tanh: case Expr::Floor: case Expr::Ceil: case Expr::FloatMath1: {
      Ty* r = core(a[0]);
      if (r->kind == Ty::Var && !r->floatLit && !r->intLit) unify(T, r, f32());
      if (!isFloatish(a[0]))
        error("E101", argSpan(0), "`" + name + "` takes a float (F32, F64) or a vector, not " + show(a[0]));
      return a[0];
    }
    case Expr::Abs:
      if (Ty* r = core(a[0]); r->kind != Ty::Vec) numericNow(*e.kids[1], a[0], name);
      return a[0];
    case Expr::Pow: case Expr::Min: case Expr::Max:
      if (!unify(T, a[0], a[1])) {
        mismatch(argSpan(1), a[0], a[1], " (`" + name + "` takes two values of one type)");
        return T.error();
      }
      if (Ty* r = core(a[0]); r->kind != Ty::Vec) numericNow(*e.kids[1], a[0], name);
      return a[0];
    case Expr::Dot: case Expr::Cross: {
      Ty* r = core(a[0]);
      if (r->kind != Ty::Vec) {
        error("E101", argSpan(0), "`" + name + "` takes vectors, not " + show(a[0]));
        return T.error();
      }
      if (!unify(T, a[0], a[1])) mismatch(argSpan(1), a[0], a[1]);
      if (info.b == Expr::Cross && r->size != 3) error("E101", argSpan(0), "`cross` takes two vec3, not " + show(r));
      return info.b == Expr::Dot ? f32() : a[0];
    }
    case Expr::Length: case Expr::Normalize:
      if (core(a[0])->kind != Ty::Vec) {
        error("E101", argSpan(0), "`" + name + "` takes a vector, not " + show(a[0]));
        return T.error();
      }
      return info.b == Expr::Length ? f32() : a[0];
    case Expr::MakeVec: {
      int size = name[3] - '0';
      if (n != 1 && n != static_cast<size_t>(size)) {
        error("E106", e.span, "`" + name + "` takes 1 or " + std::to_string(size) + " F32 values, got " + std::to_string(n));
        return T.error();
      }
      for (size_t i = 0; i < n; ++i) expectTy(argSpan(i), f32(), a[i], " (a vector component)");
      return T.vec(size);
    }
    case Expr::MakeMat: {
      int size = name[3] - '0';
      if (n == 1) {
        expectTy(argSpan(0), f32(), a[0], " (the diagonal)");
      } else if (n == static_cast<size_t>(size)) {
        for (size_t i = 0; i < n; ++i) expectTy(argSpan(i), T.vec(size), a[i], " (a column)");
      } else {
        error("E106", e.span, "`" + name + "` takes 1 value or " + std::to_string(size) + " columns, got " + std::to_string(n));
        return T.error();
      }
      return T.mat(size);
    }
    case Expr::Cast: {
      Ty* r = core(a[0]);
      if (r->kind == Ty::Param && !r->regionVar)
        numeric_.require(r, "`" + name + "`", argSpan(0));
      else if (r->kind != Ty::Var && !isNumeric(r) && r->kind != Ty::Error)
        error("E101", argSpan(0), "`" + name + "` converts a number, not " + show(a[0]));
      else if (r->kind == Ty::Var)
        numericChecks_.push_back({e.kids[1].get(), a[0]});
      static const std::map<std::string, Prim> to = {
          {"i32", Prim::I32}, {"i64", Prim::I64}, {"u32", Prim::U32}, {"f32", Prim::F32}, {"f64", Prim::F64}};
      return T.prim(to.at(name));
    }
    case Expr::Len: {
      Ty* r = core(a[0]);
      if (r->kind == Ty::Ref) r = core(r->args[0]);
      if (r->kind == Ty::Var && inKernel_) unify(T, r, T.gpu(T.var(), Ty::View));
      r = core(r);
      if (r->kind != Ty::Gpu && r->kind != Ty::List && r->kind != Ty::Array && r->kind != Ty::Error) {
        if (r->kind == Ty::Var) unify(T, r, T.list(T.var()));
        else error("E101", argSpan(0), "`len` takes a GPU buffer or a list, not " + show(a[0]));
      }
      return T.prim(Prim::I32);
    }
    case Expr::H2D: {
      hostOnly(e.span, "`h2d`");
      Ty* elem = T.var();
      Ty* r = core(a[0]);
      if (r->kind == Ty::Ref) r = core(r->args[0]);
      if (!unify(T, r, T.list(elem))) {
        error("E101", argSpan(0), "`h2d` takes a list, not " + show(a[0]));
        return T.error();
      }
      checkElemType(elem, argSpan(0));
      gpuElems_.push_back(elem);
      return T.gpu(elem, Ty::Linear);
    }
    case Expr::D2H: case Expr::FreeGpu: case Expr::ReadGpu: case Expr::WriteGpu: {
      hostOnly(e.span, "`" + name + "`");
      Ty* r = core(a[0]);
      if (r->kind == Ty::Var) unify(T, r, T.gpu(T.var(), Ty::Linear));
      r = core(r);
      if (r->kind != Ty::Gpu || r->gpu == Ty::View) {
        if (r->kind != Ty::Error)
          error("E101", argSpan(0), "`" + name + "` takes an owned GPU buffer (GPUBuffer<T>!), not " + show(a[0]),
                r->kind == Ty::Ref ? "pass the buffer itself: `" + name + "` consumes it" : "");
        return T.error();
      }
      Ty* elem = r->args[0];
      if (n >= 2) expectTy(argSpan(1), T.prim(Prim::I32), a[1], " (an index)");
      if (n >= 3) expectTy(argSpan(2), elem, a[2], " (the element type)");
      if (info.b == Expr::D2H) return T.list(elem);
      if (info.b == Expr::FreeGpu) return T.unit();
      if (info.b == Expr::ReadGpu) return T.tuple({a[0], elem});
      return a[0];
    }
    case Expr::DeviceCount:  // device_count(): how many devices the program runs on
      hostOnly(e.span, "`device_count`");
      return T.prim(Prim::I32);
    case Expr::ToDevice: {  // to_device(k, b): b's contents in a new buffer on device k; consumes b
      hostOnly(e.span, "`to_device`");
      deviceIndex(*e.kids[1], a[0], name);
      Ty* r = core(a[1]);
      if (r->kind == Ty::Var) unify(T, r, T.gpu(T.var(), Ty::Linear));
      r = core(r);
      if (r->kind != Ty::Gpu || r->gpu == Ty::View) {
        if (r->kind != Ty::Error)
          error("E101", argSpan(1), "`to_device` takes an owned GPU buffer (GPUBuffer<T>!), not " + show(a[1]),
                r->kind == Ty::Ref ? "pass the buffer itself: `to_device` consumes it" : "");
        return T.error();
      }
      return a[1];
    }
    case Expr::Array: {  // array(n, f): [f(0), .., f(n-1)]
      hostOnly(e.span, "`array`");
      expectTy(argSpan(0), T.prim(Prim::I32), a[0], " (the length)");
      Ty* elem = T.var();
      Ty* want = T.fn(T.prim(Prim::I32), elem);
      if (!unify(T, want, a[1])) {
        error("E101", argSpan(1), "`array(n, f)` takes a function from I32 to the element type, not " + show(a[1]),
              "write `array(n, fn(i: I32) -> ..)` or pass a named function");
        return T.error();
      }
      return T.list(elem);
    }
    default: return T.error();
  }
}

// Vector and matrix arithmetic (+ - * /): elementwise, a scalar on either
// side, mat * vec, mat * mat. Null when neither side is a vector or matrix.
Ty* TypeChecker::vectorArith(Expr& e, Ty* a, Ty* b) {
  Ty* x = core(a);
  Ty* y = core(b);
  bool xv = x->kind == Ty::Vec || x->kind == Ty::Mat, yv = y->kind == Ty::Vec || y->kind == Ty::Mat;
  if (!xv && !yv) return nullptr;
  if (e.bop == BinOp::Rem) {
    error("E101", e.span, "`%` does not apply to " + show(xv ? x : y));
    return T.error();
  }
  auto scalar = [&](Ty* s, Span sp) {
    if (!unify(T, T.prim(Prim::F32), s)) {
      mismatch(sp, T.prim(Prim::F32), s, " (vectors and matrices hold F32)");
      return false;
    }
    return true;
  };
  if (xv && !yv) return scalar(b, e.kids[1]->span) ? x : T.error();
  if (!xv && yv) {
    if (e.bop == BinOp::Div || e.bop == BinOp::Sub) {
      if (y->kind == Ty::Mat) {
        error("E101", e.span, "a scalar cannot be the left operand of this operator on " + show(y));
        return T.error();
      }
    }
    return scalar(a, e.kids[0]->span) ? y : T.error();
  }
  if (x->kind == Ty::Mat && e.bop == BinOp::Mul) {
    if (x->size != y->size) {
      error("E101", e.span, "cannot multiply " + show(x) + " by " + show(y));
      return T.error();
    }
    return y;  // mat * vec is a vec; mat * mat a mat
  }
  if (x->kind != y->kind || x->size != y->size || (x->kind == Ty::Mat && e.bop == BinOp::Div)) {
    error("E101", e.span, "type mismatch: cannot combine " + show(x) + " and " + show(y) + " elementwise");
    return T.error();
  }
  return x;
}

}  // namespace eph::ephapax::checking
