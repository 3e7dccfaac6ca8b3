// Pass 2 of the checker: the linear and affine rules, one small function per
// rule (the rule is written beside it). The state says, for every binding in
// scope, whether it has been consumed and where. Branches are checked from the
// same starting state and must agree on the `let!` / linear bindings they
// consume; afterwards a binding consumed in any branch counts as consumed.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <set>

#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/Lower.h"

namespace eph::ephapax {

namespace {
// A type parameter that is not numeric (a numeric one stands for a number).
bool mentionsParam(const Checked& c, Ty* t, unsigned depth = 0) {
  t = resolve(t);
  if (!t || depth > 40) return false;
  if (t->kind == Ty::Param && !t->regionVar) return !c.numericParams.count(t->id);
  if (t->kind == Ty::Ref || t->kind == Ty::Fn) return false;
  for (Ty* x : t->args)
    if (mentionsParam(c, x, depth + 1)) return true;
  return false;
}
}  // namespace

namespace {
// A value that even a plain `let` must consume: a GPUBuffer<T>! (outside
// affine mode) or a Future<T>.
bool mustConsume(Checked& c, Ty* t) {
  Ty* r = resolve(t);
  if (!r) return false;
  if (r->kind == Ty::Future) return true;
  if (r->kind == Ty::Gpu) return r->gpu == Ty::Linear && !c.affineMode;
  if (r->kind == Ty::Tuple)
    for (Ty* x : r->args)
      if (mustConsume(c, x)) return true;
  return false;
}
}  // namespace

Usage usageOf(Checked& c, const Binding& b) {
  if (b.origin == Binding::Mutable) return Usage::Free;
  if (b.origin == Binding::LetBang) {
    // --mode affine: a `let!` of an owned GPU buffer may be dropped (freed).
    if (c.affineMode && isLinear(c.types, b.ty) && !isLinear(c.types, b.ty, true)) return Usage::AtMostOnce;
    return Usage::ExactlyOnce;
  }
  if (b.origin == Binding::HandlerParam) return Usage::Free;
  bool linear = isLinear(c.types, b.ty, c.affineMode);
  bool affine = isAffine(c.types, b.ty, c.affineMode) || mentionsParam(c, b.ty);
  if (b.origin == Binding::Let) {
    if (mustConsume(c, b.ty)) return Usage::ExactlyOnce;
    return linear || affine ? Usage::AtMostOnce : Usage::Free;
  }
  if (linear) return Usage::ExactlyOnce;
  return affine ? Usage::AtMostOnce : Usage::Free;
}

namespace {

std::string at(Span s) { return std::to_string(s.line) + ":" + std::to_string(s.col); }

class OwnershipChecker {
 public:
  OwnershipChecker(Checked& c, DiagSink& d) : c_(c), diags_(d) {}

  void checkFn(FnDecl& f) {
    state_.assign(c_.bindings.size(), St{});
    scope_.clear();
    lambdaDepth_ = 0;
    kernelScope_ = SIZE_MAX;
    gpuFn_ = f.gpuRole != FnDecl::NotGpu;
    for (Param& p : f.params) declare(p.binding);
    walk(*f.body);
    for (Param& p : f.params) ruleConsumedAtScopeEnd(*p.binding);
  }

 private:
  struct St {
    bool consumed = false;
    Span at;
  };
  Checked& c_;
  DiagSink& diags_;
  std::vector<St> state_;
  std::vector<Binding*> scope_;
  unsigned lambdaDepth_ = 0;
  bool gpuFn_ = false;  // checking a @gpu function (kernel or launcher)

  // GENERIC GPU VALUES. In a @gpu function a type parameter stands for a
  // buffer element type or another plain value (callers may not instantiate
  // it with a linear or affine type: ruleGpuTypeArgsPlain), so a value whose
  // type is affine only because it mentions a type parameter is used freely
  // there, kernel code included. Elsewhere usageOf decides.
  Usage usage(const Binding& b) {
    Usage u = usageOf(c_, b);
    if (u == Usage::AtMostOnce && gpuFn_ && b.origin != Binding::LetBang && !isLinear(c_.types, b.ty, c_.affineMode) &&
        !isAffine(c_.types, b.ty, c_.affineMode))
      return Usage::Free;
    return u;
  }

