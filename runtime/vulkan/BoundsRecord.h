// Bounds checks on the vulkan target (VulkanOptions::checkBounds): the
// kernels check every access (targets/spirv, EmitOptions::checkBounds) and
// the first out-of-bounds one of a submission fills a small host-visible
// buffer, the bounds record, that every checked dispatch binds after its
// buffers. After the submission the device reads it back here: the error is
// the interpreter's (interp::outOfBoundsError), at the op that made the
// access, and the record is cleared for the next submission.
#pragma once

#include <vector>

#include "ir/IR.h"

namespace eph::runtime::vk {

// The error the record at `mapped` (spirv::kBoundsRecordWords u32 words)
// holds, clearing it; ok when it holds none. `sites` numbers the checked
// ops as the emitter did (site s is sites[s - 1]; null: a kernel of a
// module no longer prepared).
Status takeBoundsError(void* mapped, const std::vector<const ir::Op*>& sites);

}  // namespace eph::runtime::vk
