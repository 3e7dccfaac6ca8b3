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
#pragma once

#include <memory>

#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/Diag.h"
#include "ir/IR.h"

namespace eph::ephapax {

// Lowers every non-generic function (and the instances of generic ones they
// use) into a new module. Null after reporting E2xx errors in `diags`.
std::unique_ptr<ir::Module> lowerProgram(Checked& c, ir::Context& ctx, const std::string& file, DiagSink& diags);

}  // namespace eph::ephapax
