// Lowering of checked Ephapax to the IR (see Lower.h for the representation).
#include "frontends/ephapax/Lower.h"

#include <functional>
#include <map>
#include <set>

#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Runtime.h"
#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"

// The GPU extension and statements are lowered here too, as methods of the
// one Lowerer (they share its environment); the analyses they rely on are in
// LowerGpu.cpp and LowerStmt.cpp.

namespace eph::ephapax {

namespace {

using namespace lowering;
using ir::Value;
using Subst = std::vector<std::pair<int, Ty*>>;

// An insertion point plus the location given to new ops; unlike ir::Builder it
// can be saved and restored by assignment.
struct B {
  ir::Context* ctx = nullptr;
  ir::Region* region = nullptr;
  Loc loc;

  B() = default;
  B(ir::Context& c, ir::Region& r) : ctx(&c), region(&r) {}
  void setInsertionPoint(ir::Region& r) { region = &r; }
  void setLoc(Loc l) { loc = l; }
  ir::Op* create(std::string_view name, std::vector<Value*> operands = {}, std::vector<const ir::Type*> results = {},
                 std::map<std::string, ir::Attr> attrs = {}, unsigned numRegions = 0) {
    return region->append(ir::Op::create(ir::OpTable::get()[name], std::move(operands), std::move(results),
                                         std::move(attrs), numRegions, loc));
  }
  Value* op(std::string_view name, std::vector<Value*> operands, const ir::Type* result,
            std::map<std::string, ir::Attr> attrs = {}) {
    return create(name, std::move(operands), {result}, std::move(attrs))->result(0);
  }
  Value* constInt(const ir::Type* t, int64_t v) { return op("const", {}, t, {{"value", ir::Attr::integer(v)}}); }
  Value* constFloat(const ir::Type* t, double v) { return op("const", {}, t, {{"value", ir::Attr::floating(v)}}); }
  Value* constBool(bool v) { return op("const", {}, ctx->boolType(), {{"value", ir::Attr::boolean(v)}}); }
};

// A local variable during lowering.
struct LBinding {
  enum Kind : uint8_t {
    Plain,  // v is the value
    Boxed,  // v is struct<value, token>: a use takes the token and frees it
  } kind = Plain;
  const Binding* b = nullptr;
  Value* v = nullptr;
  bool consumed = false;
  bool list = false;  // a list: every use borrows; freed at scope end
};

// A closure variant: a lambda (parameter `param` of it) or a named function
// (argument `param` of it), with the captured values' types.
struct ClosureEntry {
  Expr* lambda = nullptr;
  FnDecl* fn = nullptr;
  std::vector<Ty*> fnInst;  // fn: its type arguments
  size_t param = 0;
  Subst subst;  // lambda: the enclosing instance's substitution
  std::vector<const Binding*> captures;
  std::vector<Ty*> captureTys;  // fn: the earlier arguments' types
  std::string key;
  ir::Function* body = nullptr;
};

struct ClosureGroup {
  Ty* fnTy = nullptr;  // A -> B, fully substituted
  std::vector<ClosureEntry> entries;
  ir::Function* apply = nullptr;
};

class Lowerer {
 public:
  Lowerer(Checked& c, ir::Context& ctx, const std::string& file, DiagSink& diags, ir::Module& m,
          std::map<std::string, ClosureGroup>* known, const LowerOptions& opts)
      : c_(c), T(c.types), ctx_(ctx), diags_(diags), m_(m), b_(ctx, dummy_), known_(known), opts_(opts) {
    file_ = ctx.intern(file);
    uses_ = functionUses(c);
  }

  void run() {
    // Functions generic only in regions are lowered once: regions leave no
    // trace in the IR. Kernels, launchers and device functions are lowered
    // once, generically; functions only kernel code calls only as device
    // functions.
    for (auto& f : c_.prog.fns) {
      if (f->isExtern || !f->body) continue;
      if (f->gpuRole == FnDecl::Kernel) kernelFn(*f);
      else if (f->gpuRole == FnDecl::Launcher) {
        if (!isSpecialisedLauncher(*f)) hostGpuFn(*f);  // else made per call
      }
      else if (uses_.device.count(f.get()) && !uses_.host.count(f.get())) deviceFn(*f);
      else if (!isGeneric(*f)) instance(*f, {});
    }
    drain();
  }

  std::map<std::string, ClosureGroup>& groups() { return groups_; }
  bool failed() const { return failed_; }

 private:
  Checked& c_;
  TyArena& T;
  ir::Context& ctx_;
  DiagSink& diags_;
  ir::Module& m_;
  ir::Region dummy_;
  B b_;
  const std::string* file_;
  std::map<std::string, ClosureGroup>* known_;  // the groups of the discovery pass
  std::map<std::string, ClosureGroup> groups_;
  bool failed_ = false;
  LowerOptions opts_;
  FnUses uses_;

  // Function instances to lower.
  enum class FnKind : uint8_t { Host, Kernel, Device };
  struct Instance {
    FnDecl* fn;
    Subst subst;
    ir::Function* irfn;
    FnKind kind = FnKind::Host;
    bool generic = false;  // type parameters lower to IR type variables
    // A launcher specialised per function argument: parameter -> the func.ref
    // (callee, type) it starts with instead of taking it.
    std::map<size_t, std::pair<std::string, const ir::Type*>> fnArgs;
  };
  std::map<std::string, ir::Function*> instances_;
  std::map<const FnDecl*, bool> genericOk_;  // lowersGenerically, decided once per function
  std::vector<Instance> work_;

  // Per function being lowered.
  Subst subst_;
  std::vector<LBinding> env_;
  FnDecl* curFn_ = nullptr;
  std::string curKey_;
  const ir::Type* loopSum_ = nullptr;  // tail-call loop: sum<args, result>
  bool device_ = false;   // lowering kernel code (a kernel or device function)
  bool generic_ = false;  // Ty::Param lowers to the IR type variable !name
  const std::set<const Binding*>* carry_ = nullptr;  // vars the branch being lowered assigns
  std::map<const Expr*, Value*> workgroupArrays_;    // hoisted workgroup.alloc per statement
  std::map<std::string, int> inlineKernels_;         // per host function: inline kernels made

  // ---- helpers ------------------------------------------------------------------
  Loc loc(Span s) const { return Loc{file_, s.line, s.col}; }

  void unsupported(Span s, const std::string& what, std::string code = "E201") {
    if (!failed_ || diags_.empty() || diags_.all().back().span.line != s.line || diags_.all().back().span.col != s.col)
      diags_.error(std::move(code), s, what);
    failed_ = true;
  }

  Ty* sub(Ty* t) { return resolve(subst_.empty() ? t : substitute(T, t, subst_)); }

  // Fully resolved and substituted, for keys and closure types.
  Ty* deep(Ty* t, const Subst& s, unsigned depth = 0) {
    t = resolve(s.empty() ? t : substitute(T, t, s));
    if (depth > 40 || t->args.empty()) return t;
    Ty copy = *t;
    for (Ty*& a : copy.args) a = deep(a, s, depth + 1);
    return T.make(std::move(copy));
  }

  const ir::Type* token(bool affine = false) {
    return ctx_.bufferType(ctx_.intType(8, false), ir::Space::Host, affine ? ir::Ownership::Affine : ir::Ownership::Linear);
  }
  static bool owns(const ir::Type* t) { return t->isLinear() || t->isAffine(); }