  // GPU TYPE ARGUMENTS. A type parameter of a @gpu function is a plain value
  // there (see usage), so a use of the function may not instantiate it with a
  // linear or affine type (E101).
  void ruleGpuTypeArgsPlain(const Expr& e) {
    if (e.binding || e.refKind != Expr::Fn || e.global < 0 || e.inst.empty()) return;
    const FnDecl& g = *c_.prog.fns[e.global];
    if (g.gpuRole == FnDecl::NotGpu) return;
    for (size_t i = 0; i < e.inst.size() && i < g.typeParamTys.size(); ++i) {
      if (g.typeParamTys[i]->regionVar) continue;
      Ty* t = e.inst[i];
      if (!isLinear(c_.types, t, c_.affineMode) && !isAffine(c_.types, t, c_.affineMode)) continue;
      diags_.error("E101", e.span,
                   "type parameter `" + g.typeParamTys[i]->name + "` of @gpu function `" + g.name +
                       "` stands for a buffer element or another plain value, not the " +
                       (isLinear(c_.types, t, c_.affineMode) ? "linear" : "affine") + " type " + show(t),
                   "pass owned buffers as `GPUBuffer<T>!` parameters");
      return;
    }
  }

  void declare(Binding* b) {
    if (!b) return;
    if (static_cast<size_t>(b->id) >= state_.size()) state_.resize(b->id + 1);
    state_[b->id] = St{};
    scope_.push_back(b);
  }
  void declarePattern(Pattern& p, std::vector<Binding*>& out) {
    if (p.binding) {
      declare(p.binding);
      out.push_back(p.binding);
    }
    for (auto& a : p.args) declarePattern(*a, out);
  }
  void endScope(const std::vector<Binding*>& bs) {
    for (Binding* b : bs) ruleConsumedAtScopeEnd(*b);
    scope_.resize(scope_.size() - bs.size());
  }

  // ---- rules -------------------------------------------------------------------

  // CAPTURE. A lambda may be called any number of times, so it may not use a
  // `let!` binding or a linear/affine value from outside it (E009).
  bool ruleNoLinearCapture(const Binding& b, Span s, Usage u) {
    if (b.lambdaDepth >= lambdaDepth_ || u == Usage::Free) return true;
    diags_.error("E009", s, "the lambda captures `" + b.name + "`, which must be used " +
                                (u == Usage::ExactlyOnce ? "exactly once" : "at most once"),
                 "pass `" + b.name + "` to the lambda as a parameter instead");
    return false;
  }

  // USE. Using a binding by value consumes it; a `let!` binding or a value of
  // a linear type may be consumed only once (E002).
  void ruleUseOnce(Binding& b, Span s) {
    Usage u = usage(b);
    if (!ruleNoLinearCapture(b, s, u) || u == Usage::Free) return;
    St& st = state_[b.id];
    if (st.consumed) {
      diags_.error("E002", s, "`" + b.name + "` is used after it was consumed",
                   "it was consumed at " + at(st.at) +
                       (b.origin == Binding::LetBang ? "; a `let!` binding is used exactly once" : "; a linear value is used at most once"));
      return;
    }
    st.consumed = true;
    st.at = s;
  }

  // BORROW. `&x` and `&mut x` do not consume x, but x must still be there (E002).
  void ruleBorrowLive(Binding& b, Span s) {
    Usage u = usage(b);
    if (!ruleNoLinearCapture(b, s, u) || u == Usage::Free) return;
    const St& st = state_[b.id];
    if (st.consumed)
      diags_.error("E002", s, "`" + b.name + "` is borrowed after it was consumed", "it was consumed at " + at(st.at));
  }

  // EXACTLY ONCE. A `let!` binding, and a parameter or pattern variable of a
  // linear type, must be consumed before its scope ends (E001; E004 when it
  // lives in a region, whose end it does not reach).
  void ruleConsumedAtScopeEnd(const Binding& b) {
    if (usageOf(c_, b) != Usage::ExactlyOnce || state_[b.id].consumed) return;
    std::string region;
    if (firstRegion(b.ty, &region) >= 0 && isOwnedGpu(b.ty))
      diags_.error("E004", b.span, "GPU buffer `" + b.name + "` is not consumed before region `" + region + "` ends",
                   "consume it inside the region (dispatch it, `free_gpu(" + b.name + ")` or `d2h(" + b.name + ")`)");
    else if (firstRegion(b.ty, &region) >= 0)
      diags_.error("E004", b.span, "linear value `" + b.name + "` is not consumed before region `" + region + "` ends",
                   "consume it inside the region (pass it on, or `drop(" + b.name + ")`)");
    else
      diags_.error("E001", b.span, std::string(b.origin == Binding::LetBang ? "`let!` binding" : "linear value") + " `" +
                                       b.name + "` is never consumed",
                   consumeHint(b));
  }

