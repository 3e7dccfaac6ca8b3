// The on-disk half of VulkanDevice's pipeline cache: one file of
// VkPipelineCache data per SPIR-V module, named by a hash of the module and a
// hash of what makes driver data reusable (vendor, device, driver version,
// the driver's pipeline-cache UUID, ephc's version). Files are written
// atomically (temporary file, then rename), so concurrent runs never read a
// half-written file; the driver checks the data's header again when loading.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "runtime/vulkan/VulkanApi.h"

namespace eph::runtime::vk {

// FNV-1a, 64 bits.
uint64_t hashBytes(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);

// $XDG_CACHE_HOME/ephc, else $HOME/.cache/ephc; empty when neither is set.
std::string defaultCacheDir();

// Prints the driver's statistics of a pipeline (registers, shared memory...;
// VK_KHR_pipeline_executable_properties) to stderr as one line per
// executable, "vulkan statistics @kernel: name=value; ...". Nothing where
// the driver lacks the extension.
void printPipelineStatistics(VkDevice device, VkPipeline pipeline, const std::string& kernel);

class DiskCache {
 public:
  // dir empty or "off": no disk cache (load finds nothing, save does nothing).
  DiskCache(std::string dir, std::string deviceKey);
  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  std::string pathFor(std::span<const uint32_t> spirv) const;
  std::optional<std::vector<std::byte>> load(std::span<const uint32_t> spirv) const;
  // False when the file could not be written (the cache is only a speed-up).
  bool save(std::span<const uint32_t> spirv, std::span<const std::byte> data) const;

 private:
  std::string dir_;
  uint64_t deviceHash_;
};

}  // namespace eph::runtime::vk
