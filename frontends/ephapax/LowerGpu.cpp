// Lowering of the Ephapax GPU extension: the analyses over the checked AST
// that decide how kernels and device functions look in the IR, and the small
// generated kernels behind read_gpu / write_gpu (Lower.cpp builds the rest).
//
//  - which functions kernel code calls (lowered as device functions) and
//    which host code calls (lowered as host functions), functionUses();
//  - whether a kernel uses barrier() (then it is not bounds-guarded);
//  - whether kernel code writes through a buffer binding (its parameter is
//    then buffer<T, device, write>, else read), following the binding into
//    the device functions it is passed to;
//  - the bindings an inline `dispatch over g { }` body captures;
//  - whether a region's body issues device work (the region end then waits).
#include "frontends/ephapax/Lower.h"
#include "frontends/ephapax/Lowerer.h"

#include <algorithm>

#include "ir/Builder.h"

namespace eph::ephapax::lowering {

namespace {

const FnDecl* calledFn(const Checked& c, const Expr& e) {
  if (e.kind != ExprKind::Call || e.kids.empty()) return nullptr;
  const Expr& callee = *e.kids[0];
  if (callee.kind != ExprKind::Var || callee.binding || callee.refKind != Expr::Fn) return nullptr;
  if (callee.global < 0 || static_cast<size_t>(callee.global) >= c.prog.fns.size()) return nullptr;
  return c.prog.fns[callee.global].get();
}

bool isInlineDispatch(const Expr& e) { return e.kind == ExprKind::Dispatch && e.name.empty() && !e.kids.empty(); }

// Functions named in `e` (calls and function values), split by whether the
// reference is in kernel code (`device`, also inline dispatch bodies).
void references(const Checked& c, const Expr& e, bool device, std::set<const FnDecl*>& host,
                std::set<const FnDecl*>& dev) {
  if (e.kind == ExprKind::Var && !e.binding && e.refKind == Expr::Fn && e.global >= 0 &&
      static_cast<size_t>(e.global) < c.prog.fns.size())
    (device ? dev : host).insert(c.prog.fns[e.global].get());
  if (isInlineDispatch(e)) {
    for (const auto& g : e.grid) references(c, *g, device, host, dev);
    references(c, *e.kids[0], true, host, dev);
    return;
  }
  // A function (or lambda) passed to a launcher or kernel is a function value
  // of GPU code: a func.ref of its device copy.
  const FnDecl* callee = calledFn(c, e);
  bool toGpu = (callee && callee->gpuRole != FnDecl::NotGpu) || (e.kind == ExprKind::Dispatch && !e.name.empty());
  if (toGpu) {
    for (size_t i = e.kind == ExprKind::Call ? 1 : 0; i < e.kids.size(); ++i) {
      const Expr& a = *e.kids[i];
      bool fnValue = (a.kind == ExprKind::Var && !a.binding && a.refKind == Expr::Fn) || a.kind == ExprKind::Lambda;
      references(c, a, device || fnValue, host, dev);
    }
    for (const auto& g : e.grid) references(c, *g, device, host, dev);
    if (e.kind == ExprKind::Call) references(c, *e.kids[0], device, host, dev);
    return;
  }
  forEachChild(e, [&](const Expr& k) { references(c, k, device, host, dev); });
}

}  // namespace

FnUses functionUses(const Checked& c) {
  FnUses u;
  // Device: reachable from kernels and inline dispatch bodies.
  std::vector<const FnDecl*> work;
  auto addDevice = [&](const FnDecl* f) {
    if (f->gpuRole != FnDecl::Kernel && u.device.insert(f).second) work.push_back(f);
  };
  for (const auto& f : c.prog.fns) {
    if (!f->body) continue;
    std::set<const FnDecl*> host, dev;
    references(c, *f->body, f->gpuRole == FnDecl::Kernel, host, dev);
    for (const FnDecl* d : dev) addDevice(d);
  }
  while (!work.empty()) {
    const FnDecl* f = work.back();
    work.pop_back();
    if (!f->body) continue;
    std::set<const FnDecl*> host, dev;
    references(c, *f->body, true, host, dev);
    for (const FnDecl* d : host) addDevice(d);
    for (const FnDecl* d : dev) addDevice(d);
  }
  // Host: every function that is neither a kernel nor used only from kernel
  // code, and what host code names.
  for (const auto& f : c.prog.fns)
    if (f->gpuRole != FnDecl::Kernel && !u.device.count(f.get())) u.host.insert(f.get());
  std::vector<const FnDecl*> hostWork(u.host.begin(), u.host.end());
  while (!hostWork.empty()) {
    const FnDecl* f = hostWork.back();
    hostWork.pop_back();
    if (!f->body) continue;
    std::set<const FnDecl*> host, dev;
    references(c, *f->body, false, host, dev);
    for (const FnDecl* h : host)
      if (h->gpuRole != FnDecl::Kernel && u.host.insert(h).second) hostWork.push_back(h);
  }
  return u;
}

bool usesBarrier(const Checked& c, const Expr& e, std::set<const FnDecl*>& seen) {
  if (e.kind == ExprKind::Call && e.builtin == Expr::Barrier) return true;
  if (isInlineDispatch(e)) return false;  // a separate kernel
  if (const FnDecl* f = calledFn(c, e); f && f->body && seen.insert(f).second && usesBarrier(c, *f->body, seen))
    return true;
  bool found = false;
  forEachChild(e, [&](const Expr& k) { found = found || usesBarrier(c, k, seen); });
  return found;
}

namespace {

bool namesBinding(const Expr& e, const Binding* b) {
  const Expr* x = &e;
  while (x->kind == ExprKind::Borrow && !x->kids.empty()) x = x->kids[0].get();
  return x->kind == ExprKind::Var && x->binding == b;
}

}  // namespace

bool writesThrough(const Checked& c, const Expr& e, const Binding* b, std::set<std::pair<const FnDecl*, size_t>>& seen) {
  if (e.kind == ExprKind::IndexAssign && !e.kids.empty() && namesBinding(*e.kids[0], b)) return true;
  if (e.kind == ExprKind::Call && e.builtin >= Expr::AtomicAdd && e.builtin <= Expr::AtomicCas && e.kids.size() > 1 &&
      namesBinding(*e.kids[1], b))
    return true;
  if (const FnDecl* f = calledFn(c, e)) {
    for (size_t i = 1; i < e.kids.size(); ++i) {
      size_t p = i - 1;
      if (!namesBinding(*e.kids[i], b) || p >= f->params.size() || !f->body) continue;
      if (seen.insert({f, p}).second && writesThrough(c, *f->body, f->params[p].binding, seen)) return true;
    }
  }
  // A dispatch from host code writes through a `&mut` borrow, or a buffer
  // an inline kernel stores into.
  if (e.kind == ExprKind::Dispatch && !e.name.empty()) {
    for (const auto& k : e.kids)
      if (k->kind == ExprKind::Borrow && k->bval && namesBinding(*k, b)) return true;
  }
  bool found = false;
  forEachChild(e, [&](const Expr& k) { found = found || writesThrough(c, k, b, seen); });
  return found;
}

void referencedBindings(const Expr& e, std::vector<const Binding*>& out) {
  if (e.kind == ExprKind::Var && e.binding && std::find(out.begin(), out.end(), e.binding) == out.end())
    out.push_back(e.binding);
  forEachChild(e, [&](const Expr& k) { referencedBindings(k, out); });
}

bool issuesDeviceWork(const Checked& c, const Expr& e) {
  switch (e.kind) {
    case ExprKind::Dispatch:
    case ExprKind::AllocGpu:
    case ExprKind::Await: return true;
    default: break;
  }
  if (e.builtin >= Expr::H2D) return true;
  if (const FnDecl* f = calledFn(c, e); f && (f->gpuRole != FnDecl::NotGpu || f->isAsync)) return true;
  if (e.ty) {
    Ty* t = resolve(e.ty);
    if (t && (t->kind == Ty::Gpu || t->kind == Ty::Future)) return true;
  }
  bool found = false;
  forEachChild(e, [&](const Expr& k) { found = found || issuesDeviceWork(c, k); });
  return found;
}

// `kernel @"read_gpu<T>"(%src: read, %i: i32, %dst: write)`: dst[0] = src[i]
// (read_gpu), or `@"write_gpu<T>"`: dst[i] = src[0] (write_gpu); one invocation.
ir::Function* elementCopyKernel(ir::Module& m, const ir::Type* elem, bool read, Loc loc) {
  ir::Context& ctx = m.context();
  std::string name = std::string(read ? "read_gpu<" : "write_gpu<") + elem->str() + ">";
  if (ir::Function* f = m.lookup(name)) return f;
  const ir::Type* src = ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Read);
  const ir::Type* dst = ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Write);
  ir::Function* f = m.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType({src, ctx.i32(), dst}, {}), loc);
  f->param(0)->setName("src");
  f->param(1)->setName("i");
  f->param(2)->setName("dst");
  ir::Builder b(ctx, f->body());
  b.setLoc(loc);
  ir::Value* zero = b.constInt(ctx.i32(), 0);
  ir::Value* from = read ? f->param(1) : zero;
  ir::Value* to = read ? zero : f->param(1);
  ir::Value* v = b.load(f->param(0), from);
  b.store(f->param(2), to, v);
  b.ret();
  return f;
}

}  // namespace eph::ephapax::lowering

