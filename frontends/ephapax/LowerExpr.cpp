// Lowering of checked Ephapax to the IR: expressions.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

Value* Lowerer::lowerExpr(Expr& e) {
  Loc saved = curLoc_;
  setLoc(e.span);
  Value* v = lowerKind(e, false);
  setLoc(Span{saved.line, saved.col, 1});
  curLoc_ = saved;
  b_.setLoc(saved);
  return v;
}

// Tail position of a function lowered as a loop: returns sum<args, result>.
Value* Lowerer::lowerTail(Expr& e) {
  Loc saved = curLoc_;
  setLoc(e.span);
  Value* v = lowerKind(e, true);
  curLoc_ = saved;
  b_.setLoc(saved);
  return v;
}

Value* Lowerer::finishTail(Value* v, Span s) {
  const ir::Type* rt = loopSum_->members()[1];
  v = coerce(v, rt, s);
  return b_.sumMake(loopSum_, 1, v);
}

Value* Lowerer::lowerKind(Expr& e, bool tail) {
  const ir::Type* ty = tail ? loopSum_ : lowerTy(e.ty);
  auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
  switch (e.kind) {
    case ExprKind::IntLit: return value(coerce(intLiteral(primOf(e.ty), e.ival), lowerTy(e.ty), e.span));
    case ExprKind::FloatLit: return value(coerce(b_.constFloat(primOf(e.ty), e.fval), lowerTy(e.ty), e.span));
    case ExprKind::BoolLit: return value(b_.constBool(e.bval));
    case ExprKind::Unit: return value(b_.op("struct.make", {}, ctx_.unitType()));
    case ExprKind::StrLit: return value(newString(e.name));
    case ExprKind::StrNew: return value(newString(e.kids[0]->name));
    case ExprKind::Var: return value(lowerVar(e));
    case ExprKind::Let: {
      Value* v = lowerExpr(*e.kids[0]);
      size_t mark = env_.size();
      setLoc(e.span);
      bindPattern(*e.pat, v, e.bval);
      Value* r = e.kids.size() > 1 ? (tail ? lowerTail(*e.kids[1]) : lowerExpr(*e.kids[1]))
                                   : value(b_.op("struct.make", {}, ctx_.unitType()));
      setLoc(e.span);
      endScope(mark);
      return r;
    }
    case ExprKind::Seq:
      lowerAndDrop(*e.kids[0]);
      return tail ? lowerTail(*e.kids[1]) : lowerExpr(*e.kids[1]);
    case ExprKind::Region: {
      if (tail || !issuesDeviceWork(c_, *e.kids[0])) return tail ? lowerTail(*e.kids[0]) : lowerExpr(*e.kids[0]);
      // A region is one submission: its end waits for the device work.
      Value* v = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      b_.wait();
      return v;
    }
    case ExprKind::If: {
      Value* c = lowerExpr(*e.kids[0]);
      std::set<const Binding*> assigned;
      assignedVars(*e.kids[1], assigned);
      assignedVars(*e.kids[2], assigned);
      auto savedCarry = carry_;
      carry_ = &assigned;
      // An `if` of type () (a statement) has no value result.
      const ir::Type* rty = !tail && ty->isUnit() ? nullptr : ty;
      Value* r = branch("if", c, 2, rty, e.span, [&](unsigned k, Value*) {
        return tail ? lowerTail(*e.kids[k + 1]) : lowerExpr(*e.kids[k + 1]);
      });
      carry_ = savedCarry;
      return r ? r : unit();
    }
    case ExprKind::Case: {
      Value* s = lowerExpr(*e.kids[0]);
      std::set<const Binding*> assigned;
      assignedVars(e, assigned);
      auto savedCarry = carry_;
      carry_ = &assigned;
      Value* r = branch("match", s, 2, ty, e.span, [&](unsigned k, Value* payload) {
        size_t mark = env_.size();
        Span vs = k < e.nameSpans.size() ? e.nameSpans[k] : e.span;
        if (e.caseBindings[k]) bindValue(e.caseBindings[k], payload, vs);
        Value* r = tail ? lowerTail(*e.kids[k + 1]) : lowerExpr(*e.kids[k + 1]);
        endScope(mark);
        return r;
      });
      carry_ = savedCarry;
      return r;
    }
    case ExprKind::Match: {
      std::set<const Binding*> assigned;
      assignedVars(e, assigned);
      auto savedCarry = carry_;
      carry_ = &assigned;
      Value* r = lowerMatch(e, tail, ty);
      carry_ = savedCarry;
      return r;
    }
    case ExprKind::VarDecl:
    case ExprKind::Assign:
    case ExprKind::IndexAssign:
    case ExprKind::While:
    case ExprKind::For:
    case ExprKind::Workgroup: return lowerStatement(e, tail);
    case ExprKind::Return:
      if (e.kids.empty()) return value(unit());
      return tail ? lowerTail(*e.kids[0]) : lowerExpr(*e.kids[0]);
    case ExprKind::Dispatch: return value(lowerDispatch(e));
    case ExprKind::AllocGpu: {  // alloc %n, with {device = k} for allocate_gpu_on(k, n)
      Value* n = lowerExpr(*e.kids.back());
      setLoc(e.span);
      const ir::Type* bt = lowerTy(e.ty);
      if (!bt->isBuffer() || bt->space() != ir::Space::Device) {
        unsupported(e.span, "code generation cannot allocate a GPU buffer of type " + show(sub(e.ty)));
        return value(fabricate(bt));
      }
      if (e.kids.size() == 2) return value(b_.op("alloc", {n}, bt, {{"device", ir::Attr::integer(e.kids[0]->ival)}}));
      return value(b_.alloc(n, bt));
    }
    case ExprKind::Await: {
      pendingList_ = false;
      Value* v = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      b_.wait();
      if (pendingList_) return value(v);  // d2h(b).await: a fresh list
      return value(coerce(v, lowerTy(e.ty), e.span));
    }
    case ExprKind::Binary: return value(lowerBinary(e));
    case ExprKind::Unary: {
      Value* a = lowerExpr(*e.kids[0]);
      const ir::Type* pt = primOf(e.kids[0]->ty);
      a = coerce(a, pt, e.kids[0]->span);
      setLoc(e.span);
      Value* r = b_.op(e.uop == UnOp::Neg ? "neg" : "not", {a}, pt);
      return value(coerce(r, lowerTy(e.ty), e.span));
    }
    case ExprKind::Call: return lowerCall(e, tail);
    case ExprKind::Index: {
      Value* temp = nullptr;
      Value* list = lowerBorrowOrTemp(*e.kids[0], temp);
      Value* i = lowerExpr(*e.kids[1]);
      setLoc(e.span);
      if (!list->type()->isBuffer()) {
        unsupported(e.span, "code generation cannot index this value");
        return value(fabricate(lowerTy(e.ty)));
      }
      Value* r = b_.load(list, i);
      if (temp) dropValue(temp);
      return value(r);
    }
    case ExprKind::Member: {
      Value* base = lowerExpr(*e.kids[0]);
      Ty* bt = sub(e.kids[0]->ty);
      if (Ty* ex = expandAlias(T, bt)) bt = sub(ex);
      size_t index = 0;
      if (bt->kind == Ty::Vec) {
        static const std::string lanes = "xyzw";
        size_t lane = e.name.size() == 1 ? lanes.find(e.name[0]) : std::string::npos;
        if (lane == std::string::npos || lane >= static_cast<size_t>(bt->size)) {
          unsupported(e.span, "code generation does not support the vector member ." + e.name);
          return value(fabricate(lowerTy(e.ty)));
        }
        setLoc(e.span);
        return value(b_.op("vec.extract", {base}, ctx_.f32(), {{"index", ir::Attr::integer(static_cast<int64_t>(lane))}}));
      }
      if (e.bval) index = static_cast<size_t>(e.ival);
      else if (bt->kind == Ty::Named && bt->decl->kind == TypeDecl::Record) {
        auto& names = bt->decl->fieldNames;
        index = std::find(names.begin(), names.end(), e.name) - names.begin();
      }
      setLoc(e.span);
      return value(project(base, index));
    }
    case ExprKind::Fst:
    case ExprKind::Snd: {
      Value* base = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      return value(project(base, e.kind == ExprKind::Fst ? 0 : 1));
    }
    case ExprKind::Inl:
    case ExprKind::Inr: {
      Value* v = lowerExpr(*e.kids[0]);
      const ir::Type* st = lowerTy(e.ty);
      unsigned k = e.kind == ExprKind::Inl ? 0 : 1;
      v = coerce(v, st->members()[k], e.kids[0]->span);
      setLoc(e.span);
      return value(b_.sumMake(st, k, v));
    }
    case ExprKind::Borrow: return value(lowerBorrowOf(*e.kids[0]));
    case ExprKind::Drop: {
      Value* v = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      dropValue(v);
      return value(b_.op("struct.make", {}, ctx_.unitType()));
    }
    case ExprKind::Copy: {
      Value* v = lowerExpr(*e.kids[0]);
      setLoc(e.span);
      return value(b_.op("struct.make", {v, v}, lowerTy(e.ty)));
    }
    case ExprKind::Record: {
      Ty* rt = sub(e.ty);
      const ir::Type* st = lowerTy(rt);
      std::vector<Value*> fields(st->members().size(), nullptr);
      std::vector<Value*> given;
      for (auto& k : e.kids) given.push_back(lowerExpr(*k));
      for (size_t i = 0; i < e.names.size(); ++i) {
        auto& names = rt->decl->fieldNames;
        size_t at = std::find(names.begin(), names.end(), e.names[i]) - names.begin();
        if (at < fields.size()) fields[at] = coerce(given[i], st->members()[at], e.kids[i]->span);
      }
      setLoc(e.span);
      return value(b_.op("struct.make", fields, st));
    }
    case ExprKind::Tuple: {
      std::vector<Value*> parts;
      for (auto& k : e.kids) parts.push_back(lowerExpr(*k));
      setLoc(e.span);
      const ir::Type* st = lowerTy(e.ty);
      for (size_t i = 0; i < parts.size(); ++i) parts[i] = coerce(parts[i], st->members()[i], e.kids[i]->span);
      return value(b_.op("struct.make", parts, st));
    }
    case ExprKind::List: {
      const ir::Type* lt = listBufferTy(e.ty, ir::Ownership::Affine);
      std::vector<Value*> elems;
      for (auto& k : e.kids) elems.push_back(coerce(lowerExpr(*k), lt->elem(), k->span));
      setLoc(e.span);
      if (holdsMemory(lt->elem())) {
        unsupported(e.span, "code generation does not support lists of values that own memory");
        for (Value* v : elems) dropValue(v);
        return value(fabricate(lowerTy(e.ty)));
      }
      Value* buf = b_.alloc(b_.constInt(ctx_.i32(), static_cast<int64_t>(elems.size())), lt);
      for (size_t i = 0; i < elems.size(); ++i) b_.store(buf, b_.constInt(ctx_.i32(), static_cast<int64_t>(i)), elems[i]);
      return value(freshList(buf));
    }
    case ExprKind::StrLen: {
      bool borrowed = e.kids[0]->kind == ExprKind::Borrow;
      Expr& arg = borrowed ? *e.kids[0]->kids[0] : *e.kids[0];
      Value* s = borrowed ? lowerBorrowOf(arg) : lowerExpr(arg);
      setLoc(arg.span);
      Value* n = b_.bufferLen(s, ctx_.i32());
      if (!borrowed) {
        setLoc(e.kids[0]->span);
        dropValue(s);
      }
      return value(n);
    }
    case ExprKind::StrConcat: return value(lowerConcat(e));
    case ExprKind::Lambda: return value(generic_ ? lambdaRef(e) : makeLambdaClosure(e, 0, e.span));
    case ExprKind::Ffi: {
      std::vector<Value*> args;
      for (auto& k : e.kids) {
        // An owned buffer goes to C for good; a borrow of one would leave the
        // program owning a buffer C may free.
        if (k->kind == ExprKind::Borrow && lowerTy(k->kids[0]->ty)->isBuffer()) {
          unsupported(k->span, "extern call to '" + e.name + "': a borrowed GPU buffer cannot be passed to C; pass the "
                      "owned buffer, whose ownership moves to the C side", "E202");
          return value(fabricate(lowerTy(e.ty)));
        }
        args.push_back(lowerExpr(*k));
      }
      setLoc(e.span);
      return value(ffiCall(e.name, args, lowerTy(e.ty), e.span));
    }
    case ExprKind::Perform:
    case ExprKind::Handle:
      unsupported(e.span, "effects (perform/handle) are type-checked but not supported by code generation", "E200");
      return value(fabricate(lowerTy(e.ty)));
  }
  return value(fabricate(lowerTy(e.ty)));
}

