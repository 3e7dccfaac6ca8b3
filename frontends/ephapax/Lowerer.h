// The Lowerer: the state and the methods of the lowering of checked Ephapax
// to the IR (Lower.h describes the representation). Internal to
// frontends/ephapax. One class, because every part shares the environment
// of the function being lowered; its methods are defined by seam in
//   Lower.cpp          run, function instances, self tail calls as loops; lowerProgram
//   LowerTypes.cpp     Ephapax types as IR types; which generic functions lower generically
//   LowerClosures.cpp  closure conversion: closure types, closure values, apply and entry functions
//   LowerValues.cpp    bindings and ownership, placeholders, drops, coercions, branches
//   LowerExpr.cpp      expressions
//   LowerCall.cpp      calls, and the IR functions (instances, kernels, device copies) they target
//   LowerStmt.cpp      statements: var, assignment, for, while
//   LowerGpu.cpp       function values in GPU code, kernels, dispatch
//   LowerBuiltins.cpp  builtins (GPU ids, vectors and matrices, transfers, lists, strings)
//   LowerMatch.cpp     let patterns and match compilation
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontends/ephapax/Lower.h"
#include "frontends/ephapax/Parser.h"
#include "ir/Builder.h"
#include "ir/ForeignAbi.h"
#include "ir/OpTable.h"
#include "ir/ops/TypeVars.h"

namespace eph::ephapax::lowering {

using ir::Value;
using Subst = std::vector<std::pair<int, Ty*>>;

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

  void run();
  std::map<std::string, ClosureGroup>& groups() { return groups_; }
  bool failed() const { return failed_; }

 private:
  Checked& c_;
  TyArena& T;
  ir::Context& ctx_;
  DiagSink& diags_;
  ir::Module& m_;
  ir::Region dummy_;
  ir::Builder b_;
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

  // ---- helpers (LowerValues.cpp) ------------------------------------------------
  Loc loc(Span s) const { return Loc{file_, s.line, s.col}; }

  void unsupported(Span s, const std::string& what, std::string code = "E201");
  Ty* sub(Ty* t) { return resolve(subst_.empty() ? t : substitute(T, t, subst_)); }

  Ty* deep(Ty* t, const Subst& s, unsigned depth = 0);
  const ir::Type* token(bool affine = false);
  static bool owns(const ir::Type* t) { return t->isLinear() || t->isAffine(); }

  // ---- types (LowerTypes.cpp) ---------------------------------------------------
  const ir::Type* lowerTy(Ty* t, unsigned depth = 0);
  // A named function's parameter: a list is passed as a read view.
  const ir::Type* lowerParamTy(Ty* t);
  // The list type t is (through aliases and borrows), or null.
  Ty* listTy(Ty* t);
  // buffer<T, host, own> for a list type [T].
  const ir::Type* listBufferTy(Ty* list, ir::Ownership own);

  const ir::Type* fnIrType(Ty* t, unsigned depth = 0);

  bool checkRepresentable(Ty* t, Span s, unsigned depth = 0);
  // Recursive data types: which constructor fields live in boxes.
  bool reachesDecl(Ty* t, const TypeDecl* d, std::set<const TypeDecl*>& seen, unsigned depth);
  const std::vector<std::vector<bool>>& boxedFields(const TypeDecl* d);
  std::map<const TypeDecl*, std::vector<std::vector<bool>>> boxedFields_;
  static bool holdsMemory(const ir::Type* t);
  void reportRecursive(const TypeDecl* d, const std::string& why);
  std::set<const TypeDecl*> reportedData_;
  Ty* dataTy(Ty* t);
  void unboxFields(std::vector<Value*>& parts, Ty* scrutTy, unsigned ctor);

  // ---- closures (LowerClosures.cpp) ---------------------------------------------
  ClosureGroup& group(Ty* fnTy);
  const ir::Type* envType(const ClosureEntry& e);

  std::set<std::string> inProgress_, reportedRecursive_;
  const ir::Type* closureType(Ty* fnTy);
  bool mentionsFn(Ty* t);
  void unboxCaptures(std::vector<Value*>& caps, const std::vector<Ty*>& tys);

  size_t entryIndex(ClosureGroup& g, ClosureEntry e);
  void freeVars(const Expr& e, int firstInner, std::vector<const Binding*>& out);
  std::string substKey(const Subst& s);

  Value* makeLambdaClosure(Expr& lam, size_t param, Span s);
  Value* makeFnClosure(FnDecl& f, const std::vector<Ty*>& inst, size_t param, std::vector<Value*> prior,
                       std::vector<Ty*> priorTys, Span s);

