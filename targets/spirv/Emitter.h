// The lowering from our IR to SPIR-V, shared by the Emit*.cpp files (an
// internal header of targets/spirv). One Emitter turns one kernel into one
// module through a ModuleBuilder:
//
// - Emit.cpp: the kernel's interface (bindings, push constants, builtins,
//   entry point), device checks, types, regions and structured control flow;
// - EmitArith.cpp: scalar/vector arithmetic, comparisons, casts, math;
// - EmitAggregate.cpp: vectors, structs, sums and arrays;
// - EmitMemory.cpp: buffers, atomics, workgroup memory and barriers;
// - EmitSubgroup.cpp: subgroup collectives (GroupNonUniform*);
// - Float64Math.cpp: exp/log/sin/cos/tan/tanh/pow for f64 (and the functions
//   of EmitMath.cpp that GLSL.std.450 has only for f16/f32).
// - EmitMath.cpp: asin ... expm1, atan2, round, trunc, sign, copysign, fma.
//
// Values: every IR value maps to a SPIR-V id of its *value type* (bool is
// OpTypeBool, integers are signless OpTypeInt N 0 whatever the IR signedness,
// which picks the instructions instead; structs are plain structs; a sum is a
// struct {u32 tag, payload 0, payload 1, ...}; an array is an OpTypeArray).
// Buffers are not values in SPIR-V's logical addressing: a buffer maps to the
// global variable it names (a BufferRef), resolved at compile time.
//
// Device functions are inlined at their call sites while emitting (each call
// emits the callee's body in a fresh value frame), so buffers passed to them
// stay compile-time references to the kernel's variables and no function
// takes a pointer parameter.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <spirv/unified1/GLSL.std.450.h>

#include "ir/DeviceCaps.h"
#include "ir/IR.h"
#include "ir/OpId.h"
#include "targets/spirv/Builder.h"
#include "targets/spirv/DeviceMemoryUse.h"
#include "targets/spirv/Spirv.h"

namespace eph::spirv {

// A buffer the kernel can reach: a global variable and how its elements are
// stored.
struct BufferRef {
  Id var = 0;
  spv::StorageClass sc = spv::StorageClass::StorageBuffer;
  const ir::Type* elem = nullptr;
  Id elemMemType = 0;   // the type of one element in memory
  bool asBits = false;  // float elements kept as same-width unsigned integers
  uint32_t length = 0;  // workgroup buffers: their element count
  uint32_t binding = 0; // device buffers: the descriptor binding
  bool readOnly = false;  // device buffers: a read borrow (NonWritable)
};

// What an IR value is while emitting: an SSA id, or a buffer.
struct Val {
  Id id = 0;
  const BufferRef* buf = nullptr;
};

// Emission choices, each with a switch back for measuring it: the
// environment variable EPH_SPIRV_TUNE, a comma-separated list of
//   uniform-barrier  every barrier orders device memory too (semantics 0x148)
//   no-unroll        no Unroll hint on loops with a constant trip count <= 16
//   wrap-check       `for` keeps its wrap-around flag even for a constant step of 1
//   restrict         Restrict on every device buffer variable
// (the defaults are what bench/RESULTS.md, issue #6, measured best).
struct EmitTuning {
  bool uniformBarrier = false, unroll = true, wrapCheck = false, restrict = false;
  static EmitTuning fromEnvironment();
};

class Emitter {
 public:
  Emitter(const ir::Function& kernel, const DeviceCaps& caps, ModuleBuilder& b, const EmitOptions& options = {});
  // Emits the whole kernel into the builder.
  Status emit();

  using EmitFn = Status (Emitter::*)(const ir::Op&);
  // The lowering of each built-in op, indexed by OpId (null: none yet, see
  // lowersOp in Spirv.h); &Emitter::emitUnsupported marks an op that is
  // explicitly not on this target.
  using EmitTable = ir::PerOp<EmitFn>;
  static const EmitTable& table();
  // Reports "op 'NAME' is not supported on target spirv" at the op.
  Status emitUnsupported(const ir::Op& op);

  // ---- shared helpers (used across the Emit*.cpp files) ----------------------
  ModuleBuilder& b;
  const ir::Function& kernel;
  const DeviceCaps& caps;
  const EmitOptions options;

  Id valueType(const ir::Type* t);
  // The explicit-layout type of t in StorageBuffer/PushConstant memory
  // (ir/Layout.h offsets and strides; bool as u32).
  Id memoryType(const ir::Type* t);
  Id fromMemory(Id mem, const ir::Type* t);
  Id toMemory(Id value, const ir::Type* t);

