// The C calling convention of the `call.c` op (ir/ops/Foreign.cpp): which C
// signatures a call of a C function of the process may have, and how each
// argument is passed and the result returned. Written once here; the op's
// typing rule, the interpreter's call (ir/ops/Foreign.cpp), compiled host
// code (targets/llvm/LowerHostFfi.cpp) and frontends that check an extern
// call before emitting it all classify through classifyForeignCall.
//
// The signatures: up to 6 arguments, each in one 64-bit register, and
//  - integer convention: every argument an integer, Bool (0/1) or owned
//    device buffer (buffer<T, device, linear>, passed as its uint64 handle
//    of runtime/eph_buffer.h: C owns it from then on), with no result, (),
//    an integer or Bool (read from the int64 return register, truncated to
//    the type), or a struct of integers/Bools of at most 16 bytes (read from
//    the two int64 return registers, x86-64 RAX:RDX or AArch64 x0:x1, each
//    field at its C offset);
//  - float convention: every argument an f64, and an f64 result.
// Integers are passed sign- or zero-extended to 64 bits as their type says.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::ir {

// How one argument reaches C.
enum class CArg : uint8_t {
  Int,     // an integer or Bool, extended to int64
  Handle,  // an owned device buffer: its handle, as int64
  F64,     // a double
};

// How the result comes back.
enum class CResult : uint8_t {
  None,     // no result, or (): the return register is ignored
  Int,      // the int64 return register, truncated to the integer type (Bool: not 0)
  F64,      // a double
  IntPair,  // a small struct of integers in two int64 registers (see fields)
};

// A field of an IntPair result: where C puts it in the 16 bytes of the two registers.
struct CField {
  const Type* type;
  unsigned offset;
  unsigned size;  // bytes: _Bool is 1
};

struct ForeignSignature {
  std::string problem;  // why C cannot be called with these types; empty when it can
  std::vector<CArg> args;
  CResult result = CResult::None;
  std::vector<CField> fields;  // IntPair: each member of the result struct, in order

  bool ok() const { return problem.empty(); }
  bool floats() const { return result == CResult::F64; }  // the float convention
};

// The most arguments a C call takes.
constexpr unsigned kMaxForeignArgs = 6;

// The signature of a C call with these argument types and result type
// (null: no result), or why there is none (`problem`, a phrase that follows
// "extern call to 'f': " or the op name).
ForeignSignature classifyForeignCall(std::span<const Type* const> params, const Type* result);
// The same for a `call.c` op, which also needs a {symbol = "name"} string
// attribute and at most one result: the op's typing rule.
ForeignSignature classifyForeignCall(const Op& op);

}  // namespace eph::ir
