// Lowering of checked Ephapax to the IR: Ephapax types as IR types; which generic functions lower generically.
// (Lowerer methods; see Lowerer.h for the other parts.)
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax::lowering {

// Fully resolved and substituted, for keys and closure types.
Ty* Lowerer::deep(Ty* t, const Subst& s, unsigned depth) {
  t = resolve(s.empty() ? t : substitute(T, t, s));
  if (depth > 40 || t->args.empty()) return t;
  Ty copy = *t;
  for (Ty*& a : copy.args) a = deep(a, s, depth + 1);
  return T.make(std::move(copy));
}

const ir::Type* Lowerer::token(bool affine) {
  return ctx_.bufferType(ctx_.intType(8, false), ir::Space::Host, affine ? ir::Ownership::Affine : ir::Ownership::Linear);
}

const ir::Type* Lowerer::lowerTy(Ty* t, unsigned depth) {
  t = sub(t);
  if (depth > 40) return ctx_.unitType();
  switch (t->kind) {
    case Ty::Prim:
      switch (t->prim) {
        case Prim::I32: return ctx_.i32();
        case Prim::I64: return ctx_.i64();
        case Prim::U32: return ctx_.u32();
        case Prim::F32: return ctx_.f32();
        case Prim::F64: return ctx_.f64();
        case Prim::Bool: return ctx_.boolType();
      }
      return ctx_.i32();
    case Ty::Unit: return ctx_.unitType();
    case Ty::String: return ctx_.bufferType(ctx_.intType(8, false), ir::Space::Host, ir::Ownership::Linear);
    case Ty::Ref: {
      Ty* e = sub(t->args[0]);
      const ir::Type* inner = lowerTy(e, depth + 1);
      if (inner->isBuffer())
        return ctx_.bufferType(inner->elem(), inner->space(), t->mut ? ir::Ownership::Write : ir::Ownership::Read);
      return inner;
    }
    case Ty::List: return ctx_.boxType();  // a box owning the list's buffer (listBufferTy; LowerValues.cpp "Lists")
    case Ty::Tuple: {
      std::vector<const ir::Type*> parts;
      for (Ty* a : t->args) parts.push_back(lowerTy(a, depth + 1));
      return ctx_.structType(parts);
    }
    case Ty::Sum: return ctx_.sumType({lowerTy(t->args[0], depth + 1), lowerTy(t->args[1], depth + 1)});
    case Ty::Fn:
      // GPU code passes functions as IR function values (func.ref).
      if (generic_) return fnIrType(t, depth);
      return closureType(deep(t, subst_));
    case Ty::Named: {
      TypeDecl* d = t->decl;
      switch (d->kind) {
        case TypeDecl::Alias: {
          Ty* e = expandAlias(T, t);
          const ir::Type* inner = e ? lowerTy(e, depth + 1) : ctx_.unitType();
          if ((d->linear || d->affine) && !inner->isLinear()) return ctx_.structType({inner, token(d->affine)});
          return inner;
        }
        case TypeDecl::Extern: return ctx_.i64();
        case TypeDecl::Record: {
          std::vector<const ir::Type*> parts;
          for (Ty* f : recordFields(T, t)) parts.push_back(lowerTy(f, depth + 1));
          return ctx_.structType(parts);
        }
        case TypeDecl::Data: {
          if (d->recursive && device_) {
            reportRecursive(d, "cannot be used in kernel code: its values live in host heap cells (IR boxes)");
            return ctx_.unitType();
          }
          // A recursive data type keeps each field that reaches the type
          // again in a box (docs/ephapax.md), so its IR type is finite.
          const std::vector<std::vector<bool>>& boxed = boxedFields(d);
          std::vector<const ir::Type*> variants;
          for (size_t k = 0; k < d->ctorTys.size(); ++k) {
            std::vector<const ir::Type*> fields;
            std::vector<Ty*> fieldTys = ctorFields(T, t, k);
            for (size_t j = 0; j < fieldTys.size(); ++j) {
              bool inBox = k < boxed.size() && j < boxed[k].size() && boxed[k][j];
              fields.push_back(inBox ? ctx_.boxType() : lowerTy(fieldTys[j], depth + 1));
              if (d->recursive && !inBox && holdsMemory(fields.back()))
                reportRecursive(d, "holds a value of type " + show(sub(fieldTys[j])) + ", which owns memory or is a "
                                   "list; code generation keeps recursive data in shared heap cells, which may hold "
                                   "only plain data (numbers, Bool, tuples, records and data of those, closures)");
            }
            variants.push_back(ctx_.structType(fields));
          }
          return ctx_.sumType(variants);
        }
      }
      return ctx_.unitType();
    }
    case Ty::Param:
      if (generic_ && !t->regionVar) return ctx_.varType(t->name);
      return ctx_.i32();
    case Ty::Gpu: {
      const ir::Type* e = t->args.empty() ? ctx_.i32() : lowerTy(t->args[0], depth + 1);
      ir::Ownership o = t->gpu == Ty::Linear ? ir::Ownership::Linear
                        : t->gpu == Ty::Affine ? ir::Ownership::Affine
                                               : ir::Ownership::Read;
      return ctx_.bufferType(e, ir::Space::Device, o);
    }
    case Ty::Vec: return ctx_.vectorType(ctx_.f32(), static_cast<unsigned>(t->size));
    case Ty::Mat: {
      const ir::Type* col = ctx_.vectorType(ctx_.f32(), static_cast<unsigned>(t->size));
      return ctx_.structType(std::vector<const ir::Type*>(static_cast<size_t>(t->size), col));
    }
    case Ty::Array:
      return ctx_.bufferType(t->args.empty() ? ctx_.i32() : lowerTy(t->args[0], depth + 1), ir::Space::Workgroup,
                             ir::Ownership::Write);
    case Ty::Future: return t->args.empty() ? ctx_.unitType() : lowerTy(t->args[0], depth + 1);
    default: return ctx_.i32();  // unconstrained type variables default to I32
  }
}

// A -> B -> C as the IR function type fn(A, B) -> (C): GPU code takes a
// function's arguments all at once.
const ir::Type* Lowerer::fnIrType(Ty* t, unsigned depth) {
  std::vector<const ir::Type*> params;
  t = sub(t);
  while (t->kind == Ty::Fn && t->args.size() == 2 && params.size() < 16) {
    params.push_back(lowerTy(t->args[0], depth + 1));
    t = sub(t->args[1]);
  }
  return ctx_.functionType(params, {lowerTy(t, depth + 1)});
}

bool Lowerer::checkRepresentable(Ty* t, Span s, unsigned depth) {
  // Every type has an IR representation (recursive data types box their
  // recursive fields); lowerTy reports the ones that cannot be lowered.
  return true;
}

// Does the declared type `t` reach data type `d`: mention it, or a type whose
// declaration reaches it?
bool Lowerer::reachesDecl(Ty* t, const TypeDecl* d, std::set<const TypeDecl*>& seen, unsigned depth) {
  t = resolve(t);
  if (!t || depth > 50) return true;
  if (t->kind == Ty::Named && t->decl) {
    if (t->decl == d) return true;
    if (seen.insert(t->decl).second) {
      if (t->decl->aliasTy && reachesDecl(t->decl->aliasTy, d, seen, depth + 1)) return true;
      for (auto& fs : t->decl->ctorTys)
        for (Ty* f : fs)
          if (reachesDecl(f, d, seen, depth + 1)) return true;
      for (Ty* f : t->decl->fieldTys)
        if (reachesDecl(f, d, seen, depth + 1)) return true;
    }
  }
  for (Ty* x : t->args)
    if (reachesDecl(x, d, seen, depth + 1)) return true;
  return false;
}

// Per constructor and field of d: is the field kept in a box? A field is
// boxed when its declared type reaches d again (Cons(I32, IntList): the
// IntList; mutually recursive types box each other). The answer depends on
// the declaration only, so a value's IR type is the same everywhere.
const std::vector<std::vector<bool>>& Lowerer::boxedFields(const TypeDecl* d) {
  auto it = boxedFields_.find(d);
  if (it != boxedFields_.end()) return it->second;
  std::vector<std::vector<bool>> out;
  for (auto& fs : d->ctorTys) {
    std::vector<bool> row;
    for (Ty* f : fs) {
      std::set<const TypeDecl*> seen;
      row.push_back(d->recursive && reachesDecl(f, d, seen, 0));
    }
    out.push_back(std::move(row));
  }
  return boxedFields_[d] = std::move(out);
}

Ty* Lowerer::listTy(Ty* t) {
  t = sub(t);
  for (int i = 0; i < 40 && (t->kind == Ty::Named || t->kind == Ty::Ref); ++i) {
    Ty* e = t->kind == Ty::Ref ? t->args[0] : expandAlias(T, t);  // a borrow of a list reads the list
    if (!e) break;
    t = sub(e);
  }
  return t->kind == Ty::List ? t : nullptr;
}

const ir::Type* Lowerer::listBufferTy(Ty* list, ir::Ownership own) {
  return ctx_.bufferType(lowerTy(listTy(list)->args[0]), ir::Space::Host, own);
}

const ir::Type* Lowerer::lowerParamTy(Ty* t) {
  Ty* l = listTy(t);
  return l ? listBufferTy(l, ir::Ownership::Read) : lowerTy(t);
}

// Owns memory or holds a buffer: what a box may not hold (a list is itself
// a box, which may).
bool Lowerer::holdsMemory(const ir::Type* t) {
  if (owns(t) || t->isBuffer()) return true;
  if (t->elem() && holdsMemory(t->elem())) return true;
  for (const ir::Type* m : t->members())
    if (holdsMemory(m)) return true;
  return false;
}

// E203 for data type d, once per type: at the use in kernel code, else at
// the declaration.
void Lowerer::reportRecursive(const TypeDecl* d, const std::string& why) {
  if (!reportedData_.insert(d).second) return;
  Span at = device_ && curLoc_.line ? Span{curLoc_.line, curLoc_.col, 1} : d->span;
  unsupported(at, "the recursive data type `" + d->name + "` " + why, "E203");
}

// The data type behind t (aliases expanded), or null.
Ty* Lowerer::dataTy(Ty* t) {
  t = sub(t);
  for (int i = 0; i < 40 && t->kind == Ty::Named && t->decl->kind == TypeDecl::Alias; ++i) {
    Ty* e = expandAlias(T, t);
    if (!e) break;
    t = sub(e);
  }
  return t->kind == Ty::Named && t->decl->kind == TypeDecl::Data ? t : nullptr;
}

// A plain generic host function is lowered once with IR type variables and
// instantiated by the monomorphize pass when nothing in it depends on what
// the type arguments are beyond their IR type: its values are plain data
// (no lists, strings, buffers, references or function values, whose
// lowering frees memory or builds closures per type), it makes no
// closures, it has no self tail call (the loop form needs a value of every
// type), and the generic functions it calls qualify too. Every call must
// also instantiate it at types that own no memory, since the generic body
// cannot free a dropped value. Other calls get frontend instances.
bool Lowerer::plainTy(Ty* t, unsigned depth) {
  t = resolve(t);
  if (depth > 20) return false;
  switch (t->kind) {
    case Ty::Param: return !t->regionVar;
    case Ty::Prim:
    case Ty::Unit: return true;
    case Ty::Tuple:
    case Ty::Sum:
      for (Ty* a : t->args)
        if (!plainTy(a, depth + 1)) return false;
      return true;
    case Ty::Named: {
      const TypeDecl* d = t->decl;
      if (!d || d->recursive || d->linear || d->affine) return false;
      for (Ty* a : t->args)
        if (!plainTy(a, depth + 1)) return false;
      if (d->aliasTy && !plainTy(d->aliasTy, depth + 1)) return false;
      for (auto& fields : d->ctorTys)
        for (Ty* f : fields)
          if (!plainTy(f, depth + 1)) return false;
      for (Ty* f : d->fieldTys)
        if (!plainTy(f, depth + 1)) return false;
      return true;
    }
    default: return false;
  }
}

bool Lowerer::plainBody(const Expr& e, std::set<const FnDecl*>& seen) {
  switch (e.kind) {
    case ExprKind::Lambda:
    case ExprKind::List:
    case ExprKind::Region:
    case ExprKind::Borrow: return false;
    default: break;
  }
  if (e.builtin != Expr::NoBuiltin) return false;
  if (e.ty && !plainTy(e.ty)) return false;
  if (e.kind == ExprKind::Var && e.refKind == Expr::Fn) return false;  // a function value
  const Expr* skip = nullptr;  // the callee of a direct call or a constructor application
  if (e.kind == ExprKind::Call && !e.kids.empty() && e.kids[0]->kind == ExprKind::Var && !e.kids[0]->binding &&
      e.kids[0]->refKind == Expr::Ctor)
    skip = e.kids[0].get();
  if (e.kind == ExprKind::Call && !e.kids.empty() && e.kids[0]->kind == ExprKind::Var &&
      e.kids[0]->refKind == Expr::Fn && !e.kids[0]->binding) {
    skip = e.kids[0].get();
    const FnDecl& g = *c_.prog.fns[e.kids[0]->global];
    if (g.gpuRole != FnDecl::NotGpu || g.isExtern) return false;
    if (isGeneric(g) && !lowersGenerically(g, seen)) return false;
  }
  bool ok = true;
  forEachChild(e, [&](const Expr& k) { ok = ok && (&k == skip || plainBody(k, seen)); });
  return ok;
}

bool Lowerer::lowersGenerically(const FnDecl& f, std::set<const FnDecl*>& seen) {
  if (auto it = genericOk_.find(&f); it != genericOk_.end()) return it->second;
  if (!seen.insert(&f).second) return true;  // a cycle: decided by the others
  bool ok = f.gpuRole == FnDecl::NotGpu && !f.isExtern && f.body && !f.isAsync && plainTy(f.retTy) &&
            !hasSelfTailCall(*f.body, f.name);
  for (Ty* p : f.paramTys) ok = ok && plainTy(p);
  ok = ok && plainBody(*f.body, seen);
  genericOk_[&f] = ok;
  return ok;
}

// Whether this call of generic f goes through the monomorphize pass.
bool Lowerer::instantiateInIr(const FnDecl& f, const Subst& fs) {
  std::set<const FnDecl*> seen;
  if (!isGeneric(f) || !lowersGenerically(f, seen)) return false;
  for (auto& [id, t] : fs)
    if (!plainTy(t)) return false;
  return true;
}

// Kernels without barrier() get the grid (in invocations) as three hidden
// trailing u32 parameters for their bounds guard.
void Lowerer::addHiddenGrid(std::vector<const ir::Type*>& params, ir::Context& ctx) {
  for (int d = 0; d < 3; ++d) params.push_back(ctx.u32());
}

void Lowerer::nameHiddenGrid(ir::Function* f, size_t first) {
  static const char* names[] = {"grid.x", "grid.y", "grid.z"};
  for (unsigned d = 0; d < 3; ++d) f->param(static_cast<unsigned>(first + d))->setName(names[d]);
  f->attrs["hidden_params"] = ir::Attr::integer(3);
}

}  // namespace eph::ephapax::lowering
