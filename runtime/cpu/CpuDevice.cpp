#include "runtime/cpu/CpuDevice.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "ir/Layout.h"

namespace eph::runtime {
namespace {

constexpr size_t kAlign = 64;
// Dispatches smaller than this many invocations run on the calling thread.
constexpr uint64_t kInlineInvocations = 1 << 14;
// ... and at most this long (ns): 10,000 residuals of a Value-graph hinge
// kernel (0.35 ms) gained nothing from a second thread below it.
constexpr double kInlineNs = 50'000;

uint64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t(1) << 32;
}

// Workgroup memory for the calling thread, at least `bytes` long.
std::byte* scratch(size_t bytes) {
  struct Scratch {
    std::byte* data = nullptr;
    size_t size = 0;
    ~Scratch() { std::free(data); }
  };
  thread_local Scratch s;
  if (s.size < bytes) {
    std::free(s.data);
    size_t size = (bytes + kAlign - 1) / kAlign * kAlign;
    s.data = static_cast<std::byte*>(std::aligned_alloc(kAlign, size));
    s.size = s.data ? size : 0;  // on failure, try again next time
  }
  return s.data;
}

}  // namespace

CpuDevice::CpuDevice(CpuOptions opts)
    : opts_(opts),
      pool_(opts.threads ? opts.threads : ThreadPool::defaultThreads()),
      cache_(opts.cache ? *opts.cache : KernelCache::process()) {
  caps_.name = "cpu: " + llvmtarget::hostCpuDescription() + ", " + std::to_string(pool_.size()) + " threads";
  caps_.driver = "ephc LLVM JIT (LLVM " + llvmtarget::llvmVersion() + ")";
  caps_.isGpu = false;
  caps_.subgroupSize = llvmtarget::kSubgroupSize;
  caps_.subgroupArithmetic = caps_.subgroupBroadcast = caps_.subgroupShuffle = true;
  caps_.float16 = caps_.float64 = caps_.int8 = caps_.int16 = caps_.int64 = true;
  caps_.atomicFloat32Add = caps_.atomicFloat64Add = caps_.atomicInt64 = true;
  caps_.memoryBytes = physicalMemory();
  caps_.maxBufferBytes = caps_.memoryBytes / 2;
  caps_.maxWorkgroupInvocations = 1024;
  caps_.maxWorkgroupSize = {1024, 1024, 1024};
  caps_.maxWorkgroupCount = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
  caps_.maxWorkgroupMemoryBytes = 64u << 20;
  caps_.maxPushConstantBytes = 1u << 16;
}

CpuDevice::~CpuDevice() {
  for (auto& b : buffers_) std::free(b->data);
  for (auto& [bytes, data] : kept_) std::free(data);
}

size_t CpuDevice::blockBytes(const Buffer& b) {
  return std::max<size_t>((b.count * b.stride + kAlign - 1) / kAlign * kAlign, kAlign);
}

Status CpuDevice::prepare(const ir::Module& m) {
  for (const auto& f : m.functions()) {
    if (!f->isKernel()) continue;
    size_t wg = llvmtarget::workgroupLayout(*f).bytes;
    if (wg > caps_.maxWorkgroupMemoryBytes)
      return Error{f->loc(), "kernel @" + f->name() + " needs " + std::to_string(wg) +
                                 " bytes of workgroup memory; the cpu target has " +
                                 std::to_string(caps_.maxWorkgroupMemoryBytes)};
  }
  // Resolve each kernel once, so that a dispatch looks nothing up by name;
  // compile none yet unless asked to.
  modules_.insert(&m);
  lastKernel_ = nullptr;
  lastPrepared_ = nullptr;
  std::vector<const ir::Function*> kernels;
  for (const auto& f : m.functions()) {
    if (!f->isKernel()) continue;
    PreparedKernel& pk = kernels_[f.get()];
    pk = PreparedKernel{};  // a function at this address may have been another
    pk.params = llvmtarget::paramBlockLayout(*f);
    pk.invocationsPerGroup = uint64_t(f->workgroupSize[0]) * f->workgroupSize[1] * f->workgroupSize[2];
    kernels.push_back(f.get());
  }
  if (!opts_.eager || kernels.empty()) return Status::ok();
  auto code = cache_.kernels(kernels, opts_.lower, pool_);
  if (!code) return code.error();
  for (size_t i = 0; i < kernels.size(); ++i) {
    PreparedKernel& pk = kernels_[kernels[i]];
    pk.code = (*code)[i];
    pk.compiled = pk.code->kernel(kernels[i]->name());
  }
  return Status::ok();
}

