#include "ir/interp/Subgroup.h"

#include <cmath>
#include <limits>

#include "ir/OpTable.h"
#include "ir/interp/Scalar.h"

namespace eph::interp {
namespace {

// The identity of `k` for values of type t: what an exclusive scan gives lane 0.
RtValue identity(BinaryKind k, const ir::Type* t) {
  bool isMin = k == BinaryKind::Min;
  if (k == BinaryKind::Add) return t->isFloat() ? RtValue::ofFloat(t, 0.0) : RtValue::ofInt(t, 0);
  if (t->isFloat()) return RtValue::ofFloat(t, isMin ? INFINITY : -INFINITY);
  if (!t->isSigned()) return RtValue::ofInt(t, isMin ? -1 : 0);  // all ones: the largest unsigned value
  int64_t hi = t->bits() == 64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  int64_t lo = t->bits() == 64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  return RtValue::ofInt(t, isMin ? hi : lo);
}

RtValue combine(BinaryKind k, const RtValue& a, const RtValue& b) {
  RtValue out;
  std::string error;  // add, min and max never trap
  binaryScalar(k, a, b, out, error);
  return out;
}

}  // namespace

std::string subgroupResults(const ir::Op& op, uint32_t subgroupSize,
                            const std::vector<const std::vector<RtValue>*>& ins, std::vector<RtValue>& outs,
                            size_t& badLane) {
  using ir::OpId;
  size_t n = ins.size();
  outs.assign(n, RtValue{});
  const ir::Type* t = op.result(0)->type();
  if (op.is(OpId::SubgroupBroadcast) || op.is(OpId::SubgroupShuffle)) {
    bool broadcast = op.is(OpId::SubgroupBroadcast);
    for (size_t j = 0; j < n; ++j) {
      int64_t lane = (*ins[j])[1].i;
      badLane = j;
      if (broadcast && lane != (*ins[0])[1].i)
        return "the lane must be the same for the whole subgroup: lane 0 reads lane " +
               std::to_string((*ins[0])[1].i) + ", lane " + std::to_string(j) + " reads lane " +
               std::to_string(lane);
      if (lane < 0 || uint64_t(lane) >= n)
        return "lane " + std::to_string(lane) + " is not in the subgroup (" + std::to_string(n) +
               " invocations" + (n < subgroupSize ? ", a partial subgroup of size " : ", subgroup size ") +
               (n < subgroupSize ? std::to_string(n) : std::to_string(subgroupSize)) + ")";
      outs[j] = (*ins[size_t(lane)])[0];
    }
    return {};
  }
  BinaryKind k = BinaryKind::Add;
  bool reduce = false, exclusive = false;
  switch (op.id()) {
    case OpId::SubgroupReduceAdd: reduce = true; break;
    case OpId::SubgroupReduceMin: reduce = true; k = BinaryKind::Min; break;
    case OpId::SubgroupReduceMax: reduce = true; k = BinaryKind::Max; break;
    case OpId::SubgroupScanAdd: break;
    case OpId::SubgroupScanMin: k = BinaryKind::Min; break;
    case OpId::SubgroupScanMax: k = BinaryKind::Max; break;
    case OpId::SubgroupExscanAdd: exclusive = true; break;
    case OpId::SubgroupExscanMin: exclusive = true; k = BinaryKind::Min; break;
    case OpId::SubgroupExscanMax: exclusive = true; k = BinaryKind::Max; break;
    default: badLane = 0; return "'" + std::string(op.name()) + "' is not a subgroup collective";
  }
  // Lanes combine in order (floating-point sums on devices may associate differently).
  RtValue acc = identity(k, t);
  for (size_t j = 0; j < n; ++j) {
    RtValue next = combine(k, acc, (*ins[j])[0]);
    outs[j] = exclusive ? acc : next;
    acc = std::move(next);
  }
  if (reduce)
    for (RtValue& o : outs) o = acc;
  return {};
}

}  // namespace eph::interp
