// DeviceSet (DeviceSet.h): routes each hook to the device a handle belongs to.
#include "runtime/DeviceSet.h"

#include <optional>

#include "ir/Layout.h"
#include "runtime/BufferChecks.h"

namespace eph::runtime {

DeviceSet::DeviceSet(std::vector<Device*> devices) : devices_(std::move(devices)) {}

Status DeviceSet::prepare(const ir::Module& m) {
  for (Device* d : devices_)
    if (Status s = d->prepare(m); !s) return s;
  return Status::ok();
}

Device* DeviceSet::route(uint64_t handle, Loc site, Status& err) const {
  unsigned k = deviceOf(handle);
  if (k < devices_.size()) return devices_[k];
  err = Error{site, "invalid device buffer handle " + std::to_string(handle)};
  return nullptr;
}

Expected<uint64_t> DeviceSet::allocOn(unsigned device, const ir::Type* bufferType, uint64_t count, Loc site) {
  if (device >= devices_.size())
    return Error{site, "the buffer is allocated on device " + std::to_string(device) + " but the program runs on " +
                           (devices_.size() == 1 ? std::string("1 device (device 0)")
                                                 : std::to_string(devices_.size()) + " devices (0.." +
                                                       std::to_string(devices_.size() - 1) + ")")};
  auto inner = devices_[device]->alloc(bufferType, count, site);
  if (!inner) return inner;
  if (*inner > kInnerMask)
    return Error{site, "device " + std::to_string(device) + " returned handle " + std::to_string(*inner) +
                           ", too large to carry a device index"};
  uint64_t handle = (uint64_t(device) << kShift) | *inner;
  shapes_[handle] = Shape{bufferType->elem(), count};
  return handle;
}

Expected<uint64_t> DeviceSet::length(uint64_t handle, Loc site) {
  Status err;
  Device* d = route(handle, site, err);
  if (!d) return err.error();
  auto n = d->length(innerOf(handle), site);
  if (n) return n;
  if (auto it = shapes_.find(handle); it != shapes_.end()) return it->second.count;
  return n;
}

Status DeviceSet::free(uint64_t handle, Loc site) {
  Status err;
  Device* d = route(handle, site, err);
  if (!d) return err;
  if (Status s = d->free(handle & kInnerMask, site); !s) return s;
  shapes_.erase(handle);
  return Status::ok();
}

Status DeviceSet::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  Status err;
  Device* d = route(dst, site, err);
  return d ? d->upload(dst & kInnerMask, src, site) : err;
}

Status DeviceSet::download(interp::BufferData& dst, uint64_t src, Loc site) {
  Status err;
  Device* d = route(src, site, err);
  return d ? d->download(dst, src & kInnerMask, site) : err;
}

bool DeviceSet::supportsViews() const {
  for (Device* d : devices_)
    if (!d->supportsViews()) return false;
  return true;
}

Status DeviceSet::viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) {
  Status err;
  Device* d = route(dst, site, err);
  return d ? d->viewUpload(dst & kInnerMask, offset, src, site) : err;
}

Status DeviceSet::viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
  Status err;
  Device* d = route(src, site, err);
  return d ? d->viewDownload(dst, src & kInnerMask, offset, site) : err;
}

Status DeviceSet::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                           std::span<const interp::RtValue> args, Loc site) {
  if (devices_.size() == 1) return devices_[0]->dispatch(kernel, groups, args, site);
  // The device of the buffer arguments; they must agree.
  std::optional<size_t> first;
  for (size_t i = 0; i < args.size(); ++i) {
    const ir::Type* t = args[i].type;
    if (!t || !t->isBuffer() || t->space() != ir::Space::Device) continue;
    if (!first) {
      first = i;
    } else if (deviceOf(args[i].buffer) != deviceOf(args[*first].buffer)) {
      return Error{site, "dispatch of @" + kernel.name() + " uses buffers on different devices: argument " +
                             std::to_string(*first) + " is on device " + std::to_string(deviceOf(args[*first].buffer)) +
                             ", argument " + std::to_string(i) + " on device " + std::to_string(deviceOf(args[i].buffer)) +
                             " (copy them to one device first)"};
    }
  }
  unsigned k = first ? deviceOf(args[*first].buffer) : 0;
  if (k >= devices_.size()) return Error{site, "invalid device buffer handle " + std::to_string(args[*first].buffer)};
  std::vector<interp::RtValue> inner(args.begin(), args.end());
  for (interp::RtValue& a : inner)
    if (a.type && a.type->isBuffer() && a.type->space() == ir::Space::Device) a.buffer &= kInnerMask;
  return devices_[k]->dispatch(kernel, groups, inner, site);
}