Value* Lowerer::ffiCall(const std::string& sym, const std::vector<Value*>& args, const ir::Type* rt, Span s) {
  std::vector<const ir::Type*> ps;
  for (Value* a : args) ps.push_back(a->type());
  if (ir::ForeignSignature sig = ir::classifyForeignCall(ps, rt); !sig.ok()) {
    unsupported(s, "extern call to '" + sym + "': " + sig.problem, "E202");
    for (Value* a : args) dropValue(a);
    return fabricate(rt);
  }
  return b_.callC(sym, args, {rt})[0];
}

// An integer literal of type t: t may be a float or a type variable when the
// literal's type is a numeric type parameter (`var s: T = 0`); the variable's
// case is a cast that monomorphize makes concrete (the value is < 2^31).
Value* Lowerer::intLiteral(const ir::Type* t, int64_t v) {
  if (t->isFloat()) return b_.constFloat(t, static_cast<double>(v));
  if (t->isVar()) return b_.cast(b_.constInt(ctx_.i32(), v), t);
  return b_.constInt(t, v);
}

// The primitive IR type behind a (possibly aliased) numeric/Bool type.
const ir::Type* Lowerer::primOf(Ty* t) {
  t = sub(t);
  for (int i = 0; i < 40; ++i) {
    Ty* e = expandAlias(T, t);
    if (!e) break;
    t = sub(e);
  }
  return lowerTy(t);
}

