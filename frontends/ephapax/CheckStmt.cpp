// Pass 1 of the Ephapax checker: statements: `;` chains, let, var, assignment, index
// assignment, for, return and tail returns.
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

namespace eph::ephapax::checking {

// ---- statements ---------------------------------------------------------------
bool TypeChecker::isChainLink(const Expr& e) {
  return (e.kind == ExprKind::Let && e.kids.size() == 2) || e.kind == ExprKind::Seq || e.kind == ExprKind::VarDecl ||
         e.kind == ExprKind::Workgroup;
}

// A run of Let / Seq / VarDecl / Workgroup nodes (a block's statements),
// checked in a loop rather than by recursion: a block may be long.
Ty* TypeChecker::inferChain(Expr& first) {
  std::vector<std::pair<Expr*, size_t>> opened;
  Expr* e = &first;
  Ty* result = nullptr;
  while (true) {
    e->kernelCode = inKernel_;
    size_t mark = scope_.size();
    if (e->kind == ExprKind::Let) {
      bindLet(*e);
    } else if (e->kind == ExprKind::Seq) {
      infer(*e->kids[0]);
    } else if (e->kind == ExprKind::VarDecl) {
      Ty* v = infer(*e->kids[0]);
      if (e->annot) {
        Ty* want = convert(e->annot.get());
        if (!unify(T, want, v))
          error("E102", tailOf(e->kids[0].get())->span,
                "`var " + e->name + "` is annotated " + show(want) + " but the value has type " + show(v));
        v = want;
      }
      varDeclChecks_.push_back({e, v});
      e->binding = bind(Binding::Mutable, e->name, e->span, v);
    } else if (e->kind == ExprKind::Workgroup) {
      kernelOnly(e->span, "a workgroup array");
      Ty* elem = convert(e->annot.get());
      checkElemType(elem, e->annot ? e->annot->span : e->span);
      e->binding = bind(Binding::Let, e->name, e->span, T.array(elem, static_cast<int>(e->ival)));
    } else {
      result = infer(*e);
      break;
    }
    opened.push_back({e, mark});
    if (e->kids.empty()) {
      result = T.unit();
      break;
    }
    Expr* next = e->kids.back().get();
    if (e->kind == ExprKind::Let && e->kids.size() < 2) {
      result = T.unit();
      break;
    }
    if (!isChainLink(*next)) {
      result = infer(*next);
      break;
    }
    e = next;
  }
  for (size_t i = opened.size(); i-- > 0;) {
    opened[i].first->ty = result;
    scope_.resize(opened[i].second);
  }
  return result;
}

// A `let`'s value, annotation and pattern (the body is the caller's).
void TypeChecker::bindLet(Expr& e) {
  Ty* v = infer(*e.kids[0]);
  if (e.annot) {
    Ty* want = convert(e.annot.get());
    if (!unify(T, want, v)) {
      error("E102", tailOf(e.kids[0].get())->span,
            "the binding is annotated " + show(want) + " but the value has type " + show(v));
    }
  }
  size_t mark = scope_.size();
  bindPattern(*e.pat, v, e.bval ? Binding::LetBang : Binding::Let, true);
  // let! keeps its obligation at the keyword.
  for (size_t i = mark; i < scope_.size(); ++i)
    if (e.bval) scope_[i]->span = e.span;
}

void TypeChecker::expectUnitBody(Expr& body, const char* what) {
  Ty* t = infer(body);
  if (!unify(T, T.unit(), t))
    error("E101", tailOf(&body)->span, std::string(what) + " has no value, but this gives " + show(t),
          "end it with `;`");
}

Ty* TypeChecker::inferAssign(Expr& e) {
  Ty* v = infer(*e.kids[0]);
  Binding* b = lookupLocal(e.name);
  if (!b) {
    if (c_.fnIndex.count(e.name) || c_.constIndex.count(e.name))
      error("E214", e.span, "`" + e.name + "` is not a `var` and cannot be assigned", "declare it with `var " + e.name + " = ...;`");
    else
      error("E103", e.span, "unbound variable `" + e.name + "`");
    return T.unit();
  }
  e.binding = b;
  if (b->origin != Binding::Mutable) {
    error("E214", e.span, "`" + e.name + "` is not a `var` and cannot be assigned",
          "declare it with `var " + e.name + " = ...;` to assign it later");
    return T.unit();
  }
  if (!unify(T, b->ty, v)) mismatch(e.kids[0]->span, b->ty, v, " (assigned to `var " + e.name + "`)");
  return T.unit();
}

// The element of a GPU buffer (owned, view or borrowed) or workgroup array;
// null for anything else. In kernel code an open type is taken to be a view.
Ty* TypeChecker::gpuElementOf(Ty* t, Span) {
  Ty* r = core(t);
  if (r->kind == Ty::Ref) r = core(r->args[0]);
  if (r->kind == Ty::Gpu || r->kind == Ty::Array) return r->args[0];
  if (r->kind == Ty::Var && !r->intLit && !r->floatLit && inKernel_) {
    Ty* elem = T.var();
    unify(T, r, T.gpu(elem, Ty::View));
    return elem;
  }
  return nullptr;
}

Ty* TypeChecker::inferIndexAssign(Expr& e) {
  Ty* base = infer(*e.kids[0]);
  expectTy(e.kids[1]->span, T.prim(Prim::I32), infer(*e.kids[1]), " (an index)");
  Ty* v = infer(*e.kids[2]);
  Ty* elem = gpuElementOf(base, e.kids[0]->span);
  if (!elem) {
    if (resolve(base)->kind != Ty::Error)
      error("E101", e.kids[0]->span, "only GPU buffers and workgroup arrays can be stored into, not " + show(base),
            "lists are immutable; build a new one");
    return T.unit();
  }
  kernelOnly(e.span, "storing into a GPU buffer");
  if (!unify(T, elem, v)) mismatch(e.kids[2]->span, elem, v, " (the buffer's element type)");
  return T.unit();
}

Ty* TypeChecker::inferFor(Expr& e) {
  Ty* a = infer(*e.kids[0]);
  Ty* b = infer(*e.kids[1]);
  Ty* i = intVar();
  if (!unify(T, i, a)) error("E101", e.kids[0]->span, "a `for` range needs integer bounds, got " + show(a));
  else if (!unify(T, i, b)) mismatch(e.kids[1]->span, a, b, " (the bounds of a `for` range have one type)");
  size_t mark = scope_.size();
  e.binding = bind(Binding::Let, e.name, e.nameSpans.empty() ? e.span : e.nameSpans[0], i);
  expectUnitBody(*e.kids[2], "a `for` body");
  scope_.resize(mark);
  return T.unit();
}

// Tail positions of a function body: where `return` is allowed.
void TypeChecker::markTailReturns(Expr& body) {
  std::vector<Expr*> work{&body};
  while (!work.empty()) {
    Expr* e = work.back();
    work.pop_back();
    switch (e->kind) {
      case ExprKind::Return: tailReturns_.insert(e); break;
      case ExprKind::Let:
      case ExprKind::Seq:
      case ExprKind::VarDecl:
      case ExprKind::Workgroup:
      case ExprKind::Region:
        if (!e->kids.empty()) work.push_back(e->kids.back().get());
        break;
      case ExprKind::If:
        work.push_back(e->kids[1].get());
        work.push_back(e->kids[2].get());
        break;
      case ExprKind::Case:
        work.push_back(e->kids[1].get());
        work.push_back(e->kids[2].get());
        break;
      case ExprKind::Match:
        for (Arm& a : e->arms) work.push_back(a.body.get());
        break;
      default: break;
    }
  }
}

Ty* TypeChecker::inferReturn(Expr& e) {
  Ty* v = infer(*e.kids[0]);
  if (!curFn_ || !tailReturns_.count(&e) || lambdaDepth_ > 0) {
    error("E213", e.span, "`return` is only allowed in tail position",
          "make it the last statement of the function (or of a branch in tail position), or use `if .. else`");
    return curFn_ ? curFn_->retTy : T.error();
  }
  if (!unify(T, curFn_->retTy, v)) mismatch(e.kids[0]->span, curFn_->retTy, v, " (the result of `" + curFn_->name + "`)");
  return curFn_->retTy;
}

}  // namespace eph::ephapax::checking
