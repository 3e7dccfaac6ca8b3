// Loading compiled objects into this process with ORC: one LLJIT for the
// process, one JITDylib per loaded object (so that kernels of the same name
// from different modules never clash), removed with its JitModule. Each
// kernel's workgroup and range functions are looked up once.
#include <llvm/ExecutionEngine/Orc/DebugUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ObjectTransformLayer.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

#include "targets/llvm/Pipeline.h"

namespace eph::llvmtarget {
namespace {

// Half-precision conversions LLVM calls on CPUs without native f16
// conversions (normally from compiler-rt or libgcc, which a static binary may
// not export to the JIT).
extern "C" float ephExtendHalfToFloat(_Float16 h) { return float(h); }
extern "C" _Float16 ephTruncFloatToHalf(float f) { return _Float16(f); }
extern "C" _Float16 ephTruncDoubleToHalf(double d) { return _Float16(d); }

class LlJitModule : public JitModule {
 public:
  ~LlJitModule() override;
  const Kernel* kernel(const std::string& name) const override {
    auto it = kernels.find(name);
    return it == kernels.end() ? nullptr : &it->second;
  }
  HostEntryFn hostEntry(const std::string& name) const override {
    auto it = entries.find(name);
    return it == entries.end() ? nullptr : it->second;
  }
  std::optional<Error> hostUnsupported(const ir::Module& m) const override {
    if (!unsupported) return std::nullopt;
    Error e = *unsupported;
    e.loc = {};
    if (errorSite >= 0) {
      std::vector<const ir::Op*> sites = hostSites(m);
      if (size_t(errorSite) < sites.size()) e.loc = sites[errorSite]->loc();
    }
    if (!e.loc.known() && errorFunction >= 0 && size_t(errorFunction) < m.functions().size())
      e.loc = m.functions()[errorFunction]->loc();
    return e;
  }
  std::vector<const ir::Function*> hostLowered(const ir::Module& m) const override {
    return hostLoweredFunctions(m, hostRoot);
  }
  std::span<void* const> hostFunctions() const override { return functions; }
  HostBoxReadFn hostBoxRead() const override { return boxRead; }
  HostBoxMakeFn hostBoxMake() const override { return boxMake; }
  HostBoxReadFn boxRead = nullptr;
  HostBoxMakeFn boxMake = nullptr;
  llvm::orc::JITDylib* lib = nullptr;
  std::map<std::string, Kernel> kernels;
  std::map<std::string, HostEntryFn> entries;
  std::optional<Error> unsupported;  // its location is that of the first module compiled
  long errorSite = -1, errorFunction = -1;
  std::span<void* const> functions;
  std::string hostRoot;  // LowerOptions::hostEntry
};

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

// The process's LLJIT, made on first use and never destroyed (code may run
// until exit). `mutex` serialises adding and removing JITDylibs.
struct ProcessJit {
  std::mutex mutex;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::optional<Error> error;
  uint64_t next = 0;
};

ProcessJit& processJit() {
  static ProcessJit* p = [] {
    auto* p = new ProcessJit();
    initNativeTarget();
    auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      p->error = Error{{}, "cpu target: " + message(jtmb.takeError())};
      return p;
    }
    auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      p->error = Error{{}, "cpu target: " + message(jit.takeError())};
      return p;
    }
    p->jit = std::move(*jit);
    // EPH_JIT_DUMP=DIR: every object loaded is also written to DIR (for
    // objdump and perf; docs/runtime.md).
    if (const char* dir = std::getenv("EPH_JIT_DUMP"))
      p->jit->getObjTransformLayer().setTransform(llvm::orc::DumpObjects(dir));
    return p;
  }();
  return *p;
}

LlJitModule::~LlJitModule() {
  if (!lib) return;
  ProcessJit& p = processJit();
  std::lock_guard<std::mutex> lock(p.mutex);
  llvm::consumeError(p.jit->getExecutionSession().removeJITDylib(*lib));
}

