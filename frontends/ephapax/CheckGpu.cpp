// Pass 1 of the Ephapax checker: GPU functions: kernel shape, the kernel code rules
// across functions, generic kernels, host GPU operations (alloc_gpu, await),
// and dispatch (grids, arguments, function values).
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

#include <algorithm>
#include <functional>

namespace eph::ephapax::checking {

// ---- GPU functions ------------------------------------------------------------
bool TypeChecker::isGpuFn(const FnDecl& f) {
  return std::find(f.annotations.begin(), f.annotations.end(), "gpu") != f.annotations.end();
}

bool TypeChecker::hasUntypedParam(const FnDecl& f) {
  for (const Param& p : f.params)
    if (!p.type) return true;
  return false;
}

// Kernel-shaped: every parameter a view, a non-linear scalar / vector /
// matrix / type parameter or a function value, and the result ().
bool TypeChecker::kernelShaped(const FnDecl& f) {
  if (core(f.retTy)->kind != Ty::Unit || f.isAsync) return false;
  for (Ty* p : f.paramTys) {
    Ty* r = core(p);
    bool ok = (r->kind == Ty::Gpu && r->gpu == Ty::View) || r->kind == Ty::Prim || r->kind == Ty::Vec ||
              r->kind == Ty::Mat || r->kind == Ty::Fn || (r->kind == Ty::Param && !r->regionVar) || r->kind == Ty::Var;
    if (!ok) return false;
  }
  return true;
}

// ---- kernel code ------------------------------------------------------------
void TypeChecker::kernelOnly(Span s, const std::string& what) {
  if (inKernel_) return;
  if (curFn_) uses_[curFn_].kernelOnly.push_back({s, what});
}

void TypeChecker::hostOnly(Span s, const std::string& what) {
  if (!curFn_) return;
  if (inKernel_) {
    error("E212", s, what + " is host-only and cannot be used in kernel code",
          "do it in host code, before or after the dispatch");
    return;
  }
  uses_[curFn_].hostOnly.push_back({s, what});
}

void TypeChecker::noteCall(Expr& call, int callee) {
  if (!curFn_) return;
  FnDecl& g = *c_.prog.fns[callee];
  (inKernel_ ? uses_[curFn_].kernelCalls : uses_[curFn_].calls).push_back({callee, call.span});
  if (!inKernel_ && g.gpuRole == FnDecl::Kernel)
    error("E217", call.span, "`" + g.name + "` is a kernel: it is launched with `dispatch`, not called",
          "write `dispatch " + g.name + "(..) over n;`");
  if (inKernel_ && (g.isAsync || g.gpuRole == FnDecl::Launcher))
    error("E212", call.span, "`" + g.name + "` is host code and cannot be called from kernel code");
}

// After every function: the functions kernel code calls (transitively) are
// kernel code too — no host-only operations (E212), no recursion (E218);
// kernel-only operations anywhere else are E212.
void TypeChecker::checkKernelCode() {
  size_t n = c_.prog.fns.size();
  std::vector<char> device(n, 0);
  std::vector<int> work;
  for (size_t i = 0; i < n; ++i) {
    FnDecl& f = *c_.prog.fns[i];
    auto it = uses_.find(&f);
    if (f.gpuRole == FnDecl::Kernel) {
      device[i] = 1;
      work.push_back(static_cast<int>(i));
    }
    if (it != uses_.end())
      for (auto& [g, s] : it->second.kernelCalls)
        if (!device[g]) device[g] = 1, work.push_back(g);
  }
  while (!work.empty()) {
    int i = work.back();
    work.pop_back();
    auto it = uses_.find(c_.prog.fns[i].get());
    if (it == uses_.end()) continue;
    for (auto& [g, s] : it->second.calls)
      if (!device[g]) device[g] = 1, work.push_back(g);
  }
  for (size_t i = 0; i < n; ++i) {
    FnDecl& f = *c_.prog.fns[i];
    auto it = uses_.find(&f);
    if (it == uses_.end()) continue;
    if (device[i] && f.gpuRole != FnDecl::Kernel)
      for (auto& [s, what] : it->second.hostOnly)
        error("E212", s, what + " is host-only, but `" + f.name + "` is called from kernel code");
    if (!device[i] && f.gpuRole != FnDecl::Kernel)
      for (auto& [s, what] : it->second.kernelOnly)
        error("E212", s, what + " is only available in kernel code",
              "use it in a `@gpu` kernel or inside `dispatch over n { .. }`");
  }
  // Recursion among device functions: a call edge inside a cycle.
  for (size_t i = 0; i < n; ++i) {
    if (!device[i]) continue;
    auto it = uses_.find(c_.prog.fns[i].get());
    if (it == uses_.end()) continue;
    std::vector<std::pair<int, Span>> edges = it->second.calls;
    edges.insert(edges.end(), it->second.kernelCalls.begin(), it->second.kernelCalls.end());
    for (auto& [g, s] : edges)
      if (device[g] && reaches(g, static_cast<int>(i))) {
        error("E218", s, "recursion in kernel code: `" + c_.prog.fns[g]->name + "` calls back into `" +
                             c_.prog.fns[i]->name + "`",
              "GPU code has no call stack; write the recursion as a loop");
        return;
      }
  }
}

bool TypeChecker::reaches(int from, int to) {
  std::vector<char> seen(c_.prog.fns.size(), 0);
  std::vector<int> work{from};
  while (!work.empty()) {
    int i = work.back();
    work.pop_back();
    if (i == to) return true;
    if (seen[i]) continue;
    seen[i] = 1;
    auto it = uses_.find(c_.prog.fns[i].get());
    if (it == uses_.end()) continue;
    for (auto& [g, s] : it->second.calls) work.push_back(g);
    for (auto& [g, s] : it->second.kernelCalls) work.push_back(g);
  }
  return false;
}

// ---- generic kernels ----------------------------------------------------------
// A kernel with untyped parameters: whatever its body left open in their
// types becomes a type parameter (one instance per dispatch site's types).
void TypeChecker::generalizeKernel(FnDecl& f) {
  std::vector<Ty*> open;
  std::function<void(Ty*, unsigned)> collect = [&](Ty* t, unsigned depth) {
    t = resolve(t);
    if (!t || depth > 40) return;
    if (t->kind == Ty::Var && !t->intLit && !t->floatLit && !t->regionVar) {
      if (std::find(open.begin(), open.end(), t) == open.end()) open.push_back(t);
      return;
    }
    for (Ty* x : t->args) collect(x, depth + 1);
  };
  for (Ty* p : f.paramTys) collect(p, 0);
  for (Ty* v : open) {
    Ty* p = T.param("T" + std::to_string(f.typeParamTys.size()), nextParam_++);
    v->link = p;
    f.typeParamTys.push_back(p);
  }
  if (f.gpuRole == FnDecl::Kernel && !kernelShaped(f)) {
    f.gpuRole = FnDecl::Launcher;
    reportUntypedLauncherParams(f);
  }
}

void TypeChecker::reportUntypedLauncherParams(const FnDecl& f) {
  for (const Param& p : f.params)
    if (!p.type) {
      error("E219", p.span, "parameter `" + p.name + "` needs a type: only kernels infer their parameters' types",
            "annotate it, e.g. `" + p.name + ": GPUBuffer<F32>!`");
      return;
    }
}

void TypeChecker::checkUndispatchedKernels() {
  for (size_t i = 0; i < c_.prog.fns.size(); ++i) {
    FnDecl& f = *c_.prog.fns[i];
    if (f.gpuRole != FnDecl::Kernel || !hasUntypedParam(f) || dispatched_.count(static_cast<int>(i))) continue;
    bool open = false;
    for (Ty* p : f.paramTys) open |= mentionsParamTy(p);
    if (!open) continue;
    for (const Param& p : f.params)
      if (!p.type && mentionsParamTy(f.paramTys[&p - f.params.data()])) {
        error("E219", p.span, "the type of kernel parameter `" + p.name + "` cannot be inferred: `" + f.name +
                                  "` is never dispatched",
              "annotate the parameter, or dispatch the kernel");
        break;
      }
  }
}

bool TypeChecker::mentionsParamTy(Ty* t, unsigned depth) {
  t = resolve(t);
  if (!t || depth > 40) return false;
  if (t->kind == Ty::Param && !t->regionVar) return true;
  for (Ty* x : t->args)
    if (mentionsParamTy(x, depth + 1)) return true;
  return false;
}

// Each dispatch site of the function just checked must determine its
// kernel's type arguments (E219).
void TypeChecker::checkDispatchSites() {
  for (Expr* e : dispatchSites_)
    for (Ty* t : e->inst) {
      Ty* r = core(t);
      if (r->kind == Ty::Var && !r->regionVar) {  // regions leave no trace in kernels
        error("E219", e->span, "this dispatch does not determine the type of every parameter of `" + e->name + "`",
              "annotate the arguments, e.g. `let! b = allocate_gpu<F32>(n);`");
        break;
      }
    }
  dispatchSites_.clear();
}

// ---- host operations ---------------------------------------------------------
// allocate_gpu[@r][<T>](n), and allocate_gpu_on[@r][<T>](k, n): the same
// on device k (its two kids).
Ty* TypeChecker::inferAllocGpu(Expr& e) {
  bool onDevice = e.kids.size() == 2;
  std::string what = onDevice ? "allocate_gpu_on" : "allocate_gpu";
  hostOnly(e.span, "`" + what + "`");
  if (onDevice) deviceIndex(*e.kids[0], infer(*e.kids[0]), what);
  Expr& count = *e.kids.back();
  Ty* n = infer(count);
  if (!unify(T, intVar(), n)) error("E101", count.span, "`" + what + "` takes an integer element count, got " + show(n));
  Ty* elem;
  if (e.annot) {
    elem = convert(e.annot.get());
    checkElemType(elem, e.annot->span);
  } else {
    elem = T.var();
    gpuElems_.push_back(elem);
  }
  Ty* region = nullptr;  // the buffer's type names its region (E003 if it escapes it)
  if (!e.name.empty() && e.name != "_") {
    for (size_t i = regions_.size(); i-- > 0 && !region;)
      if (regions_[i].first == e.name) {
        region = regions_[i].second;
        Ty* r = resolve(region);
        e.regionId = r->kind == Ty::Region ? r->id : -1;
      }
    if (!region)
      error("E006", e.span, "allocation in region `" + e.name + "`, which is not active here",
            "allocate inside `region " + e.name + " { ... }`, or leave out `@" + e.name + "`");
  }
  return T.gpu(elem, Ty::Linear, region);
}

Ty* TypeChecker::inferAwait(Expr& e) {
  hostOnly(e.span, "`.await`");
  Ty* t = infer(*e.kids[0]);
  Ty* r = core(t);
  if (r->kind == Ty::Future) return r->args[0];
  const Expr& k = *e.kids[0];
  bool transfer = k.kind == ExprKind::Dispatch ||
                  (k.kind == ExprKind::Call && (k.builtin == Expr::H2D || k.builtin == Expr::D2H || k.builtin == Expr::ReadGpu ||
                                                k.builtin == Expr::WriteGpu || k.builtin == Expr::FreeGpu ||
                                                k.builtin == Expr::ToDevice));
  if (transfer) return t;
  if (r->kind != Ty::Error)
    error("E216", e.span, "`.await` needs a future, a transfer or a dispatch, not a value of type " + show(t),
          "await the result of an `async fn`, of h2d/d2h/read_gpu/write_gpu, or `(dispatch ..).await`");
  return T.error();
}

// ---- dispatch ----------------------------------------------------------------------
Ty* TypeChecker::inferDispatch(Expr& e) {
  hostOnly(e.span, "`dispatch`");
  if (e.grid.size() > 3 || e.grid.empty())
    error("E217", e.grid.size() > 3 ? e.grid[3]->span : e.span,
          "a dispatch grid has 1 to 3 dimensions, not " + std::to_string(e.grid.size()));
  for (auto& g : e.grid) {
    g->kernelCode = inKernel_;
    Ty* t = infer(*g);
    if (!unify(T, intVar(), t)) error("E101", g->span, "a grid dimension is an integer, not " + show(t));
  }
  if (e.name.empty()) {  // inline kernel
    bool outer = inKernel_;
    inKernel_ = true;
    expectUnitBody(*e.kids[0], "a kernel body");
    inKernel_ = outer;
    return T.unit();
  }
  Span nameSpan = e.nameSpans.empty() ? e.span : e.nameSpans[0];
  auto it = c_.fnIndex.find(e.name);
  if (it == c_.fnIndex.end() || lookupLocal(e.name)) {
    for (auto& k : e.kids) infer(*k);
    if (lookupLocal(e.name) || c_.constIndex.count(e.name) || c_.ctors.count(e.name))
      error("E217", nameSpan, "`" + e.name + "` is not a kernel", "dispatch a `@gpu` function: `@gpu fn " + e.name + "(..) { .. }`");
    else
      error("E103", nameSpan, "unknown kernel `" + e.name + "`");
    return T.unit();
  }
  FnDecl& k = *c_.prog.fns[it->second];
  e.refKind = Expr::Fn;
  e.global = it->second;
  if (k.gpuRole != FnDecl::Kernel) {
    for (auto& a : e.kids) infer(*a);
    error("E217", nameSpan, "`" + e.name + "` is not a kernel" +
                                std::string(k.gpuRole == FnDecl::Launcher ? ": it takes or returns owned values (a launcher)"
                                                                          : ": it is not `@gpu`"),
          k.gpuRole == FnDecl::Launcher ? "call a launcher like a function" : "mark it `@gpu`, with views and scalars as parameters and no result");
    return T.unit();
  }
  dispatched_.insert(it->second);
  std::vector<std::pair<int, Ty*>> subst;
  for (Ty* p : k.typeParamTys) {
    Ty* v = T.var(p->regionVar);
    e.inst.push_back(v);
    subst.push_back({p->id, v});
  }
  numeric_.instantiated(k.name, k.typeParamTys, e.inst, nameSpan);
  if (e.kids.size() != k.params.size()) {
    error("E106", e.span, "kernel `" + k.name + "` takes " + std::to_string(k.params.size()) + " argument" +
                              (k.params.size() == 1 ? "" : "s") + ", got " + std::to_string(e.kids.size()));
    for (auto& a : e.kids) infer(*a);
    return T.unit();
  }
  for (size_t i = 0; i < e.kids.size(); ++i) {
    Expr& arg = *e.kids[i];
    Ty* want = substitute(T, k.paramTys[i], subst);
    Ty* got = infer(arg);
    dispatchArg(k, i, arg, want, got);
  }
  dispatchSites_.push_back(&e);
  return T.unit();
}

void TypeChecker::dispatchArg(FnDecl& k, size_t i, Expr& arg, Ty* want, Ty* got) {
  Ty* w = core(want);
  Ty* g = core(got);
  if (g->kind == Ty::Ref && core(g->args[0])->kind == Ty::Gpu) g = core(g->args[0]);
  if (g->kind == Ty::Gpu && (w->kind == Ty::Gpu || w->kind == Ty::Var)) {
    if (w->kind == Ty::Var) unify(T, w, T.gpu(T.var(), Ty::View));
    w = core(want);
    if (w->gpu != Ty::View) {
      error("E101", arg.span, "kernel parameter `" + k.params[i].name + "` must be a view (GPUBuffer<T>), not " + show(w));
      return;
    }
    if (!unify(T, w->args[0], g->args[0]))
      error("E211", arg.span, "this buffer holds " + show(g->args[0]) + ", but kernel `" + k.name + "` takes `" +
                                  k.params[i].name + ": " + show(w) + "`",
            "pass a buffer of " + show(w->args[0]) + ", or convert its elements first");
    return;
  }
  if (w->kind == Ty::Gpu) {
    error("E101", arg.span, "kernel parameter `" + k.params[i].name + "` is a buffer (" + show(w) + "); got " + show(got),
          "pass `&b`, `&mut b` or an owned buffer");
    return;
  }
  if (!unify(T, want, got)) {
    mismatch(arg.span, want, got, " (argument " + std::to_string(i + 1) + " of kernel `" + k.name + "`)");
    return;
  }
  if (core(want)->kind == Ty::Fn) checkFunctionValue(arg, "kernel `" + k.name + "`");
}

// A function value passed to GPU code: a named function, a lambda that
// captures nothing, or the enclosing launcher's own function parameter
// (known once the launcher is specialised per function argument) (E215).
void TypeChecker::checkFunctionValue(Expr& arg, const std::string& to) {
  if (arg.kind == ExprKind::Var && !arg.binding && arg.refKind == Expr::Fn) return;
  if (isLauncherFunctionParam(arg)) return;
  if (arg.kind == ExprKind::Lambda) {
    std::vector<const Expr*> work{arg.kids[0].get()};
    while (!work.empty()) {
      const Expr* x = work.back();
      work.pop_back();
      if (x->kind == ExprKind::Var && x->binding && x->binding->lambdaDepth <= lambdaDepth_) {
        error("E215", x->span, "the lambda passed to " + to + " captures `" + x->name + "`",
              "GPU code takes only named functions or lambdas that capture nothing; pass `" + x->name +
                  "` as an argument instead");
        return;
      }
      for (auto& k : x->kids) work.push_back(k.get());
      for (auto& a : x->arms) {
        if (a.body) work.push_back(a.body.get());
        if (a.guard) work.push_back(a.guard.get());
      }
    }
    return;
  }
  error("E215", arg.span,
        "the function passed to " + to +
            " must be a named function, a lambda that captures nothing, or a function parameter of the launcher "
            "passing it",
        "name the function (`fn double(x: F32): F32 = x * 2.0`) and pass `double`");
}

// `f`, a function parameter of the launcher whose host code (not a lambda
// in it) mentions it: every instance of the launcher has f bound to a
// known function, so f may be passed on to GPU code.
bool TypeChecker::isLauncherFunctionParam(const Expr& arg) {
  if (arg.kind != ExprKind::Var || !arg.binding || !curFn_ || curFn_->gpuRole != FnDecl::Launcher) return false;
  if (inKernel_ || lambdaDepth_ > 0) return false;
  for (size_t i = 0; i < curFn_->params.size(); ++i)
    if (curFn_->params[i].binding == arg.binding) return core(curFn_->paramTys[i])->kind == Ty::Fn;
  return false;
}

}  // namespace eph::ephapax::checking