  // How to consume b. A GPU buffer must be consumed even when bound with
  // `let`, so that is no way out for it.
  std::string consumeHint(const Binding& b) {
    if (isOwnedGpu(b.ty))
      return "consume `" + b.name + "` exactly once: `free_gpu(" + b.name + ")`, `d2h(" + b.name +
             ")`, or pass it on (to a function, or a dispatch that takes it); `--mode affine` lets the compiler free it";
    if (b.origin == Binding::LetBang) return "use `" + b.name + "` exactly once, or bind it with `let` if it may be dropped";
    return "use it exactly once, or release it with `drop(" + b.name + ")`";
  }

  // BRANCHES AGREE. Only one branch runs, so every branch must consume the
  // same outer `let!`/linear bindings (E005).
  void ruleBranchesAgree(const Expr& e, const std::vector<std::vector<St>>& branches, size_t nScope,
                         const std::vector<std::string>& names) {
    for (size_t i = 0; i < nScope; ++i) {
      Binding& b = *scope_[i];
      if (state_[b.id].consumed) continue;
      int consumer = -1, keeper = -1;
      for (size_t k = 0; k < branches.size(); ++k) {
        bool cns = branches[k][b.id].consumed;
        if (cns && consumer < 0) consumer = static_cast<int>(k);
        if (!cns && keeper < 0) keeper = static_cast<int>(k);
      }
      if (consumer < 0) continue;
      if (keeper >= 0 && usageOf(c_, b) == Usage::ExactlyOnce)
        diags_.error("E005", e.span, "`" + b.name + "` is consumed in " + names[consumer] + " but not in " + names[keeper],
                     "every branch must consume the same linear values; consume `" + b.name + "` in each branch");
      state_[b.id] = branches[consumer][b.id];
    }
  }

  // COPY / DROP. `copy` only of non-linear values (E007); `drop` only of
  // linear ones (E008).
  void ruleCopyDrop(const Expr& e) {
    Ty* t = e.kids[0]->ty;
    bool linear = isLinear(c_.types, t);
    if (e.kind == ExprKind::Copy && linear)
      diags_.error("E007", e.span, "cannot copy a value of the linear type " + show(t),
                   "linear values are never duplicated; borrow it with `&` to read it twice");
    if (e.kind == ExprKind::Drop && !linear)
      diags_.error("E008", e.span, "`drop` of a value of the non-linear type " + show(t),
                   "only linear values are dropped; a non-linear value can simply go unused (bind it with `let`)");
  }

  // PROJECTION. fst/snd may not discard a linear component (E001).
  void ruleProjectionKeepsLinear(const Expr& e) {
    Ty* t = resolve(e.kids[0]->ty);
    if (!t || t->kind != Ty::Tuple || t->args.size() != 2) return;
    Ty* other = t->args[e.kind == ExprKind::Fst ? 1 : 0];
    if (isLinear(c_.types, other))
      diags_.error("E001", e.span, std::string(e.kind == ExprKind::Fst ? "fst" : "snd") + " discards the linear " +
                                       (e.kind == ExprKind::Fst ? "second" : "first") + " component of type " + show(other),
                   "take the pair apart with `let (a, b) = ...` and consume both parts");
  }

  // PROJECTION. `.N` / `.field` may not discard a linear field (E001).
  void ruleMemberKeepsLinear(const Expr& e) {
    Ty* t = resolve(e.kids[0]->ty);
    if (Ty* ex = expandAlias(c_.types, t)) t = resolve(ex);
    std::vector<Ty*> fields;
    size_t index = 0;
    if (t->kind == Ty::Tuple && e.bval) {
      fields = t->args;
      index = static_cast<size_t>(e.ival);
    } else if (t->kind == Ty::Named && t->decl->kind == TypeDecl::Record && !e.bval) {
      fields = recordFields(c_.types, t);
      auto& names = t->decl->fieldNames;
      index = std::find(names.begin(), names.end(), e.name) - names.begin();
    }
    for (size_t i = 0; i < fields.size(); ++i)
      if (i != index && isLinear(c_.types, fields[i])) {
        diags_.error("E001", e.span, "this projection discards a linear field of type " + show(fields[i]),
                     "take the value apart with a pattern and consume every linear part");
        return;
      }
  }

