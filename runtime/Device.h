// The runtime's Device API: what a host program runs against. A Device owns
// device buffers and runs kernels (DeviceHooks: alloc, free, upload, download,
// dispatch, wait); host-side control flow and host buffers stay in the
// interpreter (ir/interp), or in host code compiled by LLVM on the cpu target
// (RunOptions::host, runtime/cpu/HostAbi.h), which calls the device for every
// device op. So one host program runs unchanged on every target:
//
//   interp  InterpDevice: kernels in the reference interpreter (runtime/InterpDevice.h)
//   cpu     CpuDevice: kernels compiled with LLVM, run on a thread pool
//   vulkan  VulkanDevice: kernels compiled to SPIR-V, run through Vulkan
//
// A C++ user drives a Device without the compiler's CLI:
//
//   auto dev = runtime::openDevice("vulkan");
//   interp::Interpreter in(module);
//   auto results = runtime::runHost(**dev, in, *module.lookup("main"), args);
//
// Several devices: runHost over a list of devices (DeviceSet.h); buffer
// checks: RunOptions::checkBuffers (BufferChecks.h).
//
// Data moves as raw bytes: uploadBytes, downloadBytes and copyBytes take a
// whole buffer in the storage layout of ir/Layout.h (count x
// ir::storageStride(elem) bytes), so a transfer builds no per-element value.
// The interpreter's hooks (upload/download of an interp::BufferData) convert
// at this edge, once per transfer; compiled host code (runtime/cpu/HostAbi.h)
// holds storage bytes already and passes them straight through. Only the
// interpreter's device keeps per-element written flags (tracksWrites), and
// transfers that must keep them take the BufferData path.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/DeviceCaps.h"
#include "ir/IR.h"
#include "ir/interp/Interp.h"

namespace eph::runtime {

class Device : public interp::DeviceHooks {
 public:
  // "interp", "cpu" or "vulkan".
  virtual std::string_view target() const = 0;
  virtual const DeviceCaps& caps() const = 0;
  // Compiles every kernel of `m` for this device before anything runs, so that
  // a kernel the device cannot run (float64 on a device without it, a
  // workgroup larger than its limit) is a clear error up front. Idempotent.
  virtual Status prepare(const ir::Module& m) = 0;

  // Raw transfers of a whole buffer (`bytes.size()` must be its size in
  // storage bytes; else an error naming both sizes). uploadBytes may return
  // before the copy has run (the bytes are staged first); downloadBytes
  // waits for the work that writes the buffer.
  virtual Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) = 0;
  virtual Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) = 0;
  // Copies `bytes` bytes (the whole of both buffers) from `src` to `dst` on
  // this device. The default goes through host memory (downloadBytes, then
  // uploadBytes); devices that can copy in place override it.
  virtual Status copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site);
  // Whether the device keeps the interpreter's per-element written flags
  // (InterpDevice): raw bytes cannot carry them, so transfers that must keep
  // them (compiled host code's h2d/d2h, copy) use upload/download instead.
  virtual bool tracksWrites() const { return false; }

  // The interpreter's hooks, converted at the edge: upload checks that every
  // element of `src` was written and encodes it once (ir::encodeBuffer);
  // download decodes once (ir::decodeBuffer, every element written).
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
};

// How runHost runs a host function.
struct RunOptions {
  // Wrap every device in a CheckedDevice (runtime/BufferChecks.h): use after
  // free and double free are errors naming the allocation site, and device
  // buffers still live when the entry returns are a leak error. Off, nothing
  // is installed and nothing is checked beyond what each device does.
  bool checkBuffers = false;
  // Where host code runs (`ephc run --host`, EPH_HOST): Auto compiles it
  // with the LLVM target (runtime/cpu/HostAbi.h) when every device is a cpu
  // device and the module's host code can be lowered, else interprets it;
  // Jit compiles it for any devices, and is an error naming the op or type
  // when it cannot; Interp always interprets.
  enum class Host { Auto, Interp, Jit };
  Host host = Host::Auto;
  // When set, every device is seen through a StatsDevice (runtime/RunStats.h)
  // that counts dispatches and kernels and follows peak device memory here.
  struct RunStats* stats = nullptr;
  // The caller prepared the entry's module on these devices (Device::prepare)
  // and has not changed it since: runHost does not prepare it again. For a
  // caller that runs one module many times (tensor::runOnDevice): preparing
  // prints every kernel to find it in the content-keyed caches (about 1 ms
  // for an 8-kernel encoder on lavapipe, where Vulkan emitted and validated
  // every kernel again before, 10-20 ms).
  bool prepared = false;
  // From the environment: checkBuffers when EPH_CHECK_BUFFERS is set and
  // not "0"; host from EPH_HOST=auto|interp|jit.
  static RunOptions fromEnvironment();
};

// Runs host function `entry` of a module: host code in `in` (whose Memory
// holds the host buffers of `args`), device work on `device`. Prepares the
// module for the device first (unless opts.prepared), and waits for all device work before
// returning.
Expected<std::vector<interp::RtValue>> runHost(Device& device, interp::Interpreter& in,
                                               const ir::Function& entry,
                                               std::vector<interp::RtValue> args,
                                               const RunOptions& opts = RunOptions::fromEnvironment());

// The same on several devices (runtime/DeviceSet.h): device k of the program
// (`alloc {device = k}`, default 0) is devices[k]. With one device it is the
// overload above.
Expected<std::vector<interp::RtValue>> runHost(std::span<Device* const> devices, interp::Interpreter& in,
                                               const ir::Function& entry,
                                               std::vector<interp::RtValue> args,
                                               const RunOptions& opts = RunOptions::fromEnvironment());

// How openDevice opens a device.
struct DeviceOptions {
  // Bounds checks (`ephc run --check-bounds`): an index out of bounds is the
  // interpreter's error, "index I is out of bounds for a buffer of N
  // elements (in the invocation with global id (x, y, z))", at the access.
  // interp and cpu always check (this changes nothing there); vulkan checks
  // only with it (VulkanOptions::checkBounds), and reports at the next sync
  // point. Off, an access out of bounds on vulkan is undefined.
  bool checkBounds = false;
  // cpu: tiered compilation (CpuOptions::tiered: kernels first dispatched
  // with small grids are compiled at -O0 first). `ephc run` turns it on.
  bool tieredCpu = false;
  // From the environment: checkBounds when EPH_CHECK_BOUNDS is set and not "0".
  static DeviceOptions fromEnvironment();
};

// Opens the device for a target name. `index` picks one of several devices of
// that target (vulkan: `--device N`, else the EPH_DEVICE variable, else the
// first GPU, else the first device); -1 means the default.
Expected<std::unique_ptr<Device>> openDevice(std::string_view target, int index = -1,
                                             const DeviceOptions& options = DeviceOptions::fromEnvironment());

// Opens a list of devices for runHost over several: "vulkan,cpu" or
// "vulkan:0,vulkan:1,interp" (a target, optionally `:N` for openDevice's
// index); device k of the program is the k-th entry.
Expected<std::vector<std::unique_ptr<Device>>> openDevices(
    std::string_view list, const DeviceOptions& options = DeviceOptions::fromEnvironment());

// The targets this build has, the reference interpreter first.
std::vector<std::string> availableTargets();

// The target `ephc run` uses when none is named: "vulkan" when a real GPU is
// present (not a CPU driver such as lavapipe), else "cpu" when this build has
// it, else "interp".
std::string defaultTarget();

}  // namespace eph::runtime
