#include "ir/OpTable.h"

#include <cassert>
#include <cstdio>
#include <cstdlib>

namespace eph::ir {

std::string_view effectName(Effect e) {
  switch (e) {
    case Effect::None: return "none";
    case Effect::Read: return "read";
    case Effect::Write: return "write";
    case Effect::Consume: return "consume";
  }
  return "?";
}

Effect OpInfo::effect(const Op& op, unsigned i) const {
  if (effectFn) return effectFn(op, i);
  if (effects.empty()) return Effect::None;
  return i < effects.size() ? effects[i] : effects.back();
}

OpTable& OpTable::get() {
  static OpTable* table = [] {
    auto* t = new OpTable();
    registerArithOps(*t);
    registerAggregateOps(*t);
    registerControlOps(*t);
    registerMemoryOps(*t);
    registerCoopMatrixOps(*t);
    registerSubgroupOps(*t);
    registerHostOps(*t);
    registerFunctionOps(*t);
    registerBoxOps(*t);
    registerForeignOps(*t);
    registerDerivatives(*t);
    return t;
  }();
  return *table;
}

namespace {
constexpr std::string_view kOpIdNames[] = {
#define EPH_OP(id, name) name,
#include "ir/OpIds.def"
#undef EPH_OP
};
}  // namespace

std::string_view opIdName(OpId id) {
  return id == OpId::Custom ? std::string_view() : kOpIdNames[static_cast<unsigned>(id)];
}

OpId opIdOf(std::string_view name) {
  for (unsigned i = 0; i < kNumOpIds; ++i)
    if (kOpIdNames[i] == name) return static_cast<OpId>(i);
  return OpId::Custom;
}

const OpInfo* OpTable::lookup(std::string_view name) const {
  for (const OpInfo* i : all_)
    if (i->name == name) return i;
  return nullptr;
}

const OpInfo& OpTable::operator[](std::string_view name) const {
  const OpInfo* i = lookup(name);
  if (!i) {
    std::fprintf(stderr, "internal error: no op named '%.*s'\n", int(name.size()), name.data());
    std::abort();
  }
  return *i;
}

const OpInfo& OpTable::operator[](OpId id) const {
  const OpInfo* i = id == OpId::Custom ? nullptr : byId_[static_cast<unsigned>(id)];
  if (!i) {
    std::fprintf(stderr, "internal error: op id %u is not registered\n", unsigned(id));
    std::abort();
  }
  return *i;
}

void OpTable::add(std::span<OpInfo> entries) {
  for (OpInfo& e : entries) {
    assert(!lookup(e.name) && "op registered twice");
    e.id = opIdOf(e.name);
    if (e.id != OpId::Custom) byId_[static_cast<unsigned>(e.id)] = &e;
    all_.push_back(&e);
  }
}

void OpTable::setDerivative(OpId id, const DerivativeRules* rules) {
  // The entries are the ops/*.cpp files' own (non-const) arrays.
  const_cast<OpInfo&>((*this)[id]).derivative = rules;
}

}  // namespace eph::ir