Value* Lowerer::project(Value* base, size_t index) {
  const ir::Type* t = base->type();
  if (!t->isStruct() || index >= t->members().size()) {
    unsupported(Span{curLoc_.line, curLoc_.col, 1}, "internal error: projection of " + t->str());
    return fabricate(ctx_.i32());
  }
  if (!owns(t)) return b_.structExtract(base, static_cast<unsigned>(index));
  // The other fields are left alone: the checker rejects discarding a linear
  // one (E001), and with that check bypassed the IR linearity pass reports
  // the leak here too. Droppable ones are freed.
  ir::Values up = b_.structUnpack(base);
  for (size_t i = 0; i < up.size(); ++i)
    if (i != index && !up[i]->type()->isLinear()) dropValue(up[i]);
  return up[index];
}

Value* Lowerer::newString(const std::string& bytes) {
  const ir::Type* u8 = ctx_.intType(8, false);
  Value* buf = b_.alloc(b_.constInt(ctx_.i32(), static_cast<int64_t>(bytes.size())),
                        ctx_.bufferType(u8, ir::Space::Host, ir::Ownership::Linear));
  for (size_t i = 0; i < bytes.size(); ++i) {
    // The index's const first: a call evaluates its arguments in no fixed order.
    Value* at = b_.constInt(ctx_.i32(), static_cast<int64_t>(i));
    b_.store(buf, at, b_.constInt(u8, static_cast<unsigned char>(bytes[i])));
  }
  return buf;
}