const CpuDevice::PreparedKernel* CpuDevice::preparedKernel(const ir::Function& kernel, uint64_t invocations,
                                                           Loc site, Status& err) {
  if (&kernel == lastKernel_ && !lastPrepared_->quick) return lastPrepared_;
  auto it = kernels_.find(&kernel);
  if (it == kernels_.end() || !modules_.count(kernel.module())) {
    if (Status s = prepare(*kernel.module()); !s) {
      err = s;
      return nullptr;
    }
    it = kernels_.find(&kernel);
  }
  if (it == kernels_.end()) {
    err = Error{site, "@" + kernel.name() + " is not a kernel of a module prepared for the cpu target"};
    return nullptr;
  }
  PreparedKernel& pk = it->second;
  if (Status s = compile(kernel, pk, invocations); !s) {
    err = s;
    return nullptr;
  }
  if (!pk.compiled) {
    err = Error{site, "kernel @" + kernel.name() + " was not compiled for the cpu target"};
    return nullptr;
  }
  if (pk.quick) pk.quickRun += invocations;
  lastKernel_ = &kernel;
  lastPrepared_ = &pk;
  return lastPrepared_;
}

Status CpuDevice::compile(const ir::Function& kernel, PreparedKernel& pk, uint64_t invocations) {
  constexpr uint64_t kQuickGrid = 1 << 14, kQuickBudget = 1 << 16;
  bool small = opts_.tiered && opts_.lower.optLevel > 0 && invocations < kQuickGrid &&
               pk.quickRun + invocations <= kQuickBudget;
  if (pk.compiled && (!pk.quick || small)) return Status::ok();
  KernelCache::Code code;
  bool quick = false;
  if (small && !pk.compiled) {
    // The optimised code if some run made it, else -O0 code now.
    auto found = cache_.find(kernel, opts_.lower);
    if (!found) return found.error();
    code = *found;
    if (!code) {
      llvmtarget::LowerOptions quickOpts = opts_.lower;
      quickOpts.optLevel = 0;
      auto compiled = cache_.kernel(kernel, quickOpts);
      if (!compiled) return compiled.error();
      code = *compiled;
      quick = true;
    }
  } else {
    auto compiled = cache_.kernel(kernel, opts_.lower);
    if (!compiled) return compiled.error();
    code = *compiled;
  }
  pk.code = code;
  pk.compiled = code->kernel(kernel.name());
  pk.quick = quick;
  return Status::ok();
}

CpuDevice::Buffer* CpuDevice::live(uint64_t handle, Loc site, Status& err) {
  Buffer* b = handle >= 1 && handle <= buffers_.size() ? buffers_[handle - 1].get() : nullptr;
  if (!b) {
    err = Error{site, "invalid device buffer handle " + std::to_string(handle)};
    return nullptr;
  }
  if (b->freed) {
    err = Error{site, "use of a freed device buffer" +
                          std::string(b->allocSite.known() ? " allocated at " + b->allocSite.str() : "")};
    return nullptr;
  }
  return b;
}

std::span<std::byte> CpuDevice::bytes(uint64_t handle) {
  Status err;
  Buffer* b = live(handle, {}, err);
  return b ? std::span<std::byte>(b->data, b->count * b->stride) : std::span<std::byte>();
}

Expected<uint64_t> CpuDevice::alloc(const ir::Type* bufferType, uint64_t count, Loc site) {
  const ir::Type* elem = bufferType->elem();
  if (!ir::isStorable(elem))
    return Error{site, "buffers of '" + elem->str() + "' cannot live in device memory"};
  size_t stride = ir::storageStride(elem);
  if (count > caps_.maxBufferBytes / stride)
    return Error{site, "allocation of " + std::to_string(count) + " elements is larger than the " +
                           "device's largest buffer (" + std::to_string(caps_.maxBufferBytes) + " bytes)"};
  auto b = std::make_unique<Buffer>();
  b->elem = elem;
  b->count = count;
  b->stride = stride;
  const size_t bytes = blockBytes(*b);
  if (auto it = kept_.find(bytes); it != kept_.end()) {
    b->data = it->second;
    kept_.erase(it);
    keptBytes_ -= bytes;
  } else {
    b->data = static_cast<std::byte*>(std::aligned_alloc(kAlign, bytes));
  }
  if (!b->data) return Error{site, "out of memory allocating " + std::to_string(bytes) + " bytes"};
  // Not zeroed, as on Vulkan: a program reads only what it wrote (the
  // interpreter reports a read of an element never written). Zeroing cost
  // a one-thread encoder run 8% of its time (bench/RESULTS.md).
  b->allocSite = site;
  buffers_.push_back(std::move(b));
  return uint64_t(buffers_.size());
}

