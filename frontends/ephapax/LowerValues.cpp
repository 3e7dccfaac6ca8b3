// Lowering of checked Ephapax to the IR: bindings and ownership, placeholders, drops, coercions, branches.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

void Lowerer::unsupported(Span s, const std::string& what, std::string code) {
  if (!failed_ || diags_.empty() || diags_.all().back().loc.line != s.line || diags_.all().back().loc.col != s.col)
    diags_.error(std::move(code), s, what);
  failed_ = true;
}

// Binds b to v. A binding that must be used exactly once is re-bound here,
// at its binding site: a token box when the value owns nothing, else a
// struct.make/struct.unpack pair, so that a leak is reported at `site`.
void Lowerer::bindValue(const Binding* b, Value* v, Span site) {
  LBinding lb;
  lb.b = b;
  lb.v = v;
  lb.list = listTy(b->ty) != nullptr;
  freshLists_.erase(v);  // the binding owns it now
  if (b && mustUseBinding(b) && !lb.list) {
    Loc saved = curLoc_;
    setLoc(site);
    if (owns(v->type())) {
      Value* box = b_.op("struct.make", {v}, ctx_.structType({v->type()}));
      lb.v = b_.structUnpack(box)[0];
    } else {
      Value* tok = b_.alloc(b_.constInt(ctx_.i32(), 0), token());
      lb.v = b_.op("struct.make", {v, tok}, ctx_.structType({v->type(), token()}));
      lb.kind = LBinding::Boxed;
    }
    curLoc_ = saved;
    b_.setLoc(saved);
  }
  if (!lb.v->name().empty() || !b->name.empty()) lb.v->setName(b->name == "_" ? "" : b->name);
  env_.push_back(lb);
}

// Must be consumed exactly once. An owned GPU buffer may be dropped (and
// is freed at the end of its scope) in affine mode, and always when it is
// a GPUBufferAffine.
bool Lowerer::mustUseBinding(const Binding* b) {
  Ty* t = sub(b->ty);
  if (t->kind == Ty::Gpu && (t->gpu == Ty::Affine || (opts_.affineMode && t->gpu == Ty::Linear))) return false;
  return usageOf(c_, *b) == Usage::ExactlyOnce;
}

LBinding* Lowerer::lookup(const Binding* b) {
  for (size_t i = env_.size(); i-- > 0;)
    if (env_[i].b == b) return &env_[i];
  return nullptr;
}

// Pops bindings down to `mark`, freeing what may be dropped and was not used.
void Lowerer::endScope(size_t mark) {
  while (env_.size() > mark) {
    LBinding& lb = env_.back();
    if (!lb.consumed && !mustUse(lb) && owns(lb.v->type())) dropValue(lb.v);
    env_.pop_back();
  }
}

// A use of a variable by value.
Value* Lowerer::useVar(LBinding& lb, Span s) {
  if (lb.list) return lb.v;
  if (lb.kind == LBinding::Boxed) {
    lb.consumed = true;
    ir::Values up = b_.structUnpack(lb.v);
    b_.free(up[1]);
    return up[0];
  }
  if (!owns(lb.v->type())) return lb.v;
  // Moving an owned value out of its variable happens here, at the use: a
  // struct.make/struct.unpack pair puts the consumption at this location,
  // so a second use is reported here and not at whatever op takes it.
  lb.consumed = true;
  Value* box = b_.op("struct.make", {lb.v}, ctx_.structType({lb.v->type()}));
  return b_.structUnpack(box)[0];
}

// A borrow: the value, without consuming it.
Value* Lowerer::borrowVar(LBinding& lb) {
  if (lb.kind == LBinding::Boxed)
    return b_.structExtract(lb.v, 0);
  return lb.v;
}

void Lowerer::setLoc(Span s) {
  curLoc_ = loc(s);
  b_.setLoc(curLoc_);
}

bool Lowerer::fabricable(const ir::Type* t) {
  if (t->isBuffer()) return t->ownership() == ir::Ownership::Linear || t->ownership() == ir::Ownership::Affine;
  for (const ir::Type* m : t->members())
    if (!fabricable(m)) return false;
  return !t->isFunction() && !t->isVar();
}

