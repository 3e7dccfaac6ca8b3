// The extern (C) call in progress on this thread, for the C API that C code
// uses on the device buffers an Ephapax program passes to it through __ffi
// (runtime/eph_buffer.h: eph_buffer_free, eph_buffer_len). Whoever calls the
// C function — the interpreter's ephapax.ffi_call, or compiled host code
// through the cpu runtime — opens a ForeignCallScope around the call: the C
// API then knows where the buffers live (the run's device hooks, else the
// interpreter's Memory) and the call's location for messages, and keeps the
// first error it meets, which the caller reports at the call when the C
// function returns (C code gets -1 from the API and carries on).
#pragma once

#include <optional>

#include "ir/interp/Interp.h"

namespace eph::interp {

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
