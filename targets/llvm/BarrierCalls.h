// Barriers in called functions. The cpu target splits a kernel's invocation
// loop at the barriers it sees in the kernel's own body (Llvm.h), so before
// lowering it inlines every call, in a kernel, to a device function that
// holds a barrier (directly or through its calls), and the calls that
// inlining brings in, into a copy of the module. The user's module is not
// changed, and other targets never see the copy. This header has no LLVM in it.
#pragma once

#include <memory>
#include <optional>
#include <unordered_map>

#include "ir/IR.h"

namespace eph::llvmtarget {

struct BarrierInlined {
  std::unique_ptr<ir::Module> module;
  // For every op of `module`: the op of the original module it was copied
  // from (an inlined op: the op of the callee's body). Trap sites keep the
  // original's numbers this way (KernelAbi.h), so a trap in inlined code is
  // reported at the callee's op, as the interpreter reports it.
  std::unordered_map<const ir::Op*, const ir::Op*> origin;
};

// The copy with those calls inlined, or nullopt when no kernel makes one.
std::optional<BarrierInlined> inlineBarrierCalls(const ir::Module& m);

}  // namespace eph::llvmtarget
