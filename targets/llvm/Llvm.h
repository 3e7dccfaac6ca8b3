// The LLVM CPU target: lowers the kernels and device functions of a module
// to LLVM IR with IRBuilder, checks it with verifyModule, optimises it with
// the new pass manager (-O0..-O3) for the host CPU, and then JIT-compiles it
// with ORC LLJIT or writes LLVM IR text or an object file. With
// LowerOptions::lowerHost, host functions are lowered too (the host ABI is
// in targets/llvm/HostAbi.h): host-only ops become calls into the runtime
// (runtime/cpu/HostAbi.h), which forwards device work to any Device. A
// module whose host code uses an op the host lowering does not support
// still compiles its kernels; its host code runs in the interpreter
// (JitModule::hostUnsupported says why).
//
// How a kernel is lowered (the call ABI is in targets/llvm/KernelAbi.h):
//
// A kernel becomes a function over one workgroup. Its body is split into
// *runs*: maximal sequences of ops without a barrier, each emitted as a loop
// over the workgroup's invocations (z, y, x nested, x innermost so that LLVM
// vectorises across invocations). Between runs sit the *workgroup-level*
// ops, executed once for the whole workgroup:
//   - `barrier` itself (the boundary between two runs);
//   - `if`, `for` and `while` ops that contain a barrier: their condition or
//     bounds must be the same in every invocation. Values computed at
//     workgroup level (constants, parameters, workgroup ids and sizes,
//     buffer lengths and pure arithmetic on those) are uniform by
//     construction; any other condition is checked at run time, and
//     disagreement is reported as barrier divergence (as the interpreter
//     does). `for` bounds must agree exactly; `if` conditions and `while`
//     conditions must agree on every evaluation.
//   - `for` loops with uniform bounds at the top of a workgroup-level region,
//     even without a barrier: interchanging them with the invocation loop
//     makes the invocation loop innermost, where it vectorises. (Invocations
//     that do not synchronise may interleave in any order on a GPU too.)
//   - `load`s and `vec.load`s of a uniform buffer at a uniform index, once
//     for the workgroup (a broadcast where a vectorised run uses it). The
//     run before such a load ends first when it may write memory (stores,
//     atomics, calls), so each invocation still reads after its own earlier
//     stores.
// Values that live across runs (and loop-carried values of workgroup-level
// loops) are kept in per-invocation arrays; LLVM keeps them in registers
// when a run is fully vectorised. Cheap values (ids and pure arithmetic on
// ids and uniform values) are recomputed in each run instead, so LLVM sees
// that an index like workgroup_id * 64 + local_id is affine.
//
// Every buffer access is bounds-checked (a trap, never a stray write). Inside
// a run, accesses whose index is (x id) + (the same for every x) are checked
// once for the whole row of x ids before the x loop, which then runs in a
// copy without their per-access checks (or, if any could fail, in the
// checked copy), so elementwise kernels vectorise like plain loops. Around a
// workgroup-level `for`, accesses whose index only grows with the invocation
// ids and the loop's counter are checked at the loop's two corners before it
// (exact values: LoopBounds.cpp), and the loop runs in a copy without their
// checks when they hold: the x loops inside it then have no checked copy, and
// LLVM keeps the values they carry from trip to trip (a strip matmul's
// accumulators) in registers instead of the per-invocation arrays.
//
// Calls to device functions that hold a barrier (directly or through their
// calls) are inlined first, into a copy of the module (BarrierCalls.h).
//
// Not supported, with a compile error naming the op: a barrier inside a
// `match`; function-typed values and type variables.
//
// Numbers follow the interpreter exactly (ir/interp/Scalar.h): integers
// wrap, shifts take the count mod the width, integer division guards zero
// and INT_MIN / -1, float min/max are minnum/maxnum, float-to-int casts
// saturate with NaN -> 0, transcendental functions and vector reductions
// (dot, length, normalize, cross) are computed in double and rounded once,
// and no floating-point contraction or reassociation is allowed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/OpId.h"
#include "targets/llvm/HostAbi.h"
#include "targets/llvm/KernelAbi.h"

