// The op table. Everything that makes an op what it is lives in one OpInfo
// entry: its name, operand/result/region counts, flags, the effect it has on
// each operand, its typing rule (verify), and its interpreter semantics. The
// printer and parser are generic over this table, and passes ask it questions
// (is this op pure? does it consume operand 2?) instead of switching on names.
//
// Adding an op = adding one entry to one of ir/ops/*.cpp.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/IR.h"

namespace eph::interp {
class Exec;
}

namespace eph::ir {

// What an op does to an operand. Only buffer operands (and aggregates holding
// them) are affected; plain values are always just read.
enum class Effect : uint8_t {
  None,     // not a buffer access (e.g. an index)
  Read,     // reads through a borrow
  Write,    // writes (and maybe reads) through a borrow
  Consume,  // takes ownership: the operand may not be used afterwards
};
std::string_view effectName(Effect e);

enum OpFlags : unsigned {
  kPure = 1u << 0,        // no side effects; removable when unused; CSE-able
  kTerminator = 1u << 1,  // must be last in its region
  kHostOnly = 1u << 2,    // only in host functions
  kKernelOnly = 1u << 3,  // only in kernels and device functions
  kCommutative = 1u << 4, // operands 0 and 1 may be swapped
  kBarrier = 1u << 5,     // synchronises a workgroup (barrier, and the subgroup.* collectives)
  kReadOnly = 1u << 6,    // reads memory but changes nothing: removable when unused
  // Its typing rule handles type variables itself (call, dispatch, func.ref,
  // call.indirect). Other ops whose operand or result types mention a type
  // variable skip their typing rule until monomorphization substitutes them.
  kTypeVarAware = 1u << 7,
};

// What an op's regions are, so passes need not guess from its name.
enum class RegionKind : uint8_t {
  None,      // no regions
  Branches,  // exactly one region runs (if, match)
  Loop,      // the regions run repeatedly (for, while)
};

class Builder;

// Derivative rules, filled in by the ops that are differentiable (the
// autodiff pass reads them). The rule emits IR with `b` at the point the pass
// chose; `operands` and `results` are the op's primal values as seen there.
struct DiffContext {
  Builder& b;
  const Op& op;
  std::span<Value* const> operands;
  std::span<Value* const> results;
};
// Reverse mode: given the adjoint of each result (null: zero), returns each
// operand's adjoint contribution (null: none, e.g. a non-differentiable operand).
using ReverseRule = std::vector<Value*> (*)(const DiffContext& c, std::span<Value* const> resultAdjoints);
// Forward mode: given each operand's tangent (null: zero), returns each
// result's tangent (null: zero).
using ForwardRule = std::vector<Value*> (*)(const DiffContext& c, std::span<Value* const> operandTangents);
struct DerivativeRules {
  ReverseRule reverse = nullptr;
  ForwardRule forward = nullptr;
};

// Differential cases generated from the table (tests/unit/
// DifferentialVulkanTest.cpp, TableOps): for each row and each of its types,
// a kernel applies the op to random inputs (fixed seed) and interp, cpu and
// vulkan must agree within the row's tolerance (runtime/Compare.h).
struct SampleDomain {
  double lo = -1000, hi = 1000;  // integers: clamped to the type's range
  bool nonzero = false;          // never 0 (integer divisors)
};
// The whole range of an integer type (floats: [-1000, 1000]).
constexpr SampleDomain kFullRange{-1e300, 1e300};
struct SampleRow {
  // Operand types (IR text), e.g. "i32", "f16", "vec<f32, 3>"; every operand
  // has this type.
  std::vector<std::string_view> types;
  // Each operand's inputs; the last repeats. Empty: kFullRange.
  std::vector<SampleDomain> domains = {};
  std::string_view result = {};  // the result type; empty: the operand type
  double ulps = 4, relative = 1e-5, absolute = 1e-6;  // float tolerance
};

// Counts: a non-negative number means exactly that many; kVariadic means any.
constexpr int kVariadic = -1;

// Returns an empty string when `op` is well typed, else what is wrong (the
// verifier adds the op name and location).
using VerifyFn = std::string (*)(const Op& op);
// The effect of `op` on operand `i`. Null hook: use OpInfo::effects.
using EffectFn = Effect (*)(const Op& op, unsigned i);
// Runs `op` in the interpreter; false after reporting an error through ex.
using InterpFn = bool (*)(interp::Exec& ex, const Op& op);

struct OpInfo {
  std::string_view name;
  int numOperands = 0;
  int numResults = 0;
  int numRegions = 0;
  unsigned flags = 0;
  // Per-operand effects; the last entry repeats for variadic operands. Empty:
  // every operand is Effect::None.
  std::vector<Effect> effects = {};
  EffectFn effectFn = nullptr;
  VerifyFn verify = nullptr;
  InterpFn interp = nullptr;
  // One line for `ephc ops`.
  std::string_view summary = {};
  RegionKind regionKind = RegionKind::None;
  // Null: the op is not differentiable (the autodiff pass reports it by name).
  const DerivativeRules* derivative = nullptr;
  // Differential coverage (OpTableWalkTest requires one for every op usable
  // in kernels): rows of generated cases, and/or the hand-written test
  // ("Suite.Name" of eph_unit_tests) for ops a generic kernel cannot
  // exercise (control flow, memory, atomics, barriers, ids, aggregates).
  std::vector<SampleRow> samples = {};
  std::string_view diffTest = {};
  // Set by OpTable::add from the name (ir/OpIds.def); not written in entries.
  OpId id = OpId::Custom;

  bool has(OpFlags f) const { return (flags & f) != 0; }
  Effect effect(const Op& op, unsigned i) const;
};

// All ops known to this build.
class OpTable {
 public:
  static OpTable& get();
  const OpInfo* lookup(std::string_view name) const;
  // The entry for a name that must exist (used by builders and passes).
  const OpInfo& operator[](std::string_view name) const;
  const std::vector<const OpInfo*>& all() const { return all_; }
  // The entry of a built-in op.
  const OpInfo& operator[](OpId id) const;
  // Registers a table of entries (the ops/*.cpp files call this at start-up;
  // plugins may add their own). Entries must outlive the program; add sets
  // their `id` from their name.
  void add(std::span<OpInfo> entries);
  // Attaches derivative rules to a built-in op after registration
  // (ops/Derivatives.cpp); rules must outlive the program.
  void setDerivative(OpId id, const DerivativeRules* rules);

 private:
  std::vector<const OpInfo*> all_;
  std::vector<const OpInfo*> byId_ = std::vector<const OpInfo*>(kNumOpIds, nullptr);
};

// Each ops/*.cpp file defines one of these, called once by OpTable::get().
void registerArithOps(OpTable& t);
void registerAggregateOps(OpTable& t);
void registerControlOps(OpTable& t);
void registerMemoryOps(OpTable& t);
void registerCoopMatrixOps(OpTable& t);
void registerSubgroupOps(OpTable& t);
void registerHostOps(OpTable& t);
void registerFunctionOps(OpTable& t);
void registerBoxOps(OpTable& t);
void registerForeignOps(OpTable& t);
// Attaches the derivative rules of the built-in ops (ops/Derivatives.cpp).
void registerDerivatives(OpTable& t);

// The type of the box cell that `box.get ... : readAs` reads (ops/Box.cpp):
// a boxed host buffer<T, host, affine> is read as buffer<T, host, read>;
// any other cell is read as its own type.
const Type* boxCellType(Context& ctx, const Type* readAs);

}  // namespace eph::ir
