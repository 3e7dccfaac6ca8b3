// Lowering of checked Ephapax to the IR (see Lower.h for the representation):
// lowerProgram, and the Lowerer's driver: run, function instances, self tail calls as loops.
// The other parts of the Lowerer are listed in Lowerer.h.
#include "frontends/ephapax/Lowerer.h"

namespace eph::ephapax {

namespace lowering {

void Lowerer::run() {
  // Functions generic only in regions are lowered once: regions leave no
  // trace in the IR. Kernels, launchers and device functions are lowered
  // once, generically (the monomorphize pass makes their instances, also
  // per function argument); functions only kernel code calls only as device
  // functions.
  for (auto& f : c_.prog.fns) {
    if (f->isExtern || !f->body) continue;
    if (f->gpuRole == FnDecl::Kernel) kernelFn(*f);
    else if (f->gpuRole == FnDecl::Launcher) {
      // One with function parameters but no type parameters is lowered at its
      // first call: uncalled, the monomorphize pass would keep it as a root
      // (it may be an entry) and reject its dispatch of a function parameter.
      if (isGeneric(*f) || !takesFunction(*f)) genericHostFn(*f);
    }
    else if (uses_.device.count(f.get()) && !uses_.host.count(f.get())) deviceFn(*f);
    else if (!isGeneric(*f)) instance(*f, {});
  }
  drain();
}

ir::Function* Lowerer::instance(FnDecl& f, Subst s) {
  std::string key = f.name;
  if (isGeneric(f)) {  // regions leave no trace in the name either
    key += "<";
    for (size_t i = 0; i < f.typeParamTys.size(); ++i) {
      Ty* t = nullptr;
      for (auto& [id, with] : s)
        if (id == f.typeParamTys[i]->id) t = with;
      if (f.typeParamTys[i]->regionVar) continue;
      key += (key.back() == '<' ? "" : ", ") + (t ? show(deep(t, {})) : std::string("?"));
    }
    key += ">";
  }
  if (auto it = instances_.find(key); it != instances_.end()) return it->second;
  Subst saved = subst_;
  subst_ = s;
  std::vector<const ir::Type*> params;
  for (Ty* t : f.paramTys) params.push_back(lowerParamTy(t));
  const ir::Type* rt = lowerTy(f.retTy);
  subst_ = saved;
  ir::Function* irf = m_.addFunction(key, ir::FunctionKind::Host, ctx_.functionType(params, {rt}), loc(f.span));
  instances_[key] = irf;
  work_.push_back({&f, std::move(s), irf, FnKind::Host, false});
  return irf;
}

// Lowers queued function instances and every closure body until nothing
// new appears, then the apply functions (whose variants are then final).
void Lowerer::drain() {
  bool changed = true;
  while (changed) {
    changed = false;
    while (!work_.empty()) {
      Instance in = work_.back();
      work_.pop_back();
      lowerFunction(in);
      changed = true;
    }
    for (auto& [key, g] : groups_)
      for (size_t k = 0; k < g.entries.size(); ++k)
        if (!g.entries[k].body) {
          entryFunction(g, k);
          changed = true;
        }
  }
  for (auto& [key, g] : groups_)
    if (g.apply && g.apply->body().empty()) emitApply(g);
  // Unused unit values (statements' results) are removed from kernel code:
  // some Vulkan drivers (lavapipe) cannot build a pipeline with an empty struct.
  for (auto& f : m_.functions()) {
    if (f->isHost()) continue;
    std::vector<ir::Op*> dead;
    f->walk([&](ir::Op* op) {
      if (op->name() == "struct.make" && op->numOperands() == 0 && op->numResults() == 1 && !op->result(0)->hasUses())
        dead.push_back(op);
    });
    for (ir::Op* op : dead) op->erase();
  }
}

bool Lowerer::hasSelfTailCall(const Expr& e, const std::string& name, unsigned depth) {
  if (depth > 300) return false;
  switch (e.kind) {
    case ExprKind::Call:
      return e.kids[0]->kind == ExprKind::Var && !e.kids[0]->binding && e.kids[0]->refKind == Expr::Fn &&
             e.kids[0]->name == name;
    case ExprKind::Let:
    case ExprKind::Seq: return e.kids.size() > 1 && hasSelfTailCall(*e.kids[1], name, depth + 1);
    case ExprKind::If: return hasSelfTailCall(*e.kids[1], name, depth + 1) || hasSelfTailCall(*e.kids[2], name, depth + 1);
    case ExprKind::Case: return hasSelfTailCall(*e.kids[1], name, depth + 1) || hasSelfTailCall(*e.kids[2], name, depth + 1);
    case ExprKind::Match:
      for (const Arm& a : e.arms)
        if (hasSelfTailCall(*a.body, name, depth + 1)) return true;
      return false;
    default: return false;
  }
}

void Lowerer::lowerFunction(const Instance& in) {
  FnDecl& f = *in.fn;
  subst_ = in.subst;
  curFn_ = &f;
  curKey_ = in.irfn->name();
  env_.clear();
  freshLists_.clear();
  loopSum_ = nullptr;
  carry_ = nullptr;
  device_ = in.kind != FnKind::Host;
  generic_ = in.generic;
  ir::Function* irf = in.irfn;
  b_ = ir::Builder(ctx_, irf->body());
  setLoc(f.span);
  if (in.kind == FnKind::Kernel) {
    lowerKernel(in);
    return;
  }
  for (size_t i = 0; i < f.params.size(); ++i)
    if (!checkRepresentable(f.paramTys[i], f.params[i].span)) return;
  if (!checkRepresentable(f.retTy, f.span)) return;
  std::vector<Value*> params;
  for (size_t i = 0; i < f.params.size(); ++i) {
    params.push_back(irf->param(static_cast<unsigned>(i)));
    params.back()->setName(f.params[i].name == "_" ? "" : f.params[i].name);
  }
  const ir::Type* rt = irf->resultTypes()[0];

  // Self tail calls: run the body in a loop over sum<struct<params>, result>.
  bool loop = hasSelfTailCall(*f.body, f.name) && fabricable(rt);
  if (loop) {
    const ir::Type* argsT = ctx_.structType({irf->paramTypes().begin(), irf->paramTypes().end()});
    const ir::Type* S = ctx_.sumType({argsT, rt});
    // The state is variant 0 (the next call's arguments) until variant 1
    // (the result) ends the loop.
    Value* init = b_.sumMake(S, 0, b_.op("struct.make", params, argsT));
    auto named = [](Value* v, const char* name) {
      v->setName(name);
      return v;
    };
    auto before = [&](ir::Builder& b, const ir::Values& s) -> ir::Values {
      Value* state = named(s[0], "state");
      Value* tag = b.sumTag(state);
      Value* go = b.eq(tag, b.constInt(ctx_.u32(), 0));
      return {go, state};
    };
    auto after = [&](ir::Builder& b, const ir::Values& s) {
      return b.matchOp(named(s[0], "state"), {S}, [&](ir::Builder& b, unsigned k, Value* payload) -> Value* {
        if (k == 1) return b.sumMake(S, 1, named(payload, "result"));
        Value* args = named(payload, "args");
        bindParams(f, argsT->members().empty() ? std::vector<Value*>{} : b.structUnpack(args));
        loopSum_ = S;
        Value* next = lowerTail(*f.body);
        endScopeAll();
        loopSum_ = nullptr;
        return next;
      })->result(0);
    };
    ir::Op* w = b_.whileOp({init}, before, after);
    ir::Op* out = b_.matchOp(w->result(0), {rt}, [&](ir::Builder& b, unsigned k, Value* payload) -> Value* {
      if (k == 1) return named(payload, "result");
      dropValue(named(payload, "args"));
      return fabricate(rt);
    });
    b_.ret({out->result(0)});
    return;
  }
  bindParams(f, params);
  Value* v = lowerExpr(*f.body);
  v = coerce(v, rt, f.body->span);
  setLoc(f.span);
  endScopeAll();
  b_.ret({v});
}

void Lowerer::bindParams(FnDecl& f, const std::vector<Value*>& vals) {
  for (size_t i = 0; i < f.params.size() && i < vals.size(); ++i) bindValue(f.params[i].binding, vals[i], f.params[i].span);
}

}  // namespace lowering

using lowering::ClosureGroup;
using lowering::Lowerer;
std::unique_ptr<ir::Module> lowerProgram(Checked& c, ir::Context& ctx, const std::string& file, DiagSink& diags,
                                         const LowerOptions& opts) {
  // Pass 1 discovers every closure (per function type), so that pass 2 knows
  // each closure type's variants before it makes the first one.
  std::map<std::string, ClosureGroup> known;
  {
    DiagSink scratch;
    ir::Module m(ctx);
    Lowerer discover(c, ctx, file, scratch, m, nullptr, opts);
    discover.run();
    known = discover.groups();
  }
  auto m = std::make_unique<ir::Module>(ctx);
  m->sourceName = file;
  Lowerer real(c, ctx, file, diags, *m, &known, opts);
  real.run();
  if (real.failed()) return nullptr;
  return m;
}

}  // namespace eph::ephapax