  // LET! PATTERNS. `let! (a, _) = e` would discard a part it promised to use
  // (E001, at the `let!`).
  void ruleLetBangNoWildcard(const Pattern& p, Span letSpan) {
    if (p.kind == Pattern::Wild)
      diags_.error("E001", letSpan, "`_` in a `let!` pattern discards a value that must be used exactly once",
                   "bind it to a name and use it");
    for (auto& a : p.args) ruleLetBangNoWildcard(*a, letSpan);
  }

  template <class F>
  void branches(const Expr& e, size_t n, std::vector<std::string> names, F&& each) {
    size_t nScope = scope_.size();
    std::vector<St> start = state_;
    std::vector<std::vector<St>> results;
    for (size_t k = 0; k < n; ++k) {
      state_ = start;
      each(k);
      results.push_back(state_);
    }
    state_ = start;
    ruleBranchesAgree(e, results, nScope, names);
  }

  // Inside an inline dispatch body: the scope size at its start (bindings
  // below it are the host's).
  size_t kernelScope_ = SIZE_MAX;

  bool linearHere(Ty* t) { return isLinear(c_.types, t, c_.affineMode); }

  // DISCARD. `e;` throws e's value away: a linear one would leak (E001).
  void ruleDiscardNotLinear(const Expr& e) {
    if (!e.ty || !linearHere(e.ty)) return;
    diags_.error("E001", e.span, "this linear value of type " + show(e.ty) + " is discarded by `;`",
                 "bind it with `let!` and consume it, or pass it to a function that does");
  }

  // KERNEL CAPTURE. Kernel code borrows the owned GPU buffers it mentions
  // (E002 if already consumed); any other linear host value is E210.
  bool ruleKernelMention(Binding& b, Span s) {
    if (kernelScope_ == SIZE_MAX) return false;
    bool outer = false;
    for (size_t i = 0; i < kernelScope_ && i < scope_.size(); ++i) outer |= scope_[i] == &b;
    if (!outer) return false;
    if (isOwnedGpu(b.ty)) {
      ruleBorrowLive(b, s);
      return true;
    }
    if (usage(b) != Usage::Free)
      diags_.error("E210", s, "kernel code cannot use the linear host value `" + b.name + "` (" + show(b.ty) + ")",
                   "only GPU buffers (borrowed) and plain values cross into a kernel");
    return true;
  }

  // LOOPS. A loop body runs many times: it may not consume a linear binding
  // from outside the loop (E002).
  void ruleLoopKeepsOuter(size_t nScope, const std::vector<St>& before) {
    for (size_t i = 0; i < nScope; ++i) {
      Binding& b = *scope_[i];
      if (usage(b) == Usage::Free || before[b.id].consumed || !state_[b.id].consumed) continue;
      diags_.error("E002", state_[b.id].at, "`" + b.name + "` is consumed inside a loop, once per iteration",
                   "consume it after the loop, or borrow it with `&" + b.name + "`");
    }
  }

