// The verifier: checks that a module is well formed before and after every
// pass. It reports the first problem as an Error naming the op (or function)
// and its location: `file:line:col: error: 'opname': what is wrong`, or
// `... error: function '@f': what is wrong` for function-level rules.
//
// Checked, per function, in this order (docs/ir.md lists every rule):
//  1. Function rules: names are unique; the body's arguments match the
//     function type; kernels return nothing and have a workgroup size whose
//     components are >= 1 and whose product is <= 1024.
//  2. Structure, walking ops in text order: operand/result/region counts
//     against the op table (kVariadic = any); host-only ops only in host
//     functions, kernel-only ops only in kernels and device functions;
//     dominance (every operand is defined earlier in the same region or in an
//     enclosing region of the same function, or is an argument of such a
//     region); every region ends in exactly one terminator and terminators
//     appear nowhere else; the terminator fits its place (its verify hook:
//     `return` only at the end of a function body, `yield` in if/for/while/
//     match, `condition` in the first region of while); kernels and device
//     functions call only device functions.
//  3. Types: every other op's verify hook (its typing rule), in text order.
//     Generic functions (type variables `!T` in their signature) are allowed:
//     an op whose operand or result types mention a type variable skips its
//     rule (it is checked after monomorphization) unless the op is flagged
//     kTypeVarAware; `call` and `dispatch` of a generic callee bind the
//     callee's variables by unification, one binding per variable.
// Then, over the module: no recursion (direct or mutual) among device
// functions. Host functions may recurse.
#pragma once

#include "ir/IR.h"

namespace eph::ir {

Status verify(const Module& m);

// The largest number of invocations a kernel's workgroup may have.
constexpr unsigned kMaxWorkgroupInvocations = 1024;

}  // namespace eph::ir
