// The TypeChecker: the state and the methods of pass 1 of the Ephapax
// checker (Checker.h describes both passes). Internal to frontends/ephapax.
// One class, because every part shares the scopes, regions and inference
// state of the function being checked; its methods are defined by construct in
//   Checker.cpp        run, function and constant declarations and bodies,
//                      integer literals and the defaults when inference ends
//   CheckTypes.cpp     type expressions, the regions of types, type declarations
//   CheckExpr.cpp      scopes and expressions (variables, let, lambdas, regions,
//                      handlers, operators, members, records)
//   CheckCalls.cpp     calls, instantiation of generic functions and constructors,
//                      builtins
//   CheckStmt.cpp      statements: chains, let, assignment, for, return
//   CheckGpu.cpp       kernels and kernel code rules, generic kernels, host GPU
//                      operations, dispatch
//   CheckPatterns.cpp  patterns, match and case, exhaustiveness
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/NumericParams.h"

namespace eph::ephapax::checking {

inline bool isUpper(const std::string& s) { return !s.empty() && s[0] >= 'A' && s[0] <= 'Z'; }

// The expression whose value a block produces (for pointing at mismatches).
inline const Expr* tailOf(const Expr* e) {
  for (unsigned i = 0; i < 10000 && e; ++i) {
    if ((e->kind == ExprKind::Let || e->kind == ExprKind::Seq) && e->kids.size() == 2) e = e->kids[1].get();
    else if (e->kind == ExprKind::Region && !e->kids.empty()) e = e->kids[0].get();
    else break;
  }
  return e;
}

class TypeChecker {
 public:
  TypeChecker(Checked& c, DiagSink& d) : c_(c), T(c.types), diags_(d), numeric_(d) {}

  bool run();

 private:
  Checked& c_;
  TyArena& T;
  DiagSink& diags_;
  int nextParam_ = 0;
  int nextRegion_ = 0;

  // Scopes of locals.
  std::vector<Binding*> scope_;
  // Active regions, innermost last: name and identity.
  std::vector<std::pair<std::string, Ty*>> regions_;
  unsigned lambdaDepth_ = 0;
  // Type names in scope of the current declaration: type parameters.
  std::map<std::string, Ty*> typeVars_;
  bool implicitTypeVars_ = false;  // unknown lower-case names become type parameters
  std::vector<Ty*>* newTypeParams_ = nullptr;
  // Region names of a function signature (region parameters).
  std::map<std::string, Ty*> sigRegions_;
  // Expressions to re-check once types are known.
  std::vector<std::pair<Expr*, Ty*>> numericChecks_;
  // Type parameters used as numbers, and the instantiations to check.
  NumericParams numeric_;
  std::vector<Expr*> deferredMembers_;

  // The GPU extension: statements, kernels, dispatch, builtins.
  FnDecl* curFn_ = nullptr;
  bool inKernel_ = false;
  std::vector<std::pair<Expr*, std::string>> pendingFnArgs_;  // launcher arguments that must be known functions  // inside a kernel body or an inline dispatch body
  std::vector<Ty*> intVars_, floatVars_, gpuElems_;  // defaulted to I32 / F64 / I32
  std::vector<std::pair<Expr*, Ty*>> varDeclChecks_;  // E214 once types are known
  std::set<const Expr*> tailReturns_;
  std::vector<Expr*> dispatchSites_;                  // of the current function (E219)
  std::set<int> dispatched_;                          // kernels some site dispatches
  // Kernel code rules across functions (checkKernelCode): per function, its
  // calls, and where it uses kernel-only / host-only operations.
  struct FnUses {
    std::vector<std::pair<int, Span>> calls, kernelCalls;  // callee index, site (kernelCalls: from kernel code)
    std::vector<std::pair<Span, std::string>> kernelOnly, hostOnly;
  };
  std::map<const FnDecl*, FnUses> uses_;

  // ---- diagnostics, declarations and bodies of functions (Checker.cpp) ----------
  void error(std::string code, Span s, std::string msg, std::string hint = {});
  void mismatch(Span s, Ty* want, Ty* got, const std::string& what = "");
  bool expectTy(Span s, Ty* want, Ty* got, const std::string& what = "");
  void declareFunctions();
  void checkConst(ConstDecl& k);
  void checkFn(FnDecl& f);

  // Integer literals take the integer type their context wants; alone they
  // are I32 when they fit, else I64.
  struct IntLit {
    Span span;
    int64_t value;
    bool wide;
    Ty* var;
  };
  std::vector<IntLit> intLits_;
  Ty* intLiteral(Span s, int64_t value, bool wide);
  Ty* core(Ty* t);
  void checkIntLiterals();
  void finishInference();

