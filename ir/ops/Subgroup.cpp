// Subgroup collectives: reductions, inclusive and exclusive scans, broadcast
// and shuffle among the invocations of one subgroup (docs/ir.md, "Subgroup
// collectives").
//
// A collective is a workgroup-level synchronisation point like `barrier`
// (it carries kBarrier): every invocation of the workgroup must reach the
// same collective together, so control flow around it must be uniform across
// the workgroup. The interpreter and the cpu target report divergence as an
// error; on Vulkan it is undefined behaviour. The subgroups are the
// consecutive runs of `subgroup_size` invocations in linear local index order
// (the last one is partial when the workgroup size is not a multiple).
#include "ir/interp/Exec.h"
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

// i32/u32/i64/u64/f32/f64 scalars (what SPIR-V's GroupNonUniform arithmetic
// takes and every device with the width has).
bool collectiveType(const Type* t) {
  return (t->isInt() || t->isFloat()) && (t->bits() == 32 || t->bits() == 64);
}

std::string verifyArith(const Op& op) {
  if (!collectiveType(operandType(op, 0)))
    return "works on 32- or 64-bit integer or float scalars, not " + typeStr(operandType(op, 0));
  if (resultType(op) != operandType(op, 0))
    return "result must be " + typeStr(operandType(op, 0)) + ", got " + typeStr(resultType(op));
  return {};
}

std::string verifyLane(const Op& op) {
  if (auto e = verifyArith(op); !e.empty()) return e;
  const Type* lane = operandType(op, 1);
  if (!lane->isInt() || lane->bits() != 32) return "the lane must be a 32-bit integer, got " + typeStr(lane);
  return {};
}

bool interpCollective(interp::Exec& ex, const Op& op) {
  interp::RtValue out;
  if (!ex.subgroupCollective(op, out)) return false;
  return ex.setResult(op, std::move(out));
}

OpInfo collective(std::string_view name, int operands, std::string_view summary) {
  return {.name = name, .numOperands = operands, .numResults = 1, .flags = kKernelOnly | kBarrier,
          .verify = operands == 1 ? verifyArith : verifyLane, .interp = interpCollective, .summary = summary,
          .diffTest = operands == 1 ? "DifferentialSubgroup.ReductionsAndScansAgreeWithTheHost"
                                    : "DifferentialSubgroup.BroadcastAndShuffleAgreeWithTheHost"};
}

OpInfo kOps[] = {
    collective("subgroup.reduce_add", 1, "sum of %x over the subgroup"),
    collective("subgroup.reduce_min", 1, "minimum of %x over the subgroup"),
    collective("subgroup.reduce_max", 1, "maximum of %x over the subgroup"),
    collective("subgroup.scan_add", 1, "sum of %x over the lanes up to and including this one"),
    collective("subgroup.scan_min", 1, "minimum of %x over the lanes up to and including this one"),
    collective("subgroup.scan_max", 1, "maximum of %x over the lanes up to and including this one"),
    collective("subgroup.exscan_add", 1, "sum of %x over the lanes below this one (lane 0: 0)"),
    collective("subgroup.exscan_min", 1, "minimum of %x over the lanes below this one (lane 0: the largest value)"),
    collective("subgroup.exscan_max", 1, "maximum of %x over the lanes below this one (lane 0: the smallest value)"),
    collective("subgroup.broadcast", 2, "subgroup.broadcast %x, %lane: %x of lane %lane (the same for the whole subgroup)"),
    collective("subgroup.shuffle", 2, "subgroup.shuffle %x, %lane: %x of lane %lane (any lane per invocation)"),
};

}  // namespace

void registerSubgroupOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