// A fresh JITDylib that resolves the process's symbols, the C library
// functions kernels call (bound directly, so that a static binary works
// too) and `extra`.
Expected<llvm::orc::JITDylib*> newLibrary(llvm::orc::LLJIT& jit, uint64_t id, const SymbolList& extra) {
  auto lib = jit.getExecutionSession().createJITDylib("eph" + std::to_string(id));
  if (!lib) return Error{{}, "cpu target: " + message(lib.takeError())};
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      jit.getDataLayout().getGlobalPrefix());
  if (!process) return Error{{}, "cpu target: " + message(process.takeError())};
  lib->addGenerator(std::move(*process));
  using D1 = double (*)(double);
  using D2 = double (*)(double, double);
  llvm::orc::SymbolMap symbols;
  auto bind = [&](const char* name, auto* fn) {
    symbols[jit.mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
                                          llvm::JITSymbolFlags::Exported};
  };
  bind("exp", static_cast<D1>(&::exp));
  bind("log", static_cast<D1>(&::log));
  bind("sin", static_cast<D1>(&::sin));
  bind("cos", static_cast<D1>(&::cos));
  bind("tan", static_cast<D1>(&::tan));
  bind("tanh", static_cast<D1>(&::tanh));
  bind("pow", static_cast<D2>(&::pow));
  for (auto [name, fn] : std::initializer_list<std::pair<const char*, D1>>{
           {"asin", &::asin},   {"acos", &::acos},   {"atan", &::atan},   {"sinh", &::sinh},
           {"cosh", &::cosh},   {"asinh", &::asinh}, {"acosh", &::acosh}, {"atanh", &::atanh},
           {"erf", &::erf},     {"exp2", &::exp2},   {"log2", &::log2},   {"log1p", &::log1p},
           {"expm1", &::expm1}, {"round", &::round}, {"trunc", &::trunc}})
    bind(name, fn);
  bind("atan2", static_cast<D2>(&::atan2));
  bind("fma", static_cast<double (*)(double, double, double)>(&::fma));
  bind("fmaf", static_cast<float (*)(float, float, float)>(&::fmaf));
  bind("roundf", static_cast<float (*)(float)>(&::roundf));
  bind("truncf", static_cast<float (*)(float)>(&::truncf));
  bind("fmod", static_cast<D2>(&::fmod));
  bind("fmodf", static_cast<float (*)(float, float)>(&::fmodf));
  bind("__extendhfsf2", &ephExtendHalfToFloat);
  bind("__gnu_h2f_ieee", &ephExtendHalfToFloat);
  bind("__truncsfhf2", &ephTruncFloatToHalf);
  bind("__gnu_f2h_ieee", &ephTruncFloatToHalf);
  bind("__truncdfhf2", &ephTruncDoubleToHalf);
  for (const auto& [name, fn] : extra) bind(name.c_str(), fn);
  if (auto err = lib->define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return Error{{}, "cpu target: " + message(std::move(err))};
  return &*lib;
}

}  // namespace

Expected<std::unique_ptr<JitModule>> loadObject(const ir::Module& m, const LowerOptions& opts,
                                                const CompiledObject& code, const SymbolList& extra) {
  ProcessJit& p = processJit();
  if (p.error) return *p.error;
  llvm::orc::LLJIT& jit = *p.jit;
  auto out = std::make_unique<LlJitModule>();
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    auto lib = newLibrary(jit, p.next++, extra);
    if (!lib) return lib.error();
    out->lib = *lib;
    auto buffer = llvm::MemoryBuffer::getMemBufferCopy(
        llvm::StringRef(code.object.data(), code.object.size()), "eph-object");
    if (auto err = jit.addObjectFile(*out->lib, std::move(buffer)))
      return Error{{}, "cpu target: " + message(std::move(err))};
  }
  auto lookup = [&](const std::string& name) { return jit.lookup(*out->lib, name); };
  for (const auto& f : m.functions()) {
    if (!f->isKernel()) continue;
    if (!opts.kernels.empty() && std::find(opts.kernels.begin(), opts.kernels.end(), f->name()) == opts.kernels.end())
      continue;
    WorkgroupFn workgroup = nullptr;
    if (opts.exportWorkgroup) {
      auto wg = lookup(f->name());
      if (!wg) return Error{f->loc(), "cpu target: " + message(wg.takeError())};
      workgroup = wg->toPtr<WorkgroupFn>();
    }
    auto range = lookup(f->name() + ".range");
    if (!range) return Error{f->loc(), "cpu target: " + message(range.takeError())};
    out->kernels[f->name()] = {workgroup, range->toPtr<RangeFn>(), workgroupLayout(*f).bytes};
  }
  const HostLowering& host = code.host;
  out->hostRoot = opts.hostEntry;
  if (!opts.lowerHost) {
    out->unsupported = Error{{}, "host functions were not lowered (LowerOptions::lowerHost is off)"};
  } else if (host.unsupported) {
    out->unsupported = host.unsupported;
    out->errorSite = host.errorSite;
    out->errorFunction = host.errorFunction;
  } else {
    for (const auto& [name, llvmName] : host.entries) {
      auto fn = lookup(llvmName);
      if (!fn) return Error{{}, "cpu target: " + message(fn.takeError())};
      out->entries[name] = fn->toPtr<HostEntryFn>();
    }
    auto table = lookup(kHostFunctionTable);
    if (!table) return Error{{}, "cpu target: " + message(table.takeError())};
    out->functions = std::span<void* const>(table->toPtr<void* const*>(), hostLoweredFunctions(m, opts.hostEntry).size());
    if (!out->functions.empty()) {
      auto read = lookup(kHostBoxRead);
      if (!read) return Error{{}, "cpu target: " + message(read.takeError())};
      auto make = lookup(kHostBoxMake);
      if (!make) return Error{{}, "cpu target: " + message(make.takeError())};
      out->boxRead = read->toPtr<HostBoxReadFn>();
      out->boxMake = make->toPtr<HostBoxMakeFn>();
    }
  }
  return std::unique_ptr<JitModule>(std::move(out));
}

Expected<std::unique_ptr<JitModule>> jitCompile(const ir::Module& m, const LowerOptions& opts, const SymbolList& extra) {
  auto code = compileObject(m, opts);
  if (!code) return code.error();
  return loadObject(m, opts, *code, extra);
}

}  // namespace eph::llvmtarget
