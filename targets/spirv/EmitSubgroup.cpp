// Subgroup collectives (ir/ops/Subgroup.cpp) as GroupNonUniform instructions
// at Subgroup scope:
//
// - subgroup.reduce_*/scan_*/exscan_*: OpGroupNonUniform{I,F}Add,
//   {S,U,F}Min, {S,U,F}Max with GroupOperation Reduce, InclusiveScan or
//   ExclusiveScan (capability GroupNonUniformArithmetic);
// - subgroup.broadcast: OpGroupNonUniformBroadcast (GroupNonUniformBallot).
//   Before SPIR-V 1.5 its lane must be a constant, so a broadcast from a
//   computed lane is emitted as a shuffle (the same result: the IR requires
//   the lane to be the same for the whole subgroup);
// - subgroup.shuffle: OpGroupNonUniformShuffle (GroupNonUniformShuffle).
//
// checkDevice rejects a kernel whose device lacks the feature an op needs
// (DeviceCaps::subgroupArithmetic, subgroupBroadcast, subgroupShuffle).
#include "ir/OpTable.h"
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
constexpr uint32_t kScopeSubgroup = 3;
enum GroupOperation : uint32_t { kReduce = 0, kInclusiveScan = 1, kExclusiveScan = 2 };

bool constantLane(const ir::Op& op) {
  const ir::Op* d = op.operand(1)->definingOp();
  return d && d->is(ir::OpId::Const);
}

bool broadcastAsShuffle(const ir::Op& op, uint32_t version) {
  return op.is(ir::OpId::SubgroupBroadcast) && version < kSpirv15 && !constantLane(op);
}
}  // namespace

std::string Emitter::missingSubgroupFeature(const ir::Op& op) const {
  using ir::OpId;
  // The subgroup collectives are the ops other than `barrier` that synchronise.
  if (!op.info().has(ir::kBarrier) || op.is(OpId::Barrier)) return "";
  if (op.is(OpId::SubgroupShuffle) || broadcastAsShuffle(op, b.version()))
    return caps.subgroupShuffle ? "" : "subgroup shuffle";
  if (op.is(OpId::SubgroupBroadcast)) return caps.subgroupBroadcast ? "" : "subgroup broadcast (ballot)";
  return caps.subgroupArithmetic ? "" : "subgroup arithmetic";
}

Status Emitter::emitSubgroup(const ir::Op& op) {
  using ir::OpId;
  const ir::Type* t = op.result(0)->type();
  Id T = valueType(t);
  Id scope = u32(kScopeSubgroup);
  Id x = id(op.operand(0));
  b.require(spv::Capability::GroupNonUniform);
  if (op.is(OpId::SubgroupBroadcast) || op.is(OpId::SubgroupShuffle)) {
    Id lane = id(op.operand(1));
    if (op.is(OpId::SubgroupShuffle) || broadcastAsShuffle(op, b.version())) {
      b.require(spv::Capability::GroupNonUniformShuffle);
      setId(op.result(0), b.op(Op::OpGroupNonUniformShuffle, T, {scope, x, lane}));
    } else {
      b.require(spv::Capability::GroupNonUniformBallot);
      setId(op.result(0), b.op(Op::OpGroupNonUniformBroadcast, T, {scope, x, lane}));
    }
    return Status::ok();
  }
  enum { Add, Min, Max } kind = Add;
  uint32_t group = kReduce;
  switch (op.id()) {
    case OpId::SubgroupReduceAdd: break;
    case OpId::SubgroupReduceMin: kind = Min; break;
    case OpId::SubgroupReduceMax: kind = Max; break;
    case OpId::SubgroupScanAdd: group = kInclusiveScan; break;
    case OpId::SubgroupScanMin: group = kInclusiveScan; kind = Min; break;
    case OpId::SubgroupScanMax: group = kInclusiveScan; kind = Max; break;
    case OpId::SubgroupExscanAdd: group = kExclusiveScan; break;
    case OpId::SubgroupExscanMin: group = kExclusiveScan; kind = Min; break;
    case OpId::SubgroupExscanMax: group = kExclusiveScan; kind = Max; break;
    default: return error(op, "not a subgroup collective");
  }
  bool f = t->isFloat(), s = t->isSigned();
  Op which = kind == Add ? (f ? Op::OpGroupNonUniformFAdd : Op::OpGroupNonUniformIAdd)
             : kind == Min ? (f ? Op::OpGroupNonUniformFMin : s ? Op::OpGroupNonUniformSMin : Op::OpGroupNonUniformUMin)
                           : (f ? Op::OpGroupNonUniformFMax : s ? Op::OpGroupNonUniformSMax : Op::OpGroupNonUniformUMax);
  b.require(spv::Capability::GroupNonUniformArithmetic);
  setId(op.result(0), b.op(which, T, {scope, group, x}));
  return Status::ok();
}

void Emitter::addSubgroupEmitters(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {SubgroupReduceAdd, SubgroupReduceMin, SubgroupReduceMax, SubgroupScanAdd, SubgroupScanMin,
                     SubgroupScanMax, SubgroupExscanAdd, SubgroupExscanMin, SubgroupExscanMax, SubgroupBroadcast,
                     SubgroupShuffle})
    t[n] = &Emitter::emitSubgroup;
}

}  // namespace eph::spirv
