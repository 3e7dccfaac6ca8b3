// A Vulkan instance (with the validation layer and its messenger when asked)
// and what the runtime knows about each physical device: its capabilities as
// DeviceCaps, the queue family it computes on, and the features to enable.
// Internal to runtime/vulkan; the public API is VulkanDevice.h.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/DeviceCaps.h"
#include "runtime/vulkan/CoopMatrix2.h"
#include "runtime/vulkan/VulkanApi.h"

namespace eph::runtime::vk {

class Instance {
 public:
  // Loads the loader, creates the instance (Vulkan 1.3 where the loader has
  // it). With `validation`, VK_LAYER_KHRONOS_validation (synchronization
  // checks on) reports every message to messages().
  static Expected<std::unique_ptr<Instance>> create(bool validation);
  ~Instance();
  Instance(const Instance&) = delete;
  Instance& operator=(const Instance&) = delete;

  VkInstance handle() const { return instance_; }
  uint32_t apiVersion() const { return apiVersion_; }
  bool validation() const { return messenger_ != VK_NULL_HANDLE; }

  // Validation messages received and not yet taken.
  std::vector<std::string> takeMessages();
  bool hasMessages();
  void addMessage(std::string m);

 private:
  Instance() = default;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  uint32_t apiVersion_ = 0;
  std::mutex mu_;
  std::vector<std::string> messages_;
};

// The feature structs queried from a device; passed as-is (robustness off) to
// vkCreateDevice, so every feature the device has is enabled.
struct FeatureChain {
  VkPhysicalDeviceFeatures2 base{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features v13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceShaderAtomicFloatFeaturesEXT atomicFloat{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coopMatrix{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  CoopMatrixKhrFeatures coopKhr;   // workgroup-scope matrices: both
  CoopMatrix2Features coopMatrix2;
  // Vulkan 1.1 devices have no VkPhysicalDeviceVulkan11Features (a 1.2
  // struct); they report 16-bit storage here instead.
  VkPhysicalDevice16BitStorageFeatures storage16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  bool core11 = false;  // v11 is linked (Vulkan 1.2 and later)
  // Links the structs the device knows (by API version and extensions).
  void link(uint32_t apiVersion, bool hasAtomicFloat, bool hasCoopMatrix, bool hasCoopMatrix2);
  bool storageBuffer16BitAccess() const {
    return core11 ? v11.storageBuffer16BitAccess : storage16.storageBuffer16BitAccess;
  }
};

struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  int index = 0;
  std::string type;  // "discrete GPU", ...
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceMemoryProperties memory{};
  DeviceCaps caps;
  uint32_t queueFamily = 0;
  uint32_t timestampValidBits = 0;
  // A second queue for uploads: a transfer-only family (a GPU's copy
  // engines), else queue 1 of the compute family when it has two; absent
  // (transferQueueIndex < 0) otherwise.
  uint32_t transferFamily = 0;
  int transferQueueIndex = -1;
  uint32_t transferTimestampBits = 0;
  uint32_t maxStorageBuffersPerStage = 0;
  // Which limit sets caps.maxBufferBytes: "maxStorageBufferRange",
  // "maxMemoryAllocationSize" or "the largest device-local memory heap".
  std::string maxBufferLimit;
  bool hasAtomicFloat = false;  // VK_EXT_shader_atomic_float
  bool hasCoopMatrix = false;   // VK_NV_cooperative_matrix
  // VK_KHR_cooperative_matrix and VK_NV_cooperative_matrix2 with workgroup
  // scope and flexible dimensions (CoopMatrix2.h)
  bool hasCoopMatrix2 = false;
  bool hasExecutableProperties = false;  // VK_KHR_pipeline_executable_properties
  std::unique_ptr<FeatureChain> features;
};

// Every physical device of `inst`, with capabilities filled in. An error when
// there is none.
Expected<std::vector<PhysicalDevice>> enumerateDevices(Instance& inst);

}  // namespace eph::runtime::vk
