// The C API of runtime/eph_buffer.h: what C code called through __ffi may do
// with the device buffers passed to it. Each call goes to the extern call in
// progress on this thread (ir/interp/ForeignCall.h): to its device hooks (a
// DeviceSet, which checks the handle before a device sees it), or, under the
// plain interpreter, to the interpreter's Memory. Errors are kept in the
// extern call (the first one wins) and returned to C as -1; the caller
// reports them at the call. Nothing here throws or aborts.
#include <cstdio>

#include "ir/interp/Exec.h"
#include "ir/interp/ForeignCall.h"
#include "runtime/eph_buffer.h"

namespace {

using eph::interp::ForeignCall;

// The open extern call, or null (after saying so on stderr: there is no call
// to report an error at).
ForeignCall* openCall(const char* what) {
  ForeignCall* call = eph::interp::ForeignCallScope::current();
  if (!call)
    std::fprintf(stderr, "error: %s called outside an extern call of an Ephapax program (ignored)\n", what);
  return call;
}

int64_t fail(ForeignCall& call, eph::Error e) {
  if (!call.error) call.error = std::move(e);
  return -1;
}

// A device buffer the plain interpreter holds, or an error.
eph::Expected<eph::interp::BufferData*> heldBuffer(ForeignCall& call, int64_t handle, const char* what) {
  eph::interp::BufferData* b = call.memory ? call.memory->get(static_cast<uint64_t>(handle)) : nullptr;
  std::string h = std::to_string(handle);
  if (!b || b->space != eph::ir::Space::Device)
    return eph::Error{call.site, std::string(what) + " of device buffer handle " + h + ", which was never allocated"};
  if (b->freed)
    return eph::Error{call.site, std::string(what) + " of device buffer handle " + h + ", which was freed already (buffer" +
                                     eph::interp::allocatedAt(*b) + ")"};
  return b;
}

}  // namespace

extern "C" int64_t eph_buffer_free(int64_t handle) {
  const char* what = "eph_buffer_free";
  ForeignCall* call = openCall(what);
  if (!call) return -1;
  if (call->error) return -1;
  if (call->hooks) {
    eph::Status s = call->hooks->freeForeign(static_cast<uint64_t>(handle), call->site, what);
    return s ? 0 : fail(*call, s.error());
  }
  auto b = heldBuffer(*call, handle, what);
  if (!b) return fail(*call, b.error());
  (*b)->freed = true;
  (*b)->elems = {};
  (*b)->written = {};
  return 0;
}

extern "C" int64_t eph_buffer_len(int64_t handle) {
  const char* what = "eph_buffer_len";
  ForeignCall* call = openCall(what);
  if (!call) return -1;
  if (call->error) return -1;
  if (call->hooks) {
    auto n = call->hooks->lengthForeign(static_cast<uint64_t>(handle), call->site, what);
    return n ? static_cast<int64_t>(*n) : fail(*call, n.error());
  }
  auto b = heldBuffer(*call, handle, what);
  if (!b) return fail(*call, b.error());
  return static_cast<int64_t>((*b)->elems.size());
}
