#include "runtime/DiskCache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace eph::runtime {

uint64_t hashBytes(const void* data, size_t size, uint64_t seed) {
  uint64_t h = seed;
  auto p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string hex64(uint64_t v) {
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", (unsigned long long)v);
  return s;
}

std::string defaultCacheDir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/ephc";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/ephc";
  return {};
}

std::string cacheDir(const std::string& explicitDir) {
  std::string dir = explicitDir;
  if (const char* e = std::getenv("EPH_PIPELINE_CACHE"); dir.empty() && e && *e) dir = e;
  if (dir.empty()) dir = defaultCacheDir();
  return dir == "off" ? std::string() : dir;
}

bool writeFileAtomic(const std::string& path, std::string_view data) {
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::path p(path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  if (ec) return false;
  std::string tmp = path + ".tmp" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(data.data(), std::streamsize(data.size()));
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

std::optional<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (!in && !in.eof()) return std::nullopt;
  return std::move(s).str();
}

}  // namespace eph::runtime