// A value of type t for a path that never runs (the unreachable end of a
// loop or match); owned parts are fresh empty buffers, so ownership holds.
Value* Lowerer::fabricate(const ir::Type* t) {
  switch (t->kind()) {
    case ir::TypeKind::Bool: return b_.constBool(false);
    case ir::TypeKind::Int: return b_.constInt(t, 0);
    case ir::TypeKind::Float: return b_.constFloat(t, 0);
    case ir::TypeKind::Struct: {
      std::vector<Value*> parts;
      for (const ir::Type* m : t->members()) parts.push_back(fabricate(m));
      return b_.op("struct.make", parts, t);
    }
    case ir::TypeKind::Sum:
      return b_.sumMake(t, 0, fabricate(t->members()[0]));
    case ir::TypeKind::Box: return b_.boxNew(b_.unit());
    case ir::TypeKind::Buffer:
      if (t->ownership() == ir::Ownership::Linear || t->ownership() == ir::Ownership::Affine)
        return b_.alloc(b_.constInt(ctx_.i32(), 0), t);
      break;
    default: break;
  }
  // After a reported error the module is discarded: no second message.
  if (!failed_) unsupported(Span{curLoc_.line, curLoc_.col, 1}, "internal error: cannot make a placeholder of type " + t->str());
  return b_.constInt(ctx_.i32(), 0);
}

// Frees every buffer a value owns.
void Lowerer::dropValue(Value* v) {
  const ir::Type* t = v->type();
  if (!owns(t)) return;
  freshLists_.erase(v);
  if (t->isBuffer()) {
    b_.free(v);
    return;
  }
  if (t->isStruct()) {
    for (Value* p : b_.structUnpack(v)) dropValue(p);
    return;
  }
  if (t->isSum()) b_.matchOp(v, {}, [&](ir::Builder&, unsigned, Value* payload) { dropValue(payload); });

}

// Converts between the representations of types the checker unified: a
// linear/affine alias and the type it names (adding or removing the token).
Value* Lowerer::coerce(Value* v, const ir::Type* want, Span s) {
  const ir::Type* have = v->type();
  if (have == want) return v;
  if (want->isStruct() && want->members().size() == 2 && want->members()[0] == have && want->members()[1]->isBuffer() &&
      want->members()[1]->elem() == ctx_.intType(8, false)) {
    Value* tok = b_.alloc(b_.constInt(ctx_.i32(), 0), want->members()[1]);
    return b_.op("struct.make", {v, tok}, want);
  }
  if (have->isStruct() && have->members().size() == 2 && have->members()[0] == want && have->members()[1]->isBuffer() &&
      have->members()[1]->elem() == ctx_.intType(8, false)) {
    ir::Values up = b_.structUnpack(v);
    b_.free(up[1]);
    return up[0];
  }
  // A list: its box, or a view of it.
  if (want->isBox() && have->isBuffer() && have->space() == ir::Space::Host) return boxList(v);
  if (have->isBox() && want->isBuffer() && want->space() == ir::Space::Host && want->ownership() == ir::Ownership::Read)
    return b_.boxGet(v, want);
  // The recursive field of a data constructor lives in a box.
  if (want->isBox() && !holdsMemory(have)) return b_.op("box.new", {v}, want);
  if (want->isBox()) {
    if (!reportedData_.empty()) {  // the data type's E203 says why
      failed_ = true;
      dropValue(v);
      return fabricate(want);
    }
    unsupported(s, "code generation keeps the recursive part of a data value in a shared heap cell, which cannot "
                   "hold this value (of IR type " + have->str() + "): it owns memory", "E203");
    dropValue(v);
    return fabricate(want);
  }
  unsupported(s, "code generation cannot pass a value of IR type " + have->str() + " where " + want->str() +
                     " is expected (a borrow can only be bound, indexed and passed to functions)");
  dropValue(v);
  return fabricate(want);
}

