// The CPU host ABI: how host functions compiled by the LLVM target
// (targets/llvm/LowerHost.cpp) run, shared with the runtime that calls them
// and implements their runtime calls (runtime/cpu/HostAbi.h). This header
// has no LLVM in it.
//
// Every host function @f (and every device function that host code calls or
// takes as a value) becomes an internal function
//
//   R host.f(HostContext* ctx, P0 p0, P1 p1, ...)   // value layout (Emitter.h)
//
// and every host function also gets an entry wrapper the runtime calls:
//
//   void eph.entry.f(HostContext* ctx, const uint64_t* args, uint64_t* results);
//
// Arguments and results cross the wrapper as *slots*, one uint64_t per leaf
// of the type, in order (hostSlotCount): an integer sign- or zero-extended
// to 64 bits (as interp::RtValue::i holds it), a bool 0 or 1, a float as the
// bits of a double, a vector/struct/array as its elements, a sum as its tag
// then the slots of every variant (only the active one is meaningful), a
// buffer as one slot (see below).
//
// Buffers in compiled host code are {ptr, i64} like in kernels, but hold:
//   host buffer    {HostBufferRecord*, 0}   storage owned by the context
//   device buffer  {null, handle}           the DeviceHooks handle
// Function values are pointers to host.f.
//
// A box is a pointer to an immutable cell (HostBoxCell): the ir::Type* the
// value was made from, then the value in the value layout (Emitter.h), at
// 16-byte alignment. `box.new` bump-allocates the cell inline from the
// context's arena (a runtime call gets a new chunk when it is full) and
// stores the type from the context's table `boxTypes` (hostBoxTypes: one
// entry per type boxed or read from a box); `box.get` compares the cell's
// type with the table's entry for its result type and takes a runtime call
// that reports the interpreter's error when they differ. Cells are freed
// all at once when the run ends. The compiled module exports two codecs the
// runtime uses to turn cells into interpreter values and back (results and
// arguments that hold boxes): eph.box.read writes the value of a cell of
// table type k as slots, eph.box.make makes a cell of table type k from
// slots.
//
// `call.c {symbol = "name"}` (ir/ops/Foreign.cpp) calls the C function
// `name` of the process with the signature ir/ForeignAbi.h classifies:
// integers/bools passed as int64 with an integer, bool, () or small
// integer-struct result, or all f64. The address
// is resolved by a runtime call (dlsym) on the first call and kept in a
// global of the compiled module; an unresolved symbol is the interpreter's
// error at the op.
//
// Host-only ops (alloc, free, h2d, d2h, copy, dispatch, wait, device.count,
// buffer.len of a device buffer) and every error path are calls into the runtime, named
// below, each taking the context and the *site* of the op: its index in
// hostSites(module), so the runtime knows the op (its location, types and
// attributes) and reports exactly the interpreter's error. A runtime call
// that fails records the first error in the context and sets `failed`; the
// compiled code checks `failed` after each such call and after each call of
// a host function, and returns at once. Nothing aborts the process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ir/IR.h"

