// The verifier: checks that a module is well formed before and after every
// pass. It reports the first problem as an Error naming the op (or function)
// and its location.
//
// Checked: each op's operand/result/region counts and its typing rule (the
// OpInfo verify hook); dominance (every operand is defined earlier in the same
// region or an enclosing one); terminators (every region ends in exactly one,
// none appear elsewhere); function rules (kernels return nothing and have a
// positive workgroup size; host-only ops only in host functions; kernel-only
// ops only in kernels and device functions; calls from kernels and device
// functions reach only device functions; no recursion outside host code).
#pragma once

#include "ir/IR.h"

namespace eph::ir {

Status verify(const Module& m);

}  // namespace eph::ir
