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
  // GPU extension: Gpu is GPUBuffer<T>, GPUBuffer<T>! (bang) or GPUBufferAffine<T>
  // (name "GPUBufferAffine"); Vec/Mat are vec2..vec4 / mat2..mat4 of F32 (size
  // in `size`); Array is `[T; N]` (workgroup arrays); Future is Future<T>.
  enum Kind : uint8_t { Prim, Unit, Named, String, Ref, List, Tuple, Sum, Fn, Gpu, Vec, Mat, Array, Future } kind = Prim;
  Span span;
  std::string name;    // Prim: "I32".."U32", "Bool"; Named: the name (or type variable); Gpu: as written
  bool bang = false;   // Gpu: GPUBuffer<T>! (linear, owned)
  int64_t size = 0;    // Vec/Mat: 2..4; Array: N
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

  // ---- GPU extension (statement forms desugar into these; see docs/ephapax.md) ----
  // Statements in a brace block nest: the rest of the block is the last kid
  // (`rest`), like Let's body. A block's value is its final expression, or ()
  // when it ends in a statement.
  VarDecl,      // `var name[: annot] = kids[0]; kids[1]` — a mutable local (never linear)
  Assign,       // `name = kids[0]` (compound `+=` etc. desugar to Binary); type ()
  IndexAssign,  // `kids[0][kids[1]] = kids[2]`; type ()
  While,        // `while kids[0] { kids[1] }`; type ()
  For,          // `for name in kids[0]..kids[1] { kids[2] }`; type ()
  Return,       // `return kids[0]` (() when absent): only in tail position
  Workgroup,    // `workgroup name: [annot elem; ival]; kids[0]` — a workgroup array (kernels only)
  Dispatch,     // named: `dispatch name(kids...) over grid`; inline: `dispatch over grid { kids[0] }`
                //   (name empty; also written `kernel over grid { }`); grid = 1..3 dims; type ()
  AllocGpu,     // `allocate_gpu[@name][<annot>](kids[0])` — name: the region ("" none, "_" global);
                //   `allocate_gpu_on[@name][<annot>](kids[0], kids[1])`: on device kids[0] (a literal)
  Await,        // `kids[0].await`
};

enum class BinOp : uint8_t { Add, Sub, Mul, Div, Rem, Eq, Ne, Lt, Le, Gt, Ge, And, Or };
enum class UnOp : uint8_t { Neg, Not };

struct Expr;
using ExprP = std::unique_ptr<Expr>;

struct Param {
  std::string name;
  Span span;
  TypeP type;  // null only for a @gpu kernel's parameter: inferred from its dispatch sites
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
  TypeP annot;              // Let annotation, Inl/Inr other side, Lambda result, AllocGpu element type
  std::vector<Param> params;  // Lambda
  std::vector<Arm> arms;      // Match, Handle
  std::vector<ExprP> grid;    // Dispatch: the grid in invocations, 1 to 3 dimensions
  int64_t workgroupSize[3] = {0, 0, 0};  // inline Dispatch: `workgroup (x, y, z)` as written; 0s: none
  // Filled by the checker.
  Ty* ty = nullptr;
  Binding* binding = nullptr;   // Var: the local it names (null: a global)
  Binding* caseBindings[2] = {nullptr, nullptr};
  int global = -1;              // Var: index of the function / constant / constructor
  enum Ref : uint8_t { None, Fn, Const, Ctor, Extern } refKind = None;
  std::vector<Ty*> inst;        // Var of a generic function or constructor: the type arguments
  int regionId = -1;            // Region, StrNew, AllocGpu: the region's identity
  // Filled by the checker for the GPU extension.
  enum Builtin : uint8_t {
    NoBuiltin,
    // kernel values (Var): gid = global_id(0); lid, group likewise
    Gid, Lid, GroupId,
    // kernel calls: global_id(d), local_id(d), group_id(d), num_groups(d), group_size(d), barrier()
    GlobalIdOf, LocalIdOf, GroupIdOf, NumGroupsOf, GroupSizeOf, Barrier,
    AtomicAdd, AtomicMin, AtomicMax, AtomicXchg, AtomicCas,  // (buf, i, v[, new]) -> old
    // math on scalars / vectors: sqrt exp log sin cos tan tanh floor ceil abs pow min max
    Sqrt, Exp, Log, Sin, Cos, Tan, Tanh, Floor, Ceil, Abs, Pow, Min, Max,
    // float math named like its IR op (the callee's name): asin .. sign; atan2, copysign; fma
    FloatMath1, FloatMath2, Fma,
    Dot, Cross, Length, Normalize,            // vectors
    MakeVec, MakeMat,                         // vec3(x, y, z), vec3(s), mat2(c0, c1), mat2(s)
    Cast,                                     // i32(e) u32(e) i64(e) f32(e) f64(e)
    Len,                                      // len(buffer or list): I32
    // host calls
    H2D, D2H, FreeGpu, ReadGpu, WriteGpu,     // h2d(list) d2h(buf) free_gpu(buf) read_gpu(buf, i) write_gpu(buf, i, v)
    ToDevice,                                 // to_device(k, buf): k a literal device index
    DeviceCount,                              // device_count(): I32, the devices the program runs on
    Array,                                    // array(n, f): the list [f(0), .., f(n-1)], f: I32 -> T
  } builtin = NoBuiltin;
  bool kernelCode = false;      // the expression is inside a kernel (a @gpu kernel or an inline dispatch)
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
  int64_t workgroupSize[3] = {64, 1, 1};  // @workgroup_size(x, y, z)
  bool isAsync = false;             // `async fn`
  bool braceBody = false;           // `fn f(..) { .. }`
  // Filled by the checker.
  Ty* type = nullptr;               // the curried function type
  std::vector<Ty*> paramTys;
  Ty* retTy = nullptr;
  std::vector<Ty*> typeParamTys;    // rigid parameters, in order
  bool checkedOk = false;
  // GPU extension, filled by the checker: a @gpu function whose parameters are
  // all views (GPUBuffer<T>) or scalars and whose result is () is a kernel;
  // any other @gpu function is a launcher (host code that may dispatch).
  enum GpuRole : uint8_t { NotGpu, Kernel, Launcher } gpuRole = NotGpu;
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
