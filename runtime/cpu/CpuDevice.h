// The CPU target as a Device: kernels are compiled by the LLVM target
// (targets/llvm) and loaded into this process, each on its first dispatch,
// through a KernelCache (runtime/cpu/KernelCache.h: keyed by the kernel's
// content, in memory and on disk); a dispatch runs its workgroups on a thread pool, each
// thread calling the kernel's range function on chunks of workgroups with its
// own workgroup memory.
//
// Memory: a device buffer is host memory holding exactly the storage layout
// of ir/Layout.h (the bytes a GPU buffer would hold: bool as u32, vec3 padded
// to 16 bytes, structs and sums laid out by ir::fieldOffset and
// ir::sumPayloadOffset), 64-byte aligned and zero-filled when allocated.
// Uploads encode interpreter values into those bytes and downloads decode
// them; kernels convert between storage and their own value layout at each
// load and store (targets/llvm/Emitter.h). Atomics are atomic read-modify-
// writes on that memory with std::atomic_ref semantics (sequentially
// consistent; a float add is a compare-exchange loop).
//
// Dispatches run synchronously: dispatch returns when the grid is done, so
// wait() has nothing left to do. What a dispatch needs from its kernel (the
// parameter block layout, which parameters are buffers) is resolved once per
// kernel at prepare(), the compiled entry at its first dispatch (or at
// prepare() with CpuOptions::eager, all kernels in parallel), and the argument arrays are
// reused, so a dispatch allocates nothing; a grid of fewer than 2^14
// invocations runs on the calling thread without waking the pool. A device
// is used by one thread at a time. A trap in a kernel (out-of-bounds access,
// division by zero, barrier divergence) comes back as the interpreter's error
// for that op.
#pragma once

#include <set>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/Device.h"
#include "runtime/cpu/KernelCache.h"
#include "runtime/cpu/ThreadPool.h"
#include "targets/llvm/Llvm.h"

namespace eph::runtime {

struct CpuOptions {
  unsigned threads = 0;  // 0: EPH_THREADS, else the hardware's thread count
  llvmtarget::LowerOptions lower;
  // Where compiled kernels come from; null: KernelCache::process().
  KernelCache* cache = nullptr;
  // Compile every kernel of a module at prepare(), in parallel on the
  // thread pool, instead of each at its first dispatch.
  bool eager = false;
  // Tiered compilation (lower.optLevel > 0): a kernel first dispatched with
  // a small grid (fewer than 2^14 invocations) and not cached at
  // lower.optLevel is compiled quickly at LLVM -O0 (a few ms instead of
  // tens), and at lower.optLevel once a grid of 2^14 or more comes or its
  // -O0 code has run 2^16 invocations. Both give the same results. `ephc
  // run` turns it on (DeviceOptions::tieredCpu).
  bool tiered = false;
};

class CpuDevice : public Device {
 public:
  explicit CpuDevice(CpuOptions opts = {});
  ~CpuDevice() override;
  std::string_view target() const override { return "cpu"; }
  const DeviceCaps& caps() const override { return caps_; }
  Status prepare(const ir::Module& m) override;

  Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) override;
  Status free(uint64_t handle, Loc site) override;
  Status upload(uint64_t dst, const interp::BufferData& src, Loc site) override;
  Status download(interp::BufferData& dst, uint64_t src, Loc site) override;
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::span<const interp::RtValue> args, Loc site) override;
  Status wait(Loc site) override { return Status::ok(); }
  // Device memory is host memory: each is one memcpy.
  Status uploadBytes(uint64_t dst, std::span<const std::byte> bytes, Loc site) override;
  Status downloadBytes(std::span<std::byte> bytes, uint64_t src, Loc site) override;
  Status copyBytes(uint64_t dst, uint64_t src, uint64_t bytes, Loc site) override;
  // Views (buffer.view): a kernel gets the window's address and count.
  bool supportsViews() const override { return true; }
  Status viewUpload(uint64_t dst, uint64_t offset, const interp::BufferData& src, Loc site) override;
  Status viewDownload(interp::BufferData& dst, uint64_t src, uint64_t offset, Loc site) override;

  unsigned threads() const { return pool_.size(); }
  // The storage bytes of a live buffer (tests and benchmarks read them).
  std::span<std::byte> bytes(uint64_t handle);

 private:
  struct Buffer {
    const ir::Type* elem = nullptr;
    uint64_t count = 0;
    size_t stride = 0;
    std::byte* data = nullptr;
    Loc allocSite;
    bool freed = false;
  };
  Buffer* live(uint64_t handle, Loc site, Status& err);
  std::byte* window(uint64_t handle, uint64_t offset, uint64_t n, Loc site, Status& err);
  // What dispatch needs of a kernel, resolved at prepare().
  struct PreparedKernel {
    const llvmtarget::JitModule::Kernel* compiled = nullptr;  // null until first dispatched
    KernelCache::Code code;  // keeps `compiled` alive
    bool quick = false;       // compiled at -O0 (CpuOptions::tiered)
    uint64_t quickRun = 0;    // invocations run by the -O0 code
    llvmtarget::ParamBlockLayout params;
    uint64_t invocationsPerGroup = 1;
    // Measured on its last grid run on the calling thread: a small grid whose
    // invocations take long enough goes to the pool next time.
    mutable double nsPerInvocation = 0;
  };
  // The prepared and compiled kernel for a dispatch of `invocations`,
  // preparing its module and compiling it first if needed (at -O0 or not,
  // CpuOptions::tiered); null after setting `err`.
  const PreparedKernel* preparedKernel(const ir::Function& kernel, uint64_t invocations, Loc site, Status& err);
  // Compiles pk's kernel as CpuOptions::tiered says for `invocations`.
  Status compile(const ir::Function& kernel, PreparedKernel& pk, uint64_t invocations);

  CpuOptions opts_;
  DeviceCaps caps_;
  ThreadPool pool_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // handle = index + 1
  // Freed blocks of at least kKeepFrom bytes, by size, kept (up to kKeepAtMost
  // bytes in all) for the next allocation of that size: a program run again
  // allocates the same sizes, which otherwise come fresh from the kernel and
  // fault in every page (BERT b8-s512-d512: 130 ms of a 340 ms run).
  static constexpr size_t kKeepFrom = size_t(1) << 16, kKeepAtMost = size_t(1) << 30;
  std::multimap<size_t, std::byte*> kept_;
  size_t keptBytes_ = 0;
  static size_t blockBytes(const Buffer& b);
  KernelCache& cache_;
  std::set<const ir::Module*> modules_;  // prepared
  std::unordered_map<const ir::Function*, PreparedKernel> kernels_;
  const ir::Function* lastKernel_ = nullptr;  // the last dispatch's kernel and its entry
  const PreparedKernel* lastPrepared_ = nullptr;
  // Reused by every dispatch: buffer bases and lengths, the parameter block.
  std::vector<void*> bufs_;
  std::vector<uint64_t> lens_;
  std::vector<std::byte> paramBytes_;
};

}  // namespace eph::runtime
