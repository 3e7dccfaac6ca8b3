// Pass 2 of the checker: the linear and affine rules, one small function per
// rule (the rule is written beside it). The state says, for every binding in
// scope, whether it has been consumed and where. Branches are checked from the
// same starting state and must agree on the `let!` / linear bindings they
// consume; afterwards a binding consumed in any branch counts as consumed.
#include <algorithm>
#include <functional>

#include "frontends/ephapax/Checker.h"

namespace eph::ephapax {

namespace {
bool mentionsParam(Ty* t, unsigned depth = 0) {
  t = resolve(t);
  if (!t || depth > 40) return false;
  if (t->kind == Ty::Param && !t->regionVar) return true;
  if (t->kind == Ty::Ref || t->kind == Ty::Fn) return false;
  for (Ty* x : t->args)
    if (mentionsParam(x, depth + 1)) return true;
  return false;
}
}  // namespace

Usage usageOf(Checked& c, const Binding& b) {
  if (b.origin == Binding::LetBang) return Usage::ExactlyOnce;
  if (b.origin == Binding::HandlerParam) return Usage::Free;
  bool linear = isLinear(c.types, b.ty);
  bool affine = isAffine(c.types, b.ty) || mentionsParam(b.ty);
  if (b.origin == Binding::Let) return linear || affine ? Usage::AtMostOnce : Usage::Free;
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
    Usage u = usageOf(c_, b);
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
    Usage u = usageOf(c_, b);
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
    if (firstRegion(b.ty, &region) >= 0)
      diags_.error("E004", b.span, "linear value `" + b.name + "` is not consumed before region `" + region + "` ends",
                   "consume it inside the region (pass it on, or `drop(" + b.name + ")`)");
    else
      diags_.error("E001", b.span, std::string(b.origin == Binding::LetBang ? "`let!` binding" : "linear value") + " `" +
                                       b.name + "` is never consumed",
                   b.origin == Binding::LetBang ? "use `" + b.name + "` exactly once, or bind it with `let` if it may be dropped"
                                                : "use it exactly once, or release it with `drop(" + b.name + ")`");
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

  // ---- the walk ---------------------------------------------------------------------

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

  void walk(Expr& e) {
    switch (e.kind) {
      case ExprKind::Var:
        if (e.binding) ruleUseOnce(*e.binding, e.span);
        return;
      case ExprKind::Borrow:
        if (e.kids[0]->kind == ExprKind::Var && e.kids[0]->binding) ruleBorrowLive(*e.kids[0]->binding, e.kids[0]->span);
        else walk(*e.kids[0]);
        return;
      case ExprKind::Let: {
        walk(*e.kids[0]);
        if (e.bval) ruleLetBangNoWildcard(*e.pat, e.span);
        std::vector<Binding*> bs;
        declarePattern(*e.pat, bs);
        if (e.kids.size() > 1) walk(*e.kids[1]);
        endScope(bs);
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
