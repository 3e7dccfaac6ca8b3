// The vectorize pass's kernel rewrite on its own (passes/Vectorize.cpp says
// which kernels qualify and what the result computes), for launchers that
// dispatch a kernel directly: the result covers elements 4q .. 4q+3 in
// invocation q of x, so a grid of n elements in x takes n / 4 + 1
// invocations; its hidden grid arguments stay the element grid.
#pragma once

#include "ir/IR.h"

namespace eph::passes {

// Adds K.x4 to `m` and returns it, or null when `k` does not qualify.
ir::Function* vectorizeKernel(ir::Module& m, const ir::Function& k);

}  // namespace eph::passes