// Copies src[0..n) to dst[at..at+n) with a `for` loop.
void Lowerer::copyInto(Value* dst, Value* src, Value* at, Value* n) {
  Value* zero = b_.constInt(ctx_.i32(), 0);
  Value* one = b_.constInt(ctx_.i32(), 1);
  b_.forOp(zero, n, one, [&](ir::Builder& b, Value* i, const ir::Values&) {
    i->setName("i");
    Value* byte = b.load(src, i);
    Value* j = b.add(i, at);
    b.store(dst, j, byte);
  });
}

Value* Lowerer::lowerConcat(Expr& e) {
  Value* a = lowerExpr(*e.kids[0]);
  Value* b = lowerExpr(*e.kids[1]);
  setLoc(e.span);
  Value* la = b_.bufferLen(a, ctx_.i32());
  Value* lb = b_.bufferLen(b, ctx_.i32());
  Value* n = b_.add(la, lb);
  Value* out = b_.alloc(n, ctx_.bufferType(ctx_.intType(8, false), ir::Space::Host, ir::Ownership::Linear));
  copyInto(out, a, b_.constInt(ctx_.i32(), 0), la);
  copyInto(out, b, la, lb);
  // Each argument is consumed where it is written.
  setLoc(e.kids[0]->span);
  dropValue(a);
  setLoc(e.kids[1]->span);
  dropValue(b);
  setLoc(e.span);
  return out;
}

