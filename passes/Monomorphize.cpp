// monomorphize: one instance of each generic function per distinct type
// arguments and function arguments, so that kernels and device functions have
// no type variables and no function values left.
//
// A *template* is a function that cannot run as it is: its signature mentions
// a type variable (`!T`), or it is a kernel or device function with a
// function-typed parameter, or a host function that passes one of its
// function-typed parameters on to a template (a launcher `fill(f, n)` that
// dispatches `k(f, ..)`, directly or through another such host function)
// and that some `call` names. Every other function is a root. Starting from the
// roots, each `call`, `dispatch` and `func.ref` whose target is a template (or
// a host function given a `func.ref` for a function parameter) is pointed at
// an instance:
//   - the target's type variables are bound by unifying its signature with
//     the types at the site (ir/ops/TypeVars.h);
//   - each function-typed parameter whose argument is a `func.ref` is dropped,
//     and the instance's body starts with that `func.ref` instead (templates
//     must get a `func.ref` there; a host function that is a root may take a
//     dynamic function value and keep the parameter);
//   - the instance is named readably, `map<i32, f32, @double>` (type
//     arguments in order of first appearance in the signature, then the
//     functions), and made once per name;
//   - its body is the template's with every type substituted (op results,
//     region arguments, type attributes), then processed the same way, so
//     instances of instances follow (a generic launcher passing its function
//     parameter on to a generic kernel).
// In every processed function, `call.indirect` of a known `func.ref` becomes a
// direct `call`, and `func.ref` ops left unused are removed. Templates are
// removed at the end; roots are kept.
//
// Errors (at the site's location): a type variable left in a processed
// function (not determined by any call site), a function-typed parameter of a
// kernel or device function bound to a value that is not a `func.ref`, and
// instantiation that does not end (more than kMaxDepth nested instances or
// kMaxInstances in all, or a type argument longer than kMaxTypeText
// characters: recursion with growing type arguments).
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"
#include "passes/PassManager.h"

namespace eph::passes {
namespace {

using ir::Function;
using ir::Op;
using ir::Type;
using ir::Value;

constexpr unsigned kMaxDepth = 64;
constexpr unsigned kMaxInstances = 1000;
constexpr size_t kMaxTypeText = 1000;

// Needs instances without looking at other functions: generic, or a
// kernel/device function taking a function.
bool isTemplateBySignature(const Function& f) {
  if (ir::isGeneric(f)) return true;
  if (f.isHost()) return false;
  for (const Type* p : f.paramTypes())
    if (p->isFunction()) return true;
  return false;
}

// The templates of m: those by signature, then, until nothing changes, host
// functions that give a function-typed parameter of theirs to a `dispatch`
// or to a `call` of a template (such a call needs the parameter to be a
// `func.ref`, which only an instance has). A host function no `call` names
// may be an entry, so it stays a root (and a dynamic function value it gives
// to a kernel is an error there).
std::set<const Function*> findTemplates(ir::Module& m) {
  std::set<const Function*> templates, called;
  for (auto& f : m.functions()) {
    if (isTemplateBySignature(*f)) templates.insert(f.get());
    f->walk([&](Op* op) {
      const ir::Attr* a = op->is(ir::OpId::Call) ? op->attr("callee") : nullptr;
      if (a && a->kind == ir::Attr::Kind::Symbol)
        if (const Function* callee = m.lookup(a->s)) called.insert(callee);
    });
  }
  auto passesFunctionParam = [&](Function& f) {
    std::set<const Value*> fnParams;
    for (unsigned i = 0; i < f.paramTypes().size(); ++i)
      if (f.paramTypes()[i]->isFunction()) fnParams.insert(f.param(i));
    if (fnParams.empty()) return false;
    bool passes = false;
    f.walk([&](Op* op) {
      unsigned first = 0;
      if (op->is(ir::OpId::Dispatch)) first = 3;
      else if (op->is(ir::OpId::Call)) {
        const ir::Attr* a = op->attr("callee");
        const Function* callee = a && a->kind == ir::Attr::Kind::Symbol ? m.lookup(a->s) : nullptr;
        if (!callee || !templates.count(callee)) return;
      } else {
        return;
      }
      for (unsigned i = first; i < op->numOperands(); ++i)
        if (fnParams.count(op->operand(i))) passes = true;
    });
    return passes;
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (auto& f : m.functions())
      if (f->isHost() && called.count(f.get()) && !templates.count(f.get()) && passesFunctionParam(*f))
        templates.insert(f.get()), grew = true;
  }
  return templates;
}

// The op's location, else the nearest enclosing op's, else its function's.
Loc locOf(const Op& op) {
  for (const Op* o = &op; o; o = o->parentOp())
    if (o->loc().known()) return o->loc();
  const Function* f = op.parentFunction();
  return f ? f->loc() : Loc{};
}

// "kernel ", "device function " or "host function ", for messages.
std::string kindText(const Function& f) {
  return f.isKernel() ? "kernel " : f.isHost() ? "host function " : "device function ";
}

// "@name", quoted when the name needs it (@"map<i32>").
std::string sym(const std::string& name) { return "@" + ir::nameText(name); }

// The function a `func.ref` result names, or empty.
std::string knownFunction(const Value* v) {
  const Op* def = v->definingOp();
  if (!def || !def->is(ir::OpId::FuncRef)) return {};
  const ir::Attr* a = def->attr("callee");
  return a && a->kind == ir::Attr::Kind::Symbol ? a->s : std::string();
}

class Monomorphizer {
 public:
  Monomorphizer(ir::Module& m, Diagnostics& diag) : m_(m), ctx_(m.context()), diag_(diag) {}