  // ---- types ----------------------------------------------------------------------
  const ir::Type* lowerTy(Ty* t, unsigned depth = 0) {
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
      case Ty::List: return ctx_.bufferType(lowerTy(t->args[0], depth + 1), ir::Space::Host, ir::Ownership::Read);
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
            if (d->recursive) {
              unsupported(Span{curLoc_.line, curLoc_.col, 1},
                          "the recursive data type `" + d->name + "` cannot be lowered (the IR has no recursive types)", "E203");
              return ctx_.unitType();
            }
            std::vector<const ir::Type*> variants;
            for (size_t k = 0; k < d->ctorTys.size(); ++k) {
              std::vector<const ir::Type*> fields;
              for (Ty* f : ctorFields(T, t, k)) fields.push_back(lowerTy(f, depth + 1));
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
  const ir::Type* fnIrType(Ty* t, unsigned depth = 0) {
    std::vector<const ir::Type*> params;
    t = sub(t);
    while (t->kind == Ty::Fn && t->args.size() == 2 && params.size() < 16) {
      params.push_back(lowerTy(t->args[0], depth + 1));
      t = sub(t->args[1]);
    }
    return ctx_.functionType(params, {lowerTy(t, depth + 1)});
  }

  bool checkRepresentable(Ty* t, Span s, unsigned depth = 0) {
    t = sub(t);
    if (depth > 40) return true;
    if (t->kind == Ty::Named && t->decl->kind == TypeDecl::Data && t->decl->recursive) {
      unsupported(s, "the recursive data type `" + t->decl->name + "` cannot be lowered (the IR has no recursive types)", "E203");
      return false;
    }
    if (t->kind == Ty::Fn) return true;
    for (Ty* a : t->args)
      if (!checkRepresentable(a, s, depth + 1)) return false;
    return true;
  }

  // ---- closures -----------------------------------------------------------------
  ClosureGroup& group(Ty* fnTy) {
    std::string key = show(fnTy);
    auto it = groups_.find(key);
    if (it != groups_.end()) return it->second;
    ClosureGroup& g = groups_[key];
    g.fnTy = fnTy;
    if (known_)
      if (auto k = known_->find(key); k != known_->end())
        for (const ClosureEntry& e : k->second.entries) {
          ClosureEntry copy = e;
          copy.body = nullptr;
          g.entries.push_back(copy);
        }
    return g;
  }

  const ir::Type* envType(const ClosureEntry& e) {
    std::vector<const ir::Type*> parts;
    Subst saved = subst_;
    if (e.lambda) {
      subst_ = e.subst;
      for (const Binding* b : e.captures) parts.push_back(lowerTy(b->ty));
    } else {
      subst_.clear();
      for (Ty* t : e.captureTys) parts.push_back(lowerTy(t));
    }
    subst_ = saved;
    return ctx_.structType(parts);
  }

  std::set<std::string> inProgress_, reportedRecursive_;
  const ir::Type* closureType(Ty* fnTy) {
    std::string key = show(fnTy);
    if (inProgress_.count(key)) {  // a closure of this type captures one of the same type
      if (known_ && reportedRecursive_.insert(key).second)
        unsupported(Span{curLoc_.line, curLoc_.col, 1},
                    "a closure of type " + key + " captures a function of the same type, which code generation cannot "
                    "represent (the IR has no recursive types); pass the function as an argument instead");
      return ctx_.unitType();
    }
    inProgress_.insert(key);
    ClosureGroup& g = group(fnTy);
    std::vector<const ir::Type*> variants;
    for (const ClosureEntry& e : g.entries) variants.push_back(envType(e));
    if (variants.empty()) variants.push_back(ctx_.unitType());
    inProgress_.erase(key);
    return ctx_.sumType(variants);
  }

  size_t entryIndex(ClosureGroup& g, ClosureEntry e) {
    for (size_t i = 0; i < g.entries.size(); ++i)
      if (g.entries[i].key == e.key) return i;
    if (known_) {
      // The discovery pass found every closure; a new one here is a bug.
      unsupported(Span{}, "internal error: closure " + e.key + " was not found by the discovery pass");
    }
    g.entries.push_back(std::move(e));
    return g.entries.size() - 1;
  }

  // The bindings a lambda's body uses from outside it.
  void freeVars(const Expr& e, int firstInner, std::vector<const Binding*>& out) {
    if (e.kind == ExprKind::Var && e.binding && e.binding->id < firstInner) {
      for (const Binding* b : out)
        if (b == e.binding) return;
      out.push_back(e.binding);
    }
    if (e.kind == ExprKind::Var && !e.binding && e.refKind == Expr::Const)
      return;
    for (auto& k : e.kids) freeVars(*k, firstInner, out);
    for (auto& a : e.arms) {
      if (a.guard) freeVars(*a.guard, firstInner, out);
      if (a.body) freeVars(*a.body, firstInner, out);
    }
  }

  std::string substKey(const Subst& s) {
    std::string k;
    for (auto& [id, t] : s) k += std::to_string(id) + "=" + show(deep(t, {})) + ";";
    return k;
  }

  // A closure value for parameter `param` of a lambda.
  Value* makeLambdaClosure(Expr& lam, size_t param, Span s) {
    ClosureEntry e;
    e.lambda = &lam;
    e.param = param;
    e.subst = subst_;
    int firstInner = lam.params.empty() || !lam.params[0].binding ? 0 : lam.params[0].binding->id;
    freeVars(*lam.kids[0], firstInner, e.captures);
    for (size_t i = 0; i < param; ++i) e.captures.push_back(lam.params[i].binding);
    // The type of the closure: params[param..] -> body.
    Ty* t = lam.ty;
    for (size_t i = 0; i < param; ++i) t = resolve(t)->args[1];
    t = deep(t, subst_);
    e.key = "lambda@" + std::to_string(lam.span.line) + ":" + std::to_string(lam.span.col) + "#" +
            std::to_string(param) + "[" + substKey(subst_) + "]";
    std::vector<Value*> env;
    for (const Binding* b : e.captures) env.push_back(useCaptured(*b, s));
    return makeClosure(t, std::move(e), env);
  }

  Value* makeFnClosure(FnDecl& f, const std::vector<Ty*>& inst, size_t param, std::vector<Value*> prior,
                       std::vector<Ty*> priorTys, Span s) {
    ClosureEntry e;
    e.fn = &f;
    e.fnInst = inst;
    e.param = param;
    e.captureTys = priorTys;
    Ty* t = f.type;
    Subst fs;
    for (size_t i = 0; i < f.typeParamTys.size() && i < inst.size(); ++i) fs.push_back({f.typeParamTys[i]->id, inst[i]});
    t = deep(t, fs);
    for (size_t i = 0; i < param; ++i) t = resolve(t)->args[1];
    std::string instKey;
    for (Ty* x : inst) instKey += show(x) + ",";
    e.key = "fn@" + f.name + "<" + instKey + ">#" + std::to_string(param);
    return makeClosure(t, std::move(e), prior);
  }

  Value* makeClosure(Ty* fnTy, ClosureEntry e, const std::vector<Value*>& env) {
    ClosureGroup& g = group(fnTy);
    std::string gkey = show(fnTy);
    size_t k = entryIndex(g, std::move(e));
    const ir::Type* ct = closureType(fnTy);
    Value* envV = b_.op("struct.make", env, envType(groups_[gkey].entries[k]));
    if (k >= ct->members().size()) return fabricate(ct);  // discovery pass only
    if (envV->type() != ct->members()[k]) return fabricate(ct);
    return b_.op("sum.make", {envV}, ct, {{"tag", ir::Attr::integer(static_cast<int64_t>(k))}});
  }

  Value* useCaptured(const Binding& b, Span s) {
    for (size_t i = env_.size(); i-- > 0;)
      if (env_[i].b == &b) {
        LBinding& lb = env_[i];
        if (lb.kind == LBinding::Boxed) return b_.op("struct.extract", {lb.v}, lb.v->type()->members()[0], {{"index", ir::Attr::integer(0)}});
        if (owns(lb.v->type())) unsupported(s, "a lambda cannot capture `" + b.name + "`, whose value owns memory");
        return lb.v;
      }
    unsupported(s, "internal error: captured variable `" + b.name + "` is not in scope");
    return fabricate(ctx_.i32());
  }

  // Calls a closure with one argument.
  Value* apply(Value* clo, Ty* fnTy, Value* arg) {
    fnTy = deep(fnTy, subst_);
    std::string key = show(fnTy);
    ClosureGroup& g = group(fnTy);
    if (!g.apply) {
      Subst saved = subst_;
      subst_.clear();
      const ir::Type* at = lowerTy(fnTy->args[0]);
      const ir::Type* rt = lowerTy(fnTy->args[1]);
      subst_ = saved;
      g.apply = m_.addFunction("apply<" + key + ">", ir::FunctionKind::Host,
                               ctx_.functionType({closureType(fnTy), at}, {rt}), b_loc());
      g.apply->param(0)->setName("closure");
      g.apply->param(1)->setName("arg");
    }
    const ir::Type* rt = g.apply->resultTypes()[0];
    return b_.create("call", {clo, arg}, {rt}, {{"callee", ir::Attr::symbol(g.apply->name())}})->result(0);
  }
  Loc b_loc() { return Loc{file_, 1, 1}; }

  void emitApply(ClosureGroup& g) {
    ir::Function* f = g.apply;
    const ir::Type* ct = f->paramTypes()[0];
    const ir::Type* rt = f->resultTypes()[0];
    B b(ctx_, f->body());
    b.setLoc(f->loc());
    ir::Op* mt = b.create("match", {f->param(0)}, {rt}, {}, static_cast<unsigned>(ct->members().size()));
    for (unsigned k = 0; k < ct->members().size(); ++k) {
      ir::Region& r = mt->region(k);
      Value* env = r.addArg(ct->members()[k], "env");
      B rb(ctx_, r);
      rb.setLoc(f->loc());
      Value* out;
      if (k < g.entries.size()) {
        ir::Function* body = entryFunction(g, k);
        out = rb.create("call", {env, f->param(1)}, {rt}, {{"callee", ir::Attr::symbol(body->name())}})->result(0);
      } else {
        // No closure of this type is ever made: unreachable.
        B saved = b_;
        b_ = rb;
        dropValue(env);
        dropValue(f->param(1));
        out = fabricate(rt);
        rb = b_;
        b_ = saved;
      }
      rb.create("yield", {out});
    }
    b.create("return", {mt->result(0)});
  }

  ir::Function* entryFunction(ClosureGroup& g, size_t k) {
    ClosureEntry& e = g.entries[k];
    if (e.body) return e.body;
    const ir::Type* env = envType(e);
    Subst saved = subst_;
    subst_.clear();
    const ir::Type* at = lowerTy(g.fnTy->args[0]);
    const ir::Type* rt = lowerTy(g.fnTy->args[1]);
    subst_ = saved;
    Span sp = e.lambda ? e.lambda->span : e.fn->span;
    e.body = m_.addFunction("closure<" + e.key + ">", ir::FunctionKind::Host, ctx_.functionType({env, at}, {rt}), loc(sp));
    Value* envV = e.body->param(0);
    Value* arg = e.body->param(1);
    envV->setName("env");
    arg->setName("arg");
    // Lower the body in a fresh function context.
    auto savedEnv = std::move(env_);
    Subst savedSubst = subst_;
    FnDecl* savedFn = curFn_;
    std::string savedKey = curKey_;
    const ir::Type* savedLoop = loopSum_;
    B savedB = b_;
    env_.clear();
    loopSum_ = nullptr;
    curFn_ = nullptr;
    curKey_.clear();
    b_ = B(ctx_, e.body->body());
    setLoc(sp);
    std::vector<Value*> caps = env->members().empty() ? std::vector<Value*>{}
                                                      : b_.create("struct.unpack", {envV}, {env->members().begin(), env->members().end()})->results();
    Value* result = nullptr;
    if (e.lambda) {
      subst_ = e.subst;
      for (size_t i = 0; i < e.captures.size(); ++i) env_.push_back(LBinding{LBinding::Plain, e.captures[i], caps[i]});
      Param& p = e.lambda->params[e.param];
      bindValue(p.binding, arg, p.span);
      if (e.param + 1 < e.lambda->params.size()) {
        result = makeLambdaClosure(*e.lambda, e.param + 1, sp);
      } else {
        result = lowerExpr(*e.lambda->kids[0]);
        result = coerce(result, rt, e.lambda->kids[0]->span);
      }
      endScopeAll();
    } else {
      subst_.clear();
      FnDecl& f = *e.fn;
      std::vector<Value*> args = caps;
      args.push_back(arg);
      std::vector<Ty*> tys = e.captureTys;
      Subst fs;
      for (size_t i = 0; i < f.typeParamTys.size() && i < e.fnInst.size(); ++i) fs.push_back({f.typeParamTys[i]->id, e.fnInst[i]});
      tys.push_back(deep(f.params.empty() ? T.unit() : f.paramTys[e.param], fs));
      if (e.param + 1 < f.params.size()) {
        result = makeFnClosure(f, e.fnInst, e.param + 1, args, tys, sp);
      } else {
        ir::Function* callee = instance(f, fs);
        if (f.params.empty()) {
          dropValue(arg);
          args.clear();
        }
        result = b_.create("call", args, {callee->resultTypes()[0]}, {{"callee", ir::Attr::symbol(callee->name())}})->result(0);
      }
    }
    setLoc(sp);
    b_.create("return", {result});
    env_ = std::move(savedEnv);
    subst_ = savedSubst;
    curFn_ = savedFn;
    curKey_ = savedKey;
    loopSum_ = savedLoop;
    b_ = savedB;
    return e.body;
  }

  // ---- functions ------------------------------------------------------------------
  ir::Function* instance(FnDecl& f, Subst s) {
    std::string key = f.name;
    if (!f.typeParamTys.empty()) {
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
    for (Ty* t : f.paramTys) params.push_back(lowerTy(t));
    const ir::Type* rt = lowerTy(f.retTy);
    subst_ = saved;
    ir::Function* irf = m_.addFunction(key, ir::FunctionKind::Host, ctx_.functionType(params, {rt}), loc(f.span));
    instances_[key] = irf;
    work_.push_back({&f, std::move(s), irf, FnKind::Host, false});
    return irf;
  }

  // Lowers queued function instances and every closure body until nothing
  // new appears, then the apply functions (whose variants are then final).
  void drain() {
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

  bool hasSelfTailCall(const Expr& e, const std::string& name, unsigned depth = 0) {
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

  void lowerFunction(const Instance& in) {
    FnDecl& f = *in.fn;
    subst_ = in.subst;
    curFn_ = &f;
    curKey_ = in.irfn->name();
    env_.clear();
    loopSum_ = nullptr;
    carry_ = nullptr;
    device_ = in.kind != FnKind::Host;
    generic_ = in.generic;
    ir::Function* irf = in.irfn;
    b_ = B(ctx_, irf->body());
    setLoc(f.span);
    if (in.kind == FnKind::Kernel) {
      lowerKernel(in);
      return;
    }
    for (size_t i = 0; i < f.params.size(); ++i)
      if (!checkRepresentable(f.paramTys[i], f.params[i].span)) return;
    if (!checkRepresentable(f.retTy, f.span)) return;
    std::vector<Value*> params;
    for (size_t i = 0, j = 0; i < f.params.size(); ++i) {
      if (auto it = in.fnArgs.find(i); it != in.fnArgs.end())
        params.push_back(b_.op("func.ref", {}, it->second.second, {{"callee", ir::Attr::symbol(it->second.first)}}));
      else
        params.push_back(irf->param(static_cast<unsigned>(j++)));
      params.back()->setName(f.params[i].name == "_" ? "" : f.params[i].name);
    }
    const ir::Type* rt = irf->resultTypes()[0];

    // Self tail calls: run the body in a loop over sum<struct<params>, result>.
    bool loop = hasSelfTailCall(*f.body, f.name) && fabricable(rt) && in.fnArgs.empty();
    if (loop) {
      const ir::Type* argsT = ctx_.structType({irf->paramTypes().begin(), irf->paramTypes().end()});
      const ir::Type* S = ctx_.sumType({argsT, rt});
      Value* init = b_.op("sum.make", {b_.op("struct.make", params, argsT)}, S, {{"tag", ir::Attr::integer(0)}});
      ir::Op* w = b_.create("while", {init}, {S}, {}, 2);
      {
        ir::Region& r0 = w->region(0);
        Value* s0 = r0.addArg(S, "state");
        B rb(ctx_, r0);
        rb.setLoc(loc(f.span));
        Value* tag = rb.op("sum.tag", {s0}, ctx_.u32());
        Value* zero = rb.constInt(ctx_.u32(), 0);
        Value* go = rb.op("eq", {tag, zero}, ctx_.boolType());
        rb.create("condition", {go, s0});
      }
      ir::Region& r1 = w->region(1);
      Value* s1 = r1.addArg(S, "state");
      b_.setInsertionPoint(r1);
      ir::Op* mt = b_.create("match", {s1}, {S}, {}, 2);
      {
        Value* args = mt->region(0).addArg(argsT, "args");
        b_.setInsertionPoint(mt->region(0));
        std::vector<Value*> ps = argsT->members().empty()
                                     ? std::vector<Value*>{}
                                     : b_.create("struct.unpack", {args}, {argsT->members().begin(), argsT->members().end()})->results();
        bindParams(f, ps);
        loopSum_ = S;
        Value* next = lowerTail(*f.body);
        endScopeAll();
        b_.create("yield", {next});
        loopSum_ = nullptr;
      }
      {
        Value* res = mt->region(1).addArg(rt, "result");
        b_.setInsertionPoint(mt->region(1));
        b_.create("yield", {b_.op("sum.make", {res}, S, {{"tag", ir::Attr::integer(1)}})});
      }
      b_.setInsertionPoint(r1);
      b_.create("yield", {mt->result(0)});
      b_.setInsertionPoint(irf->body());
      ir::Op* out = b_.create("match", {w->result(0)}, {rt}, {}, 2);
      {
        Value* args = out->region(0).addArg(argsT, "args");
        b_.setInsertionPoint(out->region(0));
        dropValue(args);
        b_.create("yield", {fabricate(rt)});
        Value* res = out->region(1).addArg(rt, "result");
        b_.setInsertionPoint(out->region(1));
        b_.create("yield", {res});
      }
      b_.setInsertionPoint(irf->body());
      b_.create("return", {out->result(0)});
      return;
    }
    bindParams(f, params);
    Value* v = lowerExpr(*f.body);
    v = coerce(v, rt, f.body->span);
    setLoc(f.span);
    endScopeAll();
    b_.create("return", {v});
  }

  void bindParams(FnDecl& f, const std::vector<Value*>& vals) {
    for (size_t i = 0; i < f.params.size() && i < vals.size(); ++i) bindValue(f.params[i].binding, vals[i], f.params[i].span);
  }

  // ---- bindings ----------------------------------------------------------------------
  // Binds b to v. A binding that must be used exactly once is re-bound here,
  // at its binding site: a token box when the value owns nothing, else a
  // struct.make/struct.unpack pair, so that a leak is reported at `site`.
  void bindValue(const Binding* b, Value* v, Span site) {
    LBinding lb;
    lb.b = b;
    lb.v = v;
    Ty* t = sub(b->ty);
    lb.list = t->kind == Ty::List;
    if (b && mustUseBinding(b) && !lb.list) {
      Loc saved = curLoc_;
      setLoc(site);
      if (owns(v->type())) {
        Value* box = b_.op("struct.make", {v}, ctx_.structType({v->type()}));
        lb.v = b_.create("struct.unpack", {box}, {v->type()})->result(0);
      } else {
        Value* tok = b_.op("alloc", {b_.constInt(ctx_.i32(), 0)}, token());
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
  bool mustUseBinding(const Binding* b) {
    Ty* t = sub(b->ty);
    if (t->kind == Ty::Gpu && (t->gpu == Ty::Affine || (opts_.affineMode && t->gpu == Ty::Linear))) return false;
    return usageOf(c_, *b) == Usage::ExactlyOnce;
  }
  bool mustUse(const LBinding& lb) { return lb.b && !lb.list && mustUseBinding(lb.b); }

  LBinding* lookup(const Binding* b) {
    for (size_t i = env_.size(); i-- > 0;)
      if (env_[i].b == b) return &env_[i];
    return nullptr;
  }

  // Pops bindings down to `mark`, freeing what may be dropped and was not used.
  void endScope(size_t mark) {
    while (env_.size() > mark) {
      LBinding& lb = env_.back();
      if (!lb.consumed && !mustUse(lb) && owns(lb.v->type())) dropValue(lb.v);
      env_.pop_back();
    }
  }
  void endScopeAll() { endScope(0); }

  // A use of a variable by value.
  Value* useVar(LBinding& lb, Span s) {
    if (lb.list) return lb.v;
    if (lb.kind == LBinding::Boxed) {
      lb.consumed = true;
      const ir::Type* st = lb.v->type();
      ir::Op* up = b_.create("struct.unpack", {lb.v}, {st->members()[0], st->members()[1]});
      b_.create("free", {up->result(1)});
      return up->result(0);
    }
    if (!owns(lb.v->type())) return lb.v;
    // Moving an owned value out of its variable happens here, at the use: a
    // struct.make/struct.unpack pair puts the consumption at this location,
    // so a second use is reported here and not at whatever op takes it.
    lb.consumed = true;
    Value* box = b_.op("struct.make", {lb.v}, ctx_.structType({lb.v->type()}));
    return b_.create("struct.unpack", {box}, {lb.v->type()})->result(0);
  }
  // A borrow: the value, without consuming it.
  Value* borrowVar(LBinding& lb) {
    if (lb.kind == LBinding::Boxed)
      return b_.op("struct.extract", {lb.v}, lb.v->type()->members()[0], {{"index", ir::Attr::integer(0)}});
    return lb.v;
  }

  // ---- values ------------------------------------------------------------------------
  Loc curLoc_;
  void setLoc(Span s) {
    curLoc_ = loc(s);
    b_.setLoc(curLoc_);
  }

  bool fabricable(const ir::Type* t) {
    if (t->isBuffer()) return t->ownership() == ir::Ownership::Linear || t->ownership() == ir::Ownership::Affine;
    for (const ir::Type* m : t->members())
      if (!fabricable(m)) return false;
    return !t->isFunction() && !t->isVar();
  }

  // A value of type t for a path that never runs (the unreachable end of a
  // loop or match); owned parts are fresh empty buffers, so ownership holds.
  Value* fabricate(const ir::Type* t) {
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
        return b_.op("sum.make", {fabricate(t->members()[0])}, t, {{"tag", ir::Attr::integer(0)}});
      case ir::TypeKind::Buffer:
        if (t->ownership() == ir::Ownership::Linear || t->ownership() == ir::Ownership::Affine)
          return b_.op("alloc", {b_.constInt(ctx_.i32(), 0)}, t);
        break;
      default: break;
    }
    unsupported(Span{curLoc_.line, curLoc_.col, 1}, "internal error: cannot make a placeholder of type " + t->str());
    return b_.constInt(ctx_.i32(), 0);
  }

  // Frees every buffer a value owns.
  void dropValue(Value* v) {
    const ir::Type* t = v->type();
    if (!owns(t)) return;
    if (t->isBuffer()) {
      b_.create("free", {v});
      return;
    }
    if (t->isStruct()) {
      ir::Op* up = b_.create("struct.unpack", {v}, {t->members().begin(), t->members().end()});
      for (Value* p : up->results()) dropValue(p);
      return;
    }
    if (t->isSum()) {
      ir::Op* mt = b_.create("match", {v}, {}, {}, static_cast<unsigned>(t->members().size()));
      B saved = b_;
      for (unsigned k = 0; k < t->members().size(); ++k) {
        Value* p = mt->region(k).addArg(t->members()[k]);
        b_.setInsertionPoint(mt->region(k));
        dropValue(p);
        b_.create("yield");
      }
      b_ = saved;
      return;
    }
  }

  // Converts between the representations of types the checker unified: a
  // linear/affine alias and the type it names (adding or removing the token).
  Value* coerce(Value* v, const ir::Type* want, Span s) {
    const ir::Type* have = v->type();
    if (have == want) return v;
    if (want->isStruct() && want->members().size() == 2 && want->members()[0] == have && want->members()[1]->isBuffer() &&
        want->members()[1]->elem() == ctx_.intType(8, false)) {
      Value* tok = b_.op("alloc", {b_.constInt(ctx_.i32(), 0)}, want->members()[1]);
      return b_.op("struct.make", {v, tok}, want);
    }
    if (have->isStruct() && have->members().size() == 2 && have->members()[0] == want && have->members()[1]->isBuffer() &&
        have->members()[1]->elem() == ctx_.intType(8, false)) {
      ir::Op* up = b_.create("struct.unpack", {v}, {have->members()[0], have->members()[1]});
      b_.create("free", {up->result(1)});
      return up->result(0);
    }
    unsupported(s, "code generation cannot pass a value of IR type " + have->str() + " where " + want->str() +
                       " is expected (lists and borrows can only be bound, indexed and passed to functions)");
    dropValue(v);
    return fabricate(want);
  }

  // Call arguments may also lend a buffer to a borrowed parameter.
  Value* coerceArg(Value* v, const ir::Type* want, Span s) {
    const ir::Type* have = v->type();
    if (have->isBuffer() && want->isBuffer() && have->elem() == want->elem() && have->space() == want->space() &&
        (want->ownership() == ir::Ownership::Read ||
         (want->ownership() == ir::Ownership::Write && have->ownership() != ir::Ownership::Read)))
      return v;
    return coerce(v, want, s);
  }

  // Lowers `e` and drops its value (a sequence's first part, a `_` binding).
  void lowerAndDrop(Expr& e) { dropValue(lowerExpr(e)); }

  // Branching ops (if / match) with balanced ownership: a droppable binding
  // consumed on some paths is freed on the others.
  Value* branch(const char* opName, Value* operand, unsigned n, const ir::Type* resultT, Span s,
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
    B outer = b_;
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
      b_.create("yield", yields);
    }
    for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = op->result(static_cast<unsigned>(j + (resultT ? 1 : 0)));
    for (size_t i = 0; i < envSize; ++i) {
      bool any = false;
      for (auto& c : after) any |= c[i];
      env_[i].consumed = any;
    }
    b_ = outer;
    b_.setInsertionPoint(*op->parentRegion());
    return resultT ? op->result(0) : nullptr;
  }

  Value* lowerExpr(Expr& e) {
    Loc saved = curLoc_;
    setLoc(e.span);
    Value* v = lowerKind(e, false);
    setLoc(Span{saved.line, saved.col, 1});
    curLoc_ = saved;
    b_.setLoc(saved);
    return v;
  }

  // Tail position of a function lowered as a loop: returns sum<args, result>.
  Value* lowerTail(Expr& e) {
    Loc saved = curLoc_;
    setLoc(e.span);
    Value* v = lowerKind(e, true);
    curLoc_ = saved;
    b_.setLoc(saved);
    return v;
  }

  Value* finishTail(Value* v, Span s) {
    const ir::Type* rt = loopSum_->members()[1];
    v = coerce(v, rt, s);
    return b_.op("sum.make", {v}, loopSum_, {{"tag", ir::Attr::integer(1)}});
  }

  Value* lowerKind(Expr& e, bool tail) {
    const ir::Type* ty = tail ? loopSum_ : lowerTy(e.ty);
    auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
    switch (e.kind) {
      case ExprKind::IntLit: return value(coerce(b_.constInt(primOf(e.ty), e.ival), lowerTy(e.ty), e.span));
      case ExprKind::FloatLit: return value(coerce(b_.constFloat(primOf(e.ty), e.fval), lowerTy(e.ty), e.span));
      case ExprKind::BoolLit: return value(b_.constBool(e.bval));
      case ExprKind::Unit: return value(b_.op("struct.make", {}, ctx_.unitType()));
      case ExprKind::StrLit: return value(newString(e.name));
      case ExprKind::StrNew: return value(newString(e.kids[0]->name));
      case ExprKind::Var: return value(lowerVar(e));
      case ExprKind::Let: {
        Value* v = lowerExpr(*e.kids[0]);
        size_t mark = env_.size();
        setLoc(e.span);
        bindPattern(*e.pat, v, e.bval);
        Value* r = e.kids.size() > 1 ? (tail ? lowerTail(*e.kids[1]) : lowerExpr(*e.kids[1]))
                                     : value(b_.op("struct.make", {}, ctx_.unitType()));
        setLoc(e.span);
        endScope(mark);
        return r;
      }
      case ExprKind::Seq:
        lowerAndDrop(*e.kids[0]);
        return tail ? lowerTail(*e.kids[1]) : lowerExpr(*e.kids[1]);
      case ExprKind::Region: {
        if (tail || !issuesDeviceWork(c_, *e.kids[0])) return tail ? lowerTail(*e.kids[0]) : lowerExpr(*e.kids[0]);
        // A region is one submission: its end waits for the device work.
        Value* v = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        b_.create("wait");
        return v;
      }
      case ExprKind::If: {
        Value* c = lowerExpr(*e.kids[0]);
        std::set<const Binding*> assigned;
        assignedVars(*e.kids[1], assigned);
        assignedVars(*e.kids[2], assigned);
        auto savedCarry = carry_;
        carry_ = &assigned;
        // An `if` of type () (a statement) has no value result.
        const ir::Type* rty = !tail && ty->isUnit() ? nullptr : ty;
        Value* r = branch("if", c, 2, rty, e.span, [&](unsigned k, Value*) {
          return tail ? lowerTail(*e.kids[k + 1]) : lowerExpr(*e.kids[k + 1]);
        });
        carry_ = savedCarry;
        return r ? r : unit();
      }
      case ExprKind::Case: {
        Value* s = lowerExpr(*e.kids[0]);
        std::set<const Binding*> assigned;
        assignedVars(e, assigned);
        auto savedCarry = carry_;
        carry_ = &assigned;
        Value* r = branch("match", s, 2, ty, e.span, [&](unsigned k, Value* payload) {
          size_t mark = env_.size();
          Span vs = k < e.nameSpans.size() ? e.nameSpans[k] : e.span;
          if (e.caseBindings[k]) bindValue(e.caseBindings[k], payload, vs);
          Value* r = tail ? lowerTail(*e.kids[k + 1]) : lowerExpr(*e.kids[k + 1]);
          endScope(mark);
          return r;
        });
        carry_ = savedCarry;
        return r;
      }
      case ExprKind::Match: {
        std::set<const Binding*> assigned;
        assignedVars(e, assigned);
        auto savedCarry = carry_;
        carry_ = &assigned;
        Value* r = lowerMatch(e, tail, ty);
        carry_ = savedCarry;
        return r;
      }
      case ExprKind::VarDecl:
      case ExprKind::Assign:
      case ExprKind::IndexAssign:
      case ExprKind::While:
      case ExprKind::For:
      case ExprKind::Workgroup: return lowerStatement(e, tail);
      case ExprKind::Return:
        if (e.kids.empty()) return value(unit());
        return tail ? lowerTail(*e.kids[0]) : lowerExpr(*e.kids[0]);
      case ExprKind::Dispatch: return value(lowerDispatch(e));
      case ExprKind::AllocGpu: {
        Value* n = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        const ir::Type* bt = lowerTy(e.ty);
        if (!bt->isBuffer() || bt->space() != ir::Space::Device) {
          unsupported(e.span, "code generation cannot allocate a GPU buffer of type " + show(sub(e.ty)));
          return value(fabricate(bt));
        }
        return value(b_.op("alloc", {n}, bt));
      }
      case ExprKind::Await: {
        pendingList_ = false;
        Value* v = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        b_.create("wait");
        if (pendingList_) return value(v);  // d2h(b).await: a fresh list
        return value(coerce(v, lowerTy(e.ty), e.span));
      }
      case ExprKind::Binary: return value(lowerBinary(e));
      case ExprKind::Unary: {
        Value* a = lowerExpr(*e.kids[0]);
        const ir::Type* pt = primOf(e.kids[0]->ty);
        a = coerce(a, pt, e.kids[0]->span);
        setLoc(e.span);
        Value* r = b_.op(e.uop == UnOp::Neg ? "neg" : "not", {a}, pt);
        return value(coerce(r, lowerTy(e.ty), e.span));
      }
      case ExprKind::Call: return lowerCall(e, tail);
      case ExprKind::Index: {
        Value* temp = nullptr;
        Value* list = lowerBorrowOrTemp(*e.kids[0], temp);
        Value* i = lowerExpr(*e.kids[1]);
        setLoc(e.span);
        if (!list->type()->isBuffer()) {
          unsupported(e.span, "code generation cannot index this value");
          return value(fabricate(lowerTy(e.ty)));
        }
        Value* r = b_.op("load", {list, i}, list->type()->elem());
        if (temp) dropValue(temp);
        return value(r);
      }
      case ExprKind::Member: {
        Value* base = lowerExpr(*e.kids[0]);
        Ty* bt = sub(e.kids[0]->ty);
        if (Ty* ex = expandAlias(T, bt)) bt = sub(ex);
        size_t index = 0;
        if (bt->kind == Ty::Vec) {
          static const std::string lanes = "xyzw";
          size_t lane = e.name.size() == 1 ? lanes.find(e.name[0]) : std::string::npos;
          if (lane == std::string::npos || lane >= static_cast<size_t>(bt->size)) {
            unsupported(e.span, "code generation does not support the vector member ." + e.name);
            return value(fabricate(lowerTy(e.ty)));
          }
          setLoc(e.span);
          return value(b_.op("vec.extract", {base}, ctx_.f32(), {{"index", ir::Attr::integer(static_cast<int64_t>(lane))}}));
        }
        if (e.bval) index = static_cast<size_t>(e.ival);
        else if (bt->kind == Ty::Named && bt->decl->kind == TypeDecl::Record) {
          auto& names = bt->decl->fieldNames;
          index = std::find(names.begin(), names.end(), e.name) - names.begin();
        }
        setLoc(e.span);
        return value(project(base, index));
      }
      case ExprKind::Fst:
      case ExprKind::Snd: {
        Value* base = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        return value(project(base, e.kind == ExprKind::Fst ? 0 : 1));
      }
      case ExprKind::Inl:
      case ExprKind::Inr: {
        Value* v = lowerExpr(*e.kids[0]);
        const ir::Type* st = lowerTy(e.ty);
        unsigned k = e.kind == ExprKind::Inl ? 0 : 1;
        v = coerce(v, st->members()[k], e.kids[0]->span);
        setLoc(e.span);
        return value(b_.op("sum.make", {v}, st, {{"tag", ir::Attr::integer(k)}}));
      }
      case ExprKind::Borrow: return value(lowerBorrowOf(*e.kids[0]));
      case ExprKind::Drop: {
        Value* v = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        dropValue(v);
        return value(b_.op("struct.make", {}, ctx_.unitType()));
      }
      case ExprKind::Copy: {
        Value* v = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        return value(b_.op("struct.make", {v, v}, lowerTy(e.ty)));
      }
      case ExprKind::Record: {
        Ty* rt = sub(e.ty);
        const ir::Type* st = lowerTy(rt);
        std::vector<Value*> fields(st->members().size(), nullptr);
        std::vector<Value*> given;
        for (auto& k : e.kids) given.push_back(lowerExpr(*k));
        for (size_t i = 0; i < e.names.size(); ++i) {
          auto& names = rt->decl->fieldNames;
          size_t at = std::find(names.begin(), names.end(), e.names[i]) - names.begin();
          if (at < fields.size()) fields[at] = coerce(given[i], st->members()[at], e.kids[i]->span);
        }
        setLoc(e.span);
        return value(b_.op("struct.make", fields, st));
      }
      case ExprKind::Tuple: {
        std::vector<Value*> parts;
        for (auto& k : e.kids) parts.push_back(lowerExpr(*k));
        setLoc(e.span);
        const ir::Type* st = lowerTy(e.ty);
        for (size_t i = 0; i < parts.size(); ++i) parts[i] = coerce(parts[i], st->members()[i], e.kids[i]->span);
        return value(b_.op("struct.make", parts, st));
      }
      case ExprKind::List: {
        const ir::Type* lt = lowerTy(e.ty);
        std::vector<Value*> elems;
        for (auto& k : e.kids) elems.push_back(coerce(lowerExpr(*k), lt->elem(), k->span));
        setLoc(e.span);
        if (owns(lt->elem())) unsupported(e.span, "code generation does not support lists of values that own memory");
        Value* buf = b_.op("alloc", {b_.constInt(ctx_.i32(), static_cast<int64_t>(elems.size()))},
                           ctx_.bufferType(lt->elem(), ir::Space::Host, ir::Ownership::Affine));
        for (size_t i = 0; i < elems.size(); ++i)
          b_.create("store", {buf, b_.constInt(ctx_.i32(), static_cast<int64_t>(i)), elems[i]});
        if (tail) {
          unsupported(e.span, "code generation cannot return a list literal from a function");
          dropValue(buf);
          return value(fabricate(lt));
        }
        pendingList_ = true;
        return buf;
      }
      case ExprKind::StrLen: {
        bool borrowed = e.kids[0]->kind == ExprKind::Borrow;
        Expr& arg = borrowed ? *e.kids[0]->kids[0] : *e.kids[0];
        Value* s = borrowed ? lowerBorrowOf(arg) : lowerExpr(arg);
        setLoc(arg.span);
        Value* n = b_.op("buffer.len", {s}, ctx_.i32());
        if (!borrowed) {
          setLoc(e.kids[0]->span);
          dropValue(s);
        }
        return value(n);
      }
      case ExprKind::StrConcat: return value(lowerConcat(e));
      case ExprKind::Lambda: return value(generic_ ? lambdaRef(e) : makeLambdaClosure(e, 0, e.span));
      case ExprKind::Ffi: {
        std::vector<Value*> args;
        for (auto& k : e.kids) args.push_back(lowerExpr(*k));
        setLoc(e.span);
        return value(ffiCall(e.name, args, lowerTy(e.ty), e.span));
      }
      case ExprKind::Perform:
      case ExprKind::Handle:
        unsupported(e.span, "effects (perform/handle) are type-checked but not supported by code generation", "E200");
        return value(fabricate(lowerTy(e.ty)));
    }
    return value(fabricate(lowerTy(e.ty)));
  }
  bool pendingList_ = false;

  Value* ffiCall(const std::string& sym, const std::vector<Value*>& args, const ir::Type* rt, Span s) {
    std::vector<const ir::Type*> ps;
    for (Value* a : args) ps.push_back(a->type());
    if (std::string why = ffiSignatureProblem(ps, rt); !why.empty()) {
      unsupported(s, "extern call to '" + sym + "': " + why, "E202");
      for (Value* a : args) dropValue(a);
      return fabricate(rt);
    }
    return b_.create("ephapax.ffi_call", args, {rt}, {{"symbol", ir::Attr::string(sym)}})->result(0);
  }

  // The primitive IR type behind a (possibly aliased) numeric/Bool type.
  const ir::Type* primOf(Ty* t) {
    t = sub(t);
    for (int i = 0; i < 40; ++i) {
      Ty* e = expandAlias(T, t);
      if (!e) break;
      t = sub(e);
    }
    return lowerTy(t);
  }

  Value* project(Value* base, size_t index) {
    const ir::Type* t = base->type();
    if (!t->isStruct() || index >= t->members().size()) {
      unsupported(Span{curLoc_.line, curLoc_.col, 1}, "internal error: projection of " + t->str());
      return fabricate(ctx_.i32());
    }
    if (!owns(t)) return b_.op("struct.extract", {base}, t->members()[index], {{"index", ir::Attr::integer(static_cast<int64_t>(index))}});
    // The other fields are left alone: the checker rejects discarding a linear
    // one (E001), and with that check bypassed the IR linearity pass reports
    // the leak here too. Droppable ones are freed.
    ir::Op* up = b_.create("struct.unpack", {base}, {t->members().begin(), t->members().end()});
    for (size_t i = 0; i < up->numResults(); ++i)
      if (i != index && !up->result(static_cast<unsigned>(i))->type()->isLinear()) dropValue(up->result(static_cast<unsigned>(i)));
    return up->result(static_cast<unsigned>(index));
  }

  Value* newString(const std::string& bytes) {
    const ir::Type* u8 = ctx_.intType(8, false);
    Value* buf = b_.op("alloc", {b_.constInt(ctx_.i32(), static_cast<int64_t>(bytes.size()))},
                       ctx_.bufferType(u8, ir::Space::Host, ir::Ownership::Linear));
    for (size_t i = 0; i < bytes.size(); ++i)
      b_.create("store", {buf, b_.constInt(ctx_.i32(), static_cast<int64_t>(i)),
                          b_.constInt(u8, static_cast<unsigned char>(bytes[i]))});
    return buf;
  }

  // Copies src[0..n) to dst[at..at+n) with a `for` loop.
  void copyInto(Value* dst, Value* src, Value* at, Value* n) {
    Value* zero = b_.constInt(ctx_.i32(), 0);
    Value* one = b_.constInt(ctx_.i32(), 1);
    ir::Op* loop = b_.create("for", {zero, n, one}, {}, {}, 1);
    ir::Region& r = loop->region(0);
    Value* i = r.addArg(ctx_.i32(), "i");
    B saved = b_;
    b_.setInsertionPoint(r);
    Value* byte = b_.op("load", {src, i}, src->type()->elem());
    Value* j = b_.op("add", {i, at}, ctx_.i32());
    b_.create("store", {dst, j, byte});
    b_.create("yield");
    b_ = saved;
  }

  Value* lowerConcat(Expr& e) {
    Value* a = lowerExpr(*e.kids[0]);
    Value* b = lowerExpr(*e.kids[1]);
    setLoc(e.span);
    Value* la = b_.op("buffer.len", {a}, ctx_.i32());
    Value* lb = b_.op("buffer.len", {b}, ctx_.i32());
    Value* n = b_.op("add", {la, lb}, ctx_.i32());
    Value* out = b_.op("alloc", {n}, ctx_.bufferType(ctx_.intType(8, false), ir::Space::Host, ir::Ownership::Linear));
    copyInto(out, a, b_.constInt(ctx_.i32(), 0), la);
    copyInto(out, b, la, lb);
    // Each argument is consumed where it is written.
    setLoc(e.kids[0]->span);
    dropValue(a);
    setLoc(e.kids[1]->span);
    dropValue(b);
    setLoc(e.span);
    return out;
  }

  // The value behind `&e`: a variable without consuming it.
  Value* lowerBorrowOf(Expr& e) {
    if (e.kind == ExprKind::Var && e.binding)
      if (LBinding* lb = lookup(e.binding)) {
        setLoc(e.span);
        return borrowVar(*lb);
      }
    Value* v = lowerExpr(e);
    if (owns(v->type())) {
      if (pendingList_) {
        pendingList_ = false;
        unsupported(e.span, "code generation can index or borrow a list only through a variable (bind it with `let` first)");
      } else {
        unsupported(e.span, "code generation can borrow only variables, not this temporary value", "E201");
      }
    }
    return v;
  }

  Value* lowerVar(Expr& e) {
    if (e.builtin == Expr::Gid || e.builtin == Expr::Lid || e.builtin == Expr::GroupId) {
      static const char* ops[] = {"global_id", "local_id", "workgroup_id"};
      return idBuiltin(ops[e.builtin - Expr::Gid], 0, lowerTy(e.ty));
    }
    if (e.binding) {
      LBinding* lb = lookup(e.binding);
      if (!lb) {
        unsupported(e.span, "internal error: `" + e.name + "` is not in scope in the lowering");
        return fabricate(lowerTy(e.ty));
      }
      return useVar(*lb, e.span);
    }
    switch (e.refKind) {
      case Expr::Const: {
        ConstDecl& k = *c_.prog.consts[e.global];
        Subst saved = subst_;
        subst_.clear();
        Value* v = lowerExpr(*k.value);
        subst_ = saved;
        return v;
      }
      case Expr::Fn: {
        FnDecl& f = *c_.prog.fns[e.global];
        if (generic_) return funcRef(f, e.ty, e.span);
        std::vector<Ty*> inst;
        for (Ty* t : e.inst) inst.push_back(deep(t, subst_));
        return makeFnClosure(f, inst, 0, {}, {}, e.span);
      }
      case Expr::Ctor: {
        auto [d, k] = std::pair<TypeDecl*, int>(c_.ctors[e.name]);
        if (!d->ctorTys[k].empty()) {
          unsupported(e.span, "code generation does not support constructor `" + e.name + "` as a function value; apply it");
          return fabricate(lowerTy(e.ty));
        }
        const ir::Type* st = lowerTy(e.ty);
        return b_.op("sum.make", {b_.op("struct.make", {}, ctx_.unitType())}, st, {{"tag", ir::Attr::integer(k)}});
      }
      default:
        unsupported(e.span, "code generation does not support extern function `" + e.name + "` as a value; call it");
        return fabricate(lowerTy(e.ty));
    }
  }

  Value* lowerBinary(Expr& e) {
    if (e.bop == BinOp::And || e.bop == BinOp::Or) {
      Value* a = coerce(lowerExpr(*e.kids[0]), ctx_.boolType(), e.kids[0]->span);
      bool isAnd = e.bop == BinOp::And;
      return branch("if", a, 2, ctx_.boolType(), e.span, [&](unsigned k, Value*) -> Value* {
        if ((k == 0) == isAnd) return coerce(lowerExpr(*e.kids[1]), ctx_.boolType(), e.kids[1]->span);
        return b_.constBool(!isAnd);
      });
    }
    auto vecOrMat = [&](Ty* t) {
      t = sub(t);
      return t->kind == Ty::Vec || t->kind == Ty::Mat;
    };
    if (vecOrMat(e.kids[0]->ty) || vecOrMat(e.kids[1]->ty)) return lowerVecBinary(e);
    const ir::Type* pt = primOf(e.kids[0]->ty);
    Value* a = coerce(lowerExpr(*e.kids[0]), pt, e.kids[0]->span);
    Value* b = coerce(lowerExpr(*e.kids[1]), primOf(e.kids[1]->ty), e.kids[1]->span);
    setLoc(e.span);
    static const char* names[] = {"add", "sub", "mul", "div", "rem", "eq", "ne", "lt", "le", "gt", "ge"};
    const char* name = names[static_cast<int>(e.bop)];
    bool cmp = e.bop >= BinOp::Eq;
    if (cmp && pt->isUnit()) return b_.constBool(e.bop == BinOp::Eq);
    Value* r = b_.op(name, {a, b}, cmp ? ctx_.boolType() : pt);
    return coerce(r, lowerTy(e.ty), e.span);
  }

  Value* lowerCall(Expr& e, bool tail) {
    Expr& callee = *e.kids[0];
    const ir::Type* ty = lowerTy(e.ty);
    auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
    if (e.builtin != Expr::NoBuiltin) return value(lowerBuiltin(e));
    bool named = callee.kind == ExprKind::Var && !callee.binding;
    if (named && callee.refKind == Expr::Fn) {
      FnDecl& f = *c_.prog.fns[callee.global];
      Subst fs;
      for (size_t i = 0; i < f.typeParamTys.size() && i < callee.inst.size(); ++i)
        fs.push_back({f.typeParamTys[i]->id, deep(callee.inst[i], subst_)});
      if (f.gpuRole == FnDecl::Kernel) {
        unsupported(e.span, "a kernel is launched with `dispatch`, not called", "E217");
        return value(fabricate(ty));
      }
      if (!device_ && isSpecialisedLauncher(f)) return value(callSpecialisedLauncher(f, e, ty));
      ir::Function* target = device_                          ? deviceFn(f)
                             : f.gpuRole == FnDecl::Launcher     ? hostGpuFn(f)
                             : instantiateInIr(f, fs)            ? hostGenericFn(f)
                                                                 : instance(f, fs);
      if (e.kids.size() - 1 != target->paramTypes().size()) {
        unsupported(e.span, "code generation cannot apply `" + f.name + "` partially");
        return value(fabricate(ty));
      }
      // An owned buffer passed plainly to a view parameter is consumed:
      // the call borrows it, and it is freed after the call (as by dispatch).
      std::vector<Value*> args, lentOwned;
      for (size_t i = 1; i < e.kids.size(); ++i) {
        const ir::Type* want = target->paramTypes()[i - 1];
        if (want->isFunction()) {
          args.push_back(lowerFnArg(*e.kids[i], "`" + f.name + "`"));
          continue;
        }
        Value* a = lowerArg(*e.kids[i]);
        if (e.kids[i]->kind != ExprKind::Borrow && want->isBuffer() && want->space() == ir::Space::Device &&
            owns(a->type()) && !owns(want))
          lentOwned.push_back(a);
        args.push_back(ir::hasTypeVar(want) ? a : coerceArg(a, want, e.kids[i]->span));
      }
      auto freeLent = [&] {
        for (Value* v : lentOwned) dropValue(v);
      };
      setLoc(e.span);
      if (ir::isGeneric(*target)) {
        // The callee's type variables are bound by the arguments and the
        // call's own (checked) type; the monomorphize pass makes the instance.
        std::vector<const ir::Type*> argTys;
        for (Value* a : args) argTys.push_back(a->type());
        const ir::Type* rts[] = {ty};
        ir::TypeBinding binding;
        if (std::string why = ir::checkCallTypes(*target, argTys, rts, binding); !why.empty()) {
          unsupported(e.span, "code generation cannot call `" + f.name + "` here: " + why);
          dropPendingArgs();
          return value(fabricate(ty));
        }
        Value* r = b_.create("call", args, {ty}, {{"callee", ir::Attr::symbol(target->name())}})->result(0);
        dropPendingArgs();
        freeLent();
        return value(r);
      }
      Value* r;
      if (tail && loopSum_ && target->name() == curKey_) {
        const ir::Type* argsT = loopSum_->members()[0];
        r = b_.op("sum.make", {b_.op("struct.make", args, argsT)}, loopSum_, {{"tag", ir::Attr::integer(0)}});
        dropPendingArgs();
        return r;
      }
      r = b_.create("call", args, {target->resultTypes()[0]}, {{"callee", ir::Attr::symbol(target->name())}})->result(0);
      dropPendingArgs();
      freeLent();
      return value(coerce(r, ty, e.span));
    }
    if (named && callee.refKind == Expr::Extern) {
      FnDecl& f = *c_.prog.fns[callee.global];
      std::vector<Value*> args;
      for (size_t i = 1; i < e.kids.size(); ++i)
        args.push_back(coerce(lowerExpr(*e.kids[i]), lowerTy(f.paramTys[i - 1]), e.kids[i]->span));
      setLoc(e.span);
      return value(coerce(ffiCall(f.name, args, lowerTy(f.retTy), e.span), ty, e.span));
    }
    if (named && callee.refKind == Expr::Ctor) {
      auto [d, k] = std::pair<TypeDecl*, int>(c_.ctors[callee.name]);
      const ir::Type* st = ty;
      const ir::Type* payloadT = st->isSum() && static_cast<size_t>(k) < st->members().size() ? st->members()[k] : ctx_.unitType();
      std::vector<Value*> fields;
      for (size_t i = 1; i < e.kids.size(); ++i) {
        Value* v = lowerExpr(*e.kids[i]);
        fields.push_back(i - 1 < payloadT->members().size() ? coerce(v, payloadT->members()[i - 1], e.kids[i]->span) : v);
      }
      setLoc(e.span);
      if (!st->isSum()) return value(fabricate(st));
      return value(b_.op("sum.make", {b_.op("struct.make", fields, payloadT)}, st, {{"tag", ir::Attr::integer(k)}}));
    }
    // A function value (GPU code): call.indirect with every argument.
    if (callee.kind == ExprKind::Var && callee.binding)
      if (LBinding* lb = lookup(callee.binding); lb && lb->kind == LBinding::Plain && lb->v->type()->isFunction()) {
        const ir::Type* ft = lb->v->type();
        if (e.kids.size() - 1 != ft->members().size()) {
          unsupported(e.span, "code generation cannot apply a function value partially");
          return value(fabricate(ty));
        }
        std::vector<Value*> args{lb->v};
        for (size_t i = 1; i < e.kids.size(); ++i) {
          const ir::Type* want = ft->members()[i - 1];
          Value* a = lowerArg(*e.kids[i]);
          args.push_back(ir::hasTypeVar(want) ? a : coerceArg(a, want, e.kids[i]->span));
        }
        setLoc(e.span);
        Value* r = b_.create("call.indirect", args, {ft->results()[0]})->result(0);
        dropPendingArgs();
        return value(ir::hasTypeVar(r->type()) ? r : coerce(r, ty, e.span));
      }
    // A closure: apply it to one argument at a time.
    if (device_) {
      unsupported(e.span, "code generation does not yet support calls through function values in kernel code");
      return value(fabricate(ty));
    }
    Value* f = lowerExpr(callee);
    Ty* ft = callee.ty;
    if (e.kids.size() == 1) {
      setLoc(e.span);
      return value(coerce(apply(f, ft, b_.op("struct.make", {}, ctx_.unitType())), ty, e.span));
    }
    for (size_t i = 1; i < e.kids.size(); ++i) {
      Ty* fr = deep(ft, subst_);
      Value* a = lowerExpr(*e.kids[i]);
      Subst saved = subst_;
      subst_.clear();
      const ir::Type* want = lowerTy(fr->args[0]);
      subst_ = saved;
      a = coerce(a, want, e.kids[i]->span);
      setLoc(e.span);
      f = apply(f, fr, a);
      ft = fr->args[1];
    }
    return value(coerce(f, ty, e.span));
  }

  // Call arguments: list literals are passed as borrows and freed after the call.
  std::vector<Value*> pendingArgs_;
  Value* lowerArg(Expr& e) {
    pendingList_ = false;
    Value* v = lowerExpr(e);
    if (pendingList_) {
      pendingList_ = false;
      pendingArgs_.push_back(v);
    }
    return v;
  }
  void dropPendingArgs() {
    for (Value* v : pendingArgs_) dropValue(v);
    pendingArgs_.clear();
  }

  // ---- statements (see LowerStmt.cpp) -----------------------------------------------
  Value* unit() { return b_.op("struct.make", {}, ctx_.unitType()); }

  // The env_ entries of the vars in `assigned` that carry a value out of a loop.
  std::vector<size_t> carriedVars(const std::set<const Binding*>& assigned) {
    std::vector<size_t> out;
    for (size_t i = 0; i < env_.size(); ++i)
      if (env_[i].b && assigned.count(env_[i].b) && !owns(env_[i].v->type())) out.push_back(i);
    return out;
  }

  Value* lowerStatement(Expr& e, bool tail) {
    auto value = [&](Value* v) { return tail ? finishTail(v, e.span) : v; };
    auto rest = [&](size_t k) { return tail ? lowerTail(*e.kids[k]) : lowerExpr(*e.kids[k]); };
    switch (e.kind) {
      case ExprKind::VarDecl: {
        Value* v = lowerExpr(*e.kids[0]);
        if (e.binding) v = coerce(v, lowerTy(e.binding->ty), e.kids[0]->span);
        setLoc(e.span);
        if (owns(v->type())) unsupported(e.span, "code generation does not support a `var` holding a value that owns memory");
        size_t mark = env_.size();
        env_.push_back(LBinding{LBinding::Plain, e.binding, v});
        if (v->name().empty()) v->setName(e.name);
        Value* r = e.kids.size() > 1 ? rest(1) : value(unit());
        endScope(mark);
        return r;
      }
      case ExprKind::Assign: {
        LBinding* lb = e.binding ? lookup(e.binding) : nullptr;
        Value* v = lowerExpr(*e.kids[0]);
        setLoc(e.span);
        if (!lb) {
          unsupported(e.span, "internal error: `" + e.name + "` is not a var in scope in the lowering");
          dropValue(v);
          return value(unit());
        }
        v = coerce(v, lb->v->type(), e.kids[0]->span);
        if (v->name().empty()) v->setName(e.name);
        lb->v = v;
        return value(unit());
      }
      case ExprKind::IndexAssign: {
        Value* temp = nullptr;
        Value* buf = lowerBorrowOrTemp(*e.kids[0], temp);
        Value* i = lowerExpr(*e.kids[1]);
        Value* v = lowerExpr(*e.kids[2]);
        setLoc(e.span);
        if (!buf->type()->isBuffer()) {
          unsupported(e.span, "code generation can store only into a buffer or a workgroup array");
          return value(unit());
        }
        v = coerce(v, buf->type()->elem(), e.kids[2]->span);
        setLoc(e.span);
        b_.create("store", {buf, i, v});
        if (temp) dropValue(temp);
        return value(unit());
      }
      case ExprKind::For: lowerFor(e); return value(unit());
      case ExprKind::While: lowerWhile(e); return value(unit());
      case ExprKind::Workgroup: {
        auto it = workgroupArrays_.find(&e);
        if (it == workgroupArrays_.end() || !e.binding) {
          unsupported(e.span, "code generation supports workgroup arrays only in kernels", "E212");
          return e.kids.empty() ? value(unit()) : rest(0);
        }
        size_t mark = env_.size();
        env_.push_back(LBinding{LBinding::Plain, e.binding, it->second});
        Value* r = e.kids.empty() ? value(unit()) : rest(0);
        endScope(mark);
        return r;
      }
      default: break;
    }
    return value(fabricate(lowerTy(e.ty)));
  }

  // `for i in a..b { body }`: an IR `for` carrying the vars the body assigns.
  void lowerFor(Expr& e) {
    Value* lo = lowerExpr(*e.kids[0]);
    Value* hi = lowerExpr(*e.kids[1]);
    setLoc(e.span);
    const ir::Type* it = lo->type();
    if (!it->isInt()) {
      unsupported(e.span, "code generation supports `for` over integer ranges only");
      return;
    }
    hi = coerce(hi, it, e.kids[1]->span);
    std::set<const Binding*> assigned;
    assignedVars(*e.kids[2], assigned);
    std::vector<size_t> carried = carriedVars(assigned);
    std::vector<Value*> operands = {lo, hi, b_.constInt(it, 1)};
    std::vector<const ir::Type*> types;
    for (size_t i : carried) {
      operands.push_back(env_[i].v);
      types.push_back(env_[i].v->type());
    }
    ir::Op* loop = b_.create("for", operands, types, {}, 1);
    ir::Region& r = loop->region(0);
    Value* iv = r.addArg(it, e.name);
    for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = r.addArg(types[j], env_[carried[j]].b->name);
    B outer = b_;
    b_.setInsertionPoint(r);
    size_t mark = env_.size();
    if (e.binding) env_.push_back(LBinding{LBinding::Plain, e.binding, iv});
    lowerAndDrop(*e.kids[2]);
    endScope(mark);
    setLoc(e.span);
    std::vector<Value*> next;
    for (size_t i : carried) next.push_back(env_[i].v);
    b_.create("yield", next);
    b_ = outer;
    for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = loop->result(static_cast<unsigned>(j));
  }

  // `while c { body }`: an IR `while` carrying the vars the loop assigns.
  void lowerWhile(Expr& e) {
    std::set<const Binding*> assigned;
    assignedVars(*e.kids[0], assigned);
    assignedVars(*e.kids[1], assigned);
    std::vector<size_t> carried = carriedVars(assigned);
    std::vector<Value*> init;
    std::vector<const ir::Type*> types;
    for (size_t i : carried) {
      init.push_back(env_[i].v);
      types.push_back(env_[i].v->type());
    }
    setLoc(e.span);
    ir::Op* w = b_.create("while", init, types, {}, 2);
    B outer = b_;
    auto current = [&] {
      std::vector<Value*> vs;
      for (size_t i : carried) vs.push_back(env_[i].v);
      return vs;
    };
    for (unsigned k = 0; k < 2; ++k) {
      ir::Region& r = w->region(k);
      for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = r.addArg(types[j], env_[carried[j]].b->name);
      b_.setInsertionPoint(r);
      size_t mark = env_.size();
      if (k == 0) {
        Value* c = coerce(lowerExpr(*e.kids[0]), ctx_.boolType(), e.kids[0]->span);
        endScope(mark);
        setLoc(e.span);
        std::vector<Value*> ops = {c};
        for (Value* v : current()) ops.push_back(v);
        b_.create("condition", ops);
      } else {
        lowerAndDrop(*e.kids[1]);
        endScope(mark);
        setLoc(e.span);
        b_.create("yield", current());
      }
    }
    b_ = outer;
    for (size_t j = 0; j < carried.size(); ++j) env_[carried[j]].v = w->result(static_cast<unsigned>(j));
  }

  // A buffer or list to read without consuming it: a variable is borrowed; a
  // temporary (`d2h(b)[i]`) is returned in `temp` for the caller to free.
  Value* lowerBorrowOrTemp(Expr& e, Value*& temp) {
    if (e.kind == ExprKind::Borrow) return lowerBorrowOf(*e.kids[0]);
    if (e.kind == ExprKind::Var && e.binding) return lowerBorrowOf(e);
    pendingList_ = false;
    Value* v = lowerExpr(e);
    pendingList_ = false;
    if (owns(v->type())) temp = v;
    return v;
  }

  // ---- GPU functions --------------------------------------------------------------------
  bool isGeneric(const FnDecl& f) {
    for (Ty* p : f.typeParamTys)
      if (!p->regionVar) return true;
    return false;
  }

  // ---- generic host functions -----------------------------------------------------
  // A plain generic host function is lowered once with IR type variables and
  // instantiated by the monomorphize pass when nothing in it depends on what
  // the type arguments are beyond their IR type: its values are plain data
  // (no lists, strings, buffers, references or function values, whose
  // lowering frees memory or builds closures per type), it makes no
  // closures, it has no self tail call (the loop form needs a value of every
  // type), and the generic functions it calls qualify too. Every call must
  // also instantiate it at types that own no memory, since the generic body
  // cannot free a dropped value. Other calls get frontend instances.
  bool plainTy(Ty* t, unsigned depth = 0) {
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

  bool plainBody(const Expr& e, std::set<const FnDecl*>& seen) {
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

  bool lowersGenerically(const FnDecl& f, std::set<const FnDecl*>& seen) {
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
  bool instantiateInIr(const FnDecl& f, const Subst& fs) {
    std::set<const FnDecl*> seen;
    if (!isGeneric(f) || !lowersGenerically(f, seen)) return false;
    for (auto& [id, t] : fs)
      if (!plainTy(t)) return false;
    return true;
  }


  // Parameter types of a kernel or device function: a GPU buffer view is
  // buffer<T, device, write> when kernel code writes through it, else read.
  std::vector<const ir::Type*> gpuParamTypes(FnDecl& f) {
    std::vector<const ir::Type*> out;
    for (size_t i = 0; i < f.params.size(); ++i) {
      Ty* t = sub(f.paramTys[i]);
      const ir::Type* pt = lowerTy(t);
      if (t->kind == Ty::Gpu && t->gpu == Ty::View && f.body) {
        std::set<std::pair<const FnDecl*, size_t>> seen{{&f, i}};
        bool writes = writesThrough(c_, *f.body, f.params[i].binding, seen);
        pt = ctx_.bufferType(pt->elem(), ir::Space::Device, writes ? ir::Ownership::Write : ir::Ownership::Read);
      }
      out.push_back(pt);
    }
    return out;
  }

  // Runs `fn` with generic lowering (Ty::Param is !T) and no substitution.
  template <class F> auto generically(F&& fn) {
    Subst savedSubst = subst_;
    bool savedGeneric = generic_;
    subst_.clear();
    generic_ = true;
    auto r = fn();
    subst_ = savedSubst;
    generic_ = savedGeneric;
    return r;
  }

  void setWorkgroupSize(ir::Function* f, const int64_t (&wg)[3], Span s) {
    int64_t total = 1;
    for (int d = 0; d < 3; ++d) {
      if (wg[d] < 1 || wg[d] > 1024) {
        unsupported(s, "a workgroup dimension must be 1..1024, got " + std::to_string(wg[d]));
        return;
      }
      total *= wg[d];
      f->workgroupSize[d] = static_cast<unsigned>(wg[d]);
    }
    if (total > 1024) unsupported(s, "a workgroup has at most 1024 invocations, got " + std::to_string(total));
  }

  // Kernels without barrier() get the grid (in invocations) as three hidden
  // trailing u32 parameters for their bounds guard.
  static void addHiddenGrid(std::vector<const ir::Type*>& params, ir::Context& ctx) {
    for (int d = 0; d < 3; ++d) params.push_back(ctx.u32());
  }
  static void nameHiddenGrid(ir::Function* f, size_t first) {
    static const char* names[] = {"grid.x", "grid.y", "grid.z"};
    for (unsigned d = 0; d < 3; ++d) f->param(static_cast<unsigned>(first + d))->setName(names[d]);
    f->attrs["hidden_params"] = ir::Attr::integer(3);
  }
  static bool hasHiddenGrid(const ir::Function* f) { return f->attrs.count("hidden_params") != 0; }

  ir::Function* kernelFn(FnDecl& f) {
    std::string key = "kernel:" + f.name;
    if (auto it = instances_.find(key); it != instances_.end()) return it->second;
    std::vector<const ir::Type*> params = generically([&] { return gpuParamTypes(f); });
    std::set<const FnDecl*> seen{&f};
    bool guarded = !usesBarrier(c_, *f.body, seen);
    if (guarded) addHiddenGrid(params, ctx_);
    ir::Function* irf = m_.addFunction(f.name, ir::FunctionKind::Kernel, ctx_.functionType(params, {}), loc(f.span));
    setWorkgroupSize(irf, f.workgroupSize, f.span);
    if (guarded) nameHiddenGrid(irf, f.params.size());
    instances_[key] = irf;
    work_.push_back({&f, {}, irf, FnKind::Kernel, true});
    return irf;
  }

  // The device copy of a function kernel code calls: `f`, or `f.device`
  // when host code calls `f` too.
  ir::Function* deviceFn(FnDecl& f) {
    std::string key = "device:" + f.name;
    if (auto it = instances_.find(key); it != instances_.end()) return it->second;
    auto [params, rt] = generically([&] { return std::make_pair(gpuParamTypes(f), lowerTy(f.retTy)); });
    std::string name = uses_.host.count(&f) ? f.name + ".device" : f.name;
    ir::Function* irf = m_.addFunction(name, ir::FunctionKind::Device, ctx_.functionType(params, {rt}), loc(f.span));
    instances_[key] = irf;
    work_.push_back({&f, {}, irf, FnKind::Device, true});
    return irf;
  }

  // A launcher (@gpu host code): generic ones are lowered once with type
  // variables, for the monomorphize pass.
  ir::Function* hostGpuFn(FnDecl& f) {
    std::string key = "gpuhost:" + f.name;
    if (auto it = instances_.find(key); it != instances_.end()) return it->second;
    auto [params, rt] = generically([&] {
      std::vector<const ir::Type*> ps;
      for (Ty* t : f.paramTys) ps.push_back(lowerTy(t));
      return std::make_pair(ps, lowerTy(f.retTy));
    });
    ir::Function* irf = m_.addFunction(f.name, ir::FunctionKind::Host, ctx_.functionType(params, {rt}), loc(f.span));
    instances_[key] = irf;
    work_.push_back({&f, {}, irf, FnKind::Host, true});
    return irf;
  }

  // The one generic IR function of f.
  ir::Function* hostGenericFn(FnDecl& f) {
    std::string key = "generic:" + f.name;
    if (auto it = instances_.find(key); it != instances_.end()) return it->second;
    auto [params, rt] = generically([&] {
      std::vector<const ir::Type*> ps;
      for (Ty* t : f.paramTys) ps.push_back(lowerTy(t));
      return std::make_pair(ps, lowerTy(f.retTy));
    });
    ir::Function* irf = m_.addFunction(f.name, ir::FunctionKind::Host, ctx_.functionType(params, {rt}), loc(f.span));
    instances_[key] = irf;
    work_.push_back({&f, {}, irf, FnKind::Host, true});
    return irf;
  }

  // ---- function values in GPU code ----------------------------------------------------
  // A launcher without type parameters but with function parameters is made
  // once per function argument (`apply_all<@inc>`), here: the IR monomorphize
  // pass keeps non-generic host functions as they are, and this one could not
  // pass its function parameter on to a kernel.
  bool isSpecialisedLauncher(const FnDecl& f) {
    if (f.gpuRole != FnDecl::Launcher || isGeneric(f)) return false;
    for (Ty* t : f.paramTys)
      if (resolve(t)->kind == Ty::Fn) return true;
    return false;
  }

  Value* callSpecialisedLauncher(FnDecl& f, Expr& e, const ir::Type* ty) {
    if (e.kids.size() - 1 != f.params.size()) {
      unsupported(e.span, "code generation cannot apply `" + f.name + "` partially");
      return fabricate(ty);
    }
    std::vector<const ir::Type*> all = generically([&] {
      std::vector<const ir::Type*> ps;
      for (Ty* t : f.paramTys) ps.push_back(lowerTy(t));
      return ps;
    });
    std::map<size_t, std::pair<std::string, const ir::Type*>> fnArgs;
    std::vector<Value*> args;
    std::vector<const ir::Type*> kept;
    std::string suffix;
    for (size_t i = 1; i < e.kids.size(); ++i) {
      const ir::Type* want = all[i - 1];
      if (!want->isFunction()) {
        args.push_back(coerceArg(lowerArg(*e.kids[i]), want, e.kids[i]->span));
        kept.push_back(want);
        continue;
      }
      Value* fv = lowerFnArg(*e.kids[i], "launcher `" + f.name + "`");
      ir::Op* ref = fv->definingOp();
      if (!ref || ref->name() != "func.ref") {
        unsupported(e.kids[i]->span, "the function passed to launcher `" + f.name + "` must be known here", "E215");
        return fabricate(ty);
      }
      std::string callee = ref->symbolAttr("callee");
      fnArgs[i - 1] = {callee, fv->type()};
      suffix += (suffix.empty() ? "@" : ", @") + callee;
      if (!fv->hasUses()) ref->erase();
    }
    std::string name = f.name + "<" + suffix + ">";
    ir::Function* target = instances_["gpuhost:" + name];
    if (!target) {
      const ir::Type* rt = generically([&] { return lowerTy(f.retTy); });
      target = instances_["gpuhost:" + name] =
          m_.addFunction(name, ir::FunctionKind::Host, ctx_.functionType(kept, {rt}), loc(f.span));
      Instance in{&f, {}, target, FnKind::Host, true};
      in.fnArgs = fnArgs;
      work_.push_back(std::move(in));
    }
    setLoc(e.span);
    Value* r = b_.create("call", args, {target->resultTypes()[0]}, {{"callee", ir::Attr::symbol(target->name())}})->result(0);
    dropPendingArgs();
    return coerce(r, ty, e.span);
  }

  // `func.ref` of the device copy of f, as a value of the (instantiated)
  // function type ty.
  Value* funcRef(FnDecl& f, Ty* ty, Span s) {
    const ir::Type* ft = fnIrType(ty);
    if (f.gpuRole != FnDecl::NotGpu || f.isExtern || !f.body) {
      unsupported(s, "`" + f.name + "` cannot be passed as a function value to GPU code; pass a plain function", "E215");
      return fabricateFn(ft);
    }
    ir::Function* target = deviceFn(f);
    setLoc(s);
    return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol(target->name())}});
  }
  // After a reported error, a function value still needs some value to
  // continue lowering with: a func.ref of the non-existent `<error>`.
  // failed_ makes lowerProgram discard the module, so it never reaches the
  // verifier or a target.
  Value* fabricateFn(const ir::Type* ft) {
    failed_ = true;
    return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol("<error>")}});
  }

  // A lambda in GPU code: a device function `<fn>.lambda<k>` of its
  // parameters (it may capture nothing, E215), and a func.ref of it.
  std::map<std::string, ir::Function*> lambdaFns_;
  Value* lambdaRef(Expr& lam) {
    const ir::Type* ft = fnIrType(lam.ty);
    std::vector<const Binding*> caps;
    int firstInner = lam.params.empty() || !lam.params[0].binding ? 0 : lam.params[0].binding->id;
    freeVars(*lam.kids[0], firstInner, caps);
    if (!caps.empty()) {
      unsupported(lam.span, "a lambda passed to GPU code must capture nothing; this one captures `" + caps[0]->name + "`",
                  "E215");
      return fabricateFn(ft);
    }
    if (ft->members().size() != lam.params.size()) {
      unsupported(lam.span, "code generation cannot pass a lambda returning a function to GPU code");
      return fabricateFn(ft);
    }
    std::string key = std::to_string(lam.span.line) + ":" + std::to_string(lam.span.col) + "[" + substKey(subst_) +
                      "]" + ft->str();
    ir::Function* k = lambdaFns_[key];
    if (!k) {
      std::string host = curKey_.empty() ? "closure" : curKey_;
      std::string name;
      do name = host + ".lambda" + std::to_string(inlineKernels_[host + ".lambda"]++);
      while (m_.lookup(name));
      k = lambdaFns_[key] = m_.addFunction(name, ir::FunctionKind::Device, ft, loc(lam.span));
      lowerLambdaBody(lam, k);
    }
    setLoc(lam.span);
    return b_.op("func.ref", {}, ft, {{"callee", ir::Attr::symbol(k->name())}});
  }

  void lowerLambdaBody(Expr& lam, ir::Function* k) {
    auto savedEnv = std::move(env_);
    B savedB = b_;
    bool savedDevice = device_, savedGeneric = generic_;
    const ir::Type* savedLoop = loopSum_;
    auto savedCarry = carry_;
    auto savedArrays = std::move(workgroupArrays_);
    Loc savedLoc = curLoc_;
    env_.clear();
    device_ = true;
    generic_ = true;
    loopSum_ = nullptr;
    carry_ = nullptr;
    workgroupArrays_.clear();
    b_ = B(ctx_, k->body());
    setLoc(lam.span);
    for (size_t i = 0; i < lam.params.size(); ++i) {
      Value* p = k->param(static_cast<unsigned>(i));
      p->setName(lam.params[i].name == "_" ? "" : lam.params[i].name);
      if (lam.params[i].binding) bindValue(lam.params[i].binding, p, lam.params[i].span);
    }
    Value* r = coerce(lowerExpr(*lam.kids[0]), k->resultTypes()[0], lam.kids[0]->span);
    setLoc(lam.span);
    endScopeAll();
    b_.create("return", {r});
    env_ = std::move(savedEnv);
    b_ = savedB;
    device_ = savedDevice;
    generic_ = savedGeneric;
    loopSum_ = savedLoop;
    carry_ = savedCarry;
    workgroupArrays_ = std::move(savedArrays);
    curLoc_ = savedLoc;
  }

  // An argument for a function-typed parameter of GPU code (a launcher,
  // kernel or device function): a named function or a capture-free lambda
  // becomes a func.ref; a function value GPU code already holds passes on.
  Value* lowerFnArg(Expr& a, const std::string& to) {
    Expr* x = &a;
    if (x->kind == ExprKind::Var && !x->binding && x->refKind == Expr::Fn)
      return funcRef(*c_.prog.fns[x->global], x->ty, x->span);
    if (x->kind == ExprKind::Lambda) return lambdaRef(*x);
    Value* v = lowerExpr(a);
    if (!v->type()->isFunction()) {
      unsupported(a.span, "the function passed to " + to + " must be a named function or a lambda that captures nothing",
                  "E215");
      dropValue(v);
      return fabricateFn(fnIrType(a.ty));
    }
    return v;
  }

  void lowerKernel(const Instance& in) {
    FnDecl& f = *in.fn;
    ir::Function* irf = in.irfn;
    for (size_t i = 0; i < f.params.size(); ++i) {
      irf->param(static_cast<unsigned>(i))->setName(f.params[i].name == "_" ? "" : f.params[i].name);
      if (f.params[i].binding) bindValue(f.params[i].binding, irf->param(static_cast<unsigned>(i)), f.params[i].span);
    }
    lowerKernelBody(*f.body, irf, f.params.size(), f.span);
  }

  // Workgroup arrays are allocated at the top of the kernel (the IR wants
  // workgroup.alloc there), before the bounds guard.
  void hoistWorkgroupArrays(Expr& e) {
    if (e.kind == ExprKind::Lambda || (e.kind == ExprKind::Dispatch && e.name.empty())) return;
    if (e.kind == ExprKind::Workgroup && e.binding) {
      const ir::Type* bt = lowerTy(e.binding->ty);
      if (bt->isBuffer() && bt->space() == ir::Space::Workgroup && e.ival >= 1)
        workgroupArrays_[&e] = b_.op("workgroup.alloc", {}, bt, {{"size", ir::Attr::integer(e.ival)}});
      else
        unsupported(e.span, "code generation cannot allocate this workgroup array");
    }
    for (auto& k : e.kids) hoistWorkgroupArrays(*k);
  }

  // A kernel's body: guarded by `global_id(d) < grid(d)` in each dimension
  // when the kernel has the hidden grid parameters.
  void lowerKernelBody(Expr& body, ir::Function* irf, size_t firstHidden, Span s) {
    setLoc(s);
    workgroupArrays_.clear();
    hoistWorkgroupArrays(body);
    if (hasHiddenGrid(irf)) {
      Value* inside = nullptr;
      for (unsigned d = 0; d < 3; ++d) {
        Value* id = b_.op("global_id", {}, ctx_.u32(), {{"dim", ir::Attr::integer(d)}});
        Value* lt = b_.op("lt", {id, irf->param(static_cast<unsigned>(firstHidden + d))}, ctx_.boolType());
        inside = inside ? b_.op("and", {inside, lt}, ctx_.boolType()) : lt;
      }
      ir::Op* guard = b_.create("if", {inside}, {}, {}, 2);
      B outer = b_;
      b_.setInsertionPoint(guard->region(0));
      size_t mark = env_.size();
      lowerAndDrop(body);
      endScope(mark);
      setLoc(s);
      b_.create("yield");
      b_.setInsertionPoint(guard->region(1));
      b_.create("yield");
      b_ = outer;
    } else {
      lowerAndDrop(body);
    }
    setLoc(s);
    endScopeAll();
    b_.create("return");
  }

  // ---- dispatch ------------------------------------------------------------------------
  // The grid in invocations as three u32 (missing dimensions are 1).
  std::vector<Value*> lowerGrid(Expr& e) {
    std::vector<Value*> g;
    if (e.grid.empty() || e.grid.size() > 3) unsupported(e.span, "a grid has 1 to 3 dimensions", "E217");
    for (size_t d = 0; d < e.grid.size() && d < 3; ++d) {
      Value* v = lowerExpr(*e.grid[d]);
      setLoc(e.grid[d]->span);
      if (!v->type()->isInt()) {
        unsupported(e.grid[d]->span, "a grid dimension must be an integer");
        v = b_.constInt(ctx_.u32(), 1);
      }
      if (v->type() != ctx_.u32()) v = b_.op("cast", {v}, ctx_.u32());
      g.push_back(v);
    }
    setLoc(e.span);
    while (g.size() < 3) g.push_back(b_.constInt(ctx_.u32(), 1));
    return g;
  }

  // dispatch ceil(grid / workgroup size) workgroups per dimension.
  void emitDispatch(ir::Function* k, const std::vector<Value*>& grid, std::vector<Value*> args) {
    std::vector<Value*> ops;
    for (unsigned d = 0; d < 3; ++d) {
      unsigned wg = k->workgroupSize[d];
      if (wg == 1) {
        ops.push_back(grid[d]);
        continue;
      }
      Value* w = b_.constInt(ctx_.u32(), wg);
      Value* up = b_.op("add", {grid[d], b_.constInt(ctx_.u32(), wg - 1)}, ctx_.u32());
      ops.push_back(b_.op("div", {up, w}, ctx_.u32()));
    }
    for (Value* a : args) ops.push_back(a);
    if (hasHiddenGrid(k))
      for (Value* g : grid) ops.push_back(g);
    b_.create("dispatch", ops, {}, {{"kernel", ir::Attr::symbol(k->name())}});
  }

  static bool mentionsTypeVar(const ir::Type* t, unsigned depth = 0) {
    if (t->isVar()) return true;
    if (depth > 40) return false;
    if (t->elem() && mentionsTypeVar(t->elem(), depth + 1)) return true;
    for (const ir::Type* m : t->members())
      if (mentionsTypeVar(m, depth + 1)) return true;
    return false;
  }

  Value* lowerDispatch(Expr& e) {
    if (device_) {
      unsupported(e.span, "dispatch is host code; it cannot appear in kernel code", "E212");
      return unit();
    }
    if (e.name.empty()) return lowerInlineDispatch(e);
    FnDecl* f = nullptr;
    if (auto it = c_.fnIndex.find(e.name); it != c_.fnIndex.end()) f = c_.prog.fns[it->second].get();
    if (!f || f->gpuRole != FnDecl::Kernel || !f->body) {
      unsupported(e.span, "`" + e.name + "` is not a kernel", "E217");
      return unit();
    }
    ir::Function* k = kernelFn(*f);
    if (e.kids.size() != f->params.size()) {
      unsupported(e.span, "kernel `" + e.name + "` takes " + std::to_string(f->params.size()) + " arguments");
      return unit();
    }
    // &b / &mut b lend an owned buffer; a buffer passed plainly is consumed:
    // freed after the dispatch.
    std::vector<Value*> args, consumed;
    for (size_t i = 0; i < e.kids.size(); ++i) {
      Expr& a = *e.kids[i];
      Value* v;
      if (k->paramTypes()[i]->isFunction()) {
        v = lowerFnArg(a, "kernel `" + e.name + "`");
      } else if (a.kind == ExprKind::Borrow) {
        v = lowerBorrowOf(*a.kids[0]);
      } else {
        v = lowerExpr(a);
        if (owns(v->type())) consumed.push_back(v);
      }
      const ir::Type* pt = k->paramTypes()[i];
      if (!pt->isBuffer() && !pt->isFunction() && !mentionsTypeVar(pt)) v = coerce(v, pt, a.span);
      args.push_back(v);
    }
    std::vector<Value*> grid = lowerGrid(e);
    setLoc(e.span);
    emitDispatch(k, grid, args);
    for (Value* v : consumed) dropValue(v);
    return unit();
  }

  // `dispatch over g { body }`: a new kernel `<fn>.kernel<k>` whose
  // parameters are the variables the body mentions (owned buffers borrowed,
  // scalars by value), and its dispatch.
  Value* lowerInlineDispatch(Expr& e) {
    Expr& body = *e.kids[0];
    std::vector<const Binding*> refs, caps;
    referencedBindings(body, refs);
    std::vector<Value*> capVals;
    std::vector<const ir::Type*> params;
    for (const Binding* b : refs) {
      LBinding* lb = lookup(b);
      if (!lb) continue;  // bound inside the body
      Value* v = borrowVar(*lb);
      const ir::Type* t = v->type();
      if (sub(b->ty)->kind == Ty::Fn && !t->isFunction()) {
        unsupported(e.span, "kernel code can call only function values of GPU code (a @gpu function's parameters), not "
                    "the host closure `" + b->name + "`", "E215");
        continue;
      }
      if (t->isFunction()) {
        // passed on as a kernel parameter of function type
      } else if (t->isBuffer()) {
        if (t->space() != ir::Space::Device) {
          unsupported(e.span, "kernel code cannot use the host value `" + b->name + "`", "E210");
          continue;
        }
        std::set<std::pair<const FnDecl*, size_t>> seen;
        bool writes = writesThrough(c_, body, b, seen);
        t = ctx_.bufferType(t->elem(), ir::Space::Device, writes ? ir::Ownership::Write : ir::Ownership::Read);
      } else if (owns(t)) {
        unsupported(e.span, "kernel code cannot use `" + b->name + "`, whose value owns host memory", "E210");
        continue;
      }
      caps.push_back(b);
      capVals.push_back(v);
      params.push_back(t);
    }
    std::set<const FnDecl*> seen;
    bool guarded = !usesBarrier(c_, body, seen);
    if (guarded) addHiddenGrid(params, ctx_);
    std::string host = curKey_.empty() ? "closure" : curKey_;
    std::string name;
    do name = host + ".kernel" + std::to_string(inlineKernels_[host]++);
    while (m_.lookup(name));
    ir::Function* k = m_.addFunction(name, ir::FunctionKind::Kernel, ctx_.functionType(params, {}), loc(e.span));
    int64_t wg[3];
    dispatchWorkgroupSize(e, wg);
    setWorkgroupSize(k, wg, e.span);
    if (guarded) nameHiddenGrid(k, caps.size());

    // The body, in a fresh function context.
    auto savedEnv = std::move(env_);
    B savedB = b_;
    bool savedDevice = device_;
    const ir::Type* savedLoop = loopSum_;
    auto savedCarry = carry_;
    auto savedArrays = std::move(workgroupArrays_);
    env_.clear();
    device_ = true;
    loopSum_ = nullptr;
    carry_ = nullptr;
    workgroupArrays_.clear();
    b_ = B(ctx_, k->body());
    for (size_t j = 0; j < caps.size(); ++j) {
      k->param(static_cast<unsigned>(j))->setName(caps[j]->name);
      env_.push_back(LBinding{LBinding::Plain, caps[j], k->param(static_cast<unsigned>(j))});
    }
    lowerKernelBody(body, k, caps.size(), e.span);
    env_ = std::move(savedEnv);
    b_ = savedB;
    device_ = savedDevice;
    loopSum_ = savedLoop;
    carry_ = savedCarry;
    workgroupArrays_ = std::move(savedArrays);

    std::vector<Value*> grid = lowerGrid(e);
    setLoc(e.span);
    emitDispatch(k, grid, capVals);
    return unit();
  }

  // The element count of a buffer, as i32, in host code: buffer.len (the
  // interpreter asks the device hooks for a device buffer's length).
  Value* hostLen(Value* buf) { return b_.op("buffer.len", {buf}, ctx_.i32()); }

  // ---- builtins ----------------------------------------------------------------------
  Value* splat(Value* s, const ir::Type* vt) {
    if (s->type() != vt->elem()) s = b_.op("cast", {s}, vt->elem());
    return b_.op("vec.make", std::vector<Value*>(vt->count(), s), vt);
  }
  static bool isMatrix(const ir::Type* t) {
    return t->isStruct() && !t->members().empty() && t->members()[0]->isVector();
  }
  Value* column(Value* m, unsigned j) {
    return b_.op("struct.extract", {m}, m->type()->members()[j], {{"index", ir::Attr::integer(j)}});
  }
  // m * v = sum over columns j of m.j * v[j].
  Value* matVec(Value* m, Value* v) {
    const ir::Type* vt = m->type()->members()[0];
    Value* acc = nullptr;
    for (unsigned j = 0; j < m->type()->members().size(); ++j) {
      Value* vj = b_.op("vec.extract", {v}, ctx_.f32(), {{"index", ir::Attr::integer(j)}});
      Value* term = b_.op("mul", {column(m, j), splat(vj, vt)}, vt);
      acc = acc ? b_.op("add", {acc, term}, vt) : term;
    }
    return acc;
  }
  // Applies f to each column and rebuilds the matrix.
  Value* columnwise(Value* m, const std::function<Value*(Value* col, unsigned j)>& f) {
    std::vector<Value*> cols;
    for (unsigned j = 0; j < m->type()->members().size(); ++j) cols.push_back(f(column(m, j), j));
    return b_.op("struct.make", cols, m->type());
  }

  // Arithmetic on vectors and matrices: elementwise, scalars splat.
  Value* lowerVecBinary(Expr& e) {
    Value* a = lowerExpr(*e.kids[0]);
    Value* b = lowerExpr(*e.kids[1]);
    setLoc(e.span);
    static const char* names[] = {"add", "sub", "mul", "div"};
    if (e.bop > BinOp::Div) {
      unsupported(e.span, "code generation supports only + - * / on vectors and matrices");
      return fabricate(lowerTy(e.ty));
    }
    const char* name = names[static_cast<int>(e.bop)];
    const ir::Type* ta = a->type();
    const ir::Type* tb = b->type();
    if (ta->isVector() && tb->isVector() && ta == tb) return b_.op(name, {a, b}, ta);
    if (ta->isVector() && tb->isScalar()) return b_.op(name, {a, splat(b, ta)}, ta);
    if (ta->isScalar() && tb->isVector()) return b_.op(name, {splat(a, tb), b}, tb);
    if (isMatrix(ta) && isMatrix(tb) && ta == tb) {
      if (e.bop == BinOp::Add || e.bop == BinOp::Sub)
        return columnwise(a, [&](Value* col, unsigned j) { return b_.op(name, {col, column(b, j)}, col->type()); });
      if (e.bop == BinOp::Mul) return columnwise(b, [&](Value* col, unsigned) { return matVec(a, col); });
    }
    if (isMatrix(ta) && tb->isVector() && e.bop == BinOp::Mul && ta->members()[0] == tb) return matVec(a, b);
    if (isMatrix(ta) && tb->isScalar() && (e.bop == BinOp::Mul || e.bop == BinOp::Div))
      return columnwise(a, [&](Value* col, unsigned) { return b_.op(name, {col, splat(b, col->type())}, col->type()); });
    if (ta->isScalar() && isMatrix(tb) && e.bop == BinOp::Mul)
      return columnwise(b, [&](Value* col, unsigned) { return b_.op(name, {splat(a, col->type()), col}, col->type()); });
    unsupported(e.span, "code generation does not support " + ta->str() + " " + name + " " + tb->str());
    return fabricate(lowerTy(e.ty));
  }

  Value* idBuiltin(const char* op, int64_t dim, const ir::Type* rt) {
    Value* v = b_.op(op, {}, ctx_.u32(), {{"dim", ir::Attr::integer(dim)}});
    if (rt != ctx_.u32() && rt->isNumeric()) v = b_.op("cast", {v}, rt);
    return v;
  }

  Value* lowerBuiltin(Expr& e) {
    std::vector<Expr*> args;
    for (size_t i = 1; i < e.kids.size(); ++i) args.push_back(e.kids[i].get());
    const ir::Type* rt = lowerTy(e.ty);
    auto need = [&](size_t n) {
      if (args.size() >= n) return true;
      unsupported(e.span, "internal error: builtin with too few arguments");
      return false;
    };
    switch (e.builtin) {
      case Expr::GlobalIdOf:
      case Expr::LocalIdOf:
      case Expr::GroupIdOf:
      case Expr::NumGroupsOf:
      case Expr::GroupSizeOf: {
        if (!need(1)) return fabricate(rt);
        if (args[0]->kind != ExprKind::IntLit || args[0]->ival < 0 || args[0]->ival > 2) {
          unsupported(args[0]->span, "the dimension must be the literal 0, 1 or 2");
          return fabricate(rt);
        }
        static const char* ops[] = {"global_id", "local_id", "workgroup_id", "num_workgroups", "workgroup_size"};
        setLoc(e.span);
        return idBuiltin(ops[e.builtin - Expr::GlobalIdOf], args[0]->ival, rt);
      }
      case Expr::Barrier:
        setLoc(e.span);
        b_.create("barrier");
        return unit();
      case Expr::AtomicAdd:
      case Expr::AtomicMin:
      case Expr::AtomicMax:
      case Expr::AtomicXchg:
      case Expr::AtomicCas: {
        bool cas = e.builtin == Expr::AtomicCas;
        if (!need(cas ? 4 : 3)) return fabricate(rt);
        Value* buf = lowerBorrowOf(*args[0]);
        Value* i = lowerExpr(*args[1]);
        if (!buf->type()->isBuffer()) {
          unsupported(e.span, "an atomic needs a buffer");
          return fabricate(rt);
        }
        const ir::Type* et = buf->type()->elem();
        std::vector<Value*> ops = {buf, i, coerce(lowerExpr(*args[2]), et, args[2]->span)};
        if (cas) ops.push_back(coerce(lowerExpr(*args[3]), et, args[3]->span));
        setLoc(e.span);
        static const char* names[] = {"atomic.add", "atomic.min", "atomic.max", "atomic.xchg", "atomic.cmpxchg"};
        return b_.op(names[e.builtin - Expr::AtomicAdd], ops, et);
      }
      case Expr::Sqrt: case Expr::Exp: case Expr::Log: case Expr::Sin: case Expr::Cos: case Expr::Tan:
      case Expr::Tanh: case Expr::Floor: case Expr::Ceil: case Expr::Abs: {
        if (!need(1)) return fabricate(rt);
        static const char* names[] = {"sqrt", "exp", "log", "sin", "cos", "tan", "tanh", "floor", "ceil", "abs"};
        Value* a = coerce(lowerExpr(*args[0]), rt, args[0]->span);
        setLoc(e.span);
        return b_.op(names[e.builtin - Expr::Sqrt], {a}, rt);
      }
      case Expr::Pow:
      case Expr::Min:
      case Expr::Max: {
        if (!need(2)) return fabricate(rt);
        Value* a = lowerExpr(*args[0]);
        Value* b = lowerExpr(*args[1]);
        setLoc(e.span);
        if (rt->isVector() && a->type()->isScalar()) a = splat(a, rt);
        if (rt->isVector() && b->type()->isScalar()) b = splat(b, rt);
        a = coerce(a, rt, args[0]->span);
        b = coerce(b, rt, args[1]->span);
        static const char* names[] = {"pow", "min", "max"};
        return b_.op(names[e.builtin - Expr::Pow], {a, b}, rt);
      }
      case Expr::Dot:
      case Expr::Cross: {
        if (!need(2)) return fabricate(rt);
        Value* a = lowerExpr(*args[0]);
        Value* b = lowerExpr(*args[1]);
        setLoc(e.span);
        return b_.op(e.builtin == Expr::Dot ? "dot" : "cross", {a, b}, rt);
      }
      case Expr::Length:
      case Expr::Normalize: {
        if (!need(1)) return fabricate(rt);
        Value* a = lowerExpr(*args[0]);
        setLoc(e.span);
        return b_.op(e.builtin == Expr::Length ? "length" : "normalize", {a}, rt);
      }
      case Expr::MakeVec: {
        std::vector<Value*> parts;
        for (Expr* a : args) {
          Value* v = lowerExpr(*a);
          if (v->type()->isVector()) {
            for (unsigned j = 0; j < v->type()->count(); ++j)
              parts.push_back(b_.op("vec.extract", {v}, v->type()->elem(), {{"index", ir::Attr::integer(j)}}));
          } else {
            parts.push_back(v->type() == ctx_.f32() ? v : b_.op("cast", {v}, ctx_.f32()));
          }
        }
        setLoc(e.span);
        if (!rt->isVector() || (parts.size() != 1 && parts.size() != rt->count())) {
          unsupported(e.span, "code generation cannot build " + rt->str() + " from " + std::to_string(parts.size()) + " values");
          return fabricate(rt);
        }
        if (parts.size() == 1) return splat(parts[0], rt);
        return b_.op("vec.make", parts, rt);
      }
      case Expr::MakeMat: {
        std::vector<Value*> vals;
        for (Expr* a : args) vals.push_back(lowerExpr(*a));
        setLoc(e.span);
        if (!isMatrix(rt)) return fabricate(rt);
        const ir::Type* ct = rt->members()[0];
        if (vals.size() == 1 && vals[0]->type()->isScalar()) {  // s on the diagonal
          Value* s = vals[0]->type() == ctx_.f32() ? vals[0] : b_.op("cast", {vals[0]}, ctx_.f32());
          Value* zero = b_.constFloat(ctx_.f32(), 0);
          std::vector<Value*> cols;
          for (unsigned j = 0; j < rt->members().size(); ++j) {
            std::vector<Value*> lanes(ct->count(), zero);
            lanes[j] = s;
            cols.push_back(b_.op("vec.make", lanes, ct));
          }
          return b_.op("struct.make", cols, rt);
        }
        if (vals.size() != rt->members().size()) {
          unsupported(e.span, "a matN takes N columns or one scalar");
          return fabricate(rt);
        }
        for (size_t j = 0; j < vals.size(); ++j) vals[j] = coerce(vals[j], ct, args[j]->span);
        return b_.op("struct.make", vals, rt);
      }
      case Expr::Cast: {
        if (!need(1)) return fabricate(rt);
        Value* a = lowerExpr(*args[0]);
        setLoc(e.span);
        if (a->type() == rt) return a;
        return b_.op("cast", {a}, rt);
      }
      case Expr::Len: {
        if (!need(1)) return fabricate(rt);
        Value* temp = nullptr;
        Value* b = lowerBorrowOrTemp(*args[0], temp);
        setLoc(e.span);
        if (!b->type()->isBuffer()) {
          unsupported(e.span, "len needs a buffer or a list");
          return fabricate(rt);
        }
        Value* n = device_ ? b_.op("buffer.len", {b}, ctx_.i32()) : hostLen(b);
        if (rt->isInt() && rt != n->type()) n = b_.op("cast", {n}, rt);
        if (temp) dropValue(temp);
        return n;
      }
      case Expr::H2D: {
        if (!need(1)) return fabricate(rt);
        Value* temp = nullptr;
        Value* src = lowerBorrowOrTemp(*args[0], temp);
        setLoc(e.span);
        if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Host || !rt->isBuffer()) {
          unsupported(e.span, "h2d copies a list to the device");
          return fabricate(rt);
        }
        const ir::Type* dt = ctx_.bufferType(src->type()->elem(), ir::Space::Device, rt->ownership());
        Value* n = b_.op("buffer.len", {src}, ctx_.i32());
        Value* d = b_.op("alloc", {n}, dt);
        b_.create("h2d", {d, src});
        if (temp) dropValue(temp);
        return coerce(d, rt, e.span);
      }
      case Expr::D2H: {
        if (!need(1)) return fabricate(rt);
        bool borrowed = args[0]->kind == ExprKind::Borrow;
        Value* src = borrowed ? lowerBorrowOf(*args[0]->kids[0]) : lowerExpr(*args[0]);
        setLoc(e.span);
        if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Device) {
          unsupported(e.span, "d2h copies a GPU buffer to the host");
          dropValue(src);
          return fabricate(rt);
        }
        Value* n = hostLen(src);
        Value* h = b_.op("alloc", {n}, ctx_.bufferType(src->type()->elem(), ir::Space::Host, ir::Ownership::Affine));
        b_.create("d2h", {h, src});
        if (!borrowed) dropValue(src);
        pendingList_ = true;  // a fresh list, freed where it is dropped
        return h;
      }
      case Expr::Array: {  // array(n, f): a fresh list [f(0), .., f(n-1)]
        if (!need(2)) return fabricate(rt);
        if (device_) {
          unsupported(e.span, "`array` is host code; it cannot appear in kernel code", "E212");
          return fabricate(rt);
        }
        Value* n = coerce(lowerExpr(*args[0]), ctx_.i32(), args[0]->span);
        Value* f = lowerExpr(*args[1]);
        setLoc(e.span);
        const ir::Type* elem = rt->isBuffer() ? rt->elem() : ctx_.i32();
        if (owns(elem) || owns(f->type())) {
          unsupported(e.span, "code generation does not support `array` of values that own memory");
          dropValue(f);
          return fabricate(rt);
        }
        Value* buf = b_.op("alloc", {n}, ctx_.bufferType(elem, ir::Space::Host, ir::Ownership::Affine));
        ir::Op* loop = b_.create("for", {b_.constInt(ctx_.i32(), 0), n, b_.constInt(ctx_.i32(), 1)}, {}, {}, 1);
        Value* i = loop->region(0).addArg(ctx_.i32(), "i");
        B outer = b_;
        b_.setInsertionPoint(loop->region(0));
        Value* v = f->type()->isFunction() ? b_.create("call.indirect", {f, i}, {f->type()->results()[0]})->result(0)
                                           : apply(f, args[1]->ty, i);
        b_.create("store", {buf, i, coerce(v, elem, e.span)});
        b_.create("yield");
        b_ = outer;
        pendingList_ = true;  // a fresh list, freed where it is dropped
        return buf;
      }
      case Expr::FreeGpu: {
        if (!need(1)) return fabricate(rt);
        Value* b = lowerExpr(*args[0]);
        setLoc(e.span);
        dropValue(b);
        return unit();
      }
      case Expr::ReadGpu:
      case Expr::WriteGpu: return lowerElementAccess(e, args, rt);
      case Expr::AllocGpuOn: {  // alloc %n {device = k}
        if (!need(2)) return fabricate(rt);
        Value* n = lowerExpr(*args[1]);
        setLoc(e.span);
        if (!rt->isBuffer() || rt->space() != ir::Space::Device) {
          unsupported(e.span, "code generation cannot allocate a GPU buffer of type " + show(sub(e.ty)));
          return fabricate(rt);
        }
        return b_.op("alloc", {n}, rt, {{"device", ir::Attr::integer(args[0]->ival)}});
      }
      case Expr::DeviceCount:
        setLoc(e.span);
        return b_.op("device.count", {}, ctx_.i32());
      case Expr::ToDevice: {  // alloc (len b) {device = k}; copy; free b
        if (!need(2)) return fabricate(rt);
        Value* src = lowerExpr(*args[1]);
        setLoc(e.span);
        if (!src->type()->isBuffer() || src->type()->space() != ir::Space::Device) {
          unsupported(e.span, "to_device moves a GPU buffer to another device");
          dropValue(src);
          return fabricate(rt);
        }
        Value* n = hostLen(src);
        Value* d = b_.op("alloc", {n}, src->type(), {{"device", ir::Attr::integer(args[0]->ival)}});
        b_.create("copy", {d, src});
        dropValue(src);
        return coerce(d, rt, e.span);
      }
      default: break;
    }
    unsupported(e.span, "code generation does not support this builtin");
    return fabricate(rt);
  }

  // read_gpu(b, i) -> (b, b[i]) and write_gpu(b, i, v) -> b, through a
  // one-invocation kernel and a one-element transfer.
  Value* lowerElementAccess(Expr& e, const std::vector<Expr*>& args, const ir::Type* rt) {
    bool read = e.builtin == Expr::ReadGpu;
    if (args.size() < (read ? 2u : 3u)) return fabricate(rt);
    Value* buf = lowerExpr(*args[0]);
    Value* i = coerce(lowerExpr(*args[1]), ctx_.i32(), args[1]->span);
    Value* v = read ? nullptr : lowerExpr(*args[2]);
    setLoc(e.span);
    if (!buf->type()->isBuffer() || buf->type()->space() != ir::Space::Device) {
      unsupported(e.span, "read_gpu / write_gpu need a GPU buffer");
      dropValue(buf);
      return fabricate(rt);
    }
    const ir::Type* et = buf->type()->elem();
    ir::Function* k = elementCopyKernel(m_, et, read, curLoc_);
    Value* one = b_.constInt(ctx_.u32(), 1);
    Value* oneI = b_.constInt(ctx_.i32(), 1);
    Value* zero = b_.constInt(ctx_.i32(), 0);
    const ir::Type* devT = ctx_.bufferType(et, ir::Space::Device, ir::Ownership::Linear);
    const ir::Type* hostT = ctx_.bufferType(et, ir::Space::Host, ir::Ownership::Linear);
    Value* tmp = b_.op("alloc", {oneI}, devT);
    Value* host = b_.op("alloc", {oneI}, hostT);
    if (read) {
      b_.create("dispatch", {one, one, one, buf, i, tmp}, {}, {{"kernel", ir::Attr::symbol(k->name())}});
      b_.create("d2h", {host, tmp});
      Value* x = b_.op("load", {host, zero}, et);
      b_.create("free", {tmp});
      b_.create("free", {host});
      return coerce(b_.op("struct.make", {buf, x}, ctx_.structType({buf->type(), et})), rt, e.span);
    }
    b_.create("store", {host, zero, coerce(v, et, args[2]->span)});
    b_.create("h2d", {tmp, host});
    b_.create("free", {host});
    b_.create("dispatch", {one, one, one, tmp, i, buf}, {}, {{"kernel", ir::Attr::symbol(k->name())}});
    b_.create("free", {tmp});
    return coerce(buf, rt, e.span);
  }

  // ---- patterns ------------------------------------------------------------------------
  // Irrefutable patterns of `let` (variables, tuples, `_`, `()`).
  void bindPattern(Pattern& p, Value* v, bool bang) {
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
        if (owns(t)) parts = b_.create("struct.unpack", {v}, {t->members().begin(), t->members().end()})->results();
        else
          for (size_t i = 0; i < p.args.size(); ++i)
            parts.push_back(b_.op("struct.extract", {v}, t->members()[i], {{"index", ir::Attr::integer(static_cast<int64_t>(i))}}));
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
          Value* tok = b_.op("alloc", {b_.constInt(ctx_.i32(), 0)}, token());
          b_.op("struct.make", {v, tok}, ctx_.structType({v->type(), token()}));
        }
        return;
    }
  }
  // A `let!` obligation lives at the keyword: the binding's span.
  Span lookupLetSpan(const Pattern& p) { return p.binding ? p.binding->span : p.span; }