Status CpuDevice::free(uint64_t handle, Loc site) {
  Status err;
  Buffer* b = live(handle, site, err);
  if (!b) return err;
  const size_t bytes = blockBytes(*b);
  if (bytes >= kKeepFrom && keptBytes_ + bytes <= kKeepAtMost) {
    kept_.emplace(bytes, b->data);
    keptBytes_ += bytes;
  } else {
    std::free(b->data);
  }
  b->data = nullptr;
  b->freed = true;
  return Status::ok();
}

Status CpuDevice::upload(uint64_t dst, const interp::BufferData& src, Loc site) {
  Status err;
  Buffer* b = live(dst, site, err);
  if (!b) return err;
  if (Status s = interp::checkFullyWritten(src, site); !s) return s;
  if (b->count != src.elems.size())
    return Error{site, "copies a buffer of " + std::to_string(src.elems.size()) +
                           " elements into a buffer of " + std::to_string(b->count)};
  for (size_t i = 0; i < src.elems.size(); ++i) ir::encode(src.elems[i], b->data + i * b->stride);
  return Status::ok();
}

Status CpuDevice::download(interp::BufferData& dst, uint64_t src, Loc site) {
  Status err;
  Buffer* b = live(src, site, err);
  if (!b) return err;
  if (b->count != dst.elems.size())
    return Error{site, "copies a buffer of " + std::to_string(b->count) + " elements into a buffer of " +
                           std::to_string(dst.elems.size())};
  ir::decodeBuffer(std::span<const std::byte>(b->data, b->count * b->stride), dst);
  return Status::ok();
}

Status CpuDevice::uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) {
  Status err;
  Buffer* b = live(dst, site, err);
  if (!b) return err;
  if (bytes.size() != b->count * b->stride)
    return Error{site, "copies " + std::to_string(bytes.size()) + " bytes into a device buffer of " +
                           std::to_string(b->count * b->stride) + " bytes"};
  if (!bytes.empty()) std::memcpy(b->data, bytes.data(), bytes.size());
  return Status::ok();
}

Status CpuDevice::downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) {
  Status err;
  Buffer* b = live(src, site, err);
  if (!b) return err;
  if (bytes.size() != b->count * b->stride)
    return Error{site, "copies a device buffer of " + std::to_string(b->count * b->stride) + " bytes into " +
                           std::to_string(bytes.size()) + " bytes"};
  if (!bytes.empty()) std::memcpy(bytes.data(), b->data, bytes.size());
  return Status::ok();
}

// The bytes of elements [offset, offset + n) of a live buffer; null after
// setting `err` when the window is out of range.
std::byte* CpuDevice::window(uint64_t handle, uint64_t offset, uint64_t n, Loc site, Status& err) {
  Buffer* b = live(handle, site, err);
  if (!b) return nullptr;
  if (offset <= b->count && n <= b->count - offset) return b->data + offset * b->stride;
  err = Error{site, "view of elements [" + std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                        std::to_string(n) + ") is out of range for a buffer of " + std::to_string(b->count) +
                        " elements"};
  return nullptr;
}

Status CpuDevice::viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) {
  Status err;
  std::byte* at = window(dst, offset, src.elems.size(), site, err);
  if (!at) return err;
  std::vector<std::byte> bytes;
  if (Status s = ir::encodeBuffer(src, bytes, site); !s) return s;
  if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
  return Status::ok();
}

Status CpuDevice::viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
  Status err;
  std::byte* at = window(src, offset, dst.elems.size(), site, err);
  if (!at) return err;
  std::vector<std::byte> bytes(dst.elems.size() * ir::storageStride(dst.elemType));
  if (!bytes.empty()) std::memcpy(bytes.data(), at, bytes.size());
  ir::decodeBuffer(bytes, dst);
  return Status::ok();
}

Status CpuDevice::copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) {
  Status err;
  Buffer* to = live(dst, site, err);
  Buffer* from = to ? live(src, site, err) : nullptr;
  if (!from) return err;
  if (to->count * to->stride != bytes || from->count * from->stride != bytes)
    return Error{site, "copies " + std::to_string(bytes) + " bytes from a device buffer of " +
                           std::to_string(from->count * from->stride) + " bytes into one of " +
                           std::to_string(to->count * to->stride)};
  if (bytes && to != from) std::memcpy(to->data, from->data, bytes);
  return Status::ok();
}

