// The SPIR-V target: turns one kernel (and the device functions it calls)
// into a SPIR-V module for Vulkan's GLCompute, straight from the IR, and
// validates it in-process with spirv-tools before any driver sees it.
//
// The kernel ABI (what the Vulkan runtime binds; both sides must agree):
// - Entry point: the kernel's name, GLCompute, LocalSize = its workgroup size.
// - Buffer parameter i: descriptor set 0, binding Function::bindingOf(i), a
//   StorageBuffer whose Block struct holds one runtime array of the element
//   type with ArrayStride = ir::storageStride(elem); member offsets follow
//   ir/Layout.h. `read` borrows are NonWritable. buffer.len is OpArrayLength,
//   so the runtime binds exactly count * stride bytes.
// - Scalar parameters, in order: one push-constant Block struct whose members
//   are at ir::fieldOffset of the struct of their types (bool as u32).
// - Workgroup memory: Workgroup-storage variables, one per workgroup.alloc.
// - With EmitOptions::checkBounds, one more StorageBuffer at binding
//   boundsRecordBinding(kernel): the bounds record (below).
// - Capabilities and extensions are derived from what was emitted; float
//   atomic add is native when DeviceCaps says so, else a compare-exchange
//   loop; float64 transcendentals SPIR-V lacks are lowered by us.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/DeviceCaps.h"
#include "ir/IR.h"
#include "ir/OpId.h"

namespace eph::spirv {

// Bounds checks (`ephc run --check-bounds` on vulkan): every load, store and
// atomic checks its index against the buffer's length; one out of bounds is
// skipped (a load or an atomic gives 0), and the first of a dispatch (a
// compare-exchange on word 0) fills the bounds record, kBoundsRecordWords
// u32 words: the site (1 + its index in EmitOptions::sites; 0: none yet), the
// index's low and high 32 bits (sign- or zero-extended to 64), the length and
// the invocation's global id x, y, z.
constexpr uint32_t kBoundsRecordWords = 8;
struct EmitOptions {
  bool checkBounds = false;
  // Where the checked ops are numbered; several kernels can share one list
  // (and so one record). Null: a list of the kernel's own.
  std::vector<const ir::Op*>* sites = nullptr;
};

// The binding of the bounds record: one past the kernel's buffer parameters.
uint32_t boundsRecordBinding(const ir::Function& kernel);

// The module for `kernel`, validated for caps.vulkanApiVersion (1.3 when 0).
// An error means the kernel cannot run on this device (it names the missing
// capability) or, for a validation failure, an internal compiler error naming
// the kernel.
Expected<std::vector<uint32_t>> emitKernel(const ir::Function& kernel, const DeviceCaps& caps,
                                           const EmitOptions& options = {});

// What emitKernel's output depends on besides the kernel's text
// (ir::kernelText): the DeviceCaps fields it reads (features that pick what
// is emitted, such as native float atomics, subgroup ops, cooperative matrix
// shapes, the storage-buffer offset alignment and the Vulkan version; and the
// limits it checks), not those it does not (the device's name, driver,
// memory), and EmitOptions::checkBounds. With checkBounds the site numbers
// depend on EmitOptions::sites too: a caller keeping the SPIR-V keeps their
// numbering (runtime/vulkan does). Keep it in step with what Emit*.cpp read.
std::string emitKey(const DeviceCaps& caps, const EmitOptions& options);

// Whether the SPIR-V target lowers a built-in op, marks it unsupported, or
// lacks an entry for it (Emitter.h's table; OpTableWalkTest checks it).
ir::Lowering lowersOp(ir::OpId id);

// Runs the spirv-tools validator for a Vulkan version (VK_MAKE_API_VERSION).
Status validate(std::span<const uint32_t> words, uint32_t vulkanApiVersion,
                const std::string& what);

// Whether this build's spirv-tools knows SPV_KHR_cooperative_matrix
// (Debian 12's 2023.1 does not: its modules then skip validation).
bool validatorKnowsCoopMatrixKhr();

// Human-readable assembly (spirv-dis style).
std::string disassemble(std::span<const uint32_t> words);

}  // namespace eph::spirv
