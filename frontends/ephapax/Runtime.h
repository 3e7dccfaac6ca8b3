// What lowered Ephapax code needs at run time beyond the core IR: the
// `ephapax.ffi_call` op (extern functions and `__ffi`), which the
// interpreter runs by looking the symbol up in the process (libraries given
// with `ephc run --link LIB.so` are loaded first, RTLD_GLOBAL).
//
// Signatures it can call: up to 6 arguments, all integers/Bool/extern handles
// (passed as int64) with an integer, Bool or () result, or all F64 with an
// F64 result. An owned device buffer (`buffer<T, device, linear>`) counts as
// an integer: C gets its handle and owns it from then on, and frees it or
// reads its length through runtime/eph_buffer.h (the call runs in an
// interp::ForeignCallScope for that). Strings live in host buffers (u8 elements); regions need no
// run-time support because the lowering frees every string where it is
// consumed or dropped.
#pragma once

#include <string>

#include "ir/Diagnostics.h"
#include "ir/IR.h"

namespace eph::ephapax {

// Registers ephapax.ffi_call in the op table (idempotent).
void registerRuntimeOps();
// dlopen(path, RTLD_NOW | RTLD_GLOBAL); an error names the library.
Status loadLibrary(const std::string& path);
// Whether ffi_call can call a function of these IR parameter/result types;
// empty when it can, else why not.
std::string ffiSignatureProblem(const std::vector<const ir::Type*>& params, const ir::Type* result);

}  // namespace eph::ephapax