  bool run() {
    templates_ = findTemplates(m_);
    std::vector<Function*> templates;
    for (auto& f : m_.functions()) {
      if (isTemplate(*f)) templates.push_back(f.get());
      else work_.push_back({f.get(), 0});
    }
    while (!work_.empty() && !diag_.failed()) {
      Item item = work_.front();
      work_.erase(work_.begin());
      process(*item.fn, item.depth);
    }
    if (diag_.failed()) return changed_;
    std::set<const Function*> doomed(templates.begin(), templates.end());
    for (auto& f : m_.functions())
      if (!doomed.count(f.get())) checkNoTemplateUse(*f, doomed);
    if (diag_.failed()) return changed_;
    for (Function* t : templates) m_.eraseFunction(t);
    return changed_ || !templates.empty();
  }

 private:
  struct Item {
    Function* fn;
    unsigned depth;  // instances between this function and a root
  };

  // `code`: docs/errors.md (P001..).
  void error(const char* code, const Op& at, std::string msg) { diag_.error(locOf(at), std::move(msg), code); }

  // Instances made by this pass are never templates: their function
  // arguments are bound.
  bool isTemplate(const Function& f) const { return templates_.count(&f) != 0; }

  // ---- one processed function -------------------------------------------------
  void process(Function& f, unsigned depth) {
    std::vector<Op*> ops, refs;  // parents before children, in text order
    f.walk([&](Op* op) { ops.push_back(op); });
    for (Op* op : ops) {  // rewriteIndirect erases the op it is given, nothing else
      if (diag_.failed()) return;
      ir::OpId name = op->id();
      if (name == ir::OpId::Call) rewriteCall(*op, "callee", 0, depth);
      else if (name == ir::OpId::Dispatch) rewriteCall(*op, "kernel", 3, depth);
      else if (name == ir::OpId::FuncRef) rewriteFuncRef(*op, depth), refs.push_back(op);
      else if (name == ir::OpId::CallIndirect) rewriteIndirect(*op);
    }
    if (diag_.failed()) return;
    for (Op* op : refs)
      if (!op->result()->hasUses()) op->erase(), changed_ = true;
    checkNoTypeVars(f);
  }

