#include "frontends/ephapax/NumericParams.h"

namespace eph::ephapax {

namespace {

bool isTypeParam(Ty* t) { return t->kind == Ty::Param && !t->regionVar; }

}  // namespace

std::string NumericParams::where(Span s) const {
  std::string lc = std::to_string(s.line) + ":" + std::to_string(s.col);
  const SourceFile* f = s.file ? sources_.source(s.file) : nullptr;
  return f ? f->name + ":" + lc : lc;
}

void NumericParams::require(Ty* param, const std::string& op, Span at) {
  if (!isTypeParam(param) || needs_.count(param->id)) return;
  needs_[param->id] = {op + " at " + where(at) + " needs " + param->name + " to be a number"};
}

void NumericParams::instantiated(const std::string& fn, const std::vector<Ty*>& params, const std::vector<Ty*>& args,
                                 Span site) {
  if (!params.empty()) sites_.push_back({fn, params, args, site});
}

std::set<int> NumericParams::report(TyArena& T, DiagSink& diags) {
  // A generic caller passing its own parameter on to a numeric one: the
  // caller's parameter is numeric too (until nothing changes).
  for (bool changed = true; changed;) {
    changed = false;
    for (const Site& s : sites_)
      for (size_t i = 0; i < s.params.size() && i < s.args.size(); ++i) {
        auto need = needs_.find(s.params[i]->id);
        if (need == needs_.end()) continue;
        Ty* a = core(T, s.args[i]);
        if (!isTypeParam(a) || needs_.count(a->id)) continue;
        needs_[a->id] = {"it passes " + a->name + " to `" + s.fn + "` at " + where(s.at) + ", where " + need->second.why};
        changed = true;
      }
  }
  for (const Site& s : sites_)
    for (size_t i = 0; i < s.params.size() && i < s.args.size(); ++i) {
      auto need = needs_.find(s.params[i]->id);
      if (need == needs_.end()) continue;
      Ty* a = core(T, s.args[i]);
      if (isNumeric(a) || a->kind == Ty::Var || a->kind == Ty::Error || isTypeParam(a)) continue;
      const Need& n = need->second;
      diags.error("E109", s.at,
                  "`" + s.fn + "` is used with " + s.params[i]->name + " = " + show(a) + ", but " + n.why,
                  "a type parameter used in arithmetic or comparison stands for I32, I64, U32, F32 or F64; "
                  "use `" + s.fn + "` with one of those");
    }
  std::set<int> ids;
  for (const auto& [id, need] : needs_) ids.insert(id);
  return ids;
}

}  // namespace eph::ephapax
