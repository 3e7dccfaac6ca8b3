// Pass 1 of the Ephapax checker: type expressions (TypeExpr to Ty), the regions of types
// (buffer regions, named string regions), the element types of GPU buffers,
// and type declarations (aliases, records, data; recursion through buffers).
// (TypeChecker methods; see TypeChecker.h for the other parts.)
#include "frontends/ephapax/TypeChecker.h"

#include <functional>

namespace eph::ephapax::checking {

// ---- type expressions -------------------------------------------------------
Ty* TypeChecker::convert(const TypeExpr* t) {
  if (!t) return T.var();
  switch (t->kind) {
    case TypeExpr::Prim: {
      static const std::pair<const char*, Prim> prims[] = {{"I32", Prim::I32}, {"I64", Prim::I64}, {"U32", Prim::U32},
                                                           {"F32", Prim::F32}, {"F64", Prim::F64}, {"Bool", Prim::Bool}};
      for (auto& [n, p] : prims)
        if (t->name == n) return T.prim(p);
      return T.error();
    }
    case TypeExpr::Unit: return T.unit();
    case TypeExpr::String: return T.string(regionNamed(t->region, t->span));
    case TypeExpr::Ref: return T.ref(convert(t->args[0].get()), t->mut);
    case TypeExpr::List: return T.list(convert(t->args[0].get()));
    case TypeExpr::Tuple: {
      std::vector<Ty*> parts;
      for (auto& a : t->args) parts.push_back(convert(a.get()));
      return T.tuple(std::move(parts));
    }
    case TypeExpr::Sum: return T.sum(convert(t->args[0].get()), convert(t->args[1].get()));
    case TypeExpr::Gpu: {
      Ty* elem = convert(t->args[0].get());
      checkElemType(elem, t->args[0]->span);
      return T.gpu(elem, t->name == "GPUBufferAffine" ? Ty::Affine : t->bang ? Ty::Linear : Ty::View, bufferRegion(t->span));
    }
    case TypeExpr::Vec: return T.vec(static_cast<int>(t->size));
    case TypeExpr::Mat: return T.mat(static_cast<int>(t->size));
    case TypeExpr::Array: {
      Ty* elem = convert(t->args[0].get());
      checkElemType(elem, t->args[0]->span);
      return T.array(elem, static_cast<int>(t->size));
    }
    case TypeExpr::Future: return T.future(convert(t->args[0].get()));
    case TypeExpr::Fn: return T.fn(convert(t->args[0].get()), convert(t->args[1].get()));
    case TypeExpr::Named: {
      if (auto it = typeVars_.find(t->name); it != typeVars_.end()) {
        if (!t->args.empty()) error("E101", t->span, "type parameter `" + t->name + "` takes no arguments");
        return it->second;
      }
      auto it = c_.typeDecls.find(t->name);
      if (it == c_.typeDecls.end()) {
        if (implicitTypeVars_ && !isUpper(t->name) && t->args.empty()) {
          Ty* p = T.param(t->name, nextParam_++);
          typeVars_[t->name] = p;
          if (newTypeParams_) newTypeParams_->push_back(p);
          return p;
        }
        error("E104", t->span, "unknown type `" + t->name + "`",
              "declare it with `data`, `type` or in an `extern` block");
        return T.error();
      }
      TypeDecl* d = it->second;
      if (t->args.size() != d->params.size()) {
        error("E106", t->span, "type `" + d->name + "` takes " + std::to_string(d->params.size()) +
                                   " argument" + (d->params.size() == 1 ? "" : "s") + ", got " +
                                   std::to_string(t->args.size()));
        return T.error();
      }
      std::vector<Ty*> args;
      for (auto& a : t->args) args.push_back(convert(a.get()));
      for (size_t i = args.size(); i < d->paramTys.size(); ++i) args.push_back(bufferRegion(t->span));  // hidden region
      return T.named(d, std::move(args));
    }
  }
  return T.error();
}

// The region of a GPU buffer type (which is written without one). In a
// function signature all buffers share one region parameter, so a function
// returns buffers in its arguments' region; in a type declaration that
// holds buffers, its hidden region parameter; elsewhere an open region
// variable (a fresh allocation can live in any region).
Ty* TypeChecker::bufferRegion(Span s) {
  if (declRegion_) return declRegion_;
  return implicitTypeVars_ ? regionNamed("'buffers", s) : T.var(/*region=*/true);
}

// The region a `String@name` in a type refers to.
Ty* TypeChecker::regionNamed(const std::string& name, Span s) {
  if (name.empty() || name == "_") return T.region(-1, "_");
  for (size_t i = regions_.size(); i-- > 0;)
    if (regions_[i].first == name) return regions_[i].second;
  if (auto it = sigRegions_.find(name); it != sigRegions_.end()) return it->second;
  if (implicitTypeVars_) {  // a region parameter of a function signature
    Ty* p = T.param(name, nextParam_++, /*region=*/true);
    sigRegions_[name] = p;
    if (newTypeParams_) newTypeParams_->push_back(p);
    return p;
  }
  error("E006", s, "region `" + name + "` is not active here", "only regions of enclosing `region` blocks can be named");
  return T.region(-1, "_");
}

// ---- declarations -----------------------------------------------------------
void TypeChecker::declareTypes() {
  for (auto& d : c_.prog.types) {
    if (c_.typeDecls.count(d->name)) {
      error("E107", d->span, "type `" + d->name + "` is defined twice");
      continue;
    }
    c_.typeDecls[d->name] = d.get();
    for (const std::string& p : d->params) d->paramTys.push_back(T.param(p, nextParam_++));
  }
  addBufferRegionParams();
  for (auto& d : c_.prog.types) {
    if (c_.typeDecls[d->name] != d.get()) continue;  // a duplicate (reported)
    typeVars_.clear();
    declRegion_ = d->paramTys.size() > d->params.size() ? d->paramTys.back() : nullptr;
    for (size_t i = 0; i < d->params.size(); ++i) typeVars_[d->params[i]] = d->paramTys[i];
    switch (d->kind) {
      case TypeDecl::Alias: {
        // An alias may not mention itself.
        d->aliasTy = T.error();
        Ty* t = convert(d->alias.get());
        if (mentionsDecl(t, d.get(), 0)) error("E101", d->span, "type alias `" + d->name + "` refers to itself");
        else d->aliasTy = t;
        break;
      }
      case TypeDecl::Data:
        for (auto& ctor : d->ctors) {
          if (c_.ctors.count(ctor.name)) {
            error("E107", ctor.span, "constructor `" + ctor.name + "` is defined twice");
            d->ctorTys.emplace_back();
            continue;
          }
          c_.ctors[ctor.name] = {d.get(), static_cast<int>(d->ctorTys.size())};
          std::vector<Ty*> fields;
          for (auto& f : ctor.fields) fields.push_back(convert(f.get()));
          d->ctorTys.push_back(std::move(fields));
        }
        break;
      case TypeDecl::Record: {
        std::set<std::string> seen;
        for (size_t i = 0; i < d->fieldNames.size(); ++i) {
          if (!seen.insert(d->fieldNames[i]).second)
            error("E107", d->span, "field `" + d->fieldNames[i] + "` appears twice in record `" + d->name + "`");
          d->fieldTys.push_back(convert(d->fieldTypes[i].get()));
        }
        break;
      }
      case TypeDecl::Extern: break;
    }
  }
  typeVars_.clear();
  declRegion_ = nullptr;
  for (auto& d : c_.prog.types)
    if (d->kind == TypeDecl::Data && c_.typeDecls[d->name] == d.get()) d->recursive = dataRecursive(d.get());
}

// A type declaration that holds GPU buffers (directly or through another
// declaration) gets a hidden region parameter: the region of its buffers,
// so a data value wrapping a buffer of region r has a type that mentions r.
void TypeChecker::addBufferRegionParams() {
  std::set<TypeDecl*> holds;
  std::function<bool(const TypeExpr*)> mentions = [&](const TypeExpr* t) {
    if (!t) return false;
    if (t->kind == TypeExpr::Gpu) return true;
    if (t->kind == TypeExpr::Named)
      if (auto it = c_.typeDecls.find(t->name); it != c_.typeDecls.end() && holds.count(it->second)) return true;
    for (const auto& a : t->args)
      if (mentions(a.get())) return true;
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [name, d] : c_.typeDecls) {
      bool h = mentions(d->alias.get());
      for (const CtorDecl& c : d->ctors)
        for (const auto& f : c.fields) h = h || mentions(f.get());
      for (const auto& f : d->fieldTypes) h = h || mentions(f.get());
      if (h && holds.insert(d).second) changed = true;
    }
  }
  for (TypeDecl* d : holds) d->paramTys.push_back(T.param("'buffers", nextParam_++, /*region=*/true));
}

