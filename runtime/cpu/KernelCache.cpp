#include "runtime/cpu/KernelCache.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "ir/KernelText.h"
#include "ir/Printer.h"
#include "runtime/DiskCache.h"
#include "runtime/cpu/HostAbi.h"

namespace eph::runtime {
namespace {

using llvmtarget::CompiledObject;
using llvmtarget::LowerOptions;

constexpr char kMagic[8] = {'E', 'P', 'H', 'C', 'O', 'B', 'J', '1'};

// The binary or shared library holding this code (and so the compiler):
// rebuilding it changes its size or modification time.
std::string buildId() {
  static const std::string id = [] {
    Dl_info info{};
    const char* file = ::dladdr(reinterpret_cast<void*>(&buildId), &info) && info.dli_fname && *info.dli_fname
                           ? info.dli_fname
                           : "/proc/self/exe";
    struct stat st{};
    if (::stat(file, &st) != 0 && ::stat("/proc/self/exe", &st) != 0) return std::string("unknown");
    return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

std::string optionsKey(const LowerOptions& o) {
  std::string key = "ephc cpu object 1\nbuild " + buildId() + "\ntarget " + llvmtarget::hostTargetKey() +
                    "\nO" + std::to_string(o.optLevel) + (o.hoistUniformLoops ? " hoist" : "") +
                    (o.lowerHost ? " host" : "") + (o.exportWorkgroup ? " workgroup" : "");
  for (const std::string& k : o.kernels) key += " @" + k;
  if (o.lowerHost && !o.hostEntry.empty()) key += " entry @" + o.hostEntry;
  return key + "\n";
}

LowerOptions kernelOptions(const ir::Function& kernel, LowerOptions o) {
  o.kernels = {kernel.name()};
  o.lowerHost = false;
  o.exportWorkgroup = false;  // the runtime calls only k.range
  return o;
}

LowerOptions hostOptions(LowerOptions o) {
  o.kernels = {""};  // no kernel has that name: none is lowered
  o.lowerHost = true;
  return o;
}

// ---- the file format: magic, key, host lowering, object, checksum ----------

void putU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void putStr(std::string& out, std::string_view s) {
  putU64(out, s.size());
  out.append(s);
}

struct Reader {
  std::string_view in;
  bool ok = true;
  uint64_t u64() {
    if (in.size() < 8) return ok = false, 0;
    uint64_t v;
    std::memcpy(&v, in.data(), 8);
    in.remove_prefix(8);
    return v;
  }
  std::string_view str() {
    uint64_t n = u64();
    if (!ok || n > in.size()) return ok = false, std::string_view();
    std::string_view s = in.substr(0, n);
    in.remove_prefix(n);
    return s;
  }
};

std::string encode(const std::string& key, const CompiledObject& code) {
  std::string out(kMagic, sizeof kMagic);
  putStr(out, key);
  const llvmtarget::HostLowering& h = code.host;
  putU64(out, h.unsupported ? 1 : 0);
  putStr(out, h.unsupported ? h.unsupported->message : "");
  putU64(out, uint64_t(h.errorSite));
  putU64(out, uint64_t(h.errorFunction));
  putU64(out, h.entries.size());
  for (const auto& [name, llvmName] : h.entries) {
    putStr(out, name);
    putStr(out, llvmName);
  }
  putStr(out, std::string_view(code.object.data(), code.object.size()));
  putU64(out, hashBytes(out.data(), out.size()));
  return out;
}

// The entry in `data` if it is whole and holds `key`.
std::optional<CompiledObject> decode(std::string_view data, const std::string& key) {
  if (data.size() < sizeof kMagic + 8 || std::memcmp(data.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  uint64_t sum;
  std::memcpy(&sum, data.data() + data.size() - 8, 8);
  if (sum != hashBytes(data.data(), data.size() - 8)) return std::nullopt;
  Reader r{data.substr(sizeof kMagic, data.size() - sizeof kMagic - 8)};
  if (r.str() != key || !r.ok) return std::nullopt;
  CompiledObject code;
  bool unsupported = r.u64() != 0;
  std::string_view message = r.str();
  if (unsupported) code.host.unsupported = Error{{}, std::string(message)};
  code.host.errorSite = long(r.u64());
  code.host.errorFunction = long(r.u64());
  uint64_t entries = r.u64();
  for (uint64_t i = 0; r.ok && i < entries; ++i) {
    std::string name(r.str());
    code.host.entries[name] = std::string(r.str());
  }
  std::string_view object = r.str();
  if (!r.ok || !r.in.empty() || object.empty()) return std::nullopt;
  code.object.assign(object.begin(), object.end());
  return code;
}

}  // namespace

// One key's compiled code; its mutex is held while it is compiled.
struct KernelCache::Slot {
  std::mutex mutex;
  Code code;
};

struct KernelCache::State {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Slot>> slots;
  std::atomic<size_t> compiled{0}, fromDisk{0}, fromMemory{0}, rejected{0};
};

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)), state_(std::make_unique<State>()) {}
KernelCache::~KernelCache() = default;

KernelCache& KernelCache::process() {
  static KernelCache* c = new KernelCache(cacheDir());
  return *c;
}

std::string KernelCache::kernelKey(const ir::Function& kernel, const LowerOptions& opts) {
  return optionsKey(kernelOptions(kernel, opts)) + ir::kernelText(kernel);
}

std::string KernelCache::hostKey(const ir::Module& m, const LowerOptions& opts) {
  return optionsKey(hostOptions(opts)) + ir::print(m);
}

std::string KernelCache::pathFor(const std::string& key) const {
  if (dir_.empty()) return {};
  return dir_ + "/" + hex64(hashBytes(key.data(), key.size())) + "-" +
         hex64(hashBytes(key.data(), key.size(), 0x9e3779b97f4a7c15ull)) + ".cpuobj";
}

KernelCacheStats KernelCache::stats() const {
  return {state_->compiled.load(), state_->fromDisk.load(), state_->fromMemory.load(), state_->rejected.load()};
}

Expected<KernelCache::Code> KernelCache::lookup(const std::string& key, const ir::Module& m, const LowerOptions& opts,
                                                bool host, bool compile) {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    std::shared_ptr<Slot>& s = state_->slots[key];
    if (!s) s = std::make_shared<Slot>();
    slot = s;
  }
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (slot->code) {
    ++state_->fromMemory;
    return slot->code;
  }
  llvmtarget::SymbolList symbols = host ? hostAbiSymbols() : llvmtarget::SymbolList{};
  std::string path = pathFor(key);
  if (!path.empty())
    if (std::optional<std::string> data = readFile(path)) {
      if (std::optional<CompiledObject> code = decode(*data, key)) {
        if (auto loaded = llvmtarget::loadObject(m, opts, *code, symbols)) {
          ++state_->fromDisk;
          slot->code = std::move(*loaded);
          return slot->code;
        }
      }
      ++state_->rejected;  // compiled again below, and the file replaced
    }
  if (!compile) return Code();
  auto code = llvmtarget::compileObject(m, opts);
  if (!code) return code.error();
  ++state_->compiled;
  auto loaded = llvmtarget::loadObject(m, opts, *code, symbols);
  if (!loaded) return loaded.error();
  if (!path.empty()) writeFileAtomic(path, encode(key, *code));
  slot->code = std::move(*loaded);
  return slot->code;
}

Expected<KernelCache::Code> KernelCache::kernel(const ir::Function& kernel, const LowerOptions& opts) {
  if (!kernel.isKernel() || !kernel.module())
    return Error{kernel.loc(), "@" + kernel.name() + " is not a kernel of a module"};
  return lookup(kernelKey(kernel, opts), *kernel.module(), kernelOptions(kernel, opts), false);
}

Expected<KernelCache::Code> KernelCache::find(const ir::Function& kernel, const LowerOptions& opts) {
  if (!kernel.isKernel() || !kernel.module())
    return Error{kernel.loc(), "@" + kernel.name() + " is not a kernel of a module"};
  return lookup(kernelKey(kernel, opts), *kernel.module(), kernelOptions(kernel, opts), false, false);
}

Expected<std::vector<KernelCache::Code>> KernelCache::kernels(std::span<const ir::Function* const> kernels,
                                                              const LowerOptions& opts, ThreadPool& pool) {
  for (const ir::Function* k : kernels)
    if (!k->isKernel() || !k->module()) return Error{k->loc(), "@" + k->name() + " is not a kernel of a module"};
  std::vector<std::string> keys;
  for (const ir::Function* k : kernels) keys.push_back(kernelKey(*k, opts));
  std::vector<std::optional<Expected<Code>>> got(kernels.size());
  pool.parallelFor(kernels.size(), 1, [&](uint64_t begin, uint64_t end) {
    for (uint64_t i = begin; i < end; ++i)
      got[i] = lookup(keys[i], *kernels[i]->module(), kernelOptions(*kernels[i], opts), false);
    return true;
  });
  std::vector<Code> out;
  for (auto& g : got) {
    if (!*g) return g->error();
    out.push_back(**g);
  }
  return out;
}

Expected<KernelCache::Code> KernelCache::host(const ir::Module& m, const LowerOptions& opts) {
  return lookup(hostKey(m, opts), m, hostOptions(opts), true);
}

Expected<KernelCache::Code> compiledModule(const ir::Module& m, const LowerOptions& opts) {
  return KernelCache::process().host(m, opts);
}

size_t compiledModuleCount() { return KernelCache::process().stats().compiled; }

}  // namespace eph::runtime
