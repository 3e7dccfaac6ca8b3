#include "frontends/ephapax/Types.h"

#include <algorithm>
#include <functional>
#include <set>

namespace eph::ephapax {

Ty* TyArena::make(Ty t) {
  all_.push_back(std::make_unique<Ty>(std::move(t)));
  return all_.back().get();
}
Ty* TyArena::var(bool region) {
  Ty t;
  t.kind = Ty::Var;
  t.id = nextVar_++;
  t.regionVar = region;
  return make(std::move(t));
}
Ty* TyArena::prim(Prim p) {
  Ty t;
  t.kind = Ty::Prim;
  t.prim = p;
  return make(std::move(t));
}
Ty* TyArena::unit() {
  Ty t;
  t.kind = Ty::Unit;
  return make(std::move(t));
}
Ty* TyArena::error() {
  Ty t;
  t.kind = Ty::Error;
  return make(std::move(t));
}
Ty* TyArena::region(int id, std::string name) {
  Ty t;
  t.kind = Ty::Region;
  t.id = id;
  t.name = std::move(name);
  return make(std::move(t));
}
Ty* TyArena::string(Ty* region) {
  Ty t;
  t.kind = Ty::String;
  t.args = {region};
  return make(std::move(t));
}
Ty* TyArena::ref(Ty* elem, bool mut) {
  Ty t;
  t.kind = Ty::Ref;
  t.mut = mut;
  t.args = {elem};
  return make(std::move(t));
}
Ty* TyArena::list(Ty* elem) {
  Ty t;
  t.kind = Ty::List;
  t.args = {elem};
  return make(std::move(t));
}
Ty* TyArena::tuple(std::vector<Ty*> parts) {
  Ty t;
  t.kind = Ty::Tuple;
  t.args = std::move(parts);
  return make(std::move(t));
}
Ty* TyArena::sum(Ty* a, Ty* b) {
  Ty t;
  t.kind = Ty::Sum;
  t.args = {a, b};
  return make(std::move(t));
}
Ty* TyArena::fn(Ty* a, Ty* b) {
  Ty t;
  t.kind = Ty::Fn;
  t.args = {a, b};
  return make(std::move(t));
}
Ty* TyArena::named(TypeDecl* d, std::vector<Ty*> args) {
  Ty t;
  t.kind = Ty::Named;
  t.decl = d;
  t.name = d->name;
  t.args = std::move(args);
  return make(std::move(t));
}
Ty* TyArena::param(std::string name, int id, bool region) {
  Ty t;
  t.kind = Ty::Param;
  t.name = std::move(name);
  t.id = id;
  t.regionVar = region;
  return make(std::move(t));
}

Ty* TyArena::gpu(Ty* elem, Ty::GpuOwn own, Ty* region) {
  Ty* r = region ? region : var(/*region=*/true);
  Ty t;
  t.kind = Ty::Gpu;
  t.gpu = own;
  t.args = {elem, r};
  return make(std::move(t));
}
Ty* TyArena::vec(int n) {
  Ty t;
  t.kind = Ty::Vec;
  t.size = n;
  return make(std::move(t));
}
Ty* TyArena::mat(int n) {
  Ty t;
  t.kind = Ty::Mat;
  t.size = n;
  return make(std::move(t));
}
Ty* TyArena::array(Ty* elem, int n) {
  Ty t;
  t.kind = Ty::Array;
  t.size = n;
  t.args = {elem};
  return make(std::move(t));
}
Ty* TyArena::future(Ty* r) {
  Ty t;
  t.kind = Ty::Future;
  t.args = {r};
  return make(std::move(t));
}

Ty* resolve(Ty* t) {
  while (t && t->kind == Ty::Var && t->link) t = t->link;
  return t;
}

namespace {

// Type expressions of declarations are converted by the checker, which stores
// them here: for a TypeDecl, the converted alias / ctor fields / record fields
// with its parameters as Params numbered 0..n-1.
}  // namespace

Ty* core(TyArena& a, Ty* t) {
  t = resolve(t);
  for (int i = 0; i < 40; ++i) {
    Ty* e = expandAlias(a, t);
    if (!e) break;
    t = resolve(e);
  }
  return t;
}

Ty* substitute(TyArena& a, Ty* t, const std::vector<std::pair<int, Ty*>>& subst) {
  t = resolve(t);
  if (!t) return t;
  if (t->kind == Ty::Param) {
    for (auto& [id, with] : subst)
      if (id == t->id) return with;
    return t;
  }
  if (t->args.empty()) return t;
  std::vector<Ty*> args;
  bool changed = false;
  for (Ty* x : t->args) {
    Ty* y = substitute(a, x, subst);
    changed |= y != x;
    args.push_back(y);
  }
  if (!changed) return t;
  Ty copy = *t;
  copy.args = std::move(args);
  return a.make(std::move(copy));
}

}  // namespace eph::ephapax

