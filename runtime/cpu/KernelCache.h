// JIT-compiled modules, cached for the life of the process and keyed by the
// module itself (a hash of its printed text, with the text compared on a hit)
// and the lowering options. Running the same module again, from another
// CpuDevice or another parse of the same file, reuses the machine code.
#pragma once

#include <memory>

#include "ir/IR.h"
#include "targets/llvm/Llvm.h"

namespace eph::runtime {

// The compiled form of `m`, compiling it on the first request. Thread-safe.
// With opts.lowerHost, the host runtime calls (HostAbi.h) are bound.
Expected<std::shared_ptr<const llvmtarget::JitModule>> compiledModule(
    const ir::Module& m, const llvmtarget::LowerOptions& opts);

// Modules compiled so far in this process (for tests of the cache).
size_t compiledModuleCount();

}  // namespace eph::runtime