  Id boolT() { return b.typeBool(); }
  Id u32T() { return b.typeInt(32, false); }
  Id u32(uint32_t v) { return b.constInt(u32T(), v); }
  // A bool type shaped like t (a bool vector for a vector t).
  Id boolLike(const ir::Type* t);
  // Constant v of t's scalar type, splatted to t's shape.
  Id constLike(const ir::Type* t, double v);
  Id intConstLike(const ir::Type* t, uint64_t bits);

  Val get(const ir::Value* v) const;
  Id id(const ir::Value* v) const { return get(v).id; }
  void set(const ir::Value* v, Val x) { frames_.back()[v] = x; }
  void setId(const ir::Value* v, Id x) { set(v, Val{x, nullptr}); }

  Error error(const ir::Op& op, const std::string& message) const;

  // Emits a region's ops with its arguments bound to `args`; the operands of
  // its terminator come back in `out`.
  Status emitRegion(const ir::Region& r, const std::vector<Val>& args, std::vector<Val>& out);
  Status emitOp(const ir::Op& op);

  // Elementwise application of a scalar-only lowering over vectors.
  template <class F>
  Id perElement(const ir::Type* t, Id x, F f);
  template <class F>
  Id perElement2(const ir::Type* t, Id x, Id y, F f);

  // Float elements accessed as integers (atomics on floats that need a
  // compare-exchange loop or an exchange).
  bool floatAsBits(const ir::Type* elem, ir::Space space) const {
    return bitsFloats_.count({elem, space}) != 0;
  }
  bool nativeFloatAdd(const ir::Type* elem, ir::Space space) const;

  // f64 transcendentals that GLSL.std.450 lacks (Float64Math.cpp).
  Id f64Exp(Id x);
  Id f64Log(Id x);
  Id f64Sin(Id x);
  Id f64Cos(Id x);
  Id f64Tan(Id x);
  Id f64Tanh(Id x);
  Id f64PowAbs(Id ax, Id y);  // |x|^y for x = |x| >= 0 without sign handling
  // asin acos atan sinh cosh asinh acosh atanh erf exp2 log2 log1p expm1 by op.
  Id f64Math(ir::OpId op, Id x);
  Id f64Atan2(Id y, Id x);
  // The same algorithms run in f32 where GLSL's are inaccurate (Vulkan allows
  // 4096 ulp for asin, acos, atan and atan2): asin, acos or atan by op.
  Id f32Math(ir::OpId op, Id x);
  Id f32Atan2(Id y, Id x);
  // A fused a b + c of scalars of width 32 or 64 (GLSL's Fma may be unfused).
  Id fmaScalar(unsigned width, Id a, Id x, Id y);

  // Op families (each file adds its entries to the table).
  static void addArithEmitters(EmitTable& t);
  static void addMathEmitters(EmitTable& t);  // EmitMath.cpp, called by addArithEmitters
  static void addAggregateEmitters(EmitTable& t);
  static void addMemoryEmitters(EmitTable& t);
  static void addSubgroupEmitters(EmitTable& t);  // EmitSubgroup.cpp
  static void addCoopMatrixEmitters(EmitTable& t);  // EmitCoopMatrix.cpp
  Status emitCoopMatrix(const ir::Op& op);

  // Arith/aggregate entry points named in the tables.
  Status emitConst(const ir::Op& op);
  Status emitBinary(const ir::Op& op);
  Status emitUnary(const ir::Op& op);
  Status emitCompare(const ir::Op& op);
  Status emitSelect(const ir::Op& op);
  Status emitCast(const ir::Op& op);
  Status emitBitcast(const ir::Op& op);
  Status emitMath(const ir::Op& op);
  Status emitPow(const ir::Op& op);
  Status emitMathFunction(const ir::Op& op);  // EmitMath.cpp: the one-operand functions
  Status emitAtan2(const ir::Op& op);
  Status emitCopysign(const ir::Op& op);
  Status emitFma(const ir::Op& op);
  Id signBitOf(const ir::Type* t, Id x);  // bool (vector) of the sign bits of floats
  Status emitVecMake(const ir::Op& op);
  Status emitExtract(const ir::Op& op);
  Status emitInsert(const ir::Op& op);
  Status emitVecMath(const ir::Op& op);
  Status emitStructUnpack(const ir::Op& op);
  Status emitSumMake(const ir::Op& op);
  Status emitSumTag(const ir::Op& op);
  Status emitArrayGet(const ir::Op& op);
  Status emitArraySet(const ir::Op& op);
  Status emitLoad(const ir::Op& op);
  Status emitStore(const ir::Op& op);
  Status emitVectorAccess(const ir::Op& op);
  Id vectorView(const BufferRef& buf, unsigned lanes);
  Status emitBufferLen(const ir::Op& op);
  Status emitAtomic(const ir::Op& op);
  Id atomicAt(const ir::Op& op);
  Status emitWorkgroupAlloc(const ir::Op& op);
  Status emitBarrier(const ir::Op& op);
  Status emitBuiltin(const ir::Op& op);
  Status emitSubgroup(const ir::Op& op);
  // What device feature subgroup collective `op` needs and caps lacks ("": none).
  std::string missingSubgroupFeature(const ir::Op& op) const;

