// What ephc's on-disk caches share: the directory (Vulkan pipeline data,
// runtime/vulkan/PipelineCache.h, and cpu object code, runtime/cpu/KernelCache.h,
// live side by side in it), a hash for file names, and atomic file writes.
//
// The directory: an explicit setting (VulkanOptions::cacheDir, a test's
// temporary directory), else $EPH_PIPELINE_CACHE, else $XDG_CACHE_HOME/ephc,
// else $HOME/.cache/ephc. "off" turns the disk caches off.
//
// Safe for concurrent processes: a file is written under a name of its own
// (process id and a counter) and renamed over the final name, so a reader
// sees a whole old file, a whole new one or none; two writers of one entry
// write the same content and the last rename wins.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace eph::runtime {

// FNV-1a, 64 bits.
uint64_t hashBytes(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ull);
// 16 lower-case hex digits.
std::string hex64(uint64_t v);

// $XDG_CACHE_HOME/ephc, else $HOME/.cache/ephc; empty when neither is set.
std::string defaultCacheDir();
// The cache directory for `explicitDir` (empty: the environment, as above);
// empty when the disk caches are off.
std::string cacheDir(const std::string& explicitDir = {});

// Writes `data` to `path` atomically, creating its directory; false on any
// failure (the caches are only a speed-up).
bool writeFileAtomic(const std::string& path, std::string_view data);
// The whole file, or nothing when it cannot be read.
std::optional<std::string> readFile(const std::string& path);

}  // namespace eph::runtime
