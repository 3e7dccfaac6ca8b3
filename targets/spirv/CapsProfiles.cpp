#include "targets/spirv/CapsProfiles.h"

namespace eph::spirv {

namespace {
constexpr uint32_t vulkanVersion(uint32_t major, uint32_t minor) { return major << 22 | minor << 12; }

DeviceCaps lavapipe() {
  DeviceCaps c;
  c.name = "lavapipe (profile)";
  c.driver = "profile";
  c.subgroupSize = 8;
  c.subgroupArithmetic = c.subgroupBroadcast = c.subgroupShuffle = true;
  c.float16 = c.float64 = c.int8 = c.int16 = c.int64 = true;
  c.atomicFloat32Add = true;
  c.atomicInt64 = true;
  c.maxBufferBytes = uint64_t(1) << 31;
  c.maxWorkgroupInvocations = 1024;
  c.maxWorkgroupSize = {1024, 1024, 1024};
  c.maxWorkgroupCount = {65535, 65535, 65535};
  c.maxWorkgroupMemoryBytes = 32768;
  c.maxPushConstantBytes = 256;
  c.storageBufferOffsetAlignment = 16;  // both llvmpipe and NVIDIA's drivers say 16
  c.vulkanApiVersion = vulkanVersion(1, 3);
  return c;
}

DeviceCaps nvidia() {
  DeviceCaps c = lavapipe();
  c.name = "nvidia (profile)";
  c.isGpu = true;
  c.subgroupSize = 32;
  c.atomicFloat64Add = true;
  c.maxWorkgroupMemoryBytes = 49152;
  c.cooperativeMatrixShapes = {"16x8x16 f16 f16", "16x8x8 f16 f16", "16x8x16 f16 f32", "16x8x8 f16 f32",
                               "16x16x16 f16 f16", "16x16x16 f16 f32"};
  // The H200's (driver 580): VK_NV_cooperative_matrix2's flexible dimensions.
  for (const char* shape : {"16x16x16 f16 @ 32", "16x16x16 f16 @ 64", "32x16x16 f16 @ 128", "32x32x16 f16 @ 256"})
    for (const char* c32 : {"f16", "f32"}) {
      std::string s = shape;
      c.workgroupMatrixShapes.push_back(s.replace(s.find("@ "), 2, std::string(c32) + " "));
    }
  c.workgroupMatrixMaxDimension = 1024, c.workgroupMatrixMaxInvocations = 256, c.workgroupMatrixReservedMemory = 8192;
  c.maxWorkgroupCount = {2147483647, 65535, 65535};
  return c;
}

DeviceCaps minimal() {
  DeviceCaps c;
  c.name = "minimal (profile)";
  c.driver = "profile";
  c.subgroupSize = 4;
  c.maxBufferBytes = uint64_t(1) << 27;
  c.maxWorkgroupInvocations = 128;
  c.maxWorkgroupSize = {128, 128, 64};
  c.maxWorkgroupCount = {65535, 65535, 65535};
  c.maxWorkgroupMemoryBytes = 16384;
  c.maxPushConstantBytes = 128;
  c.vulkanApiVersion = vulkanVersion(1, 1);
  return c;
}
}  // namespace

std::optional<DeviceCaps> capsProfile(std::string_view name) {
  if (name == "lavapipe") return lavapipe();
  if (name == "nvidia") return nvidia();
  if (name == "minimal") return minimal();
  return std::nullopt;
}

std::string capsProfileNames() { return "lavapipe, nvidia, minimal"; }

}  // namespace eph::spirv