  // `call` (args from operand 0) or `dispatch` (args from operand 3).
  void rewriteCall(Op& op, const char* attr, unsigned first, unsigned depth) {
    const ir::Attr* a = op.attr(attr);
    Function* callee = a && a->kind == ir::Attr::Kind::Symbol ? m_.lookup(a->s) : nullptr;
    if (!callee) return;  // the verifier reports it
    auto params = callee->paramTypes();
    std::vector<std::string> fnArgs(params.size());
    bool anyFn = false;
    for (unsigned i = 0; i < params.size() && first + i < op.numOperands(); ++i) {
      if (!params[i]->isFunction()) continue;
      fnArgs[i] = knownFunction(op.operand(first + i));
      if (!fnArgs[i].empty()) anyFn = true;
      else if (!callee->isHost() || isTemplate(*callee))
        return error("P001", op, "cannot specialise " + kindText(*callee) +
                             sym(callee->name()) + ": argument " + std::to_string(i) +
                             " is a function value known only at run time; pass a function by name (a 'func.ref')");
    }
    if (!ir::isGeneric(*callee) && !anyFn) return;
    std::vector<const Type*> args, results;
    for (unsigned i = first; i < op.numOperands(); ++i) args.push_back(op.operand(i)->type());
    for (Value* r : op.results()) results.push_back(r->type());
    ir::TypeBinding binding;
    if (std::string msg = ir::checkCallTypes(*callee, args, results, binding); !msg.empty())
      return error("P002", op, "'" + std::string(op.name()) + "': " + msg);
    Function* inst = instance(*callee, binding, fnArgs, op, depth);
    if (!inst) return;
    op.setAttr(attr, ir::Attr::symbol(inst->name()));
    std::vector<Value*> kept;
    for (unsigned i = 0; i < op.numOperands(); ++i)
      if (i < first || fnArgs[i - first].empty()) kept.push_back(op.operand(i));
    op.dropAllOperands();
    for (Value* v : kept) op.addOperand(v);
    changed_ = true;
  }

  void rewriteFuncRef(Op& op, unsigned depth) {
    Function* callee = m_.lookup(op.symbolAttr("callee"));
    if (!callee || !isTemplate(*callee)) return;
    if (!ir::isGeneric(*callee))
      return error("P001", op, "'func.ref': " + sym(callee->name()) +
                           " takes a function parameter, so it has instances rather than one "
                           "function value; refer to a function without function parameters");
    ir::TypeBinding binding;
    if (!ir::unify(callee->type(), op.result()->type(), binding))
      return error("P002", op, "'func.ref': " + sym(callee->name()) + " has type '" + callee->type()->str() +
                           "', which does not fit '" + op.result()->type()->str() + "'");
    std::vector<std::string> noFns(callee->paramTypes().size());
    if (Function* inst = instance(*callee, binding, noFns, op, depth)) {
      op.setAttr("callee", ir::Attr::symbol(inst->name()));
      changed_ = true;
    }
  }

  // call.indirect of a known func.ref -> call.
  void rewriteIndirect(Op& op) {
    std::string target = knownFunction(op.operand(0));
    if (target.empty()) return;
    std::vector<Value*> args(op.operands().begin() + 1, op.operands().end());
    std::vector<const Type*> types;
    for (Value* r : op.results()) types.push_back(r->type());
    auto call = Op::create(ir::OpTable::get()[ir::OpId::Call], args, types,
                           {{"callee", ir::Attr::symbol(target)}}, 0, op.loc());
    Op* c = op.parentRegion()->insertBefore(&op, std::move(call));
    for (unsigned i = 0; i < op.numResults(); ++i) {
      c->result(i)->setName(op.result(i)->name());
      op.result(i)->replaceAllUsesWith(c->result(i));
    }
    op.dropAllOperands();
    op.erase();
    changed_ = true;
  }