Status DeviceSet::wait(Loc site) {
  for (Device* d : devices_)
    if (Status s = d->wait(site); !s) return s;
  return Status::ok();
}

Status DeviceSet::copy(uint64_t dst, uint64_t src, Loc site) {
  Status err;
  Device* to = route(dst, site, err);
  Device* from = to ? route(src, site, err) : nullptr;
  if (!from) return err;
  // With buffer checks on, a freed operand is reported as a use by `copy`.
  for (auto [dev, h] : {std::pair{to, dst}, std::pair{from, src}})
    if (auto* checked = dynamic_cast<CheckedDevice*>(dev))
      if (Status s = checked->use(h & kInnerMask, site, "copy"); !s) return s;
  auto dstShape = shapes_.find(dst), srcShape = shapes_.find(src);
  if (dstShape == shapes_.end() || srcShape == shapes_.end())
    return Error{site, std::string("copy ") + (dstShape == shapes_.end() ? "into" : "from") +
                           " a freed or unknown device buffer"};
  uint64_t n = srcShape->second.count;
  if (dstShape->second.count != n)
    return Error{site, "copies a buffer of " + std::to_string(n) + " elements into a buffer of " +
                           std::to_string(dstShape->second.count)};
  if (!to->tracksWrites() && !from->tracksWrites()) {
    // Raw bytes: in place on one device, through host memory across two.
    uint64_t bytes = n * ir::storageStride(srcShape->second.elem);
    if (to == from) return to->copyBytes(dst & kInnerMask, src & kInnerMask, bytes, site);
    std::vector<std::byte> staging(bytes);
    if (Status s = from->downloadBytes(staging, src & kInnerMask, site); !s) return s;
    return to->uploadBytes(dst & kInnerMask, staging, site);
  }
  interp::BufferData staging;
  staging.elemType = srcShape->second.elem;
  staging.space = ir::Space::Host;
  staging.elems.resize(n);
  staging.written.assign(n, false);
  staging.allocSite = site;
  if (Status s = from->download(staging, src & kInnerMask, site); !s) return s;
  for (size_t i = 0; i < n; ++i)
    if (!staging.written[i])
      return Error{site, "element " + std::to_string(i) + " of the source of a copy was never written"};
  return to->upload(dst & kInnerMask, staging, site);
}

Status DeviceSet::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  Status err;
  Device* d = route(dst, site, err);
  return d ? d->uploadBytes(dst & kInnerMask, bytes, site) : err;
}

Status DeviceSet::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  Status err;
  Device* d = route(src, site, err);
  return d ? d->downloadBytes(bytes, src & kInnerMask, site) : err;
}

uint64_t DeviceSet::countOf(uint64_t handle, bool& known) const {
  auto it = shapes_.find(handle);
  known = it != shapes_.end();
  return known ? it->second.count : 0;
}

bool DeviceSet::tracksWrites(uint64_t handle) const {
  return deviceOf(handle) < devices_.size() && devices_[deviceOf(handle)]->tracksWrites();
}

Expected<CheckedDevice*> DeviceSet::foreignRoute(uint64_t handle, Loc site, const char* what) const {
  auto bad = [&](const std::string& why) {
    return Error{site, std::string(what) + " of device buffer handle " + std::to_string(handle) + ", which " + why};
  };
  if (deviceOf(handle) >= devices_.size()) return bad("names no device of this run");
  if (auto* checked = dynamic_cast<CheckedDevice*>(devices_[deviceOf(handle)])) return checked;
  if (!shapes_.count(handle))
    return bad("is not a live buffer (freed already, or never allocated); run with --check-buffers "
               "(EPH_CHECK_BUFFERS=1) to see where it was allocated and freed");
  return nullptr;
}

Status DeviceSet::freeForeign(uint64_t handle, Loc site, const char* what) {
  auto checked = foreignRoute(handle, site, what);
  if (!checked) return checked.error();
  return free(handle, site);
}

Expected<uint64_t> DeviceSet::lengthForeign(uint64_t handle, Loc site, const char* what) {
  auto checked = foreignRoute(handle, site, what);
  if (!checked) return checked.error();
  if (*checked)
    if (Status s = (*checked)->use(innerOf(handle), site, what); !s) return s.error();
  return length(handle, site);
}

}  // namespace eph::runtime
