// How a kernel (with every device function it calls, as the emitter inlines
// them) uses its device buffer parameters: which it reads, which it writes,
// and whether it uses atomics on one. The emitter derives from it the
// barrier's memory semantics: UniformMemory (device memory) is ordered
// by a barrier only when invocations may communicate through device memory
// across it, i.e. when some device buffer is both read and written, or used
// by an atomic (or a buffer access could not be traced to a parameter);
// otherwise a barrier orders workgroup memory alone, like GLSL's barrier().
// This assumes distinct buffer parameters of one dispatch do not alias when
// one of them is written (bench/RESULTS.md, issue #6).
#pragma once

#include <vector>

#include "ir/IR.h"

namespace eph::spirv {

struct BufferParamUse {
  bool read = false, written = false, atomic = false;
};

struct DeviceMemoryUse {
  std::vector<BufferParamUse> params;  // one per kernel parameter (unused for scalars)
  bool untraced = false;               // a device-buffer access not traced to a parameter
  // Whether a barrier must order device memory as well as workgroup memory.
  bool barrierNeedsDeviceMemory() const;
};

DeviceMemoryUse analyzeDeviceMemoryUse(const ir::Function& kernel);

}  // namespace eph::spirv