// The value behind `&e`: a variable without consuming it. A list is read
// through a view.
Value* Lowerer::lowerBorrowOf(Expr& e) {
  if (e.kind == ExprKind::Var && e.binding)
    if (LBinding* lb = lookup(e.binding)) {
      setLoc(e.span);
      return listView(borrowVar(*lb), e.ty);
    }
  Value* v = lowerExpr(e);
  if (freshLists_.count(v)) {  // `&[1, 2]`: the temporary lives in a box
    pendingList_ = false;
    v = boxList(v);
  }
  v = listView(v, e.ty);
  if (owns(v->type())) unsupported(e.span, "code generation can borrow only variables, not this temporary value", "E201");
  return v;
}

Value* Lowerer::lowerVar(Expr& e) {
  if (e.builtin == Expr::Gid || e.builtin == Expr::Lid || e.builtin == Expr::GroupId) {
    static const char* ops[] = {"global_id", "local_id", "workgroup_id"};
    return idBuiltin(ops[e.builtin - Expr::Gid], 0, lowerTy(e.ty));
  }
  if (e.binding) {
    LBinding* lb = lookup(e.binding);
    if (!lb) {
      unsupported(e.span, "internal error: `" + e.name + "` is not in scope in the lowering");
      return fabricate(lowerTy(e.ty));
    }
    return useVar(*lb, e.span);
  }
  switch (e.refKind) {
    case Expr::Const: {
      ConstDecl& k = *c_.prog.consts[e.global];
      Subst saved = subst_;
      subst_.clear();
      Value* v = lowerExpr(*k.value);
      subst_ = saved;
      return v;
    }
    case Expr::Fn: {
      FnDecl& f = *c_.prog.fns[e.global];
      if (generic_) return funcRef(f, e.ty, e.span);
      std::vector<Ty*> inst;
      for (Ty* t : e.inst) inst.push_back(deep(t, subst_));
      return makeFnClosure(f, inst, 0, {}, {}, e.span);
    }
    case Expr::Ctor: {
      auto [d, k] = std::pair<TypeDecl*, int>(c_.ctors[e.name]);
      if (!d->ctorTys[k].empty()) {
        unsupported(e.span, "code generation does not support constructor `" + e.name + "` as a function value; apply it");
        return fabricate(lowerTy(e.ty));
      }
      const ir::Type* st = lowerTy(e.ty);
      return b_.sumMake(st, k, b_.op("struct.make", {}, ctx_.unitType()));
    }
    default:
      unsupported(e.span, "code generation does not support extern function `" + e.name + "` as a value; call it");
      return fabricate(lowerTy(e.ty));
  }
}

Value* Lowerer::lowerBinary(Expr& e) {
  if (e.bop == BinOp::And || e.bop == BinOp::Or) {
    Value* a = coerce(lowerExpr(*e.kids[0]), ctx_.boolType(), e.kids[0]->span);
    bool isAnd = e.bop == BinOp::And;
    return branch("if", a, 2, ctx_.boolType(), e.span, [&](unsigned k, Value*) -> Value* {
      if ((k == 0) == isAnd) return coerce(lowerExpr(*e.kids[1]), ctx_.boolType(), e.kids[1]->span);
      return b_.constBool(!isAnd);
    });
  }
  auto vecOrMat = [&](Ty* t) {
    t = sub(t);
    return t->kind == Ty::Vec || t->kind == Ty::Mat;
  };
  if (vecOrMat(e.kids[0]->ty) || vecOrMat(e.kids[1]->ty)) return lowerVecBinary(e);
  const ir::Type* pt = primOf(e.kids[0]->ty);
  Value* a = coerce(lowerExpr(*e.kids[0]), pt, e.kids[0]->span);
  Value* b = coerce(lowerExpr(*e.kids[1]), primOf(e.kids[1]->ty), e.kids[1]->span);
  setLoc(e.span);
  static const char* names[] = {"add", "sub", "mul", "div", "rem", "eq", "ne", "lt", "le", "gt", "ge"};
  const char* name = names[static_cast<int>(e.bop)];
  bool cmp = e.bop >= BinOp::Eq;
  if (cmp && pt->isUnit()) return b_.constBool(e.bop == BinOp::Eq);
  Value* r = b_.op(name, {a, b}, cmp ? ctx_.boolType() : pt);
  return coerce(r, lowerTy(e.ty), e.span);
}

}  // namespace eph::ephapax::lowering
