// JIT compilation with ORC LLJIT: the optimised module is compiled for the
// host CPU into this process, and each kernel's workgroup and range
// functions are looked up once.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/Support/Error.h>

#include <algorithm>
#include <cmath>
#include <map>

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
  std::span<void* const> hostFunctions() const override { return functions; }
  HostBoxReadFn hostBoxRead() const override { return boxRead; }
  HostBoxMakeFn hostBoxMake() const override { return boxMake; }
  HostBoxReadFn boxRead = nullptr;
  HostBoxMakeFn boxMake = nullptr;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::map<std::string, Kernel> kernels;
  std::map<std::string, HostEntryFn> entries;
  std::optional<Error> unsupported;  // its location is that of the first module compiled
  long errorSite = -1, errorFunction = -1;
  std::span<void* const> functions;
};

std::string message(llvm::Error e) { return llvm::toString(std::move(e)); }

}  // namespace

Expected<std::unique_ptr<JitModule>> jitCompile(const ir::Module& m, const LowerOptions& opts,
                                                const std::vector<std::pair<std::string, void*>>& extra) {
  initNativeTarget();
  auto jtmb = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!jtmb) return Error{{}, "cpu target: " + message(jtmb.takeError())};
  jtmb->setCodeGenOptLevel(codeGenLevel(opts.optLevel));
  jtmb->setOptions(targetOptions());
  auto tm = jtmb->createTargetMachine();
  if (!tm) return Error{{}, "cpu target: " + message(tm.takeError())};

  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> mod;
  HostLowering host;
  if (Status s = lowerAndOptimize(m, opts, **tm, *ctx, mod, &host); !s) return s.error();

  auto jit = llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
  if (!jit) return Error{{}, "cpu target: " + message(jit.takeError())};
  llvm::orc::JITDylib& lib = (*jit)->getMainJITDylib();
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) return Error{{}, "cpu target: " + message(process.takeError())};
  lib.addGenerator(std::move(*process));

  // The C library functions kernels call, bound directly so that a static
  // binary works too.
  using D1 = double (*)(double);
  using D2 = double (*)(double, double);
  llvm::orc::SymbolMap symbols;
  auto bind = [&](const char* name, auto* fn) {
    symbols[(*jit)->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(reinterpret_cast<void*>(fn)),
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
  if (auto err = lib.define(llvm::orc::absoluteSymbols(std::move(symbols))))
    return Error{{}, "cpu target: " + message(std::move(err))};

  if (auto err = (*jit)->addIRModule(llvm::orc::ThreadSafeModule(std::move(mod), std::move(ctx))))
    return Error{{}, "cpu target: " + message(std::move(err))};

  auto out = std::make_unique<LlJitModule>();
  for (const auto& f : m.functions()) {
    if (!f->isKernel()) continue;
    if (!opts.kernels.empty() && std::find(opts.kernels.begin(), opts.kernels.end(), f->name()) == opts.kernels.end())
      continue;
    auto wg = (*jit)->lookup(f->name());
    if (!wg) return Error{f->loc(), "cpu target: " + message(wg.takeError())};
    auto range = (*jit)->lookup(f->name() + ".range");
    if (!range) return Error{f->loc(), "cpu target: " + message(range.takeError())};
    out->kernels[f->name()] = {wg->toPtr<WorkgroupFn>(), range->toPtr<RangeFn>(), workgroupLayout(*f).bytes};
  }
  if (!opts.lowerHost) {
    out->unsupported = Error{{}, "host functions were not lowered (LowerOptions::lowerHost is off)"};
  } else if (host.unsupported) {
    out->unsupported = host.unsupported;
    out->errorSite = host.errorSite;
    out->errorFunction = host.errorFunction;
  } else {
    for (const auto& [name, llvmName] : host.entries) {
      auto fn = (*jit)->lookup(llvmName);
      if (!fn) return Error{{}, "cpu target: " + message(fn.takeError())};
      out->entries[name] = fn->toPtr<HostEntryFn>();
    }
    auto table = (*jit)->lookup(kHostFunctionTable);
    if (!table) return Error{{}, "cpu target: " + message(table.takeError())};
    out->functions = std::span<void* const>(table->toPtr<void* const*>(), hostLoweredFunctions(m).size());
    if (!out->functions.empty()) {
      auto read = (*jit)->lookup(kHostBoxRead);
      if (!read) return Error{{}, "cpu target: " + message(read.takeError())};
      auto make = (*jit)->lookup(kHostBoxMake);
      if (!make) return Error{{}, "cpu target: " + message(make.takeError())};
      out->boxRead = read->toPtr<HostBoxReadFn>();
      out->boxMake = make->toPtr<HostBoxMakeFn>();
    }
  }
  out->jit = std::move(*jit);
  return std::unique_ptr<JitModule>(std::move(out));
}

}  // namespace eph::llvmtarget
