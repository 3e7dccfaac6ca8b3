// Lowering of checked Ephapax to the IR: let patterns and match compilation.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

// Irrefutable patterns of `let` (variables, tuples, `_`, `()`).
void Lowerer::bindPattern(Pattern& p, Value* v, bool bang) {
  switch (p.kind) {
    case Pattern::Var:
      if (p.binding) {
        if (pendingList_) pendingList_ = false;
        bindValue(p.binding, v, bang ? lookupLetSpan(p) : p.span);
        if (sub(p.binding->ty)->kind == Ty::List) env_.back().list = true;
      }
      return;
    case Pattern::Tuple: {
      const ir::Type* t = v->type();
      if (!t->isStruct() || t->members().size() != p.args.size()) {
        unsupported(p.span, "internal error: tuple pattern on " + t->str());
        return;
      }
      std::vector<Value*> parts;
      if (owns(t)) parts = b_.structUnpack(v);
      else
        for (size_t i = 0; i < p.args.size(); ++i)
          parts.push_back(b_.structExtract(v, static_cast<unsigned>(i)));
      for (size_t i = 0; i < p.args.size(); ++i) bindPattern(*p.args[i], parts[i], bang);
      return;
    }
    default:
      pendingList_ = false;
      // `_` in a `let!` pattern breaks a promise (E001): leave it for the
      // IR linearity pass to find, like the checker does.
      if (!bang) {
        dropValue(v);
      } else if (!owns(v->type())) {
        // Carry the broken promise as a token that is never consumed.
        Value* tok = b_.alloc(b_.constInt(ctx_.i32(), 0), token());
        b_.op("struct.make", {v, tok}, ctx_.structType({v->type(), token()}));
      }
      return;
  }
}

Value* Lowerer::lowerMatch(Expr& e, bool tail, const ir::Type* ty) {
  Value* s = lowerExpr(*e.kids[0]);
  std::vector<Slot> slots(1);
  slots[0].v = s;
  slots[0].type = s->type();
  std::vector<Row> rows;
  for (Arm& a : e.arms) rows.push_back(Row{{{a.pat.get(), 0}}, &a});
  return compileRows(rows, slots, tail, ty, e.span);
}

// The fields of constructor `ctor` of data type `scrutTy` taken out of a
// payload: the ones in boxes (the recursive parts) are read out of them.
void Lowerer::unboxFields(std::vector<Value*>& parts, Ty* scrutTy, unsigned ctor) {
  bool any = false;
  for (Value* v : parts) any = any || v->type()->isBox();
  if (!any) return;
  Ty* dt = dataTy(scrutTy);
  std::vector<Ty*> fields = dt && ctor < dt->decl->ctorTys.size() ? ctorFields(T, dt, ctor) : std::vector<Ty*>{};
  for (size_t j = 0; j < parts.size(); ++j) {
    if (!parts[j]->type()->isBox() || (j < fields.size() && listTy(fields[j]))) continue;  // a list stays a box
    if (j >= fields.size()) {
      unsupported(Span{curLoc_.line, curLoc_.col, 1}, "internal error: a boxed field of a value that is not data");
      continue;
    }
    parts[j] = b_.op("box.get", {parts[j]}, lowerTy(fields[j]));
  }
}

Value* Lowerer::rebuild(std::vector<Slot>& slots, int i) {
  Slot& s = slots[i];
  if (s.v) {
    s.used = true;
    return s.v;
  }
  std::vector<Value*> parts;
  for (int p : s.parts) parts.push_back(rebuild(slots, p));
  if (!s.sum) return b_.op("struct.make", parts, s.type);
  if (s.payloadT->isStruct() && !s.payloadTIsRaw)
    for (size_t j = 0; j < parts.size() && j < s.payloadT->members().size(); ++j)
      if (s.payloadT->members()[j]->isBox() && !parts[j]->type()->isBox())
        parts[j] = b_.op("box.new", {parts[j]}, s.payloadT->members()[j]);
  Value* payload = s.payloadT->isStruct() && !s.payloadTIsRaw ? b_.op("struct.make", parts, s.payloadT) : parts[0];
  return b_.sumMake(s.type, s.ctor, payload);
}