// ---- Lowerer methods: function values in GPU code, kernels, dispatch ----------

namespace eph::ephapax::lowering {

// `func.ref` of the device copy of f, as a value of the (instantiated)
// function type ty.
Value* Lowerer::funcRef(FnDecl& f, Ty* ty, Span s) {
  const ir::Type* ft = fnIrType(ty);
  if (f.gpuRole != FnDecl::NotGpu || f.isExtern || !f.body) {
    unsupported(s, "`" + f.name + "` cannot be passed as a function value to GPU code; pass a plain function", "E215");
    return fabricateFn(ft);
  }
  ir::Function* target = deviceFn(f);
  setLoc(s);
  return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol(target->name())}});
}

// After a reported error, a function value still needs some value to
// continue lowering with: a func.ref of the non-existent `<error>`.
// failed_ makes lowerProgram discard the module, so it never reaches the
// verifier or a target.
Value* Lowerer::fabricateFn(const ir::Type* ft) {
  failed_ = true;
  return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol("<error>")}});
}

Value* Lowerer::lambdaRef(Expr& lam) {
  const ir::Type* ft = fnIrType(lam.ty);
  std::vector<const Binding*> caps;
  int firstInner = lam.params.empty() || !lam.params[0].binding ? 0 : lam.params[0].binding->id;
  freeVars(*lam.kids[0], firstInner, caps);
  if (!caps.empty()) {
    unsupported(lam.span, "a lambda passed to GPU code must capture nothing; this one captures `" + caps[0]->name + "`",
                "E215");
    return fabricateFn(ft);
  }
  if (ft->members().size() != lam.params.size()) {
    unsupported(lam.span, "code generation cannot pass a lambda returning a function to GPU code");
    return fabricateFn(ft);
  }
  std::string key = std::to_string(lam.span.line) + ":" + std::to_string(lam.span.col) + "[" + substKey(subst_) +
                    "]" + ft->str();
  ir::Function* k = lambdaFns_[key];
  if (!k) {
    std::string host = curKey_.empty() ? "closure" : curKey_;
    std::string name;
    do name = host + ".lambda" + std::to_string(inlineKernels_[host + ".lambda"]++);
    while (m_.lookup(name));
    k = lambdaFns_[key] = m_.addFunction(name, ir::FunctionKind::Device, ft, loc(lam.span));
    lowerLambdaBody(lam, k);
  }
  setLoc(lam.span);
  return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol(k->name())}});
}

