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

}  // namespace eph::runtime::vk
