#include "runtime/vulkan/PipelineCache.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace eph::runtime::vk {

uint64_t hashBytes(const void* data, size_t size, uint64_t seed) {
  uint64_t h = seed;
  auto p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string defaultCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ephc";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ephc";
  return {};
}

DiskCache::DiskCache(std::string dir, std::string deviceKey)
    : dir_(dir == "off" ? std::string() : std::move(dir)),
      deviceHash_(hashBytes(deviceKey.data(), deviceKey.size())) {}

std::string DiskCache::pathFor(std::span<const uint32_t> spirv) const {
  char name[64];
  std::snprintf(name, sizeof name, "%016llx-%016llx.vkpc",
                (unsigned long long)hashBytes(spirv.data(), spirv.size_bytes()),
                (unsigned long long)deviceHash_);
  return dir_ + "/" + name;
}

std::optional<std::vector<std::byte>> DiskCache::load(std::span<const uint32_t> spirv) const {
  if (!enabled()) return std::nullopt;
  std::ifstream in(pathFor(spirv), std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<std::byte> data;
  char buf[65536];
  while (in.read(buf, sizeof buf) || in.gcount() > 0) {
    auto got = size_t(in.gcount());
    auto* b = reinterpret_cast<const std::byte*>(buf);
    data.insert(data.end(), b, b + got);
  }
  if (data.empty()) return std::nullopt;
  return data;
}

bool DiskCache::save(std::span<const uint32_t> spirv, std::span<const std::byte> data) const {
  if (!enabled() || data.empty()) return false;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) return false;
  std::string path = pathFor(spirv);
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
    if (!out) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

// The driver's statistics of a pipeline's executables, one line each to stderr.
void printPipelineStatistics(VkDevice device, VkPipeline pipeline, const std::string& kernel) {
  auto props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
      api().vkGetDeviceProcAddr(device, "vkGetPipelineExecutablePropertiesKHR"));
  auto stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
      api().vkGetDeviceProcAddr(device, "vkGetPipelineExecutableStatisticsKHR"));
  if (!props || !stats) return;
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipeline;
  uint32_t count = 0;
  if (props(device, &pi, &count, nullptr) != VK_SUCCESS) return;
  for (uint32_t e = 0; e < count; ++e) {
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipeline;
    ei.executableIndex = e;
    uint32_t n = 0;
    if (stats(device, &ei, &n, nullptr) != VK_SUCCESS) continue;
    std::vector<VkPipelineExecutableStatisticKHR> v(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (stats(device, &ei, &n, v.data()) != VK_SUCCESS) continue;
    std::string line = "vulkan statistics @" + kernel + ":";
    for (uint32_t k = 0; k < n; ++k) {
      line += std::string(" ") + v[k].name + "=";
      switch (v[k].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: line += v[k].value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: line += std::to_string(v[k].value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: line += std::to_string(v[k].value.u64); break;
        default: line += std::to_string(v[k].value.f64); break;
      }
      line += ";";
    }
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

}  // namespace eph::runtime::vk