void Lowerer::lowerLambdaBody(Expr& lam, ir::Function* k) {
  auto savedEnv = std::move(env_);
  ir::Builder::InsertionGuard guard(b_);
  bool savedDevice = device_, savedGeneric = generic_;
  const ir::Type* savedLoop = loopSum_;
  auto savedCarry = carry_;
  auto savedArrays = std::move(workgroupArrays_);
  Loc savedLoc = curLoc_;
  env_.clear();
  device_ = true;
  generic_ = true;
  loopSum_ = nullptr;
  carry_ = nullptr;
  workgroupArrays_.clear();
  b_.setInsertionPoint(k->body());
  setLoc(lam.span);
  for (size_t i = 0; i < lam.params.size(); ++i) {
    Value* p = k->param(static_cast<unsigned>(i));
    p->setName(lam.params[i].name == "_" ? "" : lam.params[i].name);
    if (lam.params[i].binding) bindValue(lam.params[i].binding, p, lam.params[i].span);
  }
  Value* r = coerce(lowerExpr(*lam.kids[0]), k->resultTypes()[0], lam.kids[0]->span);
  setLoc(lam.span);
  endScopeAll();
  b_.ret({r});
  env_ = std::move(savedEnv);
  device_ = savedDevice;
  generic_ = savedGeneric;
  loopSum_ = savedLoop;
  carry_ = savedCarry;
  workgroupArrays_ = std::move(savedArrays);
  curLoc_ = savedLoc;
}