  // ---- type expressions and type declarations (CheckTypes.cpp) ------------------
  Ty* convert(const TypeExpr* t);
  Ty* bufferRegion(Span s);
  Ty* regionNamed(const std::string& name, Span s);
  void declareTypes();
  void addBufferRegionParams();
  bool mentionsDecl(Ty* t, const TypeDecl* d, unsigned depth);
  bool dataRecursive(const TypeDecl* d);
  void checkElemType(Ty* elem, Span s);
  Ty* declRegion_ = nullptr;  // see bufferRegion

  // ---- scopes and expressions (CheckExpr.cpp) -----------------------------------
  Binding* lookupLocal(const std::string& name);
  Binding* bind(Binding::Origin o, const std::string& name, Span s, Ty* t);
  Ty* infer(Expr& e);
  Ty* inferKind(Expr& e);
  Ty* inferVar(Expr& e);
  Ty* inferLet(Expr& e);
  Ty* inferLambda(Expr& e);
  Ty* inferRegion(Expr& e);
  Ty* inferHandle(Expr& e);
  bool numericNow(Expr& e, Ty* t, const std::string& op);
  Ty* inferBinary(Expr& e);
  Ty* inferMember(Expr& e);
  void inferMemberLate(Expr& e);
  Ty* inferMemberOn(Expr& e, Ty* r);
  Ty* inferRecord(Expr& e);
  Ty* intVar();

  // ---- calls and builtins (CheckCalls.cpp) --------------------------------------
  struct BuiltinInfo {
    Expr::Builtin b;
    int arity;  // -1: variadic
  };
  Ty* instantiate(FnDecl& f, std::vector<Ty*>& inst);
  Ty* instantiateCtor(TypeDecl* d, int variant, std::vector<Ty*>& fields, std::vector<Ty*>& inst);
  bool viewArgument(Ty* want, Ty* got);
  Ty* inferCall(Expr& e);
  static const std::map<std::string, BuiltinInfo>& builtinTable();
  bool isBuiltinName(const std::string& name);
  bool builtinOverLibrary(const Expr& call);
  bool isFloatish(Ty* t);
  void deviceIndex(const Expr& k, Ty* t, const std::string& name);
  Ty* inferBuiltinCall(Expr& e);
  Ty* vectorArith(Expr& e, Ty* a, Ty* b);

  // ---- statements (CheckStmt.cpp) -----------------------------------------------
  static bool isChainLink(const Expr& e);
  Ty* inferChain(Expr& first);
  void bindLet(Expr& e);
  void expectUnitBody(Expr& body, const char* what);
  Ty* inferAssign(Expr& e);
  Ty* gpuElementOf(Ty* t, Span);
  Ty* inferIndexAssign(Expr& e);
  Ty* inferFor(Expr& e);
  void markTailReturns(Expr& body);
  Ty* inferReturn(Expr& e);

  // ---- kernels and dispatch (CheckGpu.cpp) --------------------------------------
  static bool isGpuFn(const FnDecl& f);
  static bool hasUntypedParam(const FnDecl& f);
  bool kernelShaped(const FnDecl& f);
  void kernelOnly(Span s, const std::string& what);
  void hostOnly(Span s, const std::string& what);
  void noteCall(Expr& call, int callee);
  void checkKernelCode();
  bool reaches(int from, int to);
  void generalizeKernel(FnDecl& f);
  void reportUntypedLauncherParams(const FnDecl& f);
  void checkUndispatchedKernels();
  static bool mentionsParamTy(Ty* t, unsigned depth = 0);
  void checkDispatchSites();
  Ty* inferAllocGpu(Expr& e);
  Ty* inferAwait(Expr& e);
  Ty* inferDispatch(Expr& e);
  void dispatchArg(FnDecl& k, size_t i, Expr& arg, Ty* want, Ty* got);
  void checkFunctionValue(Expr& arg, const std::string& to);
  bool isLauncherFunctionParam(const Expr& arg);

  // ---- patterns and exhaustiveness (CheckPatterns.cpp) --------------------------
  // Usefulness of a wildcard row against the unguarded arms (Maranget). Work is
  // capped so that a pathological match cannot take forever.
  using Row = std::vector<const Pattern*>;
  unsigned work_ = 0;
  void bindPattern(Pattern& p, Ty* t, Binding::Origin origin, bool inLet);
  Ty* inferMatch(Expr& e);
  Ty* inferCase(Expr& e);
  int ctorCount(Ty* t);
  static int ctorOf(const Pattern* p);
  std::vector<Ty*> subTypes(Ty* t, int ctor, size_t n);
  bool useful(const std::vector<Row>& rows, const std::vector<Ty*>& types);
  void checkExhaustive(Expr& e, Ty* s);
  static size_t arity(const Pattern* p) { return p && (p->kind == Pattern::Tuple || p->kind == Pattern::Ctor) ? p->args.size() : 0; }
};

}  // namespace eph::ephapax::checking
