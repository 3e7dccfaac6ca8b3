// What a device can do, as data: targets read it to decide what to emit (a
// native float atomic add or a compare-exchange loop), the runtime fills it in
// from the driver, and `ephc devices` prints it. Codegen never asks "is this
// NVIDIA?"; it asks these fields.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace eph {

struct DeviceCaps {
  std::string name;    // "NVIDIA H100 80GB HBM3", "llvmpipe (LLVM 15.0.6, 256 bits)", "interpreter"
  std::string driver;  // driver name and version
  bool isGpu = false;  // a real GPU (a CPU Vulkan driver such as lavapipe is not)
  uint32_t subgroupSize = 1;
  // Subgroup collectives in compute shaders (ir/ops/Subgroup.cpp):
  // reductions and scans, broadcast (Vulkan's ballot feature), shuffle.
  bool subgroupArithmetic = false, subgroupBroadcast = false, subgroupShuffle = false;
  bool float16 = false, float64 = false;
  bool int8 = false, int16 = false, int64 = false;
  bool atomicFloat32Add = false, atomicFloat64Add = false, atomicInt64 = false;
  uint64_t maxBufferBytes = 0;  // largest single buffer a kernel can address
  uint64_t memoryBytes = 0;     // device memory in all
  uint32_t maxWorkgroupInvocations = 0;
  std::array<uint32_t, 3> maxWorkgroupSize{}, maxWorkgroupCount{};
  uint32_t maxWorkgroupMemoryBytes = 0;
  uint32_t maxPushConstantBytes = 0;
  // Vulkan's minStorageBufferOffsetAlignment: a buffer view's byte offset in
  // a dispatch must be a multiple of it (1 where any offset binds).
  uint64_t storageBufferOffsetAlignment = 1;
  // Cooperative matrices (SPV_NV_cooperative_matrix, ir/ops/CoopMatrix.cpp):
  // the subgroup multiply-add shapes the device runs, each "MxNxK A C" (a and
  // b of type A, c and the result of type C), e.g. "16x16x16 f16 f32"; empty
  // where the device has no matrix units the SPIR-V target can reach.
  std::vector<std::string> cooperativeMatrixShapes;
  bool hasCoopShape(const std::string& s) const {
    for (const std::string& x : cooperativeMatrixShapes)
      if (x == s) return true;
    return false;
  }
  // Workgroup-scope cooperative matrices (VK_NV_cooperative_matrix2's
  // flexible dimensions, emitted as SPV_KHR_cooperative_matrix): each
  // "MgxNgxKg A C W" runs products whose M, N and K are multiples of Mg, Ng
  // and Kg in workgroups of W invocations, e.g. "32x32x16 f16 f32 256"; no
  // dimension above workgroupMatrixMaxDimension, and the driver keeps
  // workgroupMatrixReservedMemory bytes of workgroup memory for itself.
  std::vector<std::string> workgroupMatrixShapes;
  uint32_t workgroupMatrixMaxDimension = 0, workgroupMatrixMaxInvocations = 0, workgroupMatrixReservedMemory = 0;
  // The granularity entry that runs an M x N x K product of a into c in
  // workgroups of `invocations`, or "".
  std::string workgroupMatrixShapeFor(unsigned M, unsigned N, unsigned K, const std::string& a, const std::string& c,
                                      unsigned invocations) const {
    const unsigned most = workgroupMatrixMaxDimension;
    if (M > most || N > most || K > most) return {};
    for (const std::string& x : workgroupMatrixShapes) {
      unsigned mg = 0, ng = 0, kg = 0, w = 0;
      char ta[16] = {}, tc[16] = {};
      if (std::sscanf(x.c_str(), "%ux%ux%u %15s %15s %u", &mg, &ng, &kg, ta, tc, &w) != 6 || !mg || !ng || !kg)
        continue;
      if (a == ta && c == tc && w == invocations && M % mg == 0 && N % ng == 0 && K % kg == 0) return x;
    }
    return {};
  }
  uint32_t vulkanApiVersion = 0;  // VK_MAKE_API_VERSION for Vulkan devices, else 0
};

}  // namespace eph
