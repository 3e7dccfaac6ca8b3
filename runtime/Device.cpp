#include "runtime/Device.h"

#include <algorithm>
#include <cstdlib>

#include "runtime/InterpDevice.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif
#ifdef EPH_HAVE_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif

namespace eph::runtime {

Expected<std::vector<interp::RtValue>> runHost(Device& device, interp::Interpreter& in,
                                               const ir::Function& entry,
                                               std::vector<interp::RtValue> args) {
  if (const ir::Module* m = entry.module(); m)
    if (Status s = device.prepare(*m); !s) return s.error();
  in.setDeviceHooks(&device);
  auto results = in.call(entry, std::move(args));
  in.setDeviceHooks(nullptr);
  if (!results) return results;
  if (Status s = device.wait(entry.loc()); !s) return s.error();
  return results;
}

std::vector<std::string> availableTargets() {
  std::vector<std::string> targets = {"interp"};
#ifdef EPH_HAVE_LLVM
  targets.push_back("cpu");
#endif
#ifdef EPH_HAVE_VULKAN
  targets.push_back("vulkan");
#endif
  return targets;
}

Expected<std::unique_ptr<Device>> openDevice(std::string_view target, int index) {
  if (target == "interp") return std::unique_ptr<Device>(new InterpDevice());
#ifdef EPH_HAVE_LLVM
  if (target == "cpu") return std::unique_ptr<Device>(new CpuDevice());
#endif
#ifdef EPH_HAVE_VULKAN
  if (target == "vulkan") {
    VulkanOptions options;
    options.deviceIndex = index;
    auto dev = VulkanDevice::open(options);
    if (!dev) return dev.error();
    return std::unique_ptr<Device>(std::move(*dev));
  }
#endif
  std::string known;
  for (auto& t : availableTargets()) known += (known.empty() ? "" : ", ") + t;
  return Error{{}, "target '" + std::string(target) + "' is not available in this build (available: " +
                       known + ")"};
}

// A real GPU through Vulkan when there is one; else the CPU target (a CPU
// Vulkan driver such as lavapipe is slower than it); else the interpreter.
std::string defaultTarget() {
  auto targets = availableTargets();
  auto has = [&](const char* t) { return std::find(targets.begin(), targets.end(), t) != targets.end(); };
  if (has("vulkan"))
    if (auto dev = openDevice("vulkan"); dev && (*dev)->caps().isGpu) return "vulkan";
  return has("cpu") ? "cpu" : "interp";
}

}  // namespace eph::runtime