  // Selects between two values of any value type (composites member-wise, so
  // it works before SPIR-V 1.4 too).
  Id selectValue(const ir::Type* t, Id cond, Id a, Id b);
  // A pointer to element `index` (an IR integer value) of a buffer.
  Id elementPointer(const BufferRef& buf, Id index, const ir::Type* indexType);
  Id indexToU32(Id index, const ir::Type* indexType);
  // Bounds checks (EmitBounds.cpp): emits `access` (which returns the
  // access's result id, or 0) when op's index is in bounds of `buf`; with
  // EmitOptions::checkBounds off, just `access`. Out of bounds, the result
  // is a null of `resultType` and the bounds record keeps the first.
  template <class F>
  Id guardAccess(const ir::Op& op, const BufferRef& buf, Id resultType, F access);
  struct BoundsCheck {
    Id merge = 0, outOfBounds = 0;                 // labels
    Id site = 0, low = 0, high = 0, length = 0;    // u32 values for the record
  };
  BoundsCheck beginBoundsCheck(const ir::Op& op, Id length);
  Id bufferLength(const BufferRef& buf);  // u32
  // array.get/array.set: records a dynamic index out of bounds (the access
  // itself stays clamped).
  void checkArrayIndex(const ir::Op& op);
  Id endBoundsCheck(const BoundsCheck& c, Id resultType, Id result, Id resultLabel);

  EmitTuning tuning;

 private:
  Status checkDevice();
  Status declareInterface(std::vector<Val>& params);
  static void addControlEmitters(EmitTable& t);
  Status emitTerminator(const ir::Op& op);
  Status emitIf(const ir::Op& op);
  Status emitFor(const ir::Op& op);
  Status emitWhile(const ir::Op& op);
  Status emitMatch(const ir::Op& op);
  Status emitCall(const ir::Op& op);
  Status phiResults(const ir::Op& op, const std::vector<std::vector<Val>>& incoming,
                    const std::vector<Id>& labels);
  Id builtinVariable(spv::BuiltIn which, bool vector);

  std::vector<std::unordered_map<const ir::Value*, Val>> frames_;
  std::deque<BufferRef> buffers_;
  std::map<std::pair<const BufferRef*, unsigned>, Id> vectorViews_;  // vectorView's variables
  std::map<spv::BuiltIn, Id> builtins_;
  std::vector<Id> interface_;  // global variables, for OpEntryPoint
  std::set<std::pair<const ir::Type*, ir::Space>> bitsFloats_;
  std::unordered_map<const ir::Type*, Id> valueTypes_, memoryTypes_;
  unsigned inlineDepth_ = 0;
  bool barrierOrdersDeviceMemory_ = true;
  Id boundsRecord_ = 0;  // the bounds record's variable, declared on first use
  Id boundsRecordVar();
};

template <class F>
Id Emitter::guardAccess(const ir::Op& op, const BufferRef& buf, Id resultType, F access) {
  if (!options.checkBounds) return access();
  BoundsCheck c = beginBoundsCheck(op, bufferLength(buf));
  Id r = access();
  return endBoundsCheck(c, resultType, r, b.currentLabel());
}

template <class F>
Id Emitter::perElement(const ir::Type* t, Id x, F f) {
  if (!t->isVector()) return f(x);
  Id et = valueType(t->elem());
  std::vector<uint32_t> parts;
  for (unsigned i = 0; i < t->count(); ++i)
    parts.push_back(f(b.op(spv::Op::OpCompositeExtract, et, {x, i})));
  return b.op(spv::Op::OpCompositeConstruct, valueType(t), parts);
}

template <class F>
Id Emitter::perElement2(const ir::Type* t, Id x, Id y, F f) {
  if (!t->isVector()) return f(x, y);
  Id et = valueType(t->elem());
  std::vector<uint32_t> parts;
  for (unsigned i = 0; i < t->count(); ++i)
    parts.push_back(f(b.op(spv::Op::OpCompositeExtract, et, {x, i}),
                      b.op(spv::Op::OpCompositeExtract, et, {y, i})));
  return b.op(spv::Op::OpCompositeConstruct, valueType(t), parts);
}

}  // namespace eph::spirv