  Value* makeClosure(Ty* fnTy, ClosureEntry e, const std::vector<Value*>& env);
  Value* useCaptured(const Binding& b, Span s);
  Value* apply(Value* clo, Ty* fnTy, Value* arg);
  Loc b_loc() { return Loc{file_, 1, 1}; }

  void emitApply(ClosureGroup& g);
  ir::Function* entryFunction(ClosureGroup& g, size_t k);

  // ---- functions (Lower.cpp) ----------------------------------------------------
  ir::Function* instance(FnDecl& f, Subst s);

  void drain();
  bool hasSelfTailCall(const Expr& e, const std::string& name, unsigned depth = 0);

  void lowerFunction(const Instance& in);
  void bindParams(FnDecl& f, const std::vector<Value*>& vals);

  // ---- bindings (LowerValues.cpp) -----------------------------------------------
  void bindValue(const Binding* b, Value* v, Span site);
  bool mustUseBinding(const Binding* b);
  bool mustUse(const LBinding& lb) { return lb.b && !lb.list && mustUseBinding(lb.b); }

  LBinding* lookup(const Binding* b);
  void endScope(size_t mark);
  void endScopeAll() { endScope(0); }

  Value* useVar(LBinding& lb, Span s);
  Value* borrowVar(LBinding& lb);

  // ---- values (LowerValues.cpp, LowerExpr.cpp) ----------------------------------
  Loc curLoc_;
  void setLoc(Span s);
  bool fabricable(const ir::Type* t);

  Value* fabricate(const ir::Type* t);
  void dropValue(Value* v);
  Value* coerce(Value* v, const ir::Type* want, Span s);
  Value* coerceArg(Value* v, const ir::Type* want, Span s);

  // Lists (LowerValues.cpp): three representations of one immutable value.
  // A `let` of a fresh list keeps the owned buffer<T, host, affine> (freed at
  // the end of its scope); a named function's list parameter is a read view;
  // everywhere else (returned, stored in a tuple, record or data value,
  // captured, passed to a closure) a list is a box that owns its buffer
  // until the run ends (ir/ops/Box.cpp), copied freely.
  // The fresh lists not owned by anything yet (literals, d2h, array):
  std::set<Value*> freshLists_;
  Value* freshList(Value* buf) {
    freshLists_.insert(buf);
    pendingList_ = true;
    return buf;
  }
  // A box holding the list v: a fresh list moves in; a variable's buffer or
  // a view is copied.
  Value* boxList(Value* v);
  // A read view of a list value (a box is read through box.get).
  Value* listView(Value* v, Ty* list);

  // Lowers `e` and drops its value (a sequence's first part, a `_` binding).
  void lowerAndDrop(Expr& e) { dropValue(lowerExpr(e)); }

  Value* branch(const char* opName, Value* operand, unsigned n, const ir::Type* resultT, Span s,
                const std::function<Value*(unsigned k, Value* payload)>& body);

  Value* lowerExpr(Expr& e);
  Value* lowerTail(Expr& e);
  Value* finishTail(Value* v, Span s);
  Value* lowerKind(Expr& e, bool tail);
  bool pendingList_ = false;

  Value* ffiCall(const std::string& sym, const std::vector<Value*>& args, const ir::Type* rt, Span s);
  const ir::Type* primOf(Ty* t);
  Value* intLiteral(const ir::Type* t, int64_t v);

  Value* project(Value* base, size_t index);
  Value* newString(const std::string& bytes);
  void copyInto(Value* dst, Value* src, Value* at, Value* n);
  Value* lowerConcat(Expr& e);
  Value* lowerBorrowOf(Expr& e);
  Value* lowerVar(Expr& e);
  Value* lowerBinary(Expr& e);
  Value* lowerCall(Expr& e, bool tail);

  // Call arguments: list literals are passed as borrows and freed after the call.
  std::vector<Value*> pendingArgs_;
  Value* lowerArg(Expr& e);
  void dropPendingArgs();

  // ---- statements (see LowerStmt.cpp) -----------------------------------------------
  Value* unit() { return b_.unit(); }

  std::vector<size_t> carriedVars(const std::set<const Binding*>& assigned);

  Value* lowerStatement(Expr& e, bool tail);
  void lowerFor(Expr& e);
  void lowerWhile(Expr& e);
  Value* lowerBorrowOrTemp(Expr& e, Value*& temp);

  // ---- GPU functions (LowerCall.cpp) --------------------------------------------
  bool isGeneric(const FnDecl& f);

