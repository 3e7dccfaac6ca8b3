// Compiled code for the cpu target, cached by content, in memory for the
// life of the process and on disk across processes.
//
// A kernel is compiled alone (with the device functions it reaches) and
// keyed by its printed text, the printed device functions it reaches
// (ir::kernelText, which Vulkan pipelines are keyed by too), the
// lowering options, the host target (triple, CPU, features, LLVM version,
// llvmtarget::hostTargetKey) and the binary or shared library holding the
// compiler (its size and modification time, so that a rebuilt compiler never
// reuses another's code). Two
// modules that share a kernel share its code; a module where one kernel
// changed compiles only that one. Host code (HostAbi.h) is keyed the same
// way by the whole module's text.
//
// On disk: one file per key in runtime::cacheDir() (beside the Vulkan
// pipeline cache: EPH_PIPELINE_CACHE=DIR|off, else $XDG_CACHE_HOME/ephc, else
// ~/.cache/ephc), named by the key's hash, holding a header, the whole key,
// what host lowering produced, the object code and a checksum. A file whose
// header, key or checksum does not match (truncated, garbled, a hash
// collision) is ignored, and the code is compiled and the file written again
// (atomically, runtime/DiskCache.h, so concurrent processes are safe).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "ir/IR.h"
#include "runtime/cpu/ThreadPool.h"
#include "targets/llvm/Llvm.h"

namespace eph::runtime {

struct KernelCacheStats {
  size_t compiled = 0;    // LLVM ran (the test hook: what was compiled)
  size_t fromDisk = 0;    // loaded from a file of an earlier run
  size_t fromMemory = 0;  // found in memory
  size_t rejected = 0;    // files ignored as corrupt or not matching their key
};

class KernelCache {
 public:
  using Code = std::shared_ptr<const llvmtarget::JitModule>;
  // dir: where the files go; empty: memory only.
  explicit KernelCache(std::string dir);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;
  // The process's cache, in runtime::cacheDir() (never destroyed: compiled
  // code may run until exit).
  static KernelCache& process();

  // The compiled kernel (JitModule::kernel(kernel.name())), compiled or
  // loaded on the first request for its key. Thread-safe; concurrent
  // requests for one key compile it once.
  Expected<Code> kernel(const ir::Function& kernel, const llvmtarget::LowerOptions& opts);
  // The compiled kernel if it is in memory or on disk; null (compiling
  // nothing) if not.
  Expected<Code> find(const ir::Function& kernel, const llvmtarget::LowerOptions& opts);
  // Several kernels, those not cached compiled in parallel on `pool`; the
  // first error (in the order given) if any failed.
  Expected<std::vector<Code>> kernels(std::span<const ir::Function* const> kernels,
                                      const llvmtarget::LowerOptions& opts, ThreadPool& pool);
  // The host code of `m` (lowerHost on, no kernels) with the host runtime
  // calls bound.
  Expected<Code> host(const ir::Module& m, const llvmtarget::LowerOptions& opts);

  // The key of a kernel and of a module's host code (tests).
  static std::string kernelKey(const ir::Function& kernel, const llvmtarget::LowerOptions& opts);
  static std::string hostKey(const ir::Module& m, const llvmtarget::LowerOptions& opts);
  // The file a key is kept in (empty without a directory).
  std::string pathFor(const std::string& key) const;
  const std::string& dir() const { return dir_; }
  KernelCacheStats stats() const;

 private:
  struct Slot;
  Expected<Code> lookup(const std::string& key, const ir::Module& m, const llvmtarget::LowerOptions& opts,
                        bool host, bool compile = true);
  std::string dir_;
  struct State;
  std::unique_ptr<State> state_;
};

// The host code of `m` from the process cache (opts: hostLowerOptions()).
Expected<KernelCache::Code> compiledModule(const ir::Module& m, const llvmtarget::LowerOptions& opts);
// Host modules and kernels compiled by LLVM in this process's cache.
size_t compiledModuleCount();

}  // namespace eph::runtime
