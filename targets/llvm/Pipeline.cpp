// From an ir::Module to checked, optimised LLVM IR for the host CPU, and from
// there to text or an object file. The JIT (Jit.cpp) shares lowerAndOptimize.
#include "targets/llvm/Pipeline.h"

#include <llvm/Config/llvm-config.h>
#include <llvm/IR/DiagnosticHandler.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <mutex>

#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {

Status lowerAndOptimizeOnce(const ir::Module& m, const LowerOptions& opts, llvm::TargetMachine& tm,
                            llvm::LLVMContext& ctx, std::unique_ptr<llvm::Module>& out, HostLowering* host);

void initNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    // LLVM 19's loop vectoriser forms stride-k interleaved loads from
    // `(k * i) & (2^n - 1)` without the wrap-around, reading past the end
    // (tests/lit/llvm/regress-interleaved-wrap.eir, found by the random
    // programs): no interleaved-access vectorisation in this process.
    auto& options = llvm::cl::getRegisteredOptions();
    if (auto it = options.find("enable-interleaved-mem-accesses"); it != options.end())
      it->second->addOccurrence(0, "enable-interleaved-mem-accesses", "false");
  });
}

std::string hostFeatures() {
  std::string s;
  for (auto& kv : llvm::sys::getHostCPUFeatures()) s += std::string(s.empty() ? "" : ",") + (kv.second ? "+" : "-") + kv.first().str();
  return s;
}

llvm::TargetOptions targetOptions() {
  llvm::TargetOptions o;
  // The interpreter rounds every operation: no fused multiply-add.
  o.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  return o;
}

llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel) {
  switch (optLevel) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(unsigned optLevel) {
  initNativeTarget();
  std::string triple = llvm::sys::getProcessTriple(), err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) return Error{{}, "cpu target: no LLVM target for " + triple + ": " + err};
  llvm::TargetMachine* tm = target->createTargetMachine(triple, llvm::sys::getHostCPUName(), hostFeatures(),
                                                        targetOptions(), llvm::Reloc::PIC_, std::nullopt,
                                                        codeGenLevel(optLevel));
  if (!tm) return Error{{}, "cpu target: cannot create a target machine for " + triple};
  return std::unique_ptr<llvm::TargetMachine>(tm);
}

namespace {

// A loop the kernels ask LLVM to vectorise (llvm.loop.vectorize.enable:
// invocation loops) that it cannot runs as it is; LLVM would still print
// "warning: ... loop not vectorized" to the user's stderr for each.
struct QuietMissedTransformations : llvm::DiagnosticHandler {
  bool handleDiagnostics(const llvm::DiagnosticInfo& d) override {
    return d.getKind() == llvm::DK_OptimizationFailure;  // (true: handled; the rest as LLVM does)
  }
};

}  // namespace

Status lowerAndOptimize(const ir::Module& m, const LowerOptions& opts, llvm::TargetMachine& tm,
                        llvm::LLVMContext& ctx, std::unique_ptr<llvm::Module>& out, HostLowering* host) {
  ctx.setDiagnosticHandler(std::make_unique<QuietMissedTransformations>());
  Status s = lowerAndOptimizeOnce(m, opts, tm, ctx, out, host);
  if (s || !opts.lowerHost) return s;
  // Whatever went wrong with host code must not cost the kernels: lower
  // them alone, and keep the reason host code is interpreted.
  LowerOptions kernelsOnly = opts;
  kernelsOnly.lowerHost = false;
  if (Status k = lowerAndOptimizeOnce(m, kernelsOnly, tm, ctx, out, nullptr); !k) return k;
  if (host) host->unsupported = s.error();
  return Status::ok();
}

