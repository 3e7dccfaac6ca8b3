#include "runtime/vulkan/PipelineCache.h"

#include <cstdio>
#include <fstream>

#include "runtime/DiskCache.h"

namespace eph::runtime::vk {

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
  return writeFileAtomic(pathFor(spirv), std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

}  // namespace eph::runtime::vk
