#include "runtime/vulkan/VulkanInstance.h"

#include <algorithm>
#include <cstring>

namespace eph::runtime::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

VKAPI_ATTR VkBool32 VKAPI_CALL onDebugMessage(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                              VkDebugUtilsMessageTypeFlagsEXT,
                                              const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  std::string text = data && data->pMessage ? data->pMessage : "(no message)";
  if (data && data->pMessageIdName) text = std::string(data->pMessageIdName) + ": " + text;
  static_cast<Instance*>(user)->addMessage(std::move(text));
  return VK_FALSE;
}

bool hasLayer(const char* name) {
  uint32_t n = 0;
  if (api().vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  if (api().vkEnumerateInstanceLayerProperties(&n, layers.data()) != VK_SUCCESS) return false;
  for (auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

std::string deviceTypeName(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

std::string versionText(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

}  // namespace

void Instance::addMessage(std::string m) {
  std::lock_guard<std::mutex> lock(mu_);
  messages_.push_back(std::move(m));
}

bool Instance::hasMessages() {
  std::lock_guard<std::mutex> lock(mu_);
  return !messages_.empty();
}

std::vector<std::string> Instance::takeMessages() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(messages_, {});
}

Expected<std::unique_ptr<Instance>> Instance::create(bool validation) {
  if (Status s = loadLoader(); !s) return s.error();
  Api& a = api();
  std::unique_ptr<Instance> inst(new Instance());

  uint32_t loaderVersion = VK_API_VERSION_1_0;
  if (a.vkEnumerateInstanceVersion) a.vkEnumerateInstanceVersion(&loaderVersion);
  if (loaderVersion < VK_API_VERSION_1_1)
    return Error{{}, "Vulkan is not available: the loader supports Vulkan " + versionText(loaderVersion) +
                         "; ephc needs 1.1 or newer"};
  inst->apiVersion_ = std::min<uint32_t>(loaderVersion, VK_API_VERSION_1_3);

  std::vector<const char*> layers, extensions;
  if (validation) {
    if (!hasLayer(kValidationLayer))
      return Error{{}, std::string("validation was requested but the layer ") + kValidationLayer +
                           " is not installed (Debian: vulkan-validationlayers)"};
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
  }

  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "ephc";
  app.pEngineName = "ephc";
  app.apiVersion = inst->apiVersion_;

  // Messages during vkCreateInstance go to the same callback.
  VkDebugUtilsMessengerCreateInfoEXT messengerInfo{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messengerInfo.messageSeverity =
      VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messengerInfo.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messengerInfo.pfnUserCallback = onDebugMessage;
  messengerInfo.pUserData = inst.get();
  // Synchronization validation checks the barriers between dependent commands.
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = enables;
  features.pNext = &messengerInfo;

  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (validation) info.pNext = &features;
  VkResult r = a.vkCreateInstance(&info, nullptr, &inst->instance_);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return Error{{}, "Vulkan is not available: no Vulkan driver found (vkCreateInstance: "
                     "VK_ERROR_INCOMPATIBLE_DRIVER)"};
  if (r != VK_SUCCESS) return vkError({}, "Vulkan is not available: vkCreateInstance failed", r);
  pinLoadedLibraries();
  if (Status s = loadInstance(inst->instance_, validation); !s) return s.error();
  if (validation) {
    r = a.vkCreateDebugUtilsMessengerEXT(inst->instance_, &messengerInfo, nullptr, &inst->messenger_);
    if (r != VK_SUCCESS) return vkError({}, "vkCreateDebugUtilsMessengerEXT failed", r);
  }
  return inst;
}

Instance::~Instance() {
  if (messenger_) api().vkDestroyDebugUtilsMessengerEXT(instance_, messenger_, nullptr);
  if (instance_) api().vkDestroyInstance(instance_, nullptr);
}

void FeatureChain::link(uint32_t apiVersion, bool hasAtomicFloat, bool hasCoopMatrix, bool hasCoopMatrix2) {
  void** next = &base.pNext;
  auto append = [&](auto& s) {
    *next = &s;
    next = &s.pNext;
  };
  core11 = apiVersion >= VK_API_VERSION_1_2;
  if (core11) append(v11);
  else append(storage16);
  if (apiVersion >= VK_API_VERSION_1_2) append(v12);
  if (apiVersion >= VK_API_VERSION_1_3) append(v13);
  if (hasAtomicFloat) append(atomicFloat);
  if (hasCoopMatrix) append(coopMatrix);
  if (hasCoopMatrix2) {
    append(coopKhr);
    append(coopMatrix2);
  }
  *next = nullptr;
}

namespace {

const char* componentName(VkComponentTypeNV t) {
  switch (t) {
    case VK_COMPONENT_TYPE_FLOAT16_NV: return "f16";
    case VK_COMPONENT_TYPE_FLOAT32_NV: return "f32";
    case VK_COMPONENT_TYPE_FLOAT64_NV: return "f64";
    case VK_COMPONENT_TYPE_SINT8_NV: return "i8";
    case VK_COMPONENT_TYPE_SINT32_NV: return "i32";
    case VK_COMPONENT_TYPE_UINT8_NV: return "u8";
    case VK_COMPONENT_TYPE_UINT32_NV: return "u32";
    default: return nullptr;
  }
}

// The subgroup-scope shapes of VK_NV_cooperative_matrix, as DeviceCaps
// spells them ("16x16x16 f16 f32").
std::vector<std::string> coopMatrixShapes(Instance& inst, VkPhysicalDevice pd) {
  auto get = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      api().vkGetInstanceProcAddr(inst.handle(), "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  std::vector<std::string> shapes;
  uint32_t n = 0;
  if (!get || get(pd, &n, nullptr) != VK_SUCCESS) return shapes;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
  if (get(pd, &n, props.data()) != VK_SUCCESS) return shapes;
  for (const auto& p : props) {
    const char *a = componentName(p.AType), *c = componentName(p.CType);
    if (p.scope != VK_SCOPE_SUBGROUP_NV || !a || !c || p.AType != p.BType || p.CType != p.DType) continue;
    shapes.push_back(std::to_string(p.MSize) + "x" + std::to_string(p.NSize) + "x" + std::to_string(p.KSize) + " " + a +
                     " " + c);
  }
  return shapes;
}

// The workgroup-scope shapes of VK_NV_cooperative_matrix2's flexible
// dimensions, as DeviceCaps spells them ("32x32x16 f16 f32 256"), and its limits.
void workgroupMatrixShapes(Instance& inst, VkPhysicalDevice pd, DeviceCaps& c) {
  auto get = reinterpret_cast<GetFlexibleDimensionsProperties>(
      api().vkGetInstanceProcAddr(inst.handle(), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  uint32_t n = 0;
  if (!get || get(pd, &n, nullptr) != VK_SUCCESS) return;
  std::vector<FlexibleDimensionsProperties> props(n);
  if (get(pd, &n, props.data()) != VK_SUCCESS) return;
  auto name = [](uint32_t t) { return componentName(VkComponentTypeNV(t)); };
  for (const auto& p : props) {
    const char *a = name(p.AType), *cn = name(p.CType);
    if (p.scope != kScopeWorkgroup || p.saturatingAccumulation || !a || !cn || p.AType != p.BType ||
        p.CType != p.ResultType)
      continue;
    c.workgroupMatrixShapes.push_back(std::to_string(p.MGranularity) + "x" + std::to_string(p.NGranularity) + "x" +
                                      std::to_string(p.KGranularity) + " " + a + " " + cn + " " +
                                      std::to_string(p.workgroupInvocations));
  }
  CoopMatrix2Properties limits;
  VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props2.pNext = &limits;
  api().vkGetPhysicalDeviceProperties2(pd, &props2);
  c.workgroupMatrixMaxDimension = limits.cooperativeMatrixFlexibleDimensionsMaxDimension;
  c.workgroupMatrixMaxInvocations = limits.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
  c.workgroupMatrixReservedMemory = limits.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
}

}  // namespace

Expected<std::vector<PhysicalDevice>> enumerateDevices(Instance& inst) {
  Api& a = api();
  uint32_t n = 0;
  VkResult r = a.vkEnumeratePhysicalDevices(inst.handle(), &n, nullptr);
  if (r != VK_SUCCESS) return vkError({}, "vkEnumeratePhysicalDevices failed", r);
  if (n == 0) return Error{{}, "Vulkan is not available: no Vulkan device found"};
  std::vector<VkPhysicalDevice> handles(n);
  r = a.vkEnumeratePhysicalDevices(inst.handle(), &n, handles.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) return vkError({}, "vkEnumeratePhysicalDevices failed", r);
  handles.resize(n);

  std::vector<PhysicalDevice> out;
  for (uint32_t i = 0; i < n; ++i) {
    PhysicalDevice d;
    d.handle = handles[i];
    a.vkGetPhysicalDeviceProperties(d.handle, &d.props);
    a.vkGetPhysicalDeviceMemoryProperties(d.handle, &d.memory);
    d.type = deviceTypeName(d.props.deviceType);
    uint32_t api = std::min(d.props.apiVersion, inst.apiVersion());

    uint32_t extCount = 0;
    a.vkEnumerateDeviceExtensionProperties(d.handle, nullptr, &extCount, nullptr);
    std::vector<VkExtensionProperties> exts(extCount);
    bool hasKhr = false, hasNv2 = false;
    a.vkEnumerateDeviceExtensionProperties(d.handle, nullptr, &extCount, exts.data());
    for (auto& e : exts)
    {
      if (std::strcmp(e.extensionName, VK_EXT_SHADER_ATOMIC_FLOAT_EXTENSION_NAME) == 0) d.hasAtomicFloat = true;
      if (std::strcmp(e.extensionName, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME) == 0) d.hasCoopMatrix = true;
      if (std::strcmp(e.extensionName, kCoopMatrix2Extension) == 0) hasNv2 = true;
      if (std::strcmp(e.extensionName, kCoopMatrixKhrExtension) == 0) hasKhr = true;
      if (std::strcmp(e.extensionName, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME) == 0)
        d.hasExecutableProperties = true;
    }

    // Properties: subgroups, allocation limits, driver name.
    VkPhysicalDeviceProperties2 props2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties maint3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    props2.pNext = &subgroup;
    subgroup.pNext = &maint3;
    if (api >= VK_API_VERSION_1_2) maint3.pNext = &driver;
    a.vkGetPhysicalDeviceProperties2(d.handle, &props2);

    d.features = std::make_unique<FeatureChain>();
    FeatureChain& f = *d.features;
    d.hasCoopMatrix2 = hasKhr && hasNv2 && api >= VK_API_VERSION_1_3;
    f.link(api, d.hasAtomicFloat, d.hasCoopMatrix, d.hasCoopMatrix2);
    a.vkGetPhysicalDeviceFeatures2(d.handle, &f.base);
    bool relink = false;
    if (d.hasCoopMatrix && !f.coopMatrix.cooperativeMatrix) {  // the extension without the feature
      d.hasCoopMatrix = false;
      relink = true;
    }
    if (d.hasCoopMatrix2 && !(f.coopKhr.cooperativeMatrix && f.coopMatrix2.cooperativeMatrixWorkgroupScope &&
                              f.coopMatrix2.cooperativeMatrixFlexibleDimensions && f.v12.vulkanMemoryModel)) {
      d.hasCoopMatrix2 = false;
      relink = true;
    }
    if (relink) f.link(api, d.hasAtomicFloat, d.hasCoopMatrix, d.hasCoopMatrix2);

    uint32_t qn = 0;
    a.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &qn, nullptr);
    std::vector<VkQueueFamilyProperties> queues(qn);
    a.vkGetPhysicalDeviceQueueFamilyProperties(d.handle, &qn, queues.data());
    bool found = false;
    for (int pass = 0; pass < 2 && !found; ++pass)
      for (uint32_t q = 0; q < qn && !found; ++q)
        if ((queues[q].queueFlags & VK_QUEUE_COMPUTE_BIT) && (pass == 1 || queues[q].timestampValidBits > 0)) {
          d.queueFamily = q;
          d.timestampValidBits = queues[q].timestampValidBits;
          found = true;
        }
    if (!found) continue;  // no compute queue: not a device ephc can use
    for (uint32_t q = 0; q < qn && d.transferQueueIndex < 0; ++q)
      if ((queues[q].queueFlags & VK_QUEUE_TRANSFER_BIT) &&
          !(queues[q].queueFlags & (VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT)) && queues[q].queueCount > 0) {
        d.transferFamily = q;
        d.transferQueueIndex = 0;
        d.transferTimestampBits = queues[q].timestampValidBits;
      }
    if (d.transferQueueIndex < 0 && queues[d.queueFamily].queueCount > 1) {
      d.transferFamily = d.queueFamily;
      d.transferQueueIndex = 1;
      d.transferTimestampBits = d.timestampValidBits;
    }

    DeviceCaps& c = d.caps;
    const VkPhysicalDeviceLimits& lim = d.props.limits;
    c.name = d.props.deviceName;
    if (api >= VK_API_VERSION_1_2)
      c.driver = std::string(driver.driverName) + (driver.driverInfo[0] ? std::string(" ") + driver.driverInfo : "");
    else
      c.driver = "driver version " + std::to_string(d.props.driverVersion);
    c.isGpu = d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ||
              d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ||
              d.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU;
    c.subgroupSize = subgroup.subgroupSize;
    bool sgCompute = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    auto sgOp = [&](VkSubgroupFeatureFlags bit) { return sgCompute && (subgroup.supportedOperations & bit) != 0; };
    c.subgroupArithmetic = sgOp(VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    c.subgroupBroadcast = sgOp(VK_SUBGROUP_FEATURE_BALLOT_BIT);
    c.subgroupShuffle = sgOp(VK_SUBGROUP_FEATURE_SHUFFLE_BIT);
    bool v12 = api >= VK_API_VERSION_1_2;
    c.float64 = f.base.features.shaderFloat64;
    c.int64 = f.base.features.shaderInt64;
    c.int16 = f.base.features.shaderInt16 && f.storageBuffer16BitAccess();
    c.float16 = v12 && f.v12.shaderFloat16 && f.storageBuffer16BitAccess();
    c.int8 = v12 && f.v12.shaderInt8 && f.v12.storageBuffer8BitAccess;
    c.atomicInt64 = v12 && f.v12.shaderBufferInt64Atomics && f.v12.shaderSharedInt64Atomics;
    c.atomicFloat32Add =
        d.hasAtomicFloat && f.atomicFloat.shaderBufferFloat32AtomicAdd && f.atomicFloat.shaderSharedFloat32AtomicAdd;
    c.atomicFloat64Add =
        d.hasAtomicFloat && f.atomicFloat.shaderBufferFloat64AtomicAdd && f.atomicFloat.shaderSharedFloat64AtomicAdd;

    uint64_t largestHeap = 0;
    c.memoryBytes = 0;
    for (uint32_t h = 0; h < d.memory.memoryHeapCount; ++h)
      if (d.memory.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
        c.memoryBytes += d.memory.memoryHeaps[h].size;
        largestHeap = std::max<uint64_t>(largestHeap, d.memory.memoryHeaps[h].size);
      }
    // The largest buffer a kernel can bind, and which limit sets it (for
    // the error when a buffer is larger).
    c.maxBufferBytes = uint64_t(lim.maxStorageBufferRange);
    d.maxBufferLimit = "maxStorageBufferRange";
    if (uint64_t(maint3.maxMemoryAllocationSize) < c.maxBufferBytes) {
      c.maxBufferBytes = uint64_t(maint3.maxMemoryAllocationSize);
      d.maxBufferLimit = "maxMemoryAllocationSize";
    }
    if (largestHeap < c.maxBufferBytes) {
      c.maxBufferBytes = largestHeap;
      d.maxBufferLimit = "the largest device-local memory heap";
    }
    c.maxWorkgroupInvocations = lim.maxComputeWorkGroupInvocations;
    for (int k = 0; k < 3; ++k) {
      c.maxWorkgroupSize[k] = lim.maxComputeWorkGroupSize[k];
      c.maxWorkgroupCount[k] = lim.maxComputeWorkGroupCount[k];
    }
    c.maxWorkgroupMemoryBytes = lim.maxComputeSharedMemorySize;
    c.maxPushConstantBytes = lim.maxPushConstantsSize;
    c.storageBufferOffsetAlignment = lim.minStorageBufferOffsetAlignment;
    if (d.hasCoopMatrix) c.cooperativeMatrixShapes = coopMatrixShapes(inst, d.handle);
    if (d.hasCoopMatrix2) workgroupMatrixShapes(inst, d.handle, c);
    c.vulkanApiVersion = VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), 0);
    d.maxStorageBuffersPerStage = lim.maxPerStageDescriptorStorageBuffers;
    d.index = int(out.size());
    out.push_back(std::move(d));
  }
  if (out.empty()) return Error{{}, "Vulkan is not available: no Vulkan device with a compute queue found"};
  return out;
}

}  // namespace eph::runtime::vk
