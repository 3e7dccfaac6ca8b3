#include "runtime/vulkan/VulkanApi.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace eph::runtime::vk {

Api& api() {
  static Api table;
  return table;
}

Status loadLoader() {
  static std::once_flag once;
  static Status outcome;
  std::call_once(once, [] {
    const char* env = std::getenv("EPH_VULKAN_LOADER");
    std::string path = env && *env ? env : "libvulkan.so.1";
    // The handle stays open for the life of the process: drivers keep threads
    // and atexit handlers that must not outlive their code.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      outcome = Error{{}, "Vulkan is not available: cannot load the Vulkan loader '" + path + "'" +
                              (why ? std::string(" (") + why + ")" : std::string())};
      return;
    }
    auto gipa = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!gipa) {
      outcome = Error{{}, "Vulkan is not available: '" + path + "' has no vkGetInstanceProcAddr"};
      return;
    }
    Api& a = api();
    a.vkGetInstanceProcAddr = gipa;
#define EPH_VK_LOAD_GLOBAL(name) a.name = reinterpret_cast<PFN_##name>(gipa(nullptr, #name));
    EPH_VK_GLOBAL_FUNCTIONS(EPH_VK_LOAD_GLOBAL)
#undef EPH_VK_LOAD_GLOBAL
    if (!a.vkCreateInstance || !a.vkEnumerateInstanceExtensionProperties ||
        !a.vkEnumerateInstanceLayerProperties)
      outcome = Error{{}, "Vulkan is not available: the loader '" + path + "' lacks vkCreateInstance"};
  });
  return outcome;
}

Status loadInstance(VkInstance instance, bool debugUtils) {
  Api& a = api();
  std::string missing;
#define EPH_VK_LOAD(name)                                                         \
  a.name = reinterpret_cast<PFN_##name>(a.vkGetInstanceProcAddr(instance, #name)); \
  if (!a.name) missing += (missing.empty() ? "" : ", ") + std::string(#name);
  EPH_VK_INSTANCE_FUNCTIONS(EPH_VK_LOAD)
  EPH_VK_DEVICE_FUNCTIONS(EPH_VK_LOAD)
  if (debugUtils) {
    EPH_VK_DEBUG_FUNCTIONS(EPH_VK_LOAD)
  }
#undef EPH_VK_LOAD
  if (!missing.empty())
    return Error{{}, "the Vulkan loader lacks functions this runtime needs (Vulkan 1.1 or newer): " + missing};
  return Status::ok();
}

void pinLoadedLibraries() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) -> int {
        if (info->dlpi_name && info->dlpi_name[0])
          static_cast<std::vector<std::string>*>(out)->push_back(info->dlpi_name);
        return 0;
      },
      &names);
  // RTLD_NOLOAD: only libraries already loaded; RTLD_NODELETE: never unloaded.
  // The handles are kept on purpose (the libraries stay for the process).
  for (const std::string& n : names) dlopen(n.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

const char* resultName(VkResult r) {
  switch (r) {
#define EPH_VK_RESULT(x) \
  case x:                \
    return #x;
    EPH_VK_RESULT(VK_SUCCESS)
    EPH_VK_RESULT(VK_NOT_READY)
    EPH_VK_RESULT(VK_TIMEOUT)
    EPH_VK_RESULT(VK_INCOMPLETE)
    EPH_VK_RESULT(VK_ERROR_OUT_OF_HOST_MEMORY)
    EPH_VK_RESULT(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    EPH_VK_RESULT(VK_ERROR_INITIALIZATION_FAILED)
    EPH_VK_RESULT(VK_ERROR_DEVICE_LOST)
    EPH_VK_RESULT(VK_ERROR_MEMORY_MAP_FAILED)
    EPH_VK_RESULT(VK_ERROR_LAYER_NOT_PRESENT)
    EPH_VK_RESULT(VK_ERROR_EXTENSION_NOT_PRESENT)
    EPH_VK_RESULT(VK_ERROR_FEATURE_NOT_PRESENT)
    EPH_VK_RESULT(VK_ERROR_INCOMPATIBLE_DRIVER)
    EPH_VK_RESULT(VK_ERROR_TOO_MANY_OBJECTS)
    EPH_VK_RESULT(VK_ERROR_FORMAT_NOT_SUPPORTED)
    EPH_VK_RESULT(VK_ERROR_FRAGMENTED_POOL)
    EPH_VK_RESULT(VK_ERROR_UNKNOWN)
    EPH_VK_RESULT(VK_ERROR_OUT_OF_POOL_MEMORY)
    EPH_VK_RESULT(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    EPH_VK_RESULT(VK_ERROR_FRAGMENTATION)
    EPH_VK_RESULT(VK_ERROR_INVALID_SHADER_NV)
    EPH_VK_RESULT(VK_PIPELINE_COMPILE_REQUIRED)
#undef EPH_VK_RESULT
    default:
      return "VkResult (unknown)";
  }
}

Error vkError(Loc site, const std::string& what, VkResult r) {
  return Error{site, what + ": " + resultName(r) + " (" + std::to_string(int(r)) + ")"};
}

}  // namespace eph::runtime::vk

#if defined(__SANITIZE_ADDRESS__)
// Under LeakSanitizer: Vulkan drivers, layers and the LLVM inside lavapipe keep
// allocations for the life of the process (and leak some at
// vkDestroyInstance); they are not ours to report.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libvulkan_lvp.so\n"
         "leak:libvulkan.so\n"
         "leak:libVkLayer_khronos_validation.so\n"
         "leak:libLLVM\n"
         "leak:libGLX_nvidia.so\n"
         "leak:libnvidia-\n";
}
#endif