  // WRITES NEED `&mut`. A kernel that stores into a buffer parameter (or
  // updates it atomically, or passes it to a device function that does) is
  // dispatched with `&mut b` or the owned buffer, never a read borrow (E220).
  void ruleKernelWritesNeedMut(const Expr& dispatch) {
    auto it = c_.fnIndex.find(dispatch.name);
    if (it == c_.fnIndex.end()) return;
    const FnDecl& k = *c_.prog.fns[it->second];
    if (!k.body) return;
    for (size_t i = 0; i < dispatch.kids.size() && i < k.params.size(); ++i) {
      const Expr& arg = *dispatch.kids[i];
      if (!readOnly(arg)) continue;
      std::set<std::pair<const FnDecl*, size_t>> seen;
      if (!lowering::writesThrough(c_, *k.body, k.params[i].binding, seen)) continue;
      const Expr& named = arg.kind == ExprKind::Borrow ? *arg.kids[0] : arg;
      std::string what = named.kind == ExprKind::Var ? "`&mut " + named.name + "`" : "a `&mut` borrow";
      Span at = arg.span;  // `&b` as a whole
      if (&named != &arg && named.span.line == at.line && named.span.col > at.col) at.len = named.span.col + named.span.len - at.col;
      diags_.error("E220", at,
                   "kernel `" + k.name + "` writes its parameter `" + k.params[i].name + "`, but this is a read borrow",
                   "pass " + what + " (or the owned buffer) so that the kernel may write it");
    }
  }
  // An inline kernel that stores into a captured read borrow (E220).
  void ruleInlineWritesNeedMut(const Expr& dispatch) {
    std::vector<const Binding*> used;
    lowering::referencedBindings(*dispatch.kids[0], used);
    for (const Binding* b : used) {
      Ty* t = resolve(b->ty);
      if (!t || t->kind != Ty::Ref || t->mut || resolve(t->args[0])->kind != Ty::Gpu) continue;
      std::set<std::pair<const FnDecl*, size_t>> seen;
      if (lowering::writesThrough(c_, *dispatch.kids[0], b, seen))
        diags_.error("E220", dispatch.span, "this kernel writes `" + b->name + "`, a read borrow (" + show(b->ty) + ")",
                     "take the buffer as `&mut` to write it");
    }
  }
  // A read-only buffer argument: `&b`, or a binding of type &GPUBuffer<..>.
  static bool readOnly(const Expr& arg) {
    if (arg.kind == ExprKind::Borrow) return !arg.bval;
    Ty* t = resolve(arg.ty);
    return t && t->kind == Ty::Ref && !t->mut;
  }

  // LEN READS. `len(b)` of a binding reads it, as `len(&b)` does: it does not
  // consume b (so a `let!` buffer still has to be consumed afterwards).
  bool ruleLenBorrows(const Expr& call) {
    if (call.builtin != Expr::Len || call.kids.size() != 2) return false;
    const Expr& arg = *call.kids[1];
    if (arg.kind != ExprKind::Var || !arg.binding) return false;
    if (!ruleKernelMention(*arg.binding, arg.span)) ruleBorrowLive(*arg.binding, arg.span);
    return true;
  }

  // ---- the walk ---------------------------------------------------------------------

  // A run of Let / Seq / VarDecl / Workgroup (a block), walked in a loop.
  void walkChain(Expr& first) {
    std::vector<std::vector<Binding*>> opened;
    Expr* e = &first;
    while (true) {
      std::vector<Binding*> bs;
      if (e->kind == ExprKind::Let) {
        walk(*e->kids[0]);
        if (e->bval) ruleLetBangNoWildcard(*e->pat, e->span);
        declarePattern(*e->pat, bs);
      } else if (e->kind == ExprKind::Seq) {
        ruleDiscardNotLinear(*e->kids[0]);
        walk(*e->kids[0]);
      } else if (e->kind == ExprKind::VarDecl) {
        walk(*e->kids[0]);
        if (e->binding) declare(e->binding), bs.push_back(e->binding);
      } else if (e->kind == ExprKind::Workgroup) {
        if (e->binding) declare(e->binding), bs.push_back(e->binding);
      } else {
        walkOne(*e);
        break;
      }
      opened.push_back(std::move(bs));
      if (e->kids.size() < (e->kind == ExprKind::Workgroup ? 1u : 2u)) break;
      e = e->kids.back().get();
    }
    for (size_t i = opened.size(); i-- > 0;) endScope(opened[i]);
  }

  static bool isChain(const Expr& e) {
    return e.kind == ExprKind::Let || e.kind == ExprKind::Seq || e.kind == ExprKind::VarDecl || e.kind == ExprKind::Workgroup;
  }

  void walk(Expr& e) {
    if (isChain(e)) walkChain(e);
    else walkOne(e);
  }

  void walkLoopBody(Expr& body, std::vector<Binding*> bs) {
    size_t nScope = scope_.size() - bs.size();
    std::vector<St> before = state_;
    walk(body);
    endScope(bs);
    ruleLoopKeepsOuter(nScope, before);
  }

