// Lowering checked Ephapax to the IR. Every function becomes a host function
// (generic ones once per instantiation, named `id<I32>`); every op carries the
// .eph location it came from.
//
// Representation:
//   I32 I64 U32 F32 F64 Bool   i32 i64 u32 f32 f64 bool;  ()  struct<>
//   String@r                   buffer<u8, host, linear> (freed where consumed or dropped)
//   (A, B), records            struct<A, B>
//   A + B, data types          sum<...> (a data constructor's payload is a struct of its fields)
//   linear type H = T          struct<T, buffer<u8, host, linear>>: the value and an ownership token
//   affine type H = T          struct<T, buffer<u8, host, affine>>
//   extern types               i64 handles;  [T]  buffer<T, host, affine> (borrowed as read)
//   A -> B                     a closure: sum over the lambdas of that type, each variant
//                              holding the captured values; calls go through @"apply<A -> B>"
//
// Ownership: a `let!` binding, and a parameter or pattern variable that must
// be used exactly once, is re-bound at its binding site (a token-carrying
// box for values that own nothing), so the IR linearity pass sees the same
// obligation at the same place. Values that may be dropped are freed where
// the frontend drops them. Self tail calls become `while` loops.
//
// GPU extension (docs/ephapax-gpu.md): kernels become IR kernels (a kernel
// without barrier() gets three hidden trailing u32 parameters, the grid in
// invocations, for its bounds guard; the function attribute
// `hidden_params = 3` says so), functions kernel code calls become device
// functions (`f`, or `f.device` when host code calls `f` too), inline
// dispatches become kernels `<fn>.kernel<k>`, and @gpu functions and device
// functions are lowered once, generically (type variables `!T`), for the IR
// `monomorphize` pass. In GPU code a function type A -> B is the IR type
// fn(A) -> (B): a named function passed to it is a func.ref of its device
// copy, a capture-free lambda a device function `<fn>.lambda<k>`, and calls
// through it are call.indirect (a launcher without type parameters but with
// function parameters is made here per function argument, `f<@g>`). Host
// code takes a device buffer's length with buffer.len (the device knows it). Statements: a `var` is an SSA value re-bound by each
// assignment; branches and loops carry the vars they assign as results.
#pragma once

#include <functional>
#include <memory>
#include <set>

#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/Diag.h"
#include "ir/IR.h"

namespace eph::ephapax {

// Lowers every non-generic function (and the instances of generic ones they
// use) into a new module. Null after reporting E2xx errors in `diags`.
struct LowerOptions {
  // --mode affine: owned GPU buffers that are dropped are freed at the end
  // of their scope (GPUBufferAffine ones always are).
  bool affineMode = false;
};
std::unique_ptr<ir::Module> lowerProgram(Checked& c, ir::Context& ctx, const std::string& file, DiagSink& diags,
                                         const LowerOptions& opts = {});

// ---- internal: analyses shared by Lower.cpp, LowerStmt.cpp and LowerGpu.cpp ----
namespace lowering {

// Calls f on each direct sub-expression (kids, grid, match arms).
void forEachChild(const Expr& e, const std::function<void(const Expr&)>& f);
// The vars assigned in e (not inside lambdas or inline kernels).
void assignedVars(const Expr& e, std::set<const Binding*>& out);
bool containsReturn(const Expr& e);

// Which functions are used from kernel code (device) and from host code.
struct FnUses {
  std::set<const FnDecl*> device, host;
};
FnUses functionUses(const Checked& c);
// e (or a function it calls) uses barrier().
bool usesBarrier(const Checked& c, const Expr& e, std::set<const FnDecl*>& seen);
// Kernel code in e stores or atomically updates through binding b (directly
// or in a device function b is passed to).
bool writesThrough(const Checked& c, const Expr& e, const Binding* b, std::set<std::pair<const FnDecl*, size_t>>& seen);
// The local bindings e mentions, in order of first mention.
void referencedBindings(const Expr& e, std::vector<const Binding*>& out);
// e allocates, transfers, dispatches or calls a @gpu / async function.
bool issuesDeviceWork(const Checked& c, const Expr& e);
// The one-invocation kernel behind read_gpu (dst[0] = src[i]) or write_gpu
// (dst[i] = src[0]) for element type elem; made once per module.
ir::Function* elementCopyKernel(ir::Module& m, const ir::Type* elem, bool read, Loc loc);

}  // namespace lowering

}  // namespace eph::ephapax