// An argument for a function-typed parameter of GPU code (a launcher,
// kernel or device function): a named function or a capture-free lambda
// becomes a func.ref; a function value GPU code already holds passes on.
Value* Lowerer::lowerFnArg(Expr& a, const std::string& to) {
  Expr* x = &a;
  if (x->kind == ExprKind::Var && !x->binding && x->refKind == Expr::Fn)
    return funcRef(*c_.prog.fns[x->global], x->ty, x->span);
  if (x->kind == ExprKind::Lambda) return lambdaRef(*x);
  Value* v = lowerExpr(a);
  if (!v->type()->isFunction()) {
    unsupported(a.span, "the function passed to " + to + " must be a named function or a lambda that captures nothing",
                "E215");
    dropValue(v);
    return fabricateFn(fnIrType(a.ty));
  }
  return v;
}

void Lowerer::lowerKernel(const Instance& in) {
  FnDecl& f = *in.fn;
  ir::Function* irf = in.irfn;
  for (size_t i = 0; i < f.params.size(); ++i) {
    irf->param(static_cast<unsigned>(i))->setName(f.params[i].name == "_" ? "" : f.params[i].name);
    if (f.params[i].binding) bindValue(f.params[i].binding, irf->param(static_cast<unsigned>(i)), f.params[i].span);
  }
  lowerKernelBody(*f.body, irf, f.params.size(), f.span);
}

// Workgroup arrays are allocated at the top of the kernel (the IR wants
// workgroup.alloc there), before the bounds guard.
void Lowerer::hoistWorkgroupArrays(Expr& e) {
  if (e.kind == ExprKind::Lambda || (e.kind == ExprKind::Dispatch && e.name.empty())) return;
  if (e.kind == ExprKind::Workgroup && e.binding) {
    const ir::Type* bt = lowerTy(e.binding->ty);
    if (bt->isBuffer() && bt->space() == ir::Space::Workgroup && e.ival >= 1)
      workgroupArrays_[&e] = b_.op("workgroup.alloc", {}, bt, {{"size", ir::Attr::integer(e.ival)}});
    else
      unsupported(e.span, "code generation cannot allocate this workgroup array");
  }
  for (auto& k : e.kids) hoistWorkgroupArrays(*k);
}

// A kernel's body: guarded by `global_id(d) < grid(d)` in each dimension
// when the kernel has the hidden grid parameters.
void Lowerer::lowerKernelBody(Expr& body, ir::Function* irf, size_t firstHidden, Span s) {
  setLoc(s);
  workgroupArrays_.clear();
  hoistWorkgroupArrays(body);
  if (hasHiddenGrid(irf)) {
    Value* inside = nullptr;
    for (unsigned d = 0; d < 3; ++d) {
      Value* id = b_.globalId(static_cast<int>(d));
      Value* lt = b_.lt(id, irf->param(static_cast<unsigned>(firstHidden + d)));
      inside = inside ? b_.and_(inside, lt) : lt;
    }
    b_.ifOp(inside, {}, [&](ir::Builder&) {
      size_t mark = env_.size();
      lowerAndDrop(body);
      endScope(mark);
      setLoc(s);
    });
  } else {
    lowerAndDrop(body);
  }
  setLoc(s);
  endScopeAll();
  b_.ret();
}

