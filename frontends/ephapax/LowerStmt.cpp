// Lowering of Ephapax statements: the analyses the lowering of `var`,
// assignment, `if`, `for` and `while` needs (Lower.cpp builds the IR).
//
// A `var` is an SSA value re-bound by each assignment; a branch or loop that
// assigns a `var` declared outside it carries the var's value out as one of
// its results (a yielded value of `if`/`match`, a loop-carried value of
// `for`/`while`). assignedVars() finds those vars.
#include "frontends/ephapax/Lower.h"
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

void forEachChild(const Expr& e, const std::function<void(const Expr&)>& f) {
  for (const auto& k : e.kids)
    if (k) f(*k);
  for (const auto& g : e.grid)
    if (g) f(*g);
  for (const Arm& a : e.arms) {
    if (a.guard) f(*a.guard);
    if (a.body) f(*a.body);
  }
}

void assignedVars(const Expr& e, std::set<const Binding*>& out) {
  if (e.kind == ExprKind::Assign && e.binding) out.insert(e.binding);
  // A lambda or an inline kernel cannot assign the host's vars (the checker
  // rejects it); their bodies are separate functions.
  if (e.kind == ExprKind::Lambda || (e.kind == ExprKind::Dispatch && e.name.empty())) return;
  forEachChild(e, [&](const Expr& k) { assignedVars(k, out); });
}

bool containsReturn(const Expr& e) {
  if (e.kind == ExprKind::Return) return true;
  if (e.kind == ExprKind::Lambda || e.kind == ExprKind::Dispatch) return false;
  bool found = false;
  forEachChild(e, [&](const Expr& k) { found = found || containsReturn(k); });
  return found;
}

}  // namespace eph::ephapax::lowering

// ---- Lowerer methods: statements: var, assignment, for, while ----------

