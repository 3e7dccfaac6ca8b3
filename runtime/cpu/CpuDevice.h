// The CPU target as a Device: kernels are compiled by the LLVM target
// (targets/llvm) and JIT-compiled into this process (cached per module for the
// life of the process); a dispatch runs its workgroups on a thread pool, each
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
// compiled entry, the parameter block layout, which parameters are buffers)
// is resolved once per kernel at prepare(), and the argument arrays are
// reused, so a dispatch allocates nothing; a grid of fewer than 2^14
// invocations runs on the calling thread without waking the pool. A device
// is used by one thread at a time. A trap in a kernel (out-of-bounds access,
// division by zero, barrier divergence) comes back as the interpreter's error
// for that op.
#pragma once

#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "runtime/Device.h"
#include "runtime/cpu/ThreadPool.h"
#include "targets/llvm/Llvm.h"

namespace eph::runtime {

struct CpuOptions {
  unsigned threads = 0;  // 0: EPH_THREADS, else the hardware's thread count
  llvmtarget::LowerOptions lower;
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
  // What dispatch needs of a kernel, resolved at prepare().
  struct PreparedKernel {
    const llvmtarget::JitModule::Kernel* compiled = nullptr;
    llvmtarget::ParamBlockLayout params;
    uint64_t invocationsPerGroup = 1;
  };
  // The prepared kernel, preparing its module first if needed; null after
  // setting `err`.
  const PreparedKernel* preparedKernel(const ir::Function& kernel, Loc site, Status& err);

  CpuOptions opts_;
  DeviceCaps caps_;
  ThreadPool pool_;
  std::vector<std::unique_ptr<Buffer>> buffers_;  // handle = index + 1
  std::map<const ir::Module*, std::shared_ptr<const llvmtarget::JitModule>> modules_;
  std::unordered_map<const ir::Function*, PreparedKernel> kernels_;
  const ir::Function* lastKernel_ = nullptr;  // the last dispatch's kernel and its entry
  const PreparedKernel* lastPrepared_ = nullptr;
  // Reused by every dispatch: buffer bases and lengths, the parameter block.
  std::vector<void*> bufs_;
  std::vector<uint64_t> lens_;
  std::vector<std::byte> paramBytes_;
};

}  // namespace eph::runtime
