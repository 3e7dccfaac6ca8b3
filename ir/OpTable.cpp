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
    registerHostOps(*t);
    registerFunctionOps(*t);
    registerBoxOps(*t);
    registerForeignOps(*t);
    return t;
  }();
  return *table;
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

void OpTable::add(std::span<const OpInfo> entries) {
  for (const OpInfo& e : entries) {
    assert(!lookup(e.name) && "op registered twice");
    all_.push_back(&e);
  }
}

}  // namespace eph::ir
