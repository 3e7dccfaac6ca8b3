// The Ephapax AST: what the parser builds and the checker annotates. Every
// node has a Span. Expressions are one struct with a kind and children (so a
// walk needs no visitor boilerplate); the checker fills `ty` and the
// resolution fields, and the lowering reads them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

struct Ty;  // a checker type (frontends/ephapax/Types.h)
struct Binding;

// ---- types as written ---------------------------------------------------------

struct TypeExpr {
  enum Kind : uint8_t { Prim, Unit, Named, String, Ref, List, Tuple, Sum, Fn } kind = Prim;
  Span span;
  std::string name;    // Prim: "I32".."U32", "Bool"; Named: the name (or type variable)
  std::string region;  // String: the region ("" = none written, "_" = global)
  bool mut = false;    // Ref: &mut
  std::vector<std::unique_ptr<TypeExpr>> args;  // Named args, Ref/List elem, Tuple parts, Sum/Fn (2)
};
using TypeP = std::unique_ptr<TypeExpr>;

// ---- patterns -------------------------------------------------------------------

struct Pattern {
  enum Kind : uint8_t { Wild, Var, Int, Bool, String, Unit, Tuple, Ctor } kind = Wild;
  Span span;
  std::string name;  // Var: the variable; Ctor: the constructor
  int64_t ival = 0;
  bool wide = false;  // Int: I64 literal
  bool bval = false;
  std::string sval;
  std::vector<std::unique_ptr<Pattern>> args;
  // Filled by the checker.
  Ty* ty = nullptr;
  int ctorIndex = -1;            // Ctor: variant number (Bool: true = 0? no: see lowering)
  Binding* binding = nullptr;    // Var
};
using PatternP = std::unique_ptr<Pattern>;

// ---- expressions --------------------------------------------------------------

enum class ExprKind : uint8_t {
  IntLit, FloatLit, BoolLit, StrLit, Unit,
  Var,        // name (qualifier: `m.x` written as m.x resolves here when m is a module)
  Let,        // pat (= value) in body: kids[0] value, kids[1] body; bang for let!
  Seq,        // kids[0]; kids[1]
  Lambda,     // params, kids[0] body
  If,         // kids: cond, then, else
  Region,     // name, kids[0]
  Match,      // kids[0] scrutinee; arms
  Case,       // kids: scrutinee, inl-body, inr-body; names[0], names[1] the variables
  Handle,     // kids[0] body; arms (return arm: name "return")
  Perform,    // name, kids = args
  Binary,     // op, kids[0], kids[1]
  Unary,      // op, kids[0]
  Call,       // kids[0] callee, kids[1..] args
  Index,      // kids[0][kids[1]]
  Member,     // kids[0].name (or .index when isIndex)
  Inl, Inr,   // annot (the other side), kids[0]
  Borrow,     // mut, kids[0]
  Fst, Snd, Drop, Copy,
  Record,     // names = fields, kids = values
  List,       // kids
  Tuple,      // kids (2 or more)
  StrNew,     // region name, kids[0] the literal
  StrLen,     // kids[0]
  StrConcat,  // kids[0], kids[1]
  Ffi,        // name = symbol, kids = args
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Rem, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
enum class UnOp : uint8_t { Neg, Not };

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Param {
  std::string name;
  Span span;
  TypeP type;  // may be null for lambdas in the checker's eyes: the parser requires one
  Binding* binding = nullptr;
};

struct Arm {
  Span span;
  PatternP pat;         // Match arms
  std::string name;     // Handle arms: the operation ("return" for the return arm)
  std::vector<Param> params;  // Handle arms: op arguments then the continuation
  ExprP guard;          // may be null
  ExprP body;
};

struct Expr {
  ExprKind kind = ExprKind::Unit;
  Span span;
  std::string name;                // Var, Region, Member, Perform, StrNew region, Ffi symbol
  std::vector<std::string> names;  // Record fields, Case variables, Var qualifier parts
  std::vector<Span> nameSpans;     // Case variable spans
  int64_t ival = 0;
  double fval = 0;
  bool bval = false;   // BoolLit; Let: let!; Borrow: mut; Member: isIndex; IntLit: wide
  BinOp bop = BinOp::Add;
  UnOp uop = UnOp::Neg;
  std::vector<ExprP> kids;
  PatternP pat;             // Let
  TypeP annot;              // Let annotation, Inl/Inr other side, Lambda result
  std::vector<Param> params;  // Lambda
  std::vector<Arm> arms;      // Match, Handle
  // Filled by the checker.
  Ty* ty = nullptr;
  Binding* binding = nullptr;   // Var: the local it names (null: a global)
  Binding* caseBindings[2] = {nullptr, nullptr};
  int global = -1;              // Var: index of the function / constant / constructor
  enum Ref : uint8_t { None, Fn, Const, Ctor, Extern } refKind = None;
  std::vector<Ty*> inst;        // Var of a generic function or constructor: the type arguments
  int regionId = -1;            // Region, StrNew: the region's identity
};

// ---- declarations ---------------------------------------------------------------

struct FnDecl {
  std::string name;
  Span span;                        // the name
  std::vector<std::string> typeParams;
  std::vector<Param> params;
  TypeP ret;                        // may be null: inferred
  ExprP body;                       // null for extern functions
  bool isExtern = false;
  std::string abi;                  // extern: the ABI string
  std::vector<std::string> annotations;
  // Filled by the checker.
  Ty* type = nullptr;               // the curried function type
  std::vector<Ty*> paramTys;
  Ty* retTy = nullptr;
  std::vector<Ty*> typeParamTys;    // rigid parameters, in order
  bool checkedOk = false;
};

struct CtorDecl {
  std::string name;
  Span span;
  std::vector<TypeP> fields;
};

struct TypeDecl {
  enum Kind : uint8_t { Data, Alias, Record, Extern } kind = Alias;
  std::string name;
  Span span;
  std::vector<std::string> params;
  bool linear = false, affine = false;
  TypeP alias;                      // Alias
  std::vector<CtorDecl> ctors;      // Data
  std::vector<std::string> fieldNames;  // Record
  std::vector<TypeP> fieldTypes;        // Record
  // Filled by the checker: the parameters (Params), and the converted alias,
  // constructor fields or record fields in terms of them.
  std::vector<Ty*> paramTys;
  Ty* aliasTy = nullptr;
  std::vector<std::vector<Ty*>> ctorTys;
  std::vector<Ty*> fieldTys;
  bool recursive = false;  // Data: mentions itself (directly or through others)
};

struct ConstDecl {
  std::string name;
  Span span;
  TypeP annot;
  ExprP value;
  Ty* ty = nullptr;
};

struct Program {
  std::string moduleName;                 // last component of `module a/b/c`, or ""
  std::vector<std::string> imports;       // module names imported (last components)
  std::vector<std::unique_ptr<FnDecl>> fns;
  std::vector<std::unique_ptr<TypeDecl>> types;
  std::vector<std::unique_ptr<ConstDecl>> consts;
};

}  // namespace eph::ephapax