  void walkOne(Expr& e) {
    switch (e.kind) {
      case ExprKind::Var:
        ruleGpuTypeArgsPlain(e);
        if (e.binding && ruleKernelMention(*e.binding, e.span)) return;
        if (e.binding) ruleUseOnce(*e.binding, e.span);
        return;
      case ExprKind::Borrow:
        if (e.kids[0]->kind == ExprKind::Var && e.kids[0]->binding) {
          if (!ruleKernelMention(*e.kids[0]->binding, e.kids[0]->span)) ruleBorrowLive(*e.kids[0]->binding, e.kids[0]->span);
        } else {
          walk(*e.kids[0]);
        }
        return;
      case ExprKind::While:
        walk(*e.kids[0]);
        walkLoopBody(*e.kids[1], {});
        return;
      case ExprKind::For: {
        walk(*e.kids[0]);
        walk(*e.kids[1]);
        std::vector<Binding*> bs;
        if (e.binding) declare(e.binding), bs.push_back(e.binding);
        walkLoopBody(*e.kids[2], bs);
        return;
      }
      case ExprKind::Dispatch: {
        for (auto& g : e.grid) walk(*g);
        if (!e.name.empty()) {
          for (auto& k : e.kids) walk(*k);
          ruleKernelWritesNeedMut(e);
          return;
        }
        ruleInlineWritesNeedMut(e);
        size_t outer = kernelScope_;
        if (kernelScope_ == SIZE_MAX) kernelScope_ = scope_.size();
        unsigned lambdas = lambdaDepth_;
        walk(*e.kids[0]);
        lambdaDepth_ = lambdas;
        kernelScope_ = outer;
        return;
      }
      case ExprKind::Region:
        for (auto& k : e.kids) walk(*k);
        return;
      case ExprKind::Let: {
        walkChain(e);
        return;
      }

      case ExprKind::Lambda: {
        ++lambdaDepth_;
        std::vector<Binding*> bs;
        for (Param& p : e.params)
          if (p.binding) declare(p.binding), bs.push_back(p.binding);
        walk(*e.kids[0]);
        endScope(bs);
        --lambdaDepth_;
        return;
      }
      case ExprKind::If:
        walk(*e.kids[0]);
        branches(e, 2, {"the then-branch", "the else-branch"}, [&](size_t k) { walk(*e.kids[k + 1]); });
        return;
      case ExprKind::Match: {
        walk(*e.kids[0]);
        std::vector<std::string> names;
        for (size_t k = 0; k < e.arms.size(); ++k) names.push_back("arm " + std::to_string(k + 1));
        branches(e, e.arms.size(), names, [&](size_t k) {
          Arm& a = e.arms[k];
          std::vector<Binding*> bs;
          declarePattern(*a.pat, bs);
          if (a.guard) walk(*a.guard);
          walk(*a.body);
          endScope(bs);
        });
        return;
      }
      case ExprKind::Case:
        walk(*e.kids[0]);
        branches(e, 2, {"the inl arm", "the inr arm"}, [&](size_t k) {
          std::vector<Binding*> bs;
          if (Binding* b = e.caseBindings[k]) declare(b), bs.push_back(b);
          walk(*e.kids[k + 1]);
          endScope(bs);
        });
        return;
      case ExprKind::Handle: {
        walk(*e.kids[0]);
        std::vector<std::string> names;
        for (Arm& a : e.arms) names.push_back("the handler `" + a.name + "`");
        branches(e, e.arms.size(), names, [&](size_t k) {
          Arm& a = e.arms[k];
          std::vector<Binding*> bs;
          for (Param& p : a.params)
            if (p.binding) declare(p.binding), bs.push_back(p.binding);
          walk(*a.body);
          endScope(bs);
        });
        return;
      }
      case ExprKind::Fst:
      case ExprKind::Snd:
        ruleProjectionKeepsLinear(e);
        walk(*e.kids[0]);
        return;
      case ExprKind::Member:
        ruleMemberKeepsLinear(e);
        walk(*e.kids[0]);
        return;
      case ExprKind::Call:
        if (ruleLenBorrows(e)) return;
        for (auto& k : e.kids) walk(*k);
        return;
      case ExprKind::Copy:
      case ExprKind::Drop:
        ruleCopyDrop(e);
        walk(*e.kids[0]);
        return;
      default:
        for (auto& k : e.kids) walk(*k);
        return;
    }
  }
};

}  // namespace

bool checkOwnership(Checked& c, DiagSink& diags) {
  size_t before = diags.size();
  OwnershipChecker oc(c, diags);
  for (auto& f : c.prog.fns)
    if (f->body && f->checkedOk) oc.checkFn(*f);
  return diags.size() == before;
}

}  // namespace eph::ephapax
