#include "runtime/Device.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "ir/Layout.h"
#include "runtime/BufferChecks.h"
#include "runtime/DeviceSet.h"
#include "runtime/InterpDevice.h"
#include "runtime/RunStats.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/HostAbi.h"
#include "runtime/cpu/KernelCache.h"
#endif
#ifdef EPH_HAVE_VULKAN
#include "runtime/vulkan/VulkanDevice.h"
#endif

namespace eph::runtime {

Status Device::copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) {
  std::vector<std::byte> staging(bytes);
  if (Status s = downloadBytes(staging, src, site); !s) return s;
  return uploadBytes(dst, staging, site);
}

Status Device::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  std::vector<std::byte> bytes;
  if (Status s = ir::encodeBuffer(src, bytes, site); !s) return s;  // checks every element is written
  return uploadBytes(dst, bytes, site);
}

Status Device::download(interp::BufferData& dst, uint64_t src, Loc site) {
  std::vector<std::byte> bytes(dst.elems.size() * ir::storageStride(dst.elemType));
  if (Status s = downloadBytes(bytes, src, site); !s) return s;
  ir::decodeBuffer(bytes, dst);
  return Status::ok();
}

RunOptions RunOptions::fromEnvironment() {
  RunOptions opts;
  const char* v = std::getenv("EPH_CHECK_BUFFERS");
  opts.checkBuffers = v && *v && std::string_view(v) != "0";
  if (const char* h = std::getenv("EPH_HOST")) {
    std::string_view host(h);
    if (host == "interp") opts.host = RunOptions::Host::Interp;
    if (host == "jit") opts.host = RunOptions::Host::Jit;
  }
  return opts;
}

Expected<std::vector<interp::RtValue>> runHost(Device& device, interp::Interpreter& in,
                                               const ir::Function& entry,
                                               std::vector<interp::RtValue> args, const RunOptions& opts) {
  Device* devices[] = {&device};
  return runHost(devices, in, entry, std::move(args), opts);
}

namespace {

// The device buffers among `results`: returned to the caller, so not leaks.
std::vector<uint64_t> returnedHandles(const std::vector<interp::RtValue>& results, unsigned device) {
  std::vector<uint64_t> handles;
  for (const interp::RtValue& r : results)
    if (r.type && r.type->isBuffer() && r.type->space() == ir::Space::Device &&
        DeviceSet::deviceOf(r.buffer) == device)
      handles.push_back(DeviceSet::innerOf(r.buffer));
  return handles;
}

}  // namespace

Expected<std::vector<interp::RtValue>> runHost(std::span<Device* const> devices, interp::Interpreter& in,
                                               const ir::Function& entry,
                                               std::vector<interp::RtValue> args, const RunOptions& opts) {
  if (devices.empty()) return Error{entry.loc(), "runHost: no device to run on"};
  // With checks on, each device is seen through a CheckedDevice.
  std::vector<std::unique_ptr<CheckedDevice>> checked;
  std::vector<Device*> used(devices.begin(), devices.end());
  if (opts.checkBuffers)
    for (size_t k = 0; k < used.size(); ++k) {
      std::string name = used.size() == 1 ? "" : "device " + std::to_string(k) + " (" + std::string(used[k]->target()) + ")";
      checked.push_back(std::make_unique<CheckedDevice>(*used[k], std::move(name)));
      used[k] = checked.back().get();
    }
  std::vector<std::unique_ptr<StatsDevice>> counted;
  if (opts.stats)
    for (Device*& d : used) {
      counted.push_back(std::make_unique<StatsDevice>(*d, *opts.stats));
      d = counted.back().get();
    }
  DeviceSet set(std::move(used));
  if (const ir::Module* m = entry.module(); m && !opts.prepared)
    if (Status s = set.prepare(*m); !s) return s.error();
  Expected<std::vector<interp::RtValue>> results = std::vector<interp::RtValue>{};
  bool compiled = false;
#ifdef EPH_HAVE_LLVM
  // Compiled host code (runtime/cpu/HostAbi.h) where asked for or where
  // every device is the cpu target; else (or when the module's host code
  // cannot be lowered, under Auto) the interpreter.
  bool allCpu = true;
  for (Device* d : devices) allCpu = allCpu && d->target() == "cpu";
  if (opts.host == RunOptions::Host::Jit || (opts.host == RunOptions::Host::Auto && allCpu && entry.module())) {
    if (!entry.module()) return Error{entry.loc(), "compiled host code needs the entry's module"};
    llvmtarget::LowerOptions lower = hostLowerOptions();
    lower.hostEntry = entry.name();  // compile only what the entry reaches
    auto jit = compiledModule(*entry.module(), lower);
    if (!jit) return jit.error();
    if (auto why = compiledHostProblem(**jit, entry)) {
      if (opts.host == RunOptions::Host::Jit)
        return Error{why->loc, "host code cannot be compiled (--host=jit; --host=auto would interpret it): " +
                                   why->message};
    } else {
      results = runCompiledHost(**jit, set, in.memory(), entry, std::move(args));
      compiled = true;
    }
  }
#else
  if (opts.host == RunOptions::Host::Jit)
    return Error{entry.loc(), "--host=jit needs the cpu target, which this build does not have"};
#endif
  if (!compiled) {
    in.setDeviceHooks(&set);
    results = in.call(entry, std::move(args));
    in.setDeviceHooks(nullptr);
  }
  if (!results) return results;
  if (Status s = set.wait(entry.loc()); !s) return s.error();
  for (size_t k = 0; k < checked.size(); ++k)
    if (Status s = checked[k]->checkLeaks(entry.name(), returnedHandles(*results, unsigned(k))); !s)
      return s.error();
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

DeviceOptions DeviceOptions::fromEnvironment() {
  DeviceOptions opts;
  const char* v = std::getenv("EPH_CHECK_BOUNDS");
  opts.checkBounds = v && *v && std::string_view(v) != "0";
  return opts;
}

Expected<std::unique_ptr<Device>> openDevice(std::string_view target, int index, const DeviceOptions& opts) {
  if (target == "interp") return std::unique_ptr<Device>(new InterpDevice());
#ifdef EPH_HAVE_LLVM
  if (target == "cpu") {
    CpuOptions cpu;
    cpu.tiered = opts.tieredCpu;
    return std::unique_ptr<Device>(new CpuDevice(cpu));
  }
#endif
#ifdef EPH_HAVE_VULKAN
  if (target == "vulkan") {
    VulkanOptions options;
    options.deviceIndex = index;
    options.checkBounds = opts.checkBounds;
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

Expected<std::vector<std::unique_ptr<Device>>> openDevices(std::string_view list, const DeviceOptions& opts) {
  std::vector<std::unique_ptr<Device>> devices;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = std::min(list.find(',', start), list.size());
    std::string_view item = list.substr(start, end - start);
    start = end + 1;
    if (item.empty()) return Error{{}, "empty entry in the device list '" + std::string(list) + "'"};
    std::string_view target = item.substr(0, item.find(':'));
    int index = -1;
    if (target.size() < item.size()) {
      std::string_view n = item.substr(target.size() + 1);
      auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), index);
      if (n.empty() || ec != std::errc() || end != n.data() + n.size() || index < 0)
        return Error{{}, "bad device number in '" + std::string(item) + "' (want TARGET or TARGET:N)"};
    }
    auto dev = openDevice(target, index, opts);
    if (!dev) return Error{{}, "device " + std::to_string(devices.size()) + " ('" + std::string(item) +
                                   "'): " + dev.error().message};
    devices.push_back(std::move(*dev));
  }
  return devices;
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