// The grid in invocations as three u32 (missing dimensions are 1).
std::vector<Value*> Lowerer::lowerGrid(Expr& e) {
  std::vector<Value*> g;
  if (e.grid.empty() || e.grid.size() > 3) unsupported(e.span, "a grid has 1 to 3 dimensions", "E217");
  for (size_t d = 0; d < e.grid.size() && d < 3; ++d) {
    Value* v = lowerExpr(*e.grid[d]);
    setLoc(e.grid[d]->span);
    if (!v->type()->isInt()) {
      unsupported(e.grid[d]->span, "a grid dimension must be an integer");
      v = b_.constInt(ctx_.u32(), 1);
    }
    if (v->type() != ctx_.u32()) v = b_.cast(v, ctx_.u32());
    g.push_back(v);
  }
  setLoc(e.span);
  while (g.size() < 3) g.push_back(b_.constInt(ctx_.u32(), 1));
  return g;
}

// dispatch ceil(grid / workgroup size) workgroups per dimension.
void Lowerer::emitDispatch(ir::Function* k, const std::vector<Value*>& grid, std::vector<Value*> args) {
  std::array<Value*, 3> groups;
  for (unsigned d = 0; d < 3; ++d) {
    unsigned wg = k->workgroupSize[d];
    if (wg == 1) {
      groups[d] = grid[d];
      continue;
    }
    Value* w = b_.constInt(ctx_.u32(), wg);
    Value* up = b_.op("add", {grid[d], b_.constInt(ctx_.u32(), wg - 1)}, ctx_.u32());
    groups[d] = b_.op("div", {up, w}, ctx_.u32());
  }
  if (hasHiddenGrid(k))
    for (Value* g : grid) args.push_back(g);
  b_.dispatch(*k, groups, std::move(args));
}

bool Lowerer::mentionsTypeVar(const ir::Type* t, unsigned depth) {
  if (t->isVar()) return true;
  if (depth > 40) return false;
  if (t->elem() && mentionsTypeVar(t->elem(), depth + 1)) return true;
  for (const ir::Type* m : t->members())
    if (mentionsTypeVar(m, depth + 1)) return true;
  return false;
}

Value* Lowerer::lowerDispatch(Expr& e) {
  if (device_) {
    unsupported(e.span, "dispatch is host code; it cannot appear in kernel code", "E212");
    return unit();
  }
  if (e.name.empty()) return lowerInlineDispatch(e);
  FnDecl* f = nullptr;
  if (auto it = c_.fnIndex.find(e.name); it != c_.fnIndex.end()) f = c_.prog.fns[it->second].get();
  if (!f || f->gpuRole != FnDecl::Kernel || !f->body) {
    unsupported(e.span, "`" + e.name + "` is not a kernel", "E217");
    return unit();
  }
  ir::Function* k = kernelFn(*f);
  if (e.kids.size() != f->params.size()) {
    unsupported(e.span, "kernel `" + e.name + "` takes " + std::to_string(f->params.size()) + " arguments");
    return unit();
  }
  // &b / &mut b lend an owned buffer; a buffer passed plainly is consumed:
  // freed after the dispatch.
  std::vector<Value*> args, consumed;
  for (size_t i = 0; i < e.kids.size(); ++i) {
    Expr& a = *e.kids[i];
    Value* v;
    if (k->paramTypes()[i]->isFunction()) {
      v = lowerFnArg(a, "kernel `" + e.name + "`");
    } else if (a.kind == ExprKind::Borrow) {
      v = lowerBorrowOf(*a.kids[0]);
    } else {
      v = lowerExpr(a);
      if (owns(v->type())) consumed.push_back(v);
    }
    const ir::Type* pt = k->paramTypes()[i];
    if (!pt->isBuffer() && !pt->isFunction() && !mentionsTypeVar(pt)) v = coerce(v, pt, a.span);
    args.push_back(v);
  }
  std::vector<Value*> grid = lowerGrid(e);
  setLoc(e.span);
  emitDispatch(k, grid, args);
  for (Value* v : consumed) dropValue(v);
  return unit();
}