Status lowerAndOptimizeOnce(const ir::Module& m, const LowerOptions& opts, llvm::TargetMachine& tm,
                            llvm::LLVMContext& ctx, std::unique_ptr<llvm::Module>& out, HostLowering* host) {
  ModuleEmitter emitter(ctx, m, opts);
  if (!emitter.run()) return *emitter.error;
  if (host) {
    host->unsupported = emitter.hostError;
    host->entries = emitter.hostEntries;
    // Host functions and device functions are copied unchanged (BarrierCalls.h):
    // the lowered module's host sites and functions have the module's indices.
    if (emitter.hostError && emitter.hostErrorOp) {
      std::vector<const ir::Op*> sites = hostSites(emitter.irm);
      auto it = std::find(sites.begin(), sites.end(), emitter.hostErrorOp);
      if (it != sites.end()) host->errorSite = long(it - sites.begin());
    }
    if (emitter.hostError && emitter.hostErrorFn)
      for (size_t i = 0; i < emitter.irm.functions().size(); ++i)
        if (emitter.irm.functions()[i].get() == emitter.hostErrorFn) host->errorFunction = long(i);
  }
  std::unique_ptr<llvm::Module> mod = std::move(emitter.mod);
  mod->setTargetTriple(tm.getTargetTriple().str());
  mod->setDataLayout(tm.createDataLayout());
  std::string cpu = tm.getTargetCPU().str(), features = tm.getTargetFeatureString().str();
  // LLVM tunes Intel's AVX-512 processors to prefer 256-bit vectors (a
  // lower clock with 512-bit ones); a kernel's invocation loop is worth the
  // full width: the strip matmul keeps 6 rows x 64 lanes in 24 zmm, which
  // ymm spill (1000^3 on one Xeon 8592+ core: 61 GFLOP/s in ymm).
  const bool avx512 = features.find("+avx512f") != std::string::npos;
  for (llvm::Function& f : *mod) {
    if (f.isDeclaration()) continue;
    f.addFnAttr("target-cpu", cpu);
    f.addFnAttr("target-features", features);
    if (avx512) f.addFnAttr("prefer-vector-width", "512");
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*mod, &os))
    return Error{{}, "internal error: the cpu target built invalid LLVM IR:\n" + os.str()};

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opts.optLevel >= 2;
  pto.SLPVectorization = opts.optLevel >= 2;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = opts.optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : opts.optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : opts.optLevel == 2 ? llvm::OptimizationLevel::O2
                                                       : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = opts.optLevel == 0 ? pb.buildO0DefaultPipeline(level)
                                                   : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(*mod, mam);
  out = std::move(mod);
  return Status::ok();
}

Expected<std::string> emitLlvmText(const ir::Module& m, const LowerOptions& opts) {
  auto tm = hostTargetMachine(opts.optLevel);
  if (!tm) return tm.error();
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
  HostLowering host;
  if (Status s = lowerAndOptimize(m, opts, **tm, ctx, mod, &host); !s) return s.error();
  std::string text;
  llvm::raw_string_ostream os(text);
  if (host.unsupported)
    os << "; host functions are not lowered; they run in the interpreter: " << host.unsupported->str() << "\n";
  mod->print(os, nullptr);
  return os.str();
}

namespace {

size_t countOps(const ir::Region& r) {
  size_t n = 0;
  for (const auto& op : r.ops()) {
    ++n;
    for (unsigned i = 0; i < op->numRegions(); ++i) n += countOps(op->region(i));
  }
  return n;
}

// Host code past this many ops is compiled with LLVM's fast code generator
// (its IR is still optimised at opts.optLevel): the default one's machine
// passes take minutes on a host function of thousands of straight-line
// calls (a tensor program of hundreds of ops, a .vg file's @main storing
// every leaf), and host code is glue around the kernels.
constexpr size_t kLargeHostOps = 2000;

}  // namespace

Expected<CompiledObject> compileObject(const ir::Module& m, const LowerOptions& opts) {
  size_t hostOps = 0;
  if (opts.lowerHost)
    for (const auto& f : m.functions())
      if (f->isHost()) hostOps += countOps(f->body());
  auto tm = hostTargetMachine(hostOps > kLargeHostOps ? 0 : opts.optLevel);
  if (!tm) return tm.error();
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> mod;
  CompiledObject out;
  if (Status s = lowerAndOptimize(m, opts, **tm, ctx, mod, &out.host); !s) return s.error();
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return Error{{}, "cpu target: this LLVM cannot write object files for the host"};
  pm.run(*mod);
  out.object.assign(buffer.begin(), buffer.end());
  return out;
}

Expected<std::vector<char>> emitObject(const ir::Module& m, const LowerOptions& opts) {
  auto code = compileObject(m, opts);
  if (!code) return code.error();
  return std::move(code->object);
}

std::string hostCpuDescription() {
  return llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str();
}

std::string llvmVersion() { return LLVM_VERSION_STRING; }

std::string hostTargetKey() {
  static const std::string key = llvm::sys::getProcessTriple() + " " + llvm::sys::getHostCPUName().str() + " " +
                                 hostFeatures() + " LLVM " + LLVM_VERSION_STRING;
  return key;
}

}  // namespace eph::llvmtarget