namespace eph::llvmtarget {

// The fields of the context compiled code reads and writes; the runtime's
// context starts with this.
struct HostContextHeader {
  uint32_t failed = 0;  // set by a runtime call that reported an error
  uint32_t depth = 0;   // calls in progress (the interpreter's call depth)
  // The box arena: box.new bump-allocates [arenaNext, arenaEnd).
  std::byte* arenaNext = nullptr;
  std::byte* arenaEnd = nullptr;
  // hostBoxTypes of the module being run (its ir::Type*s).
  const ir::Type* const* boxTypes = nullptr;
};

// The start of every box cell; the value follows at offset kHostBoxValueOffset.
struct HostBoxCell {
  const ir::Type* type = nullptr;
};
constexpr size_t kHostBoxAlign = 16;
constexpr size_t kHostBoxValueOffset = 16;

// Calls nested deeper than this are an error, as in the interpreter
// (interp::Exec::kMaxCallDepth).
constexpr uint32_t kHostMaxCallDepth = 1000;

// A host buffer: `count` elements in the storage layout of ir/Layout.h at
// `data`, and one byte per element saying whether it was written (reading
// an element never written is an error, as in the interpreter). Compiled
// code reads these three fields; a freed buffer has count 0, so that every
// access takes the slow path, which reports the error.
struct HostBufferRecord {
  std::byte* data = nullptr;
  uint64_t count = 0;
  uint8_t* written = nullptr;
};

using HostEntryFn = void (*)(HostContextHeader* ctx, const uint64_t* args, uint64_t* results);
// The box codecs (see above); k indexes hostBoxTypes.
using HostBoxReadFn = void (*)(uint32_t k, const HostBoxCell* cell, uint64_t* slots);
using HostBoxMakeFn = HostBoxCell* (*)(HostContextHeader* ctx, uint32_t k, const uint64_t* slots);
constexpr const char* kHostBoxRead = "eph.box.read";
constexpr const char* kHostBoxMake = "eph.box.make";

// The types of box cells compiled code makes or reads: the operand type of
// every box.new and the result type of every box.get of the module's
// non-kernel functions, each once, in hostSites order.
std::vector<const ir::Type*> hostBoxTypes(const ir::Module& m);

// The ops of the module's non-kernel functions, numbered in a fixed walk
// order: the same module text always gives the same numbering, so a site
// number from compiled code maps back to the op of any module with that text.
std::vector<const ir::Op*> hostSites(const ir::Module& m);

// The functions lowered with the host ABI, in module order: every host
// function (or, given `entry`, that host function and the host functions it
// reaches) and every device function they reach (by call or func.ref). The compiled module exports `eph.host.functions`, an array of
// pointers to their host.f, in this order (so that the runtime can name the
// function a function value points to).
std::vector<const ir::Function*> hostLoweredFunctions(const ir::Module& m, const std::string& entry = {});
constexpr const char* kHostFunctionTable = "eph.host.functions";

// Slots of a value of type t (see above).
size_t hostSlotCount(const ir::Type* t);

// The runtime calls, by name (their C signatures are in runtime/cpu/HostAbi.h).
namespace hostabi {
constexpr const char* kAllocHost = "eph_host_alloc_host";      // ptr (ctx, i32 site, i64 count)
constexpr const char* kAllocDevice = "eph_host_alloc_device";  // i64 (ctx, i32 site, i64 count)
constexpr const char* kFreeHost = "eph_host_free_host";        // void (ctx, i32 site, ptr rec)
constexpr const char* kFreeDevice = "eph_host_free_device";    // void (ctx, i32 site, i64 handle)
constexpr const char* kH2D = "eph_host_h2d";                   // void (ctx, i32 site, i64 dst, ptr src)
constexpr const char* kD2H = "eph_host_d2h";                   // void (ctx, i32 site, ptr dst, i64 src)
constexpr const char* kCopy = "eph_host_copy";                 // void (ctx, i32 site, i64 dst, i64 src)
constexpr const char* kDispatch = "eph_host_dispatch";         // void (ctx, i32 site, ptr slots)
constexpr const char* kWait = "eph_host_wait";                 // void (ctx, i32 site)
constexpr const char* kLenHost = "eph_host_len_host";          // i64 (ctx, i32 site, ptr rec)
constexpr const char* kLenDevice = "eph_host_len_device";      // i64 (ctx, i32 site, i64 handle)
constexpr const char* kBadAccess = "eph_host_bad_access";      // void (ctx, i32 site, ptr rec, i64 index)
constexpr const char* kTrap = "eph_host_trap";                 // void (ctx, i32 site, i64 value)
constexpr const char* kDepth = "eph_host_depth_exceeded";      // void (ctx, i32 site, ptr callee)
constexpr const char* kDeviceCount = "eph_host_device_count";  // i64 (ctx)
constexpr const char* kBoxAlloc = "eph_host_box_alloc";        // ptr (ctx, i64 bytes): 16-aligned arena memory
constexpr const char* kBoxBadGet = "eph_host_box_bad_get";     // void (ctx, i32 site, ptr cell)
constexpr const char* kFfiResolve = "eph_host_ffi_resolve";    // ptr (ctx, i32 site): the symbol, or null
// Around each extern call: opens (enter) and closes (leave) the
// interp::ForeignCallScope through which C code reaches the run's device
// buffers (runtime/eph_buffer.h); leave fails the context with the first
// error C code met there.
constexpr const char* kFfiEnter = "eph_host_ffi_enter";        // void (ctx, i32 site)
constexpr const char* kFfiLeave = "eph_host_ffi_leave";        // void (ctx, i32 site)
}  // namespace hostabi

}  // namespace eph::llvmtarget