namespace eph::llvmtarget {

struct LowerOptions {
  unsigned optLevel = 2;  // 0..3, the -O level of LLVM's default pipelines
  // Interchange uniform `for` loops with the invocation loop (see above).
  bool hoistUniformLoops = true;
  // Kernels to lower, by name; empty: every kernel. Device functions are
  // always lowered (unused ones are dropped from -O1 up).
  std::vector<std::string> kernels;
  // Lower host functions too (HostAbi.h). If one cannot be lowered, none
  // is, and the reason is kept (emitLlvmText prints it as a comment).
  bool lowerHost = false;
  // With lowerHost: lower only this host function and the functions it
  // reaches (hostLoweredFunctions); empty: every host function.
  std::string hostEntry;
  // Export each kernel's workgroup function `k` beside `k.range`. The
  // runtime calls only `k.range`; without the export, `k` is internal and
  // inlined into it, and LLVM compiles the kernel's body once, not twice.
  bool exportWorkgroup = true;
};

// Whether the cpu target lowers a built-in op in kernels and device
// functions, marks it unsupported, or lacks an entry for it (Emitter.h's
// table; OpTableWalkTest checks it).
ir::Lowering lowersOp(ir::OpId id);

// The optimised LLVM IR of the module's kernels and device functions, as text.
Expected<std::string> emitLlvmText(const ir::Module& m, const LowerOptions& opts);
// A relocatable object file for the host (ELF on Linux) with the same functions.
Expected<std::vector<char>> emitObject(const ir::Module& m, const LowerOptions& opts);

// A module compiled into this process. Lives as long as its owner keeps it;
// the function pointers die with it.
class JitModule {
 public:
  virtual ~JitModule() = default;
  struct Kernel {
    WorkgroupFn workgroup = nullptr;  // null unless LowerOptions::exportWorkgroup
    RangeFn range = nullptr;
    size_t workgroupBytes = 0;
  };
  // The compiled kernel named `name`, or null.
  virtual const Kernel* kernel(const std::string& name) const = 0;
  // The entry wrapper of host function `name` (HostAbi.h), or null (not
  // lowered, or it takes or returns function values).
  virtual HostEntryFn hostEntry(const std::string& name) const = 0;
  // Why the host functions were not lowered (lowerHost was off, or an op or
  // type the host lowering does not support), located in `m`: the module
  // this was compiled from, or any module with the same text (compiled
  // modules are shared by text, runtime/cpu/KernelCache.h).
  virtual std::optional<Error> hostUnsupported(const ir::Module& m) const = 0;
  // The functions lowered with the host ABI (hostLoweredFunctions of m
  // with the options this was compiled with).
  virtual std::vector<const ir::Function*> hostLowered(const ir::Module& m) const = 0;
  // The host functions' addresses, in hostLowered order.
  virtual std::span<void* const> hostFunctions() const = 0;
  // The box codecs (HostAbi.h), when host functions were lowered.
  virtual HostBoxReadFn hostBoxRead() const = 0;
  virtual HostBoxMakeFn hostBoxMake() const = 0;
};

// What host lowering (LowerOptions::lowerHost) produced.
struct HostLowering {
  std::optional<Error> unsupported;             // why host code was not lowered
  // Where, as indices that hold for any module with the same text: the op's
  // index in hostSites, else the function's in the module, else -1.
  long errorSite = -1, errorFunction = -1;
  std::map<std::string, std::string> entries;   // IR name -> entry wrapper's LLVM name
};

// A relocatable object for the host CPU and what host lowering produced:
// everything needed to load the code into a process later, so that it can
// be kept on disk (runtime/cpu/KernelCache.h).
struct CompiledObject {
  std::vector<char> object;
  HostLowering host;
};
Expected<CompiledObject> compileObject(const ir::Module& m, const LowerOptions& opts);

// `symbols` binds extra names for the compiled code (the host runtime calls).
using SymbolList = std::vector<std::pair<std::string, void*>>;
// Links `code`, compiled from m (or a module of the same text) with `opts`,
// into this process (a JITDylib of its own in one process-wide ORC LLJIT,
// removed when the JitModule is destroyed). Thread-safe.
Expected<std::unique_ptr<JitModule>> loadObject(const ir::Module& m, const LowerOptions& opts,
                                                const CompiledObject& code, const SymbolList& symbols = {});
// compileObject, then loadObject.
Expected<std::unique_ptr<JitModule>> jitCompile(const ir::Module& m, const LowerOptions& opts,
                                                const SymbolList& symbols = {});

// The host CPU LLVM targets ("x86-64 sapphirerapids +avx2,..." style, one line).
std::string hostCpuDescription();
// The LLVM version this target was built with ("19.1.7").
std::string llvmVersion();
// What compiled code depends on besides its IR and LowerOptions: the
// triple, CPU and CPU features code is compiled for and the LLVM version.
std::string hostTargetKey();

}  // namespace eph::llvmtarget
