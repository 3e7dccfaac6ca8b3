// Which spirv-tools environment and SPIR-V version serve a Vulkan version:
// Vulkan 1.1 -> SPIR-V 1.3, 1.2 -> 1.5, 1.3 and later (or 0, unknown) -> 1.6.
#pragma once

#include <cstdint>

#include <spirv-tools/libspirv.h>

namespace eph::spirv {

spv_target_env targetEnv(uint32_t vulkanApiVersion);
uint32_t spirvVersionFor(uint32_t vulkanApiVersion);

}  // namespace eph::spirv
