// Bounds checks (EmitOptions::checkBounds): each buffer access becomes
//
//   inb = index < length (and index >= 0 for a signed index)
//   OpSelectionMerge %merge; OpBranchConditional inb, %access, %oob
//   %access: the load, store or atomic; br %merge
//   %oob:    old = OpAtomicCompareExchange(record[0], site, 0)
//            if old == 0: record[1..6] = index low, index high, length, global id
//            br %merge
//   %merge:  result = phi(access result, null)
//
// array.get and array.set with a dynamic index keep their clamped access and
// only record an index out of bounds.
//
// The record is a StorageBuffer Block {u32[]} at boundsRecordBinding(kernel);
// the runtime zeroes it and reads it after the work (Spirv.h).
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
constexpr uint32_t kScopeDevice = 1;
}  // namespace

uint32_t boundsRecordBinding(const ir::Function& kernel) {
  int last = -1;
  for (unsigned i = 0; i < kernel.paramTypes().size(); ++i)
    if (kernel.paramTypes()[i]->isBuffer()) last = std::max(last, kernel.bindingOf(i));
  return uint32_t(last + 1);
}

Id Emitter::boundsRecordVar() {
  if (boundsRecord_) return boundsRecord_;
  uint32_t binding = boundsRecordBinding(kernel);
  Id block = b.typeBlockStruct({b.typeRuntimeArray(u32T(), 4)}, {0}, binding);
  auto sc = spv::StorageClass::StorageBuffer;
  boundsRecord_ = b.globalVariable(b.typePointer(sc, block), sc);
  b.decorate(boundsRecord_, spv::Decoration::DescriptorSet, {0});
  b.decorate(boundsRecord_, spv::Decoration::Binding, {binding});
  b.addName(boundsRecord_, "bounds_record");
  interface_.push_back(boundsRecord_);
  return boundsRecord_;
}

Id Emitter::bufferLength(const BufferRef& buf) {
  return buf.sc == spv::StorageClass::StorageBuffer ? b.op(Op::OpArrayLength, u32T(), {buf.var, 0}) : u32(buf.length);
}

void Emitter::checkArrayIndex(const ir::Op& op) {
  if (!options.checkBounds) return;
  BoundsCheck c = beginBoundsCheck(op, u32(uint32_t(op.operand(0)->type()->count())));
  endBoundsCheck(c, 0, 0, 0);
}

Emitter::BoundsCheck Emitter::beginBoundsCheck(const ir::Op& op, Id length) {
  BoundsCheck c;
  options.sites->push_back(&op);
  c.site = u32(uint32_t(options.sites->size()));
  const ir::Type* it = op.operand(1)->type();
  Id index = id(op.operand(1));
  c.length = length;
  Id inb = 0;
  if (it->bits() == 64) {
    // A negative signed index is a huge unsigned one: out of bounds too.
    Id u64 = b.typeInt(64, false);
    inb = b.op(Op::OpULessThan, boolT(), {index, b.op(Op::OpUConvert, u64, {c.length})});
    c.low = b.op(Op::OpUConvert, u32T(), {index});
    c.high = b.op(Op::OpUConvert, u32T(), {b.op(Op::OpShiftRightLogical, u64, {index, u32(32)})});
  } else {
    Id i32 = it->bits() == 32 ? index : b.op(it->isSigned() ? Op::OpSConvert : Op::OpUConvert, u32T(), {index});
    inb = b.op(Op::OpULessThan, boolT(), {i32, c.length});
    if (it->isSigned()) {
      inb = b.op(Op::OpLogicalAnd, boolT(), {inb, b.op(Op::OpSGreaterThanEqual, boolT(), {i32, u32(0)})});
      c.high = b.op(Op::OpShiftRightArithmetic, u32T(), {i32, u32(31)});
    } else {
      c.high = u32(0);
    }
    c.low = i32;
  }
  Id access = b.newId();
  c.merge = b.newId();
  c.outOfBounds = b.newId();
  b.opVoid(Op::OpSelectionMerge, {c.merge, 0});
  b.opVoid(Op::OpBranchConditional, {inb, access, c.outOfBounds});
  b.label(access);
  return c;
}

Id Emitter::endBoundsCheck(const BoundsCheck& c, Id resultType, Id result, Id resultLabel) {
  b.opVoid(Op::OpBranch, {c.merge});
  b.label(c.outOfBounds);
  Id record = boundsRecordVar();
  auto sc = spv::StorageClass::StorageBuffer;
  Id ptrT = b.typePointer(sc, u32T());
  auto word = [&](uint32_t i) { return b.op(Op::OpAccessChain, ptrT, {record, u32(0), u32(i)}); };
  Id relaxed = u32(0);
  Id old = b.op(Op::OpAtomicCompareExchange, u32T(),
                {word(0), u32(kScopeDevice), relaxed, relaxed, c.site, u32(0)});
  Id first = b.newId(), kept = b.newId();
  Id won = b.op(Op::OpIEqual, boolT(), {old, u32(0)});
  b.opVoid(Op::OpSelectionMerge, {kept, 0});
  b.opVoid(Op::OpBranchConditional, {won, first, kept});
  b.label(first);
  Id gid = b.op(Op::OpLoad, b.typeVector(u32T(), 3), {builtinVariable(spv::BuiltIn::GlobalInvocationId, true)});
  std::vector<Id> words = {c.low, c.high, c.length};
  for (uint32_t d = 0; d < 3; ++d) words.push_back(b.op(Op::OpCompositeExtract, u32T(), {gid, d}));
  for (uint32_t i = 0; i < words.size(); ++i) b.opVoid(Op::OpStore, {word(i + 1), words[i]});
  b.opVoid(Op::OpBranch, {kept});
  b.label(kept);
  Id oobEnd = b.currentLabel();
  b.opVoid(Op::OpBranch, {c.merge});
  b.label(c.merge);
  if (!resultType) return 0;
  return b.op(Op::OpPhi, resultType, {result, resultLabel, b.constNull(resultType), oobEnd});
}

}  // namespace eph::spirv