// Frees the slots no binding took (the parts a `_` matched).
void Lowerer::dropUnused(std::vector<Slot>& slots, int i) {
  Slot& s = slots[i];
  if (s.used) return;
  if (s.v) {
    dropValue(s.v);
    s.used = true;
    return;
  }
  for (int p : s.parts) dropUnused(slots, p);
}

Value* Lowerer::compileRows(std::vector<Row> rows, std::vector<Slot> slots, bool tail, const ir::Type* ty, Span span) {
  if (rows.empty()) {
    dropUnused(slots, 0);
    return fabricate(ty);  // unreachable: the checker proved the match exhaustive
  }
  Row& row = rows[0];
  // The first test of the first row that needs work.
  size_t ti = 0;
  while (ti < row.tests.size() && irrefutable(row.tests[ti].first)) ++ti;
  if (ti == row.tests.size()) return leaf(rows, slots, tail, ty, span);
  const Pattern* p = row.tests[ti].first;
  int si = row.tests[ti].second;
  switch (p->kind) {
    case Pattern::Tuple:
    case Pattern::Unit: {
      // Take the struct apart for every row.
      Value* v = takeSlot(slots, si);
      const ir::Type* t = v->type();
      std::vector<Value*> parts;
      if (!t->members().empty()) {
        if (owns(t)) parts = b_.structUnpack(v);
        else
          for (size_t i = 0; i < t->members().size(); ++i)
            parts.push_back(b_.structExtract(v, static_cast<unsigned>(i)));
      }
      splitSlot(slots, si, parts, 0, false, nullptr);
      for (Row& r : rows) expandTests(r, si, -1, slots[si].parts);
      return compileRows(rows, slots, tail, ty, span);
    }
    case Pattern::Int: {
      Value* v = slots[si].v;
      Value* lit = b_.constInt(v->type(), p->ival);
      Value* eq = b_.op("eq", {v, lit}, ctx_.boolType());
      std::vector<Row> yes, no;
      for (const Row& r : rows) {
        const Pattern* q = patternOn(r, si);
        if (!q || irrefutable(q)) {
          yes.push_back(r);
          no.push_back(r);
        } else if (q->kind == Pattern::Int && q->ival == p->ival) {
          yes.push_back(withoutTest(r, si));
        } else {
          no.push_back(r);
        }
      }
      return branch("if", eq, 2, ty, span, [&](unsigned k, Value*) {
        return compileRows(k == 0 ? yes : no, slots, tail, ty, span);
      });
    }
    case Pattern::Bool: {
      Value* v = slots[si].v;
      return branch("if", v, 2, ty, span, [&](unsigned k, Value*) {
        bool want = k == 0;
        std::vector<Row> sel;
        for (const Row& r : rows) {
          const Pattern* q = patternOn(r, si);
          if (!q || irrefutable(q)) sel.push_back(r);
          else if (q->kind == Pattern::Bool && q->bval == want) sel.push_back(withoutTest(r, si));
        }
        return compileRows(sel, slots, tail, ty, span);
      });
    }
    case Pattern::Ctor: {
      Value* v = takeSlot(slots, si);
      const ir::Type* st = v->type();
      bool rawPayload = p->name == "inl" || p->name == "inr";
      return branch("match", v, static_cast<unsigned>(st->members().size()), ty, span, [&](unsigned k, Value* payload) {
        std::vector<Slot> sl = slots;
        std::vector<Value*> parts;
        const ir::Type* pt = payload->type();
        if (rawPayload) parts.push_back(payload);
        else if (!pt->members().empty()) {
          if (owns(pt)) parts = b_.structUnpack(payload);
          else
            for (size_t i = 0; i < pt->members().size(); ++i)
              parts.push_back(b_.structExtract(payload, static_cast<unsigned>(i)));
        }
        if (!rawPayload) unboxFields(parts, p->ty, k);
        splitSlot(sl, si, parts, static_cast<int>(k), true, pt);
        sl[si].payloadTIsRaw = rawPayload;
        std::vector<Row> sel;
        for (const Row& r : rows) {
          const Pattern* q = patternOn(r, si);
          if (!q || irrefutable(q)) {
            sel.push_back(r);
          } else if (q->kind == Pattern::Ctor && q->ctorIndex == static_cast<int>(k)) {
            Row nr = r;
            expandTests(nr, si, static_cast<int>(k), sl[si].parts);
            sel.push_back(nr);
          }
        }
        return compileRows(sel, sl, tail, ty, span);
      });
    }
    default:
      unsupported(p->span, "code generation does not support this pattern");
      return fabricate(ty);
  }
}

