// VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2, for headers that
// predate them (Debian 12's Vulkan 1.3.239 knows only VK_NV_cooperative_matrix):
// the structs and values as Vulkan-Headers' vulkan_core.h defines them
// (extensions 507 and 594). Workgroup-scope cooperative matrices
// (ir/ops/CoopMatrix.cpp) need both.
#pragma once

#include "runtime/vulkan/VulkanApi.h"

namespace eph::runtime::vk {

inline constexpr const char* kCoopMatrixKhrExtension = "VK_KHR_cooperative_matrix";
inline constexpr const char* kCoopMatrix2Extension = "VK_NV_cooperative_matrix2";
inline constexpr VkStructureType kCoopMatrixKhrFeaturesType = VkStructureType(1000506000);
inline constexpr VkStructureType kCoopMatrix2FeaturesType = VkStructureType(1000593000);
inline constexpr VkStructureType kFlexibleDimensionsPropertiesType = VkStructureType(1000593001);
inline constexpr VkStructureType kCoopMatrix2PropertiesType = VkStructureType(1000593002);
inline constexpr uint32_t kScopeWorkgroup = 2;  // VkScopeKHR

struct CoopMatrixKhrFeatures {  // VkPhysicalDeviceCooperativeMatrixFeaturesKHR
  VkStructureType sType = kCoopMatrixKhrFeaturesType;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};

struct CoopMatrix2Features {  // VkPhysicalDeviceCooperativeMatrix2FeaturesNV
  VkStructureType sType = kCoopMatrix2FeaturesType;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};

struct FlexibleDimensionsProperties {  // VkCooperativeMatrixFlexibleDimensionsPropertiesNV
  VkStructureType sType = kFlexibleDimensionsPropertiesType;
  void* pNext = nullptr;
  uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;  // VkComponentTypeKHR: 0 f16, 1 f32
  VkBool32 saturatingAccumulation = VK_FALSE;
  uint32_t scope = 0;  // VkScopeKHR
  uint32_t workgroupInvocations = 0;
};

struct CoopMatrix2Properties {  // VkPhysicalDeviceCooperativeMatrix2PropertiesNV
  VkStructureType sType = kCoopMatrix2PropertiesType;
  void* pNext = nullptr;
  uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
  uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension = 0;
  uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
};

using GetFlexibleDimensionsProperties = VkResult(VKAPI_PTR*)(VkPhysicalDevice, uint32_t*,
                                                             FlexibleDimensionsProperties*);

}  // namespace eph::runtime::vk