  // Match compilation: a decision tree over the scrutinee's parts. Each
  // "slot" is a value being matched; a slot taken apart (a constructor, a
  // tuple) has sub-slots and can be rebuilt for a variable bound to it.
  struct Slot {
    Value* v = nullptr;  // null once taken apart
    int ctor = -1;       // taken apart: the variant (or 0 for tuples)
    bool sum = false;    // taken apart by a match (rebuild with sum.make)
    const ir::Type* type = nullptr;
    const ir::Type* payloadT = nullptr;
    bool payloadTIsRaw = false;  // inl/inr: the payload is the single part itself
    std::vector<int> parts;
    bool used = false;   // consumed (bound, or rebuilt into a binding)
  };
  struct Row {
    std::vector<std::pair<const Pattern*, int>> tests;  // pattern on slot
    Arm* arm;
  };

  Value* lowerMatch(Expr& e, bool tail, const ir::Type* ty) {
    Value* s = lowerExpr(*e.kids[0]);
    std::vector<Slot> slots(1);
    slots[0].v = s;
    slots[0].type = s->type();
    std::vector<Row> rows;
    for (Arm& a : e.arms) rows.push_back(Row{{{a.pat.get(), 0}}, &a});
    return compileRows(rows, slots, tail, ty, e.span);
  }