// `dispatch over g { body }`: a new kernel `<fn>.kernel<k>` whose
// parameters are the variables the body mentions (owned buffers borrowed,
// scalars by value), and its dispatch.
Value* Lowerer::lowerInlineDispatch(Expr& e) {
  Expr& body = *e.kids[0];
  std::vector<const Binding*> refs, caps;
  referencedBindings(body, refs);
  std::vector<Value*> capVals;
  std::vector<const ir::Type*> params;
  for (const Binding* b : refs) {
    LBinding* lb = lookup(b);
    if (!lb) continue;  // bound inside the body
    Value* v = borrowVar(*lb);
    const ir::Type* t = v->type();
    if (sub(b->ty)->kind == Ty::Fn && !t->isFunction()) {
      unsupported(e.span, "kernel code can call only function values of GPU code (a @gpu function's parameters), not "
                  "the host closure `" + b->name + "`", "E215");
      continue;
    }
    if (t->isFunction()) {
      // passed on as a kernel parameter of function type
    } else if (t->isBuffer()) {
      if (t->space() != ir::Space::Device) {
        unsupported(e.span, "kernel code cannot use the host value `" + b->name + "`", "E210");
        continue;
      }
      std::set<std::pair<const FnDecl*, size_t>> seen;
      bool writes = writesThrough(c_, body, b, seen);
      t = ctx_.bufferType(t->elem(), ir::Space::Device, writes ? ir::Ownership::Write : ir::Ownership::Read);
    } else if (owns(t)) {
      unsupported(e.span, "kernel code cannot use `" + b->name + "`, whose value owns host memory", "E210");
      continue;
    }
    caps.push_back(b);
    capVals.push_back(v);
    params.push_back(t);
  }
  std::set<const FnDecl*> seen;
  bool guarded = !usesBarrier(c_, body, seen);
  if (guarded) addHiddenGrid(params, ctx_);
  std::string host = curKey_.empty() ? "closure" : curKey_;
  std::string name;
  do name = host + ".kernel" + std::to_string(inlineKernels_[host]++);
  while (m_.lookup(name));
  ir::Function* k = m_.addFunction(name, ir::FunctionKind::Kernel, ctx_.functionType(params, {}), loc(e.span));
  int64_t wg[3];
  dispatchWorkgroupSize(e, wg);
  setWorkgroupSize(k, wg, e.span);
  if (guarded) nameHiddenGrid(k, caps.size());

  // The body, in a fresh function context.
  {
    auto savedEnv = std::move(env_);
    ir::Builder::InsertionGuard guard(b_);
    bool savedDevice = device_;
    const ir::Type* savedLoop = loopSum_;
    auto savedCarry = carry_;
    auto savedArrays = std::move(workgroupArrays_);
    env_.clear();
    device_ = true;
    loopSum_ = nullptr;
    carry_ = nullptr;
    workgroupArrays_.clear();
    b_.setInsertionPoint(k->body());
    b_.setLoc({});
    for (size_t j = 0; j < caps.size(); ++j) {
      k->param(static_cast<unsigned>(j))->setName(caps[j]->name);
      env_.push_back(LBinding{LBinding::Plain, caps[j], k->param(static_cast<unsigned>(j))});
    }
    lowerKernelBody(body, k, caps.size(), e.span);
    env_ = std::move(savedEnv);
    device_ = savedDevice;
    loopSum_ = savedLoop;
    carry_ = savedCarry;
    workgroupArrays_ = std::move(savedArrays);
  }

  std::vector<Value*> grid = lowerGrid(e);
  setLoc(e.span);
  emitDispatch(k, grid, capVals);
  return unit();
}

}  // namespace eph::ephapax::lowering
