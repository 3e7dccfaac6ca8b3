// Several devices behind one set of interpreter hooks, so that one host
// program runs against all of them: device k of the program (`alloc
// {device = k}`, default 0) is devices[k]. Every later op on a buffer goes to
// the device that owns it; a dispatch runs on the device of its buffer
// arguments (device 0 when it has none), and buffers on different devices in
// one dispatch are an error at the dispatch. `copy` between two buffers of
// one device copies on that device (Device::copyBytes); across two devices
// it goes through host memory as raw bytes. Where a device keeps written
// flags (the interpreter's), a copy goes through its values instead, so that
// an element never written is reported.
//
// Handles: the program sees the owning device's handle with the device index
// in its top 8 bits, so with one device it sees the device's own handles.
//
//   runtime::DeviceSet set({vulkan.get(), cpu.get()});
//   in.setDeviceHooks(&set);          // runHost does this (runtime/Device.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/Device.h"

namespace eph::runtime {

class CheckedDevice;

class DeviceSet : public interp::DeviceHooks {
 public:
  // Not owned; at least one.
  explicit DeviceSet(std::vector<Device*> devices);

  size_t size() const { return devices_.size(); }
  Device& device(size_t k) const { return *devices_[k]; }
  // prepare() on each device.
  Status prepare(const ir::Module& m);
  // The device index a handle belongs to.
  static unsigned deviceOf(uint64_t handle) { return unsigned(handle >> kShift); }
  // The handle on its own device.
  static uint64_t innerOf(uint64_t handle) { return handle & kInnerMask; }

  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override {
    return allocOn(0, bufferType, count, site);
  }
  Expected<uint64_t> allocOn(unsigned device, const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
  bool supportsViews() const override;  // when every device does
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override;
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override;
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::span<const interp::RtValue> args, Loc site) override;
  Status wait(Loc site) override;  // every device
  Status copy(uint64_t dst, uint64_t src, Loc site) override;
  // The device's answer when it has one (a CheckedDevice checks the use),
  // else the count recorded at alloc.
  Expected<uint64_t> length(uint64_t handle, Loc site) override;
  unsigned deviceCount() const override { return unsigned(devices_.size()); }
  // Raw bytes (Device::uploadBytes) to or from the device a handle is on.
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site);
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site);
  // The element count recorded at alloc for a live handle, else 0 (and
  // `known` false); whether the handle's device keeps written flags.
  uint64_t countOf(uint64_t handle, bool& known) const;
  bool tracksWrites(uint64_t handle) const;
  // Handles from C code (runtime/eph_buffer.h): with buffer checks on, the
  // CheckedDevice reports a freed or unknown one with its sites; off, one
  // that is not a live buffer of this set is an error before any device
  // sees it.
  Status freeForeign(uint64_t handle, Loc site, const char* what) override;
  Expected<uint64_t> lengthForeign(uint64_t handle, Loc site, const char* what) override;

 private:
  static constexpr unsigned kShift = 56;
  static constexpr uint64_t kInnerMask = (uint64_t(1) << kShift) - 1;
  // The device of `handle`, or null (with `err` set) when it names none.
  Device* route(uint64_t handle, Loc site, Status& err) const;
  // The CheckedDevice a foreign handle goes to (null when checks are off),
  // or an error when the handle is not one C code may use: no such device,
  // or, without checks, not a live buffer.
  Expected<CheckedDevice*> foreignRoute(uint64_t handle, Loc site, const char* what) const;
  struct Shape {
    const ir::Type* elem = nullptr;
    uint64_t count = 0;
  };

  std::vector<Device*> devices_;
  std::unordered_map<uint64_t, Shape> shapes_;  // live buffers, for copy
};

}  // namespace eph::runtime
