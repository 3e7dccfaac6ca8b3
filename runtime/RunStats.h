// What a run did on its devices (`ephc run --stats`, RunOptions::stats): how
// many dispatches, how many distinct kernels they ran, and the peak of
// device memory held by live buffers (count x ir::storageStride(elem) bytes
// each, summed over the devices). Collected by a Device decorator that
// forwards everything; runHost installs it only when asked.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>

#include "runtime/Device.h"

namespace eph::runtime {

struct RunStats {
  uint64_t dispatches = 0;
  std::set<const ir::Function*> kernels;  // distinct kernels dispatched
  uint64_t liveBytes = 0, peakBytes = 0;
  // "dispatches: N\nkernels: K\npeak device bytes: B\n"
  std::string text() const;
};

class StatsDevice : public Device {
 public:
  StatsDevice(Device& inner, RunStats& stats) : inner_(inner), stats_(stats) {}

  std::string_view target() const override { return inner_.target(); }
  const DeviceCaps& caps() const override { return inner_.caps(); }
  Status prepare(const ir::Module& m) override { return inner_.prepare(m); }
  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override { return inner_.upload(dst, src, site); }
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override { return inner_.download(dst, src, site); }
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups, std::span<const interp::RtValue> args,
                  Loc site) override;
  Status wait(Loc site) override { return inner_.wait(site); }
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) override {
    return inner_.uploadBytes(dst, bytes, site);
  }
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) override {
    return inner_.downloadBytes(bytes, src, site);
  }
  Status copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) override {
    return inner_.copyBytes(dst, src, bytes, site);
  }
  bool tracksWrites() const override { return inner_.tracksWrites(); }
  bool supportsViews() const override { return inner_.supportsViews(); }
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override {
    return inner_.viewUpload(dst, offset, src, site);
  }
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override {
    return inner_.viewDownload(dst, src, offset, site);
  }
  Expected<uint64_t> length(uint64_t handle, Loc site) override { return inner_.length(handle, site); }

 private:
  Device& inner_;
  RunStats& stats_;
  std::unordered_map<uint64_t, uint64_t> bytes_;  // live buffers' sizes by handle
};

}  // namespace eph::runtime
