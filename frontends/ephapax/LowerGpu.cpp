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
  ir::Value* v = b.op("load", {f->param(0), from}, elem);
  b.create("store", {f->param(2), to, v});
  b.create("return");
  return f;
}

}  // namespace eph::ephapax::lowering