  static bool irrefutable(const Pattern* p) { return p->kind == Pattern::Wild || p->kind == Pattern::Var; }

  Value* rebuild(std::vector<Slot>& slots, int i) {
    Slot& s = slots[i];
    if (s.v) {
      s.used = true;
      return s.v;
    }
    std::vector<Value*> parts;
    for (int p : s.parts) parts.push_back(rebuild(slots, p));
    if (!s.sum) return b_.op("struct.make", parts, s.type);
    Value* payload = s.payloadT->isStruct() && !s.payloadTIsRaw ? b_.op("struct.make", parts, s.payloadT) : parts[0];
    return b_.op("sum.make", {payload}, s.type, {{"tag", ir::Attr::integer(s.ctor)}});
  }

  // Frees the slots no binding took (the parts a `_` matched).
  void dropUnused(std::vector<Slot>& slots, int i) {
    Slot& s = slots[i];
    if (s.used) return;
    if (s.v) {
      dropValue(s.v);
      s.used = true;
      return;
    }
    for (int p : s.parts) dropUnused(slots, p);
  }

  Value* compileRows(std::vector<Row> rows, std::vector<Slot> slots, bool tail, const ir::Type* ty, Span span) {
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
          if (owns(t)) parts = b_.create("struct.unpack", {v}, {t->members().begin(), t->members().end()})->results();
          else
            for (size_t i = 0; i < t->members().size(); ++i)
              parts.push_back(b_.op("struct.extract", {v}, t->members()[i], {{"index", ir::Attr::integer(static_cast<int64_t>(i))}}));
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
            if (owns(pt)) parts = b_.create("struct.unpack", {payload}, {pt->members().begin(), pt->members().end()})->results();
            else
              for (size_t i = 0; i < pt->members().size(); ++i)
                parts.push_back(b_.op("struct.extract", {payload}, pt->members()[i], {{"index", ir::Attr::integer(static_cast<int64_t>(i))}}));
          }
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

