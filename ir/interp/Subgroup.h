// The interpreter's semantics of the subgroup collectives (ir/ops/Subgroup.cpp).
// The workgroup scheduler (Dispatch.cpp) runs every invocation up to the
// collective like up to a barrier, then computes each subgroup's results here.
#pragma once

#include <string>
#include <vector>

#include "ir/interp/Interp.h"

namespace eph::interp {

// The results of collective `op` for one subgroup: ins[j] are the operands
// of its lane j (fewer than `subgroupSize` lanes in a partial subgroup).
// Returns an empty string, or what is wrong with `badLane` set to the lane
// at fault (a shuffle or broadcast from a lane that is not in the subgroup,
// a broadcast lane that differs between lanes).
std::string subgroupResults(const ir::Op& op, uint32_t subgroupSize,
                            const std::vector<const std::vector<RtValue>*>& ins, std::vector<RtValue>& outs,
                            size_t& badLane);

}  // namespace eph::interp
