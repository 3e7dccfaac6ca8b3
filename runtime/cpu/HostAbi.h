// The runtime side of the CPU host ABI (targets/llvm/HostAbi.h): the context
// compiled host code runs in, the runtime calls it makes for host-only ops
// (alloc, free, h2d, d2h, copy, dispatch, wait, buffer.len) and error paths,
// and running a compiled host function against any interp::DeviceHooks (a
// runtime::DeviceSet of CpuDevice, VulkanDevice, InterpDevice, checked or
// not). Every error is the interpreter's, at the op's location: the first
// one is kept in the context, compiled code returns at once, and
// runCompiledHost returns it.
//
// Host buffers live in the context in the storage layout of ir/Layout.h
// with one written flag per element. Buffers of the entry's arguments come
// from the interpreter's Memory and are written back to it when the entry
// returns; buffers the entry returns or leaves live are added to it, so the
// caller sees the Memory the interpreter would have left.
//
//   auto jit = runtime::compiledModule(m, runtime::hostLowerOptions());
//   if (!runtime::compiledHostProblem(**jit, entry))
//     auto results = runtime::runCompiledHost(**jit, deviceSet, in.memory(), entry, args);
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/interp/Interp.h"
#include "targets/llvm/Llvm.h"

namespace eph::runtime {

// The lowering options of compiled host code (LLVM -O2, host lowering on).
llvmtarget::LowerOptions hostLowerOptions();

// The runtime calls, by their HostAbi.h names, for the JIT to bind.
std::vector<std::pair<std::string, void*>> hostAbiSymbols();

// Why `entry` cannot run as compiled code of `jit` (the module's host code
// was not lowered, or the entry takes or returns function values), or
// nullopt when it can.
std::optional<Error> compiledHostProblem(const llvmtarget::JitModule& jit, const ir::Function& entry);

// Runs host function `entry` as compiled code; device work goes to `hooks`,
// the arguments' host buffers are in `memory`. As interp::Interpreter::call
// with those hooks, but compiled.
Expected<std::vector<interp::RtValue>> runCompiledHost(const llvmtarget::JitModule& jit, interp::DeviceHooks& hooks,
                                                       interp::Memory& memory, const ir::Function& entry,
                                                       std::vector<interp::RtValue> args);

}  // namespace eph::runtime
