// The CPU kernel ABI: how compiled kernels are called, shared by the LLVM
// target (which emits the functions) and the CPU runtime (which calls them).
// This header has no LLVM in it.
//
// A kernel @k becomes two C-callable functions:
//
//   void k(void* const* buffers, const uint64_t* lengths, const std::byte* params,
//          uint32_t wgx, uint32_t wgy, uint32_t wgz,     // this workgroup's id
//          uint32_t nwx, uint32_t nwy, uint32_t nwz,     // workgroups in the grid
//          std::byte* workgroupMemory, KernelStatus* status);
//   void k.range(buffers, lengths, params, nwx, nwy, nwz,
//                uint64_t begin, uint64_t end,           // linear workgroup ids, x fastest
//                workgroupMemory, status);
//
// `k` runs ONE workgroup: every invocation of it, in order, with the
// invocation loop split at barriers (targets/llvm/Lower.h says how).
// `k.range` runs workgroups begin..end-1 one after another; the runtime hands
// ranges to its threads.
//
// - buffers[b], lengths[b]: the base pointer and element count of the buffer
//   parameter with binding b (Function::bindingOf). Elements follow the
//   storage layout of ir/Layout.h at ir::storageStride(elem).
// - params: the non-buffer parameters, in order, each at its offset in
//   `paramBlockLayout` (the storage layout of a struct of their types), the
//   same bytes the SPIR-V target takes as push constants.
// - workgroupMemory: KernelInfo::workgroupBytes bytes of scratch, owned by the
//   calling thread; each workgroup.alloc is a slice of it (64-byte aligned).
// - status: traps are reported here, never by crashing. An out-of-bounds
//   access is skipped (a load gives 0), an integer division by zero divides
//   by 1, a `for` with step 0 runs no iterations; each sets the bit of its
//   trap site in trapMask. The first out-of-bounds access also leaves its
//   index, length and invocation in `oob`. A barrier reached under divergent control flow
//   stops the workgroup and stores 1 + the site of the diverging op in
//   `diverged`. The runtime turns both into the interpreter's errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::llvmtarget {

// Invocations per subgroup (the builtin subgroup_size), as in the interpreter.
constexpr uint32_t kSubgroupSize = 8;

// The first out-of-bounds access of a dispatch (buffers and arrays): what the
// error reports besides the op.
struct OutOfBounds {
  uint32_t site = 0;                 // 0, or 1 + the trap site of the access
  uint32_t globalId[3] = {};         // the invocation that made it
  uint64_t index = 0, length = 0;    // the index sign- or zero-extended to 64 bits
};

struct KernelStatus {
  uint64_t trapMask = 0;  // bit s: trap site s fired (s >= 63 all share bit 63)
  uint32_t diverged = 0;  // 0, or 1 + the trap site of the op where control flow diverged
  uint32_t reserved = 0;
  OutOfBounds oob;        // first come, first kept (a compare-exchange on oob.site)
};

// What compiled code accumulates while it runs one workgroup (a stack
// object; device functions get a pointer to it) before it reports into the
// KernelStatus: the trap bits and the workgroup's first out-of-bounds access.
struct TrapScratch {
  uint64_t trapMask = 0;
  OutOfBounds oob;
};

using WorkgroupFn = void (*)(void* const* buffers, const uint64_t* lengths, const std::byte* params,
                             uint32_t wgx, uint32_t wgy, uint32_t wgz, uint32_t nwx, uint32_t nwy,
                             uint32_t nwz, std::byte* workgroupMemory, KernelStatus* status);
using RangeFn = void (*)(void* const* buffers, const uint64_t* lengths, const std::byte* params,
                         uint32_t nwx, uint32_t nwy, uint32_t nwz, uint64_t begin, uint64_t end,
                         std::byte* workgroupMemory, KernelStatus* status);

// Byte offsets of a kernel's non-buffer parameters in the parameter block,
// and the block's size.
struct ParamBlockLayout {
  std::vector<size_t> offsets;  // one per parameter; buffers get SIZE_MAX
  size_t size = 0;
};
ParamBlockLayout paramBlockLayout(const ir::Function& kernel);

// Workgroup memory: each workgroup.alloc op's offset and the total.
struct WorkgroupLayout {
  std::vector<std::pair<const ir::Op*, size_t>> offsets;
  size_t bytes = 0;
};
WorkgroupLayout workgroupLayout(const ir::Function& kernel);

// The ops that can trap at run time, numbered in a fixed walk order over the
// kernels and device functions of a module: loads, stores, atomics, integer
// div and rem, `for` (step 0) and the control flow ops around barriers
// (divergence). The same module text always numbers them the same way, so
// a site number from compiled code can be mapped back to an op of any module
// with that text.
std::vector<const ir::Op*> trapSites(const ir::Module& m);
// The same for one kernel compiled alone (LowerOptions::kernels names just
// it and host code is not lowered): its ops, then those of the device
// functions it reaches, in module order. The numbering depends only on the
// text of the kernel and of those functions (runtime/cpu/KernelCache.h keys
// compiled kernels by that text).
std::vector<const ir::Op*> trapSites(const ir::Function& kernel);

// The interpreter-style error for a kernel's status (an empty Status when
// nothing trapped), at the trap site's location.
Status statusError(const ir::Module& m, const ir::Function& kernel, const KernelStatus& st);
// The same for a kernel compiled alone (trapSites(kernel)).
Status statusError(const ir::Function& kernel, const KernelStatus& st);
Status statusError(const std::vector<const ir::Op*>& sites, const ir::Function& kernel, const KernelStatus& st);

}  // namespace eph::llvmtarget