void Lowerer::splitSlot(std::vector<Slot>& slots, int si, const std::vector<Value*>& parts, int ctor, bool sum, const ir::Type* payloadT) {
  std::vector<int> ids;
  for (Value* p : parts) {
    Slot s;
    s.v = p;
    s.type = p->type();
    slots.push_back(s);
    ids.push_back(static_cast<int>(slots.size()) - 1);
  }
  Slot& s = slots[si];
  // A non-owning value stays usable as a whole after being taken apart.
  if (owns(s.type)) s.v = nullptr;
  s.parts = ids;
  s.ctor = ctor;
  s.sum = sum;
  s.payloadT = payloadT;
}

const Pattern* Lowerer::patternOn(const Row& r, int si) {
  for (auto& [p, s] : r.tests)
    if (s == si) return p;
  return nullptr;
}

Lowerer::Row Lowerer::withoutTest(const Row& r, int si) {
  Row nr = r;
  for (size_t i = 0; i < nr.tests.size(); ++i)
    if (nr.tests[i].second == si) {
      nr.tests.erase(nr.tests.begin() + static_cast<long>(i));
      break;
    }
  return nr;
}

// Replaces the row's test on slot si (a tuple or the matching constructor)
// with tests of its sub-patterns on the parts.
void Lowerer::expandTests(Row& r, int si, int ctor, const std::vector<int>& parts) {
  for (size_t i = 0; i < r.tests.size(); ++i) {
    if (r.tests[i].second != si) continue;
    const Pattern* p = r.tests[i].first;
    if (irrefutable(p)) return;
    if (ctor >= 0 && (p->kind != Pattern::Ctor || p->ctorIndex != ctor)) return;
    r.tests.erase(r.tests.begin() + static_cast<long>(i));
    for (size_t k = 0; k < p->args.size() && k < parts.size(); ++k) r.tests.push_back({p->args[k].get(), parts[k]});
    return;
  }
}

// The first row matches: bind its variables, check its guard, run its body.
Value* Lowerer::leaf(std::vector<Row>& rows, std::vector<Slot>& slots, bool tail, const ir::Type* ty, Span span) {
  Row row = rows[0];
  if (row.arm->guard) {
    // Variables are bound on both paths from the same slots; the guard only reads them.
    std::vector<Row> rest(rows.begin() + 1, rows.end());
    size_t mark = env_.size();
    for (auto& [p, si] : row.tests)
      if (p->kind == Pattern::Var && p->binding) env_.push_back(LBinding{LBinding::Plain, p->binding, peekSlot(slots, si)});
    Value* g = lowerExpr(*row.arm->guard);
    env_.resize(mark);
    return branch("if", g, 2, ty, span, [&](unsigned k, Value*) {
      std::vector<Slot> sl = slots;
      if (k == 0) return runArm(row, sl, tail, ty);
      return compileRows(rest, sl, tail, ty, span);
    });
  }
  return runArm(row, slots, tail, ty);
}

// A slot's value for a guard to read (a rebuilt aggregate would consume parts).
Value* Lowerer::peekSlot(std::vector<Slot>& slots, int si) {
  if (slots[si].v) return slots[si].v;
  std::vector<Slot> copy = slots;
  return rebuild(copy, si);
}

Value* Lowerer::runArm(Row& row, std::vector<Slot>& slots, bool tail, const ir::Type* ty) {
  size_t mark = env_.size();
  for (auto& [p, si] : row.tests)
    if (p->kind == Pattern::Var && p->binding) bindValue(p->binding, rebuild(slots, si), p->span);
  dropUnused(slots, 0);
  Value* r = tail ? lowerTail(*row.arm->body) : lowerExpr(*row.arm->body);
  endScope(mark);
  return r;
}

}  // namespace eph::ephapax::lowering
