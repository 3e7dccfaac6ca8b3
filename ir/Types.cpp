#include "ir/Types.h"

#include <cassert>

#include "ir/Attr.h"

namespace eph::ir {

std::string_view spaceName(Space s) {
  switch (s) {
    case Space::Host: return "host";
    case Space::Device: return "device";
    case Space::Workgroup: return "workgroup";
  }
  return "?";
}

std::string_view ownershipName(Ownership o) {
  switch (o) {
    case Ownership::Linear: return "linear";
    case Ownership::Affine: return "affine";
    case Ownership::Read: return "read";
    case Ownership::Write: return "write";
  }
  return "?";
}

std::string_view coopUseName(CoopUse u) {
  switch (u) {
    case CoopUse::Any: return "any";
    case CoopUse::A: return "a";
    case CoopUse::B: return "b";
    case CoopUse::Acc: return "acc";
  }
  return "?";
}

namespace {

std::string join(const std::vector<const Type*>& ts) {
  std::string s;
  for (size_t i = 0; i < ts.size(); ++i) s += (i ? ", " : "") + ts[i]->str();
  return s;
}

std::string textOf(const Type& t) {
  switch (t.kind()) {
    case TypeKind::Bool: return "bool";
    case TypeKind::Int: return (t.isSigned() ? "i" : "u") + std::to_string(t.bits());
    case TypeKind::Float: return "f" + std::to_string(t.bits());
    case TypeKind::Vector: return "vec<" + t.elem()->str() + ", " + std::to_string(t.count()) + ">";
    case TypeKind::Array: return "array<" + t.elem()->str() + ", " + std::to_string(t.count()) + ">";
    case TypeKind::Struct:
      return "struct<" + join({t.members().begin(), t.members().end()}) + ">";
    case TypeKind::Sum: return "sum<" + join({t.members().begin(), t.members().end()}) + ">";
    case TypeKind::Buffer:
      return "buffer<" + t.elem()->str() + ", " + std::string(spaceName(t.space())) + ", " +
             std::string(ownershipName(t.ownership())) + ">";
    case TypeKind::Function:
      return "fn(" + join({t.members().begin(), t.members().end()}) + ") -> (" +
             join({t.results().begin(), t.results().end()}) + ")";
    case TypeKind::Var: return "!" + nameText(t.name());
    case TypeKind::Box: return "box";
    case TypeKind::CoopMatrix: {
      std::string s = "coopmat<" + t.elem()->str() + ", " + std::to_string(t.rows()) + ", " + std::to_string(t.cols());
      if (t.coopScope() == CoopScope::Workgroup) s += ", workgroup, " + std::string(coopUseName(t.coopUse()));
      return s + ">";
    }
  }
  return "?";
}

}  // namespace

unsigned Type::alignInBytes() const {
  switch (kind_) {
    case TypeKind::Bool: return 4;
    case TypeKind::Int:
    case TypeKind::Float: return bits_ / 8;
    case TypeKind::Vector: return elem_->alignInBytes() * (count_ == 3 ? 4 : count_);
    case TypeKind::Array: return elem_->alignInBytes();
    case TypeKind::Struct:
    case TypeKind::Sum: {
      unsigned a = 4;
      for (auto* m : members_) a = std::max(a, m->alignInBytes());
      return a;
    }
    default: return 8;
  }
}

unsigned Type::sizeInBytes() const {
  auto roundUp = [](unsigned x, unsigned a) { return (x + a - 1) / a * a; };
  switch (kind_) {
    case TypeKind::Bool: return 4;
    case TypeKind::Int:
    case TypeKind::Float: return bits_ / 8;
    case TypeKind::Vector: return elem_->sizeInBytes() * (count_ == 3 ? 4 : count_);
    case TypeKind::Array: return roundUp(elem_->sizeInBytes(), elem_->alignInBytes()) * count_;
    case TypeKind::Struct: {
      unsigned off = 0;
      for (auto* m : members_) off = roundUp(off, m->alignInBytes()) + m->sizeInBytes();
      return roundUp(off, alignInBytes());
    }
    case TypeKind::Sum: {  // u32 tag, then the largest payload
      unsigned payload = 0;
      for (auto* m : members_) payload = std::max(payload, m->sizeInBytes());
      return roundUp(roundUp(4, alignInBytes()) + payload, alignInBytes());
    }
    default: return 8;
  }
}

Context::Context() = default;

const Type* Context::get(Type proto) {
  proto.text_ = textOf(proto);
  auto it = types_.find(proto.text_);
  if (it != types_.end()) return it->second.get();
  auto owned = std::unique_ptr<Type>(new Type(std::move(proto)));
  const Type* t = owned.get();
  types_.emplace(t->text_, std::move(owned));
  return t;
}

const Type* Context::boolType() {
  Type t;
  t.kind_ = TypeKind::Bool;
  return get(std::move(t));
}

const Type* Context::intType(unsigned bits, bool isSigned) {
  assert(bits == 8 || bits == 16 || bits == 32 || bits == 64);
  Type t;
  t.kind_ = TypeKind::Int;
  t.bits_ = bits;
  t.signed_ = isSigned;
  return get(std::move(t));
}

const Type* Context::floatType(unsigned bits) {
  assert(bits == 16 || bits == 32 || bits == 64);
  Type t;
  t.kind_ = TypeKind::Float;
  t.bits_ = bits;
  return get(std::move(t));
}

const Type* Context::vectorType(const Type* elem, unsigned count) {
  assert(elem->isScalar() && count >= 2 && count <= 4);
  Type t;
  t.kind_ = TypeKind::Vector;
  t.elem_ = elem;
  t.count_ = count;
  return get(std::move(t));
}

const Type* Context::coopMatrixType(const Type* elem, unsigned rows, unsigned cols, CoopScope scope, CoopUse use) {
  assert((elem->isInt() || elem->isFloat()) && rows > 0 && cols > 0);
  assert((scope == CoopScope::Workgroup) == (use != CoopUse::Any));
  Type t;
  t.kind_ = TypeKind::CoopMatrix;
  t.elem_ = elem;
  t.count_ = rows;
  t.cols_ = cols;
  t.coopScope_ = scope;
  t.coopUse_ = use;
  return get(std::move(t));
}

void Context::inheritOwnership(Type& t, const std::vector<const Type*>& parts) {
  for (auto* p : parts) {
    t.linear_ = t.linear_ || p->isLinear();
    t.affine_ = t.affine_ || p->isAffine();
  }
}

const Type* Context::structType(std::vector<const Type*> fields) {
  Type t;
  t.kind_ = TypeKind::Struct;
  inheritOwnership(t, fields);
  t.members_ = std::move(fields);
  return get(std::move(t));
}

const Type* Context::sumType(std::vector<const Type*> variants) {
  Type t;
  t.kind_ = TypeKind::Sum;
  inheritOwnership(t, variants);
  t.members_ = std::move(variants);
  return get(std::move(t));
}

const Type* Context::arrayType(const Type* elem, unsigned count) {
  Type t;
  t.kind_ = TypeKind::Array;
  t.elem_ = elem;
  t.count_ = count;
  inheritOwnership(t, {elem});
  return get(std::move(t));
}

const Type* Context::bufferType(const Type* elem, Space space, Ownership own) {
  Type t;
  t.kind_ = TypeKind::Buffer;
  t.elem_ = elem;
  t.space_ = space;
  t.own_ = own;
  t.linear_ = own == Ownership::Linear;
  t.affine_ = own == Ownership::Affine;
  return get(std::move(t));
}

const Type* Context::functionType(std::vector<const Type*> params,
                                  std::vector<const Type*> results) {
  Type t;
  t.kind_ = TypeKind::Function;
  t.members_ = std::move(params);
  t.results_ = std::move(results);
  return get(std::move(t));
}

const Type* Context::varType(const std::string& name) {
  Type t;
  t.kind_ = TypeKind::Var;
  t.name_ = name;
  return get(std::move(t));
}

const Type* Context::boxType() {
  Type t;
  t.kind_ = TypeKind::Box;
  return get(std::move(t));
}

const std::string* Context::intern(std::string_view s) {
  auto it = strings_.find(std::string(s));
  if (it != strings_.end()) return it->second.get();
  auto owned = std::make_unique<std::string>(s);
  const std::string* p = owned.get();
  strings_.emplace(std::string(s), std::move(owned));
  return p;
}

}  // namespace eph::ir
