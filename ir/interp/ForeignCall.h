// The C functions that the `call.c` op (ir/ops/Foreign.cpp) calls, and the
// extern (C) call in progress on this thread.
//
// Symbols are looked up in the process (dlsym RTLD_DEFAULT) after the
// libraries given with `ephc run --link LIB.so` are loaded (RTLD_GLOBAL), by
// the interpreter and by compiled host code (runtime/cpu/HostAbi.cpp) alike.
//
// The call in progress serves the C API that C code uses on the device
// buffers a program passes to it (runtime/eph_buffer.h: eph_buffer_free,
// eph_buffer_len). Whoever calls the C function — the interpreter's
// call.c, or compiled host code through the cpu runtime — opens a
// ForeignCallScope around the call: the C API then knows where the buffers
// live (the run's device hooks, else the interpreter's Memory) and the call's
// location for messages, and keeps the first error it meets, which the caller
// reports at the call when the C function returns (C code gets -1 from the
// API and carries on).
#pragma once

#include <optional>
#include <string>

#include "ir/interp/Interp.h"

namespace eph::interp {

// dlopen(path, RTLD_NOW | RTLD_GLOBAL); an error names the library.
Status loadForeignLibrary(const std::string& path);
// The address of the C function `name` of the process; null with `why` set
// (the error of a call.c whose symbol is not defined) when there is none.
void* resolveForeignSymbol(const std::string& name, std::string& why);

struct ForeignCall {
  DeviceHooks* hooks = nullptr;  // device buffers behind hooks; null: in `memory`
  Memory* memory = nullptr;
  Loc site;                      // the extern call
  std::optional<Error> error;    // the first error of the C API in this call
};

class ForeignCallScope {
 public:
  explicit ForeignCallScope(ForeignCall& call);
  ~ForeignCallScope();
  ForeignCallScope(const ForeignCallScope&) = delete;
  ForeignCallScope& operator=(const ForeignCallScope&) = delete;
  // The innermost open call of this thread, or null outside any.
  static ForeignCall* current();

 private:
  ForeignCall* outer_;
};

}  // namespace eph::interp
