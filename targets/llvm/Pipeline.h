// Internal to targets/llvm: the host target machine and the lowering +
// verification + optimisation pipeline that emitLlvmText, emitObject and the
// JIT share.
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "targets/llvm/Llvm.h"

namespace eph::llvmtarget {

void initNativeTarget();
llvm::TargetOptions targetOptions();
llvm::CodeGenOptLevel codeGenLevel(unsigned optLevel);
// A target machine for the CPU this process runs on (its CPU and features).
Expected<std::unique_ptr<llvm::TargetMachine>> hostTargetMachine(unsigned optLevel);
// What host lowering (LowerOptions::lowerHost) produced.
struct HostLowering {
  std::optional<Error> unsupported;             // why host code was not lowered
  // Where, as indices that hold for any module with the same text: the op's
  // index in hostSites, else the function's in the module, else -1.
  long errorSite = -1, errorFunction = -1;
  std::map<std::string, std::string> entries;   // IR name -> entry wrapper's LLVM name
};

// Lowers m, checks the result with verifyModule and runs the default
// pipeline of opts.optLevel for `tm`.
Status lowerAndOptimize(const ir::Module& m, const LowerOptions& opts, llvm::TargetMachine& tm,
                        llvm::LLVMContext& ctx, std::unique_ptr<llvm::Module>& out,
                        HostLowering* host = nullptr);

}  // namespace eph::llvmtarget