  Value* takeSlot(std::vector<Slot>& slots, int si) { return slots[si].v; }

  void splitSlot(std::vector<Slot>& slots, int si, const std::vector<Value*>& parts, int ctor, bool sum, const ir::Type* payloadT) {
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

  static const Pattern* patternOn(const Row& r, int si) {
    for (auto& [p, s] : r.tests)
      if (s == si) return p;
    return nullptr;
  }
  static Row withoutTest(const Row& r, int si) {
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
  static void expandTests(Row& r, int si, int ctor, const std::vector<int>& parts) {
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
  Value* leaf(std::vector<Row>& rows, std::vector<Slot>& slots, bool tail, const ir::Type* ty, Span span) {
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
  Value* peekSlot(std::vector<Slot>& slots, int si) {
    if (slots[si].v) return slots[si].v;
    std::vector<Slot> copy = slots;
    return rebuild(copy, si);
  }

  Value* runArm(Row& row, std::vector<Slot>& slots, bool tail, const ir::Type* ty) {
    size_t mark = env_.size();
    for (auto& [p, si] : row.tests)
      if (p->kind == Pattern::Var && p->binding) bindValue(p->binding, rebuild(slots, si), p->span);
    dropUnused(slots, 0);
    Value* r = tail ? lowerTail(*row.arm->body) : lowerExpr(*row.arm->body);
    endScope(mark);
    return r;
  }
};

}  // namespace

std::unique_ptr<ir::Module> lowerProgram(Checked& c, ir::Context& ctx, const std::string& file, DiagSink& diags,
                                         const LowerOptions& opts) {
  registerRuntimeOps();
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
