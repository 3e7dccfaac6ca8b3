#include "runtime/cpu/KernelCache.h"

#include <functional>
#include <map>
#include <mutex>

#include "ir/Printer.h"
#include "runtime/cpu/HostAbi.h"

namespace eph::runtime {
namespace {

struct Entry {
  std::string text;
  std::shared_ptr<const llvmtarget::JitModule> module;
};

struct Cache {
  std::mutex mutex;
  std::multimap<size_t, Entry> entries;  // by hash of the key text
  size_t count = 0;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: JIT code may run until exit
  return *c;
}

}  // namespace

Expected<std::shared_ptr<const llvmtarget::JitModule>> compiledModule(
    const ir::Module& m, const llvmtarget::LowerOptions& opts) {
  std::string key = "O" + std::to_string(opts.optLevel) + (opts.hoistUniformLoops ? " hoist" : "") +
                    (opts.lowerHost ? " host" : "");
  for (const std::string& k : opts.kernels) key += " @" + k;
  key += "\n" + ir::print(m);
  size_t hash = std::hash<std::string>{}(key);
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  auto [lo, hi] = c.entries.equal_range(hash);
  for (auto it = lo; it != hi; ++it)
    if (it->second.text == key) return it->second.module;
  auto compiled = llvmtarget::jitCompile(m, opts, opts.lowerHost ? hostAbiSymbols() : std::vector<std::pair<std::string, void*>>{});
  if (!compiled) return compiled.error();
  std::shared_ptr<const llvmtarget::JitModule> shared(std::move(*compiled));
  c.entries.emplace(hash, Entry{std::move(key), shared});
  ++c.count;
  return shared;
}

size_t compiledModuleCount() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.count;
}

}  // namespace eph::runtime
