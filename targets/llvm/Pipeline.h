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
// Lowers m, checks the result with verifyModule and runs the default
// pipeline of opts.optLevel for `tm`.
Status lowerAndOptimize(const ir::Module& m, const LowerOptions& opts, llvm::TargetMachine& tm,
                        llvm::LLVMContext& ctx, std::unique_ptr<llvm::Module>& out,
                        HostLowering* host = nullptr);

}  // namespace eph::llvmtarget