  // ---- instances --------------------------------------------------------------
  // `map<i32, f32, @double>`.
  static std::string mangle(const Function& t, const std::vector<const Type*>& typeArgs,
                            const std::vector<std::string>& fnArgs) {
    std::string s;
    for (const Type* a : typeArgs) s += (s.empty() ? "" : ", ") + a->str();
    for (const std::string& f : fnArgs)
      if (!f.empty()) s += (s.empty() ? "@" : ", @") + f;
    return t.name() + "<" + s + ">";
  }

  Function* instance(Function& tmpl, const ir::TypeBinding& binding,
                     const std::vector<std::string>& fnArgs, const Op& site, unsigned depth) {
    std::vector<const Type*> vars, typeArgs;
    ir::collectTypeVars(tmpl.type(), vars);
    for (const Type* v : vars) {
      const Type* bound = binding.lookup(v);
      if (!bound || ir::hasTypeVar(bound)) {
        error("P003", site, "cannot determine the type variable " + v->str() + " of " + sym(tmpl.name()) +
                        " from this " + std::string(site.name()));
        return nullptr;
      }
      typeArgs.push_back(bound);
    }
    // Recursion that changes its type arguments would instantiate forever,
    // and may double a type's size at each step: stop it early.
    size_t longest = 0;
    for (const Type* a : typeArgs) longest = std::max(longest, a->str().size());
    auto endless = [&](const std::string& why) {
      error("P004", site, "instantiating " + sym(tmpl.name()) + " does not end: " + why +
                      " (recursion that changes its type arguments?)");
      return nullptr;
    };
    if (longest > kMaxTypeText)
      return endless("a type argument is longer than " + std::to_string(kMaxTypeText) + " characters");
    std::string name = mangle(tmpl, typeArgs, fnArgs);
    if (auto it = instances_.find(name); it != instances_.end()) return it->second;
    if (depth + 1 > kMaxDepth) return endless(std::to_string(kMaxDepth) + " nested instances");
    if (instances_.size() >= kMaxInstances) return endless(std::to_string(kMaxInstances) + " instances");
    if (m_.lookup(name)) {
      error("P005", site, "cannot name the instance of " + sym(tmpl.name()) + " " + sym(name) +
                      ": another function has that name");
      return nullptr;
    }
    std::vector<const Type*> params, results;
    auto subst = [&](const Type* t) {
      const Type* s = ir::substitute(ctx_, t, binding);
      if (!s) error("P005", site, "instantiating " + sym(tmpl.name()) + " with " + ir::bindingText(binding) +
                              " makes an invalid type from '" + t->str() + "'");
      return s;
    };
    std::vector<const Type*> allParams;
    for (unsigned i = 0; i < tmpl.paramTypes().size(); ++i) {
      allParams.push_back(subst(tmpl.paramTypes()[i]));
      if (fnArgs[i].empty()) params.push_back(allParams.back());
    }
    for (const Type* r : tmpl.resultTypes())
      if (const Type* t = subst(r)) results.push_back(t);
    if (diag_.failed()) return nullptr;

    Function* inst = m_.addFunction(name, tmpl.kind(), ctx_.functionType(params, results), tmpl.loc());
    inst->workgroupSize = tmpl.workgroupSize;
    inst->attrs = tmpl.attrs;
    instances_[name] = inst;
    std::map<const Value*, Value*> map;
    unsigned kept = 0;
    for (unsigned i = 0; i < tmpl.paramTypes().size(); ++i) {
      Value* old = tmpl.param(i);
      if (fnArgs[i].empty()) {
        Value* arg = inst->param(kept++);
        arg->setName(old->name());
        map[old] = arg;
        continue;
      }
      // The function argument becomes a constant at the top of the body.
      auto ref = Op::create(ir::OpTable::get()[ir::OpId::FuncRef], {}, {allParams[i]},
                            {{"callee", ir::Attr::symbol(fnArgs[i])}}, 0, tmpl.loc());
      Op* r = inst->body().append(std::move(ref));
      r->result()->setName(old->name());
      map[old] = r->result();
    }
    for (auto& op : tmpl.body().ops()) inst->body().append(op->clone(map));
    substituteTypes(*inst, binding, site);
    work_.push_back({inst, depth + 1});
    changed_ = true;
    return inst;
  }

