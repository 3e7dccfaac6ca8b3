#include "runtime/vulkan/BoundsRecord.h"

#include <cstring>

#include "ir/interp/OutOfBounds.h"
#include "targets/spirv/Spirv.h"

namespace eph::runtime::vk {

Status takeBoundsError(void* mapped, const std::vector<const ir::Op*>& sites) {
  uint32_t w[spirv::kBoundsRecordWords];
  std::memcpy(w, mapped, sizeof w);
  if (w[0] == 0) return Status::ok();
  std::memset(mapped, 0, sizeof w);
  if (w[0] > sites.size() || !sites[w[0] - 1])
    return Error{{}, "an access out of bounds in a kernel (bounds record site " + std::to_string(w[0]) +
                         " is unknown)"};
  uint64_t index = uint64_t(w[2]) << 32 | w[1];
  return interp::outOfBoundsError(*sites[w[0] - 1], index, w[3], {w[4], w[5], w[6]});
}

}  // namespace eph::runtime::vk
