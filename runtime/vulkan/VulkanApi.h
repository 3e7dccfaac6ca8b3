// The Vulkan entry points the runtime uses, loaded at run time from the
// system's loader (libvulkan.so.1) with dlopen. Nothing links against the
// loader, so ephc starts on a machine without Vulkan and `--target=vulkan`
// there is a clear error ("no Vulkan loader"), never a failed start.
//
// EPH_VULKAN_LOADER names another loader library (tests point it at a file
// that does not exist to check that error).
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

#include "ir/Diagnostics.h"

namespace eph::runtime::vk {

// Functions that need no instance.
#define EPH_VK_GLOBAL_FUNCTIONS(X)       \
  X(vkCreateInstance)                    \
  X(vkEnumerateInstanceVersion)          \
  X(vkEnumerateInstanceLayerProperties)  \
  X(vkEnumerateInstanceExtensionProperties)

// Functions loaded through an instance.
#define EPH_VK_INSTANCE_FUNCTIONS(X)          \
  X(vkDestroyInstance)                        \
  X(vkEnumeratePhysicalDevices)               \
  X(vkGetPhysicalDeviceProperties)            \
  X(vkGetPhysicalDeviceProperties2)           \
  X(vkGetPhysicalDeviceFeatures2)             \
  X(vkGetPhysicalDeviceMemoryProperties)      \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)     \
  X(vkCreateDevice)                           \
  X(vkGetDeviceProcAddr)

// Loaded only when VK_EXT_debug_utils is enabled (validation).
#define EPH_VK_DEBUG_FUNCTIONS(X)    \
  X(vkCreateDebugUtilsMessengerEXT) \
  X(vkDestroyDebugUtilsMessengerEXT)

// Device-level functions (loader trampolines, loaded through the instance).
#define EPH_VK_DEVICE_FUNCTIONS(X)  \
  X(vkDestroyDevice)                \
  X(vkGetDeviceQueue)               \
  X(vkDeviceWaitIdle)               \
  X(vkCreateBuffer)                 \
  X(vkDestroyBuffer)                \
  X(vkGetBufferMemoryRequirements)  \
  X(vkAllocateMemory)               \
  X(vkFreeMemory)                   \
  X(vkBindBufferMemory)             \
  X(vkMapMemory)                    \
  X(vkUnmapMemory)                  \
  X(vkCreateShaderModule)           \
  X(vkDestroyShaderModule)          \
  X(vkCreateDescriptorSetLayout)    \
  X(vkDestroyDescriptorSetLayout)   \
  X(vkCreatePipelineLayout)         \
  X(vkDestroyPipelineLayout)        \
  X(vkCreatePipelineCache)          \
  X(vkDestroyPipelineCache)         \
  X(vkGetPipelineCacheData)         \
  X(vkCreateComputePipelines)       \
  X(vkDestroyPipeline)              \
  X(vkCreateDescriptorPool)         \
  X(vkDestroyDescriptorPool)        \
  X(vkResetDescriptorPool)          \
  X(vkAllocateDescriptorSets)       \
  X(vkUpdateDescriptorSets)         \
  X(vkCreateCommandPool)            \
  X(vkDestroyCommandPool)           \
  X(vkAllocateCommandBuffers)       \
  X(vkResetCommandBuffer)           \
  X(vkBeginCommandBuffer)           \
  X(vkEndCommandBuffer)             \
  X(vkCmdBindPipeline)              \
  X(vkCmdBindDescriptorSets)        \
  X(vkCmdPushConstants)             \
  X(vkCmdDispatch)                  \
  X(vkCmdCopyBuffer)                \
  X(vkCmdPipelineBarrier)           \
  X(vkCmdWriteTimestamp)            \
  X(vkCmdResetQueryPool)            \
  X(vkCreateQueryPool)              \
  X(vkDestroyQueryPool)             \
  X(vkGetQueryPoolResults)          \
  X(vkCreateFence)                  \
  X(vkDestroyFence)                 \
  X(vkResetFences)                  \
  X(vkWaitForFences)                \
  X(vkGetFenceStatus)               \
  X(vkCreateSemaphore)              \
  X(vkDestroySemaphore)             \
  X(vkResetQueryPool)               \
  X(vkQueueSubmit)

struct Api {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define EPH_VK_DECLARE(name) PFN_##name name = nullptr;
  EPH_VK_GLOBAL_FUNCTIONS(EPH_VK_DECLARE)
  EPH_VK_INSTANCE_FUNCTIONS(EPH_VK_DECLARE)
  EPH_VK_DEBUG_FUNCTIONS(EPH_VK_DECLARE)
  EPH_VK_DEVICE_FUNCTIONS(EPH_VK_DECLARE)
#undef EPH_VK_DECLARE
};

// The process's one table of entry points. loadLoader() fills the global
// functions (once; later calls return the first outcome); loadInstance fills
// the rest through vkGetInstanceProcAddr, which hands out the loader's
// trampolines: they dispatch on the handle passed, so one table serves every
// instance and device of the process.
Api& api();
Status loadLoader();
Status loadInstance(VkInstance instance, bool debugUtils);

// Keeps every shared library now loaded (the driver and layers the loader
// opened) loaded for the life of the process: vkDestroyInstance would unload
// them, and loading them again for every instance costs time, has made the
// NVIDIA driver refuse new instances after a few dozen, and leaves leak
// reports (LeakSanitizer) pointing into unmapped code.
void pinLoadedLibraries();

// "VK_ERROR_OUT_OF_DEVICE_MEMORY", ...
const char* resultName(VkResult r);
// "what failed: VK_ERROR_..." as an Error (at `site`).
Error vkError(Loc site, const std::string& what, VkResult r);

}  // namespace eph::runtime::vk
