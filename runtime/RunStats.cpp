#include "runtime/RunStats.h"

#include <algorithm>

#include "ir/Layout.h"

namespace eph::runtime {

std::string RunStats::text() const {
  return "dispatches: " + std::to_string(dispatches) + "\nkernels: " + std::to_string(kernels.size()) +
         "\npeak device bytes: " + std::to_string(peakBytes) + "\n";
}

Expected<uint64_t> StatsDevice::alloc(const ir::Type* bufferType, uint64_t count, Loc site) {
  auto handle = inner_.alloc(bufferType, count, site);
  if (!handle) return handle;
  uint64_t bytes = count * ir::storageStride(bufferType->elem());
  bytes_[*handle] = bytes;
  stats_.liveBytes += bytes;
  stats_.peakBytes = std::max(stats_.peakBytes, stats_.liveBytes);
  return handle;
}

Status StatsDevice::free(uint64_t handle, Loc site) {
  if (auto it = bytes_.find(handle); it != bytes_.end()) {
    stats_.liveBytes -= it->second;
    bytes_.erase(it);
  }
  return inner_.free(handle, site);
}

Status StatsDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                             std::span<const interp::RtValue> args, Loc site) {
  ++stats_.dispatches;
  stats_.kernels.insert(&kernel);
  return inner_.dispatch(kernel, groups, args, site);
}

}  // namespace eph::runtime
