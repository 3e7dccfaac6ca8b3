// What a kernel compiled alone depends on in the IR, as text: the kernel and
// the device functions it calls. The caches that keep compiled kernels by
// content key them by it (runtime/cpu/KernelCache.h for the cpu target,
// VulkanDevice::kernelKey for Vulkan pipelines), so that two modules sharing a
// kernel share its code and a module where one kernel changed compiles only
// that one.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::ir {

// The device functions `kernel` calls, directly or not, in module order.
std::vector<const Function*> reachedDeviceFunctions(const Function& kernel);

// The printed kernel, then each function reachedDeviceFunctions gives, each
// after a newline. Two kernels with the same text compile to the same code.
std::string kernelText(const Function& kernel);

// The ops of the kernel, then of the functions reachedDeviceFunctions gives,
// each in walk order. An op's index here depends only on kernelText: an
// index taken in one module names the same op in any module where the kernel
// has the same text.
std::vector<const Op*> kernelOps(const Function& kernel);

}  // namespace eph::ir