Value* Lowerer::boxList(Value* v) {
  if (freshLists_.erase(v)) {  // a temporary nothing owns: it moves into the box
    std::erase(pendingArgs_, v);
    return b_.boxNew(v);
  }
  // A variable's own buffer or a view, which may be freed before the box
  // goes: the box owns a copy.
  Value* n = hostLen(v);
  Value* copy = b_.alloc(n, ctx_.bufferType(v->type()->elem(), ir::Space::Host, ir::Ownership::Affine));
  copyInto(copy, v, b_.constInt(ctx_.i32(), 0), n);
  return b_.boxNew(copy);
}

Value* Lowerer::listView(Value* v, Ty* list) {
  if (!v->type()->isBox() || !listTy(list)) return v;
  return b_.boxGet(v, listBufferTy(list, ir::Ownership::Read));
}

// Call arguments may also lend a buffer to a borrowed parameter.
Value* Lowerer::coerceArg(Value* v, const ir::Type* want, Span s) {
  const ir::Type* have = v->type();
  if (have->isBuffer() && want->isBuffer() && have->elem() == want->elem() && have->space() == want->space() &&
      (want->ownership() == ir::Ownership::Read ||
       (want->ownership() == ir::Ownership::Write && have->ownership() != ir::Ownership::Read)))
    return v;
  return coerce(v, want, s);
}

// Branching ops (if / match) with balanced ownership: a droppable binding
// consumed on some paths is freed on the others.
Value* Lowerer::branch(const char* opName, Value* operand, unsigned n, const ir::Type* resultT, Span s,
                       const std::function<Value*(unsigned k, Value* payload)>& body) {
  setLoc(s);
  // The vars the branches assign leave the op as extra results.
  std::vector<size_t> carried;
  std::vector<const ir::Type*> resultTs;
  if (resultT) resultTs.push_back(resultT);
  if (carry_)
    for (size_t i = 0; i < env_.size(); ++i)
      if (env_[i].b && carry_->count(env_[i].b) && !owns(env_[i].v->type())) {
        carried.push_back(i);
        resultTs.push_back(env_[i].v->type());
      }
  ir::Op* op = b_.create(opName, {operand}, resultTs, {}, n);
  std::vector<bool> start;
  std::vector<Value*> startV;
  for (auto& lb : env_) {
    start.push_back(lb.consumed);
    startV.push_back(lb.v);
  }
  std::vector<std::vector<Value*>> carriedOut;
  size_t envSize = env_.size();
  std::vector<std::vector<bool>> after;
  std::vector<Value*> results;
  ir::Builder::InsertionGuard guard(b_);
  for (unsigned k = 0; k < n; ++k) {
    for (size_t i = 0; i < envSize; ++i) {
      env_[i].consumed = start[i];
      env_[i].v = startV[i];
    }
    ir::Region& r = op->region(k);
    Value* payload = nullptr;
    if (std::string_view(opName) == "match") payload = r.addArg(operand->type()->members()[k]);
    b_.setInsertionPoint(r);
    Value* v = body(k, payload);
    if (resultT) v = coerce(v, resultT, s);
    results.push_back(v);
    std::vector<Value*> outs;
    for (size_t i : carried) outs.push_back(env_[i].v);
    carriedOut.push_back(outs);
    std::vector<bool> c;
    for (size_t i = 0; i < envSize; ++i) c.push_back(env_[i].consumed);
    after.push_back(c);
    env_.resize(envSize);
  }
  for (unsigned k = 0; k < n; ++k) {
    b_.setInsertionPoint(op->region(k));
    b_.setLoc(loc(s));
    for (size_t i = 0; i < envSize; ++i) {
      bool any = false;
      for (auto& c : after) any |= c[i];
      LBinding& lb = env_[i];
      if (any && !after[k][i] && !mustUse(lb) && owns(lb.v->type())) dropValue(lb.v);
    }
    std::vector<Value*> yields;
    if (resultT) yields.push_back(results[k]);
    for (Value* v : carriedOut[k]) yields.push_back(v);
    b_.yield(yields);
  }
  for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = op->result(static_cast<unsigned>(j + (resultT ? 1 : 0)));
  for (size_t i = 0; i < envSize; ++i) {
    bool any = false;
    for (auto& c : after) any |= c[i];
    env_[i].consumed = any;
  }
  return resultT ? op->result(0) : nullptr;
}

}  // namespace eph::ephapax::lowering