  ir::Attr substituteAttr(const ir::Attr& a, const ir::TypeBinding& b, bool& ok) {
    ir::Attr out = a;
    if (a.kind == ir::Attr::Kind::Type) {
      out.type = ir::substitute(ctx_, a.type, b);
      if (!out.type) ok = false, out.type = a.type;
    }
    for (auto& e : out.elems) e = substituteAttr(e, b, ok);
    return out;
  }

  void substituteTypes(Function& inst, const ir::TypeBinding& b, const Op& site) {
    auto fix = [&](Value* v, const Op* at) {
      const Type* t = ir::substitute(ctx_, v->type(), b);
      if (t) return v->setType(t);
      error("P005", at ? *at : site, "instantiating " + sym(inst.name()) + " makes an invalid type from '" +
                                 v->type()->str() + "'");
    };
    inst.walk([&](Op* op) {
      for (Value* r : op->results()) fix(r, op);
      for (unsigned i = 0; i < op->numRegions(); ++i)
        for (Value* a : op->region(i).args()) fix(a, op);
      for (auto& [key, attr] : std::map<std::string, ir::Attr>(op->attrs())) {
        bool ok = true;
        ir::Attr s = substituteAttr(attr, b, ok);
        if (!ok) error("P005", *op, "instantiating " + sym(inst.name()) + " makes an invalid type in attribute '" + key + "'");
        op->setAttr(key, std::move(s));
      }
    });
  }

  // ---- checks -----------------------------------------------------------------
  void checkNoTypeVars(Function& f) {
    f.walk([&](Op* op) {
      if (diag_.failed()) return;
      const Type* bad = nullptr;
      for (Value* r : op->results())
        if (ir::hasTypeVar(r->type())) bad = r->type();
      for (unsigned i = 0; i < op->numRegions() && !bad; ++i)
        for (Value* a : op->region(i).args())
          if (ir::hasTypeVar(a->type())) bad = a->type();
      if (!bad) return;
      std::vector<const Type*> vars;
      ir::collectTypeVars(bad, vars);
      error("P006", *op, "'" + std::string(op->name()) + "': the type variable " + vars.front()->str() +
                     " in " + sym(f.name()) + " is not determined by any call site (it is not in the "
                     "signature of the function it comes from)");
    });
  }

  void checkNoTemplateUse(Function& f, const std::set<const Function*>& templates) {
    f.walk([&](Op* op) {
      if (diag_.failed()) return;
      for (const char* attr : {"callee", "kernel"}) {
        const ir::Attr* a = op->attr(attr);
        const Function* t = a && a->kind == ir::Attr::Kind::Symbol ? m_.lookup(a->s) : nullptr;
        if (t && templates.count(t))
          error("P006", *op, "'" + std::string(op->name()) + "': " + sym(f.name()) + " still uses " + sym(t->name()) +
                         ", which has no instance for this use");
      }
    });
  }

  ir::Module& m_;
  ir::Context& ctx_;
  Diagnostics& diag_;
  std::vector<Item> work_;
  std::map<std::string, Function*> instances_;
  std::set<const Function*> templates_;
  bool changed_ = false;
};

}  // namespace

Pass monomorphizePass() {
  return Pass{"monomorphize",
              "instantiate generic functions per type and function arguments "
              "(map<i32, f32, @double>); calls through known function values become direct",
              [](ir::Module& m, Diagnostics& diag) { return Monomorphizer(m, diag).run(); }};
}

}  // namespace eph::passes
