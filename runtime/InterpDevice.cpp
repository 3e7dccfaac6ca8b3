#include "runtime/InterpDevice.h"

#include <algorithm>

#include "ir/Layout.h"
#include "ir/interp/Exec.h"

namespace eph::runtime {

InterpDevice::InterpDevice() {
  caps_.name = "interpreter";
  caps_.driver = "ephc reference interpreter";
  caps_.subgroupSize = interp::Interpreter::kSubgroupSize;
  caps_.subgroupArithmetic = caps_.subgroupBroadcast = caps_.subgroupShuffle = true;
  caps_.float16 = caps_.float64 = caps_.int8 = caps_.int16 = caps_.int64 = true;
  caps_.atomicFloat32Add = caps_.atomicFloat64Add = caps_.atomicInt64 = true;
  caps_.maxBufferBytes = uint64_t(1) << 30;
  caps_.maxWorkgroupInvocations = 1024;
  caps_.maxWorkgroupSize = {1024, 1024, 64};
  caps_.maxWorkgroupCount = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  caps_.maxWorkgroupMemoryBytes = 1 << 20;
  caps_.maxPushConstantBytes = 1 << 20;
}

InterpDevice::~InterpDevice() = default;

Status InterpDevice::prepare(const ir::Module& m) {
  if (module_ != &m) {
    module_ = &m;
    kernels_ = std::make_unique<interp::Interpreter>(m);
  }
  return Status::ok();
}

interp::BufferData* InterpDevice::live(uint64_t handle, Loc site, Status& err) {
  interp::BufferData* b = kernels_ ? kernels_->memory().get(handle) : nullptr;
  if (!b) err = Error{site, "invalid device buffer handle " + std::to_string(handle)};
  else if (b->freed) err = Error{site, "use of a freed device buffer" + std::string(b->allocSite.known() ? " allocated at " + b->allocSite.str() : "")};
  return err ? b : nullptr;
}

Expected<uint64_t> InterpDevice::alloc(const ir::Type* bufferType, uint64_t count, Loc site) {
  if (!kernels_) return Error{site, "InterpDevice: prepare() was not called"};
  if (count > interp::kMaxElements)
    return Error{site, "allocation of " + std::to_string(count) +
                           " elements is larger than the interpreter's limit of " + std::to_string(interp::kMaxElements)};
  if (count * bufferType->elem()->sizeInBytes() > caps_.maxBufferBytes)
    return Error{site, "allocation of " + std::to_string(count) + " elements is larger than the " +
                           "device's largest buffer (" + std::to_string(caps_.maxBufferBytes) + " bytes)"};
  return kernels_->memory().allocate(bufferType->elem(), ir::Space::Device, count, site);
}

Status InterpDevice::free(uint64_t handle, Loc site) {
  Status err;
  interp::BufferData* b = live(handle, site, err);
  if (!b) return err;
  b->freed = true;
  b->elems = {};
  b->written = {};
  return Status::ok();
}

Status InterpDevice::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  Status err;
  interp::BufferData* b = live(dst, site, err);
  if (!b) return err;
  if (Status s = interp::checkFullyWritten(src, site); !s) return s;
  if (b->elems.size() != src.elems.size())
    return Error{site, "copies a buffer of " + std::to_string(src.elems.size()) +
                           " elements into a buffer of " + std::to_string(b->elems.size())};
  b->elems = src.elems;
  b->written = src.written;
  return Status::ok();
}

Status InterpDevice::download(interp::BufferData& dst, uint64_t src, Loc site) {
  Status err;
  interp::BufferData* b = live(src, site, err);
  if (!b) return err;
  if (b->elems.size() != dst.elems.size())
    return Error{site, "copies a buffer of " + std::to_string(b->elems.size()) +
                           " elements into a buffer of " + std::to_string(dst.elems.size())};
  dst.elems = b->elems;
  dst.written = b->written;
  dst.copiedFrom = b->copiedFrom.known() ? b->copiedFrom : b->allocSite;
  return Status::ok();
}

// A view's window [offset, offset + n) must lie in the buffer.
static Status checkWindow(const interp::BufferData& b, uint64_t offset, size_t n, Loc site) {
  if (offset <= b.elems.size() && n <= b.elems.size() - offset) return Status::ok();
  return Error{site, "view of elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                         std::to_string(n) + ") is out of range for a buffer of " +
                         std::to_string(b.elems.size()) + " elements"};
}

Status InterpDevice::viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) {
  Status err;
  interp::BufferData* b = live(dst, site, err);
  if (!b) return err;
  if (Status s = interp::checkFullyWritten(src, site); !s) return s;
  if (Status s = checkWindow(*b, offset, src.elems.size(), site); !s) return s;
  std::copy(src.elems.begin(), src.elems.end(), b->elems.begin() + offset);
  std::copy(src.written.begin(), src.written.end(), b->written.begin() + offset);
  return Status::ok();
}

Status InterpDevice::viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
  Status err;
  interp::BufferData* b = live(src, site, err);
  if (!b) return err;
  if (Status s = checkWindow(*b, offset, dst.elems.size(), site); !s) return s;
  std::copy_n(b->elems.begin() + offset, dst.elems.size(), dst.elems.begin());
  std::copy_n(b->written.begin() + offset, dst.elems.size(), dst.written.begin());
  dst.copiedFrom = b->copiedFrom.known() ? b->copiedFrom : b->allocSite;
  return Status::ok();
}

Status InterpDevice::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  Status err;
  interp::BufferData* b = live(dst, site, err);
  if (!b) return err;
  size_t stride = ir::storageStride(b->elemType);
  if (bytes.size() != b->elems.size() * stride)
    return Error{site, "copies " + std::to_string(bytes.size()) + " bytes into a device buffer of " +
                           std::to_string(b->elems.size() * stride) + " bytes"};
  ir::decodeBuffer(bytes, *b);
  return Status::ok();
}

Status InterpDevice::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  Status err;
  interp::BufferData* b = live(src, site, err);
  if (!b) return err;
  size_t stride = ir::storageStride(b->elemType);
  if (bytes.size() != b->elems.size() * stride)
    return Error{site, "copies a device buffer of " + std::to_string(b->elems.size() * stride) + " bytes into " +
                           std::to_string(bytes.size()) + " bytes"};
  for (size_t i = 0; i < b->elems.size(); ++i) {
    if (!b->written[i])
      return Error{site, "element " + std::to_string(i) + " of the device buffer" + interp::allocatedAt(*b) +
                             " was never written"};
    ir::encode(b->elems[i], bytes.data() + i * stride);
  }
  return Status::ok();
}

Status InterpDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                              std::span<const interp::RtValue> args, Loc site) {
  if (!kernels_) return Error{site, "InterpDevice: prepare() was not called"};
  return kernels_->dispatch(kernel, groups, {args.begin(), args.end()});
}

}  // namespace eph::runtime