namespace eph::ephapax {

namespace {
std::vector<std::pair<int, Ty*>> declSubst(Ty* named) {
  std::vector<std::pair<int, Ty*>> s;
  const TypeDecl* d = named->decl;
  for (size_t i = 0; i < d->paramTys.size() && i < named->args.size(); ++i)
    s.push_back({d->paramTys[i]->id, named->args[i]});
  return s;
}
}  // namespace

Ty* expandAlias(TyArena& a, Ty* t) {
  t = resolve(t);
  if (!t || t->kind != Ty::Named || t->decl->kind != TypeDecl::Alias || !t->decl->aliasTy) return nullptr;
  return substitute(a, t->decl->aliasTy, declSubst(t));
}

std::vector<Ty*> ctorFields(TyArena& a, Ty* named, size_t ctor) {
  named = resolve(named);
  std::vector<Ty*> out;
  auto subst = declSubst(named);
  for (Ty* f : named->decl->ctorTys[ctor]) out.push_back(substitute(a, f, subst));
  return out;
}

std::vector<Ty*> recordFields(TyArena& a, Ty* named) {
  named = resolve(named);
  std::vector<Ty*> out;
  auto subst = declSubst(named);
  for (Ty* f : named->decl->fieldTys) out.push_back(substitute(a, f, subst));
  return out;
}

namespace {
bool occurs(Ty* v, Ty* t, unsigned depth = 0) {
  t = resolve(t);
  if (t == v) return true;
  if (depth > 400) return true;
  for (Ty* x : t->args)
    if (occurs(v, x, depth + 1)) return true;
  return false;
}

bool unifyAt(TyArena& a, Ty* x, Ty* y, unsigned depth) {
  x = resolve(x);
  y = resolve(y);
  if (x == y) return true;
  if (depth > 400) return false;
  if (x->kind == Ty::Error || y->kind == Ty::Error) return true;
  if (x->kind == Ty::Var) {
    if (occurs(x, y)) return false;
    if (x->floatLit) {
      if (y->kind == Ty::Var) {
        if (y->intLit) return false;
        y->floatLit = true;
      } else {
        Ty* core = y;
        for (int i = 0; i < 40; ++i) {
          Ty* e = expandAlias(a, core);
          if (!e) break;
          core = resolve(e);
        }
        bool isFloat = core->kind == Ty::Prim && (core->prim == Prim::F32 || core->prim == Prim::F64);
        if (!isFloat && core->kind != Ty::Error) return false;
      }
    }
    if (x->intLit) {
      if (y->kind == Ty::Var) {
        if (y->floatLit) return false;
        y->paramLit = (y->paramLit || !y->intLit) && x->paramLit;
        y->intLit = true;
      } else {
        Ty* core = y;
        for (int i = 0; i < 40; ++i) {
          Ty* e = expandAlias(a, core);
          if (!e) break;
          core = resolve(e);
        }
        bool isInt = core->kind == Ty::Prim && (core->prim == Prim::I32 || core->prim == Prim::I64 || core->prim == Prim::U32);
        // A type parameter used as a number may take an integer literal
        // (the checker then requires it to be numeric: NumericParams.h).
        bool numericParam = x->paramLit && core->kind == Ty::Param && !core->regionVar;
        if (!isInt && !numericParam && core->kind != Ty::Error) return false;
      }
    }
    x->link = y;
    return true;
  }
  if (y->kind == Ty::Var) return unifyAt(a, y, x, depth + 1);
  if (x->kind == Ty::Named && y->kind == Ty::Named && x->decl == y->decl) {
    for (size_t i = 0; i < x->args.size() && i < y->args.size(); ++i)
      if (!unifyAt(a, x->args[i], y->args[i], depth + 1)) return false;
    return x->args.size() == y->args.size();
  }
  if (Ty* ex = expandAlias(a, x)) return unifyAt(a, ex, y, depth + 1);
  if (Ty* ey = expandAlias(a, y)) return unifyAt(a, x, ey, depth + 1);
  if (x->kind != y->kind) return false;
  switch (x->kind) {
    case Ty::Prim: return x->prim == y->prim;
    case Ty::Unit: return true;
    case Ty::Param: return x->id == y->id;
    case Ty::Region: return x->id == y->id;
    case Ty::Vec:
    case Ty::Mat: return x->size == y->size;
    case Ty::Gpu:
      if (x->gpu != y->gpu) return false;
      return unifyAt(a, x->args[0], y->args[0], depth + 1) && unifyAt(a, x->args[1], y->args[1], depth + 1);
    case Ty::Array:
      if (x->size != y->size) return false;
      return unifyAt(a, x->args[0], y->args[0], depth + 1);
    case Ty::Ref:
      if (x->mut != y->mut) return false;
      [[fallthrough]];
    default:
      if (x->args.size() != y->args.size()) return false;
      for (size_t i = 0; i < x->args.size(); ++i)
        if (!unifyAt(a, x->args[i], y->args[i], depth + 1)) return false;
      return true;
  }
}

// depth-limited walk over a type and the types its named parts expand to.
// Each instance of a data type or record is expanded once per walk (`seen`):
// a recursive data type with several recursive fields would otherwise be
// walked exponentially often up to the depth limit.
bool anyPartIn(TyArena& a, Ty* t, const std::function<bool(Ty*)>& pred, unsigned depth, std::set<std::string>& seen) {
  t = resolve(t);
  if (!t || depth > 40) return false;
  if (pred(t)) return true;
  switch (t->kind) {
    case Ty::Ref:
    case Ty::Fn: return false;  // borrows and closures own nothing linear
    case Ty::Named: {
      const TypeDecl* d = t->decl;
      if (d->kind == TypeDecl::Alias) {
        Ty* e = expandAlias(a, t);
        return e && anyPartIn(a, e, pred, depth + 1, seen);
      }
      if (!seen.insert(show(t)).second) return false;  // walked already (or being walked)
      if (d->kind == TypeDecl::Data) {
        for (size_t c = 0; c < d->ctorTys.size(); ++c)
          for (Ty* f : ctorFields(a, t, c))
            if (anyPartIn(a, f, pred, depth + 1, seen)) return true;
        return false;
      }
      if (d->kind == TypeDecl::Record) {
        for (Ty* f : recordFields(a, t))
          if (anyPartIn(a, f, pred, depth + 1, seen)) return true;
      }
      return false;
    }
    default:
      for (Ty* x : t->args)
        if (anyPartIn(a, x, pred, depth + 1, seen)) return true;
      return false;
  }
}

bool anyPart(TyArena& a, Ty* t, const std::function<bool(Ty*)>& pred, unsigned depth) {
  std::set<std::string> seen;
  return anyPartIn(a, t, pred, depth, seen);
}
}  // namespace

bool unify(TyArena& a, Ty* x, Ty* y) { return unifyAt(a, x, y, 0); }

bool isLinear(TyArena& a, Ty* t, bool gpuAffine) {
  return anyPart(a, t, [gpuAffine](Ty* p) {
    return p->kind == Ty::String || (p->kind == Ty::Named && p->decl->linear) || p->kind == Ty::Future ||
           (p->kind == Ty::Gpu && p->gpu == Ty::Linear && !gpuAffine);
  }, 0);
}

bool isAffine(TyArena& a, Ty* t, bool gpuAffine) {
  if (isLinear(a, t, gpuAffine)) return false;
  return anyPart(a, t, [gpuAffine](Ty* p) {
    return (p->kind == Ty::Named && p->decl->affine) || (p->kind == Ty::Gpu && p->gpu == Ty::Affine) ||
           (p->kind == Ty::Gpu && p->gpu == Ty::Linear && gpuAffine);
  }, 0);
}

bool isOwnedGpu(Ty* t) {
  t = resolve(t);
  return t && t->kind == Ty::Gpu && t->gpu != Ty::View;
}

bool mentionsRegion(Ty* t, int region) {
  t = resolve(t);
  if (!t) return false;
  if (t->kind == Ty::Region) return t->id == region;
  for (Ty* x : t->args)
    if (mentionsRegion(x, region)) return true;
  return false;
}

int firstRegion(Ty* t, std::string* name) {
  t = resolve(t);
  if (!t) return -1;
  if (t->kind == Ty::Region && t->id >= 0) {
    if (name) *name = t->name;
    return t->id;
  }
  for (Ty* x : t->args)
    if (int r = firstRegion(x, name); r >= 0) return r;
  return -1;
}

bool isNumeric(Ty* t) {
  t = resolve(t);
  return t && t->kind == Ty::Prim && t->prim != Prim::Bool;
}

namespace {
void showInto(std::string& s, Ty* t, bool nested, unsigned depth) {
  t = resolve(t);
  if (depth > 30) {
    s += "...";
    return;
  }
  switch (t->kind) {
    case Ty::Var:
      s += t->regionVar ? "?r" + std::to_string(t->id) : t->intLit ? "{integer}" : t->floatLit ? "{float}" : "?" + std::to_string(t->id);
      return;
    case Ty::Gpu:
      s += t->gpu == Ty::Affine ? "GPUBufferAffine<" : "GPUBuffer<";
      showInto(s, t->args[0], false, depth + 1);
      s += t->gpu == Ty::Linear ? ">!" : ">";
      if (Ty* r = resolve(t->args[1]); r->kind == Ty::Region && r->id >= 0) s += "@" + r->name;
      return;
    case Ty::Vec: s += "vec" + std::to_string(t->size); return;
    case Ty::Mat: s += "mat" + std::to_string(t->size); return;
    case Ty::Array:
      s += "[";
      showInto(s, t->args[0], false, depth + 1);
      s += "; " + std::to_string(t->size) + "]";
      return;
    case Ty::Future:
      s += "Future<";
      showInto(s, t->args[0], false, depth + 1);
      s += ">";
      return;
    case Ty::Param: s += t->name; return;
    case Ty::Prim: {
      static const char* names[] = {"I32", "I64", "U32", "F32", "F64", "Bool"};
      s += names[static_cast<int>(t->prim)];
      return;
    }
    case Ty::Unit: s += "()"; return;
    case Ty::Error: s += "<error>"; return;
    case Ty::Region: s += t->name; return;
    case Ty::String: {
      s += "String@";
      Ty* r = resolve(t->args[0]);
      if (r->kind == Ty::Region && r->id < 0) s += "_";
      else showInto(s, r, true, depth + 1);
      return;
    }
    case Ty::Ref:
      s += t->mut ? "&mut " : "&";
      showInto(s, t->args[0], true, depth + 1);
      return;
    case Ty::List:
      s += "[";
      showInto(s, t->args[0], false, depth + 1);
      s += "]";
      return;
    case Ty::Tuple:
      s += "(";
      for (size_t i = 0; i < t->args.size(); ++i) {
        if (i) s += ", ";
        showInto(s, t->args[i], false, depth + 1);
      }
      s += ")";
      return;
    case Ty::Sum:
    case Ty::Fn:
      if (nested) s += "(";
      showInto(s, t->args[0], true, depth + 1);
      s += t->kind == Ty::Sum ? " + " : " -> ";
      showInto(s, t->args[1], t->kind == Ty::Sum, depth + 1);
      if (nested) s += ")";
      return;
    case Ty::Named: {
      s += t->name;
      size_t shown = t->decl ? std::min(t->args.size(), t->decl->params.size()) : t->args.size();
      if (shown) {
        s += "(";
        for (size_t i = 0; i < shown; ++i) {
          if (i) s += ", ";
          showInto(s, t->args[i], false, depth + 1);
        }
        s += ")";
      }
      if (shown < t->args.size())  // the hidden region of a type holding buffers
        if (Ty* r = resolve(t->args[shown]); r->kind == Ty::Region && r->id >= 0) s += "@" + r->name;
      return;
    }
  }
}
}  // namespace

std::string show(Ty* t) {
  std::string s;
  showInto(s, t, false, 0);
  return s;
}

}  // namespace eph::ephapax