namespace eph::ephapax::lowering {

// The env_ entries of the vars in `assigned` that carry a value out of a loop.
std::vector<size_t> Lowerer::carriedVars(const std::set<const Binding*>& assigned) {
  std::vector<size_t> out;
  for (size_t i = 0; i < env_.size(); ++i)
    if (env_[i].b && assigned.count(env_[i].b) && !owns(env_[i].v->type())) out.push_back(i);
  return out;
}

Value* Lowerer::lowerStatement(Expr& e, bool tail) {
  auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
  auto rest = [&](size_t k) { return tail ? lowerTail(*e.kids[k]) : lowerExpr(*e.kids[k]); };
  switch (e.kind) {
    case ExprKind::VarDecl: {
      Value* v = lowerExpr(*e.kids[0]);
      if (e.binding) v = coerce(v, lowerTy(e.binding->ty), e.kids[0]->span);
      setLoc(e.span);
      if (owns(v->type())) unsupported(e.span, "code generation does not support a `var` holding a value that owns memory");
      size_t mark = env_.size();
      env_.push_back(LBinding{LBinding::Plain, e.binding, v});
      if (v->name().empty()) v->setName(e.name);
      Value* r = e.kids.size() > 1 ? rest(1) : value(unit());
      endScope(mark);
      return r;
    }
    case ExprKind::Assign: {
      LBinding* lb = e.binding ? lookup(e.binding) : nullptr;
      Value* v = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      if (!lb) {
        unsupported(e.span, "internal error: `" + e.name + "` is not a var in scope in the lowering");
        dropValue(v);
        return value(unit());
      }
      v = coerce(v, lb->v->type(), e.kids[0]->span);
      if (v->name().empty()) v->setName(e.name);
      lb->v = v;
      return value(unit());
    }
    case ExprKind::IndexAssign: {
      Value* temp = nullptr;
      Value* buf = lowerBorrowOrTemp(*e.kids[0], temp);
      Value* i = lowerExpr(*e.kids[1]);
      Value* v = lowerExpr(*e.kids[2]);
      setLoc(e.span);
      if (!buf->type()->isBuffer()) {
        unsupported(e.span, "code generation can store only into a buffer or a workgroup array");
        return value(unit());
      }
      v = coerce(v, buf->type()->elem(), e.kids[2]->span);
      setLoc(e.span);
      b_.store(buf, i, v);
      if (temp) dropValue(temp);
      return value(unit());
    }
    case ExprKind::For: lowerFor(e); return value(unit());
    case ExprKind::While: lowerWhile(e); return value(unit());
    case ExprKind::Workgroup: {
      auto it = workgroupArrays_.find(&e);
      if (it == workgroupArrays_.end() || !e.binding) {
        unsupported(e.span, "code generation supports workgroup arrays only in kernels", "E212");
        return e.kids.empty() ? value(unit()) : rest(0);
      }
      size_t mark = env_.size();
      env_.push_back(LBinding{LBinding::Plain, e.binding, it->second});
      Value* r = e.kids.empty() ? value(unit()) : rest(0);
      endScope(mark);
      return r;
    }
    default: break;
  }
  return value(fabricate(lowerTy(e.ty)));
}

// `for i in a..b { body }`: an IR `for` carrying the vars the body assigns.
void Lowerer::lowerFor(Expr& e) {
  Value* lo = lowerExpr(*e.kids[0]);
  Value* hi = lowerExpr(*e.kids[1]);
  setLoc(e.span);
  const ir::Type* it = lo->type();
  if (!it->isInt()) {
    unsupported(e.span, "code generation supports `for` over integer ranges only");
    return;
  }
  hi = coerce(hi, it, e.kids[1]->span);
  std::set<const Binding*> assigned;
  assignedVars(*e.kids[2], assigned);
  std::vector<size_t> carried = carriedVars(assigned);
  Value* step = b_.constInt(it, 1);
  std::vector<Value*> inits;
  for (size_t i : carried) inits.push_back(env_[i].v);
  ir::Op* loop = b_.forOp(lo, hi, step, inits, [&](ir::Builder&, Value* iv, const ir::Values& acc) {
    iv->setName(e.name);
    for (size_t j = 0; j < carried.size(); ++j) {
      acc[j]->setName(env_[carried[j]].b->name);
      env_[carried[j]].v = acc[j];
    }
    size_t mark = env_.size();
    if (e.binding) env_.push_back(LBinding{LBinding::Plain, e.binding, iv});
    lowerAndDrop(*e.kids[2]);
    endScope(mark);
    setLoc(e.span);
    std::vector<Value*> next;
    for (size_t i : carried) next.push_back(env_[i].v);
    return next;
  });
  for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = loop->result(static_cast<unsigned>(j));
}

// `while c { body }`: an IR `while` carrying the vars the loop assigns.
void Lowerer::lowerWhile(Expr& e) {
  std::set<const Binding*> assigned;
  assignedVars(*e.kids[0], assigned);
  assignedVars(*e.kids[1], assigned);
  std::vector<size_t> carried = carriedVars(assigned);
  std::vector<Value*> init;
  for (size_t i : carried) init.push_back(env_[i].v);
  setLoc(e.span);
  auto bindCarried = [&](const ir::Values& args) {
    for (size_t j = 0; j < carried.size(); ++j) {
      args[j]->setName(env_[carried[j]].b->name);
      env_[carried[j]].v = args[j];
    }
  };
  auto current = [&] {
    std::vector<Value*> vs;
    for (size_t i : carried) vs.push_back(env_[i].v);
    return vs;
  };
  auto cond = [&](ir::Builder&, const ir::Values& args) {
    bindCarried(args);
    size_t mark = env_.size();
    Value* c = coerce(lowerExpr(*e.kids[0]), ctx_.boolType(), e.kids[0]->span);
    endScope(mark);
    setLoc(e.span);
    std::vector<Value*> ops = {c};
    for (Value* v : current()) ops.push_back(v);
    return ops;
  };
  auto body = [&](ir::Builder&, const ir::Values& args) {
    bindCarried(args);
    size_t mark = env_.size();
    lowerAndDrop(*e.kids[1]);
    endScope(mark);
    setLoc(e.span);
    return current();
  };
  ir::Op* w = b_.whileOp(init, cond, body);
  for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = w->result(static_cast<unsigned>(j));
}

// A buffer or list to read without consuming it: a variable is borrowed; a
// temporary (`d2h(b)[i]`) is returned in `temp` for the caller to free.
Value* Lowerer::lowerBorrowOrTemp(Expr& e, Value*& temp) {
  if (e.kind == ExprKind::Borrow) return lowerBorrowOf(*e.kids[0]);
  if (e.kind == ExprKind::Var && e.binding) return lowerBorrowOf(e);
  pendingList_ = false;
  Value* v = listView(lowerExpr(e), e.ty);
  pendingList_ = false;
  if (owns(v->type())) temp = v;
  return v;
}

}  // namespace eph::ephapax::lowering