  // ---- generic host functions (LowerTypes.cpp) ----------------------------------
  bool plainTy(Ty* t, unsigned depth = 0);

  bool plainBody(const Expr& e, std::set<const FnDecl*>& seen);

  bool lowersGenerically(const FnDecl& f, std::set<const FnDecl*>& seen);

  bool instantiateInIr(const FnDecl& f, const Subst& fs);


  std::vector<const ir::Type*> gpuParamTypes(FnDecl& f);

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

  void setWorkgroupSize(ir::Function* f, const int64_t (&wg)[3], Span s);
  static void addHiddenGrid(std::vector<const ir::Type*>& params, ir::Context& ctx);
  static void nameHiddenGrid(ir::Function* f, size_t first);
  static bool hasHiddenGrid(const ir::Function* f) { return f->attrs.count("hidden_params") != 0; }

  ir::Function* kernelFn(FnDecl& f);

  ir::Function* deviceFn(FnDecl& f);

  ir::Function* genericHostFn(FnDecl& f);
  bool takesFunction(const FnDecl& f);

  // ---- function values in GPU code (LowerGpu.cpp) -------------------------------
  Value* funcRef(FnDecl& f, Ty* ty, Span s);
  Value* fabricateFn(const ir::Type* ft);

  // A lambda in GPU code: a device function `<fn>.lambda<k>` of its
  // parameters (it may capture nothing, E215), and a func.ref of it.
  std::map<std::string, ir::Function*> lambdaFns_;
  Value* lambdaRef(Expr& lam);
  void lowerLambdaBody(Expr& lam, ir::Function* k);
  Value* lowerFnArg(Expr& a, const std::string& to);
  void lowerKernel(const Instance& in);
  void hoistWorkgroupArrays(Expr& e);
  void lowerKernelBody(Expr& body, ir::Function* irf, size_t firstHidden, Span s);

  // ---- dispatch (LowerGpu.cpp) --------------------------------------------------
  std::vector<Value*> lowerGrid(Expr& e);

  void emitDispatch(ir::Function* k, const std::vector<Value*>& grid, std::vector<Value*> args);
  static bool mentionsTypeVar(const ir::Type* t, unsigned depth = 0);
  Value* lowerDispatch(Expr& e);
  Value* lowerInlineDispatch(Expr& e);

  // The element count of a buffer, as i32, in host code: buffer.len (the
  // interpreter asks the device hooks for a device buffer's length).
  Value* hostLen(Value* buf) { return b_.bufferLen(buf, ctx_.i32()); }

  // ---- builtins (LowerBuiltins.cpp) ---------------------------------------------
  Value* splat(Value* s, const ir::Type* vt);
  static bool isMatrix(const ir::Type* t);
  Value* column(Value* m, unsigned j);
  Value* matVec(Value* m, Value* v);
  Value* columnwise(Value* m, const std::function<Value*(Value* col, unsigned j)>& f);
  Value* lowerVecBinary(Expr& e);
  Value* idBuiltin(const char* op, int64_t dim, const ir::Type* rt);
  Value* lowerBuiltin(Expr& e);
  Value* lowerElementAccess(Expr& e, const std::vector<Expr*>& args, const ir::Type* rt);

  // ---- patterns (LowerMatch.cpp) ------------------------------------------------
  void bindPattern(Pattern& p, Value* v, bool bang);
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
  Value* lowerMatch(Expr& e, bool tail, const ir::Type* ty);
  static bool irrefutable(const Pattern* p) { return p->kind == Pattern::Wild || p->kind == Pattern::Var; }

  Value* rebuild(std::vector<Slot>& slots, int i);
  void dropUnused(std::vector<Slot>& slots, int i);
  Value* compileRows(std::vector<Row> rows, std::vector<Slot> slots, bool tail, const ir::Type* ty, Span span);
  Value* takeSlot(std::vector<Slot>& slots, int si) { return slots[si].v; }

  void splitSlot(std::vector<Slot>& slots, int si, const std::vector<Value*>& parts, int ctor, bool sum, const ir::Type* payloadT);
  static const Pattern* patternOn(const Row& r, int si);
  static Row withoutTest(const Row& r, int si);
  static void expandTests(Row& r, int si, int ctor, const std::vector<int>& parts);
  Value* leaf(std::vector<Row>& rows, std::vector<Slot>& slots, bool tail, const ir::Type* ty, Span span);
  Value* peekSlot(std::vector<Slot>& slots, int si);
  Value* runArm(Row& row, std::vector<Slot>& slots, bool tail, const ir::Type* ty);
};

}  // namespace eph::ephapax::lowering