Status CpuDevice::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                           std::span<const interp::RtValue> args, Loc site) {
  Status err;
  uint64_t groupCount = 0, invocations = UINT64_MAX;  // saturated: only tiering reads it
  uint64_t perGroup = uint64_t(kernel.workgroupSize[0]) * kernel.workgroupSize[1] * kernel.workgroupSize[2];
  if (!__builtin_mul_overflow(uint64_t(groups[0]) * groups[1], uint64_t(groups[2]), &groupCount) &&
      __builtin_mul_overflow(groupCount, perGroup, &invocations))
    invocations = UINT64_MAX;
  const PreparedKernel* pk = preparedKernel(kernel, invocations, site, err);
  if (!pk) return err;
  const llvmtarget::JitModule::Kernel* k = pk->compiled;
  if (args.size() != kernel.paramTypes().size())
    return Error{site, "kernel @" + kernel.name() + " takes " + std::to_string(kernel.paramTypes().size()) +
                           " arguments, got " + std::to_string(args.size())};
  for (int d = 0; d < 3; ++d)
    if (uint64_t(groups[d]) * kernel.workgroupSize[d] > (uint64_t(1) << 32))
      return Error{site, "the grid has more than 2^32 invocations in dimension " + std::to_string(d)};

  // Bindings and the parameter block (KernelAbi.h), in arrays reused by every dispatch.
  bufs_.clear();
  lens_.clear();
  const llvmtarget::ParamBlockLayout& pl = pk->params;
  if (paramBytes_.size() < pl.size + kAlign) paramBytes_.resize(pl.size + kAlign);
  std::byte* block = paramBytes_.data() + (kAlign - reinterpret_cast<uintptr_t>(paramBytes_.data()) % kAlign) % kAlign;
  for (unsigned i = 0; i < args.size(); ++i) {
    if (pl.offsets[i] == SIZE_MAX) {
      Buffer* b = live(args[i].buffer, site, err);
      if (!b) return err;
      if (args[i].isView()) {  // buffer.view: the window (checked when the view was made)
        if (args[i].viewOffset > b->count || args[i].viewCount > b->count - args[i].viewOffset)
          return Error{site, "argument " + std::to_string(i) + " of @" + kernel.name() +
                                 ": the view is out of range for its buffer"};
        bufs_.push_back(b->data + args[i].viewOffset * b->stride);
        lens_.push_back(args[i].viewCount);
        continue;
      }
      bufs_.push_back(b->data);
      lens_.push_back(b->count);
    } else {
      ir::encode(args[i], block + pl.offsets[i]);
    }
  }
  uint64_t total = 0;
  if (__builtin_mul_overflow(uint64_t(groups[0]) * groups[1], uint64_t(groups[2]), &total))
    return Error{site, "the grid has more than 2^64 workgroups"};
  if (total == 0) return Status::ok();

  llvmtarget::KernelStatus status;
  const uint64_t gridInvocations = total * pk->invocationsPerGroup;
  if (gridInvocations < kInlineInvocations &&
      (pool_.size() == 1 || double(gridInvocations) * pk->nsPerInvocation < kInlineNs)) {
    // A small grid (in invocations, and in time where a run measured it):
    // on this thread, without waking the pool.
    std::byte* shared = k->workgroupBytes ? scratch(k->workgroupBytes) : nullptr;
    if (!shared && k->workgroupBytes)
      return Error{site, "out of memory for " + std::to_string(k->workgroupBytes) +
                             " bytes of workgroup memory running kernel @" + kernel.name()};
    auto t0 = std::chrono::steady_clock::now();
    k->range(bufs_.data(), lens_.data(), block, groups[0], groups[1], groups[2], 0, total, shared, &status);
    pk->nsPerInvocation = double(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count()) /
                          double(gridInvocations);
    if (!status.diverged && !status.trapMask) return Status::ok();
    return llvmtarget::statusError(kernel, status);
  }

  uint32_t outOfMemory = 0;  // a thread could not get its workgroup memory
  // Chunks of about 8 per thread, so that uneven workgroups even out.
  uint64_t chunk = std::max<uint64_t>(1, total / (8 * pool_.size()));
  pool_.parallelFor(total, chunk, [&](uint64_t begin, uint64_t end) {
    std::byte* shared = scratch(k->workgroupBytes);
    if (!shared && k->workgroupBytes) {
      std::atomic_ref<uint32_t>(outOfMemory).store(1);
      return false;
    }
    k->range(bufs_.data(), lens_.data(), block, groups[0], groups[1], groups[2], begin, end, shared,
             &status);
    std::atomic_ref<uint32_t> diverged(status.diverged);
    std::atomic_ref<uint64_t> traps(status.trapMask);
    return diverged.load(std::memory_order_relaxed) == 0 && traps.load(std::memory_order_relaxed) == 0;
  });
  if (outOfMemory)
    return Error{site, "out of memory for " + std::to_string(k->workgroupBytes) +
                           " bytes of workgroup memory running kernel @" + kernel.name()};
  return llvmtarget::statusError(kernel, status);
}

}  // namespace eph::runtime
