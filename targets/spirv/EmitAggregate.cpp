// Vectors, structs, sums and arrays as SPIR-V composites.
//
// A sum<P0, P1, ...> value is a struct {u32 tag, P0, P1, ...}: sum.make fills
// its variant's member and zeroes the others, sum.tag reads member 0, and
// `match` (Emit.cpp) switches on the tag. Arrays are OpTypeArray values;
// array.get/array.set with a run-time index go through a Function-storage
// variable (SPIR-V has no dynamic OpCompositeExtract), with the index clamped
// to the array so an out-of-bounds index (an interpreter error) never touches
// memory outside it.
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
std::vector<uint32_t> idsOf(const Emitter& e, const ir::Op& op, unsigned from = 0) {
  std::vector<uint32_t> ids;
  for (unsigned i = from; i < op.numOperands(); ++i) ids.push_back(e.id(op.operand(i)));
  return ids;
}

// A compile-time index: the value of a `const` op, if that is what it is.
bool constantIndex(const ir::Value* v, uint64_t& out) {
  const ir::Op* def = v->definingOp();
  if (!def || !def->is(ir::OpId::Const)) return false;
  out = uint64_t(def->intAttr("value"));
  return true;
}
}  // namespace

Status Emitter::emitVecMake(const ir::Op& op) {
  setId(op.result(0), b.op(Op::OpCompositeConstruct, valueType(op.result(0)->type()), idsOf(*this, op)));
  return Status::ok();
}

Status Emitter::emitExtract(const ir::Op& op) {
  uint32_t index = uint32_t(op.intAttr("index"));
  setId(op.result(0), b.op(Op::OpCompositeExtract, valueType(op.result(0)->type()),
                           {id(op.operand(0)), index}));
  return Status::ok();
}

Status Emitter::emitInsert(const ir::Op& op) {
  uint32_t index = uint32_t(op.intAttr("index"));
  setId(op.result(0), b.op(Op::OpCompositeInsert, valueType(op.result(0)->type()),
                           {id(op.operand(1)), id(op.operand(0)), index}));
  return Status::ok();
}

Status Emitter::emitVecMath(const ir::Op& op) {
  Id T = valueType(op.result(0)->type());
  ir::OpId n = op.id();
  Id x = id(op.operand(0));
  Id r = 0;
  if (n == ir::OpId::Dot) r = b.op(Op::OpDot, T, {x, id(op.operand(1))});
  else if (n == ir::OpId::Cross) r = b.glslOp(GLSLstd450Cross, T, {x, id(op.operand(1))});
  else if (n == ir::OpId::Length) r = b.glslOp(GLSLstd450Length, T, {x});
  else r = b.glslOp(GLSLstd450Normalize, T, {x});
  setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitStructUnpack(const ir::Op& op) {
  Id s = id(op.operand(0));
  for (unsigned i = 0; i < op.numResults(); ++i)
    setId(op.result(i), b.op(Op::OpCompositeExtract, valueType(op.result(i)->type()), {s, i}));
  return Status::ok();
}

Status Emitter::emitSumMake(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  unsigned tag = unsigned(op.intAttr("tag"));
  std::vector<uint32_t> parts = {u32(tag)};
  for (unsigned k = 0; k < t->members().size(); ++k)
    parts.push_back(k == tag ? id(op.operand(0)) : b.constNull(valueType(t->members()[k])));
  setId(op.result(0), b.op(Op::OpCompositeConstruct, valueType(t), parts));
  return Status::ok();
}

Status Emitter::emitSumTag(const ir::Op& op) {
  const ir::Type* t = op.result(0)->type();
  Id tag = b.op(Op::OpCompositeExtract, u32T(), {id(op.operand(0)), 0});
  if (t->bits() != 32) tag = b.op(Op::OpUConvert, valueType(t), {tag});
  setId(op.result(0), tag);
  return Status::ok();
}

Id Emitter::indexToU32(Id index, const ir::Type* indexType) {
  if (indexType->bits() == 32) return index;
  return b.op(Op::OpUConvert, u32T(), {index});
}

namespace {
// A Function variable holding `array`, and a pointer to its (clamped) element.
Id arrayElementPointer(Emitter& e, const ir::Type* arrayType, Id array, const ir::Value* index,
                       Id& var) {
  ModuleBuilder& b = e.b;
  Id A = e.valueType(arrayType);
  var = b.functionVariable(b.typePointer(spv::StorageClass::Function, A));
  b.opVoid(Op::OpStore, {var, array});
  Id i = e.indexToU32(e.id(index), index->type());
  i = b.glslOp(GLSLstd450UMin, e.u32T(), {i, e.u32(arrayType->count() - 1)});
  return b.op(Op::OpAccessChain,
              b.typePointer(spv::StorageClass::Function, e.valueType(arrayType->elem())), {var, i});
}
}  // namespace

Status Emitter::emitArrayGet(const ir::Op& op) {
  const ir::Type* at = op.operand(0)->type();
  Id E = valueType(at->elem());
  uint64_t k = 0;
  if (constantIndex(op.operand(1), k) && k < at->count()) {
    setId(op.result(0), b.op(Op::OpCompositeExtract, E, {id(op.operand(0)), uint32_t(k)}));
    return Status::ok();
  }
  checkArrayIndex(op);
  Id var = 0;
  Id ptr = arrayElementPointer(*this, at, id(op.operand(0)), op.operand(1), var);
  setId(op.result(0), b.op(Op::OpLoad, E, {ptr}));
  return Status::ok();
}

Status Emitter::emitArraySet(const ir::Op& op) {
  const ir::Type* at = op.operand(0)->type();
  Id A = valueType(at);
  uint64_t k = 0;
  if (constantIndex(op.operand(1), k) && k < at->count()) {
    setId(op.result(0), b.op(Op::OpCompositeInsert, A,
                             {id(op.operand(2)), id(op.operand(0)), uint32_t(k)}));
    return Status::ok();
  }
  checkArrayIndex(op);
  Id var = 0;
  Id ptr = arrayElementPointer(*this, at, id(op.operand(0)), op.operand(1), var);
  b.opVoid(Op::OpStore, {ptr, id(op.operand(2))});
  setId(op.result(0), b.op(Op::OpLoad, A, {var}));
  return Status::ok();
}

void Emitter::addAggregateEmitters(EmitTable& t) {
  using enum ir::OpId;
  t[VecMake] = &Emitter::emitVecMake;
  t[StructMake] = &Emitter::emitVecMake;
  t[ArrayMake] = &Emitter::emitVecMake;
  t[VecExtract] = &Emitter::emitExtract;
  t[StructExtract] = &Emitter::emitExtract;
  t[VecInsert] = &Emitter::emitInsert;
  t[StructInsert] = &Emitter::emitInsert;
  for (ir::OpId n : {Dot, Cross, Length, Normalize}) t[n] = &Emitter::emitVecMath;
  t[StructUnpack] = &Emitter::emitStructUnpack;
  t[SumMake] = &Emitter::emitSumMake;
  t[SumTag] = &Emitter::emitSumTag;
  t[ArrayGet] = &Emitter::emitArrayGet;
  t[ArraySet] = &Emitter::emitArraySet;
}

}  // namespace eph::spirv