bool TypeChecker::mentionsDecl(Ty* t, const TypeDecl* d, unsigned depth) {
  t = resolve(t);
  if (!t || depth > 50) return true;
  if (t->kind == Ty::Named) {
    if (t->decl == d) return true;
    if (t->decl->kind == TypeDecl::Alias && t->decl->aliasTy && mentionsDecl(t->decl->aliasTy, d, depth + 1))
      return true;
  }
  for (Ty* x : t->args)
    if (mentionsDecl(x, d, depth + 1)) return true;
  return false;
}

// Does data type d reach itself through its constructors' fields?
bool TypeChecker::dataRecursive(const TypeDecl* d) {
  std::set<const TypeDecl*> seen;
  std::function<bool(Ty*, unsigned)> reaches = [&](Ty* t, unsigned depth) -> bool {
    t = resolve(t);
    if (!t || depth > 50) return true;
    if (t->kind == Ty::Named) {
      if (t->decl == d) return true;
      if (seen.insert(t->decl).second) {
        if (t->decl->aliasTy && reaches(t->decl->aliasTy, depth + 1)) return true;
        for (auto& fs : t->decl->ctorTys)
          for (Ty* f : fs)
            if (reaches(f, depth + 1)) return true;
        for (Ty* f : t->decl->fieldTys)
          if (reaches(f, depth + 1)) return true;
      }
    }
    for (Ty* x : t->args)
      if (reaches(x, depth + 1)) return true;
    return false;
  };
  for (auto& fs : d->ctorTys)
    for (Ty* f : fs)
      if (reaches(f, 0)) return true;
  return false;
}

// ---- GPU buffer elements ------------------------------------------------------
// A GPU buffer's element must be a scalar or a vector.
void TypeChecker::checkElemType(Ty* elem, Span s) {
  Ty* r = resolve(elem);
  if (r->kind == Ty::Var || r->kind == Ty::Param || r->kind == Ty::Prim || r->kind == Ty::Vec || r->kind == Ty::Error) return;
  error("E101", s, "a GPU buffer or workgroup array holds scalars or vectors, not " + show(r));
}

}  // namespace eph::ephapax::checking
