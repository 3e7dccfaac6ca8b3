// The reference interpreter: executes host functions, device functions and
// kernels of a verified module. It is the semantics every target is tested
// against, so it favours being obviously right over being fast.
//
// Workgroups run with their workgroup memory; an invocation that reaches a
// barrier waits for its whole workgroup. Out-of-bounds accesses, reads of
// never-written buffer elements, use of a freed buffer, integer division by
// zero and barrier divergence are reported errors (with the op's location),
// never undefined behaviour.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace eph::interp {

struct BoxCell;

// A runtime value of some IR type.
struct RtValue {
  const ir::Type* type = nullptr;
  // Int: two's complement, sign- or zero-extended from the type's width.
  // Bool: 0 or 1. Sum: the tag.
  int64_t i = 0;
  // Float: rounded to the type's precision (f16/f32 values are exactly representable).
  double f = 0;
  // Vector, Struct, Array: the elements. Sum: one element, the payload.
  std::vector<RtValue> elems;
  // Buffer: an id in Memory (0 is no buffer).
  uint64_t buffer = 0;
  // Buffer: a view (buffer.view) of elements [viewOffset, viewOffset +
  // viewCount) of `buffer`; viewCount == kWhole for the whole buffer.
  static constexpr uint64_t kWhole = UINT64_MAX;
  uint64_t viewOffset = 0;
  uint64_t viewCount = kWhole;
  bool isView() const { return viewCount != kWhole; }
  // Box: the heap cell. Copies of a box value share the cell (reference
  // counted); it is freed when the last copy goes.
  std::shared_ptr<const BoxCell> box;

  static RtValue ofInt(const ir::Type* t, int64_t v);   // wraps v to t's width
  static RtValue ofFloat(const ir::Type* t, double v);  // rounds v to t's precision
  static RtValue ofBool(const ir::Type* t, bool v);
  bool operator==(const RtValue& o) const;  // exact (floats by bits)
};

// The heap cell behind a `box` value (box.new): the value it was made from,
// which carries its own type so that box.get can check what it reads. Cells
// are immutable, so they form no cycles and reference counting frees them.
// Destroying a cell releases the cells it holds with an explicit work list,
// so a chain of a million cells (a long list) is freed without recursion.
struct BoxCell {
  RtValue value;
  explicit BoxCell(RtValue v) : value(std::move(v)) {}
  BoxCell(const BoxCell&) = delete;
  BoxCell& operator=(const BoxCell&) = delete;
  ~BoxCell();
};

// The most elements one buffer the interpreter stores may hold (host buffers,
// and device buffers of the reference interpreter and InterpDevice). Device
// buffers of other devices are limited only by the device.
inline constexpr uint64_t kMaxElements = uint64_t(1) << 26;

// One buffer's storage in the interpreter.
struct BufferData {
  const ir::Type* elemType = nullptr;
  ir::Space space = ir::Space::Host;
  std::vector<RtValue> elems;
  std::vector<bool> written;  // reading an element never written is an error
  Loc allocSite;
  // For a copy (d2h, copy): where the buffer its contents came from was
  // allocated, so a never-written element is reported where it came from.
  Loc copiedFrom;
  bool freed = false;
};

// The number of elements `handle` reaches in `b`: a view's count, else all.
size_t viewLength(const RtValue& handle, const BufferData& b);

// h2d copies values, and an element never written has none: every element of
// the source must be written. Error (at `site`) names the first that is not.
Status checkFullyWritten(const BufferData& b, Loc site);

// All buffers of one interpreter run.
class Memory {
 public:
  uint64_t allocate(const ir::Type* elemType, ir::Space space, size_t count, Loc site = {});
  // A buffer filled with `values` (all marked written).
  uint64_t adopt(const ir::Type* elemType, ir::Space space, std::vector<RtValue> values);
  BufferData* get(uint64_t id);  // null for an unknown id
  // Buffers never freed, for leak reports.
  std::vector<uint64_t> live() const;

 private:
  std::vector<std::unique_ptr<BufferData>> buffers_;  // id = index + 1
};

// Where a host function's device work goes. Without hooks the interpreter
// keeps device buffers in its own Memory and runs kernels itself (the
// reference). A runtime Device (runtime/Device.h) implements these hooks so
// that the same host program drives a GPU or the CPU target: host-side control
// flow and host buffers stay in the interpreter, and every op on a device
// buffer (alloc, free, h2d, d2h, dispatch, wait) becomes a call here. Device
// buffer values then carry the device's handle in RtValue::buffer.
class DeviceHooks {
 public:
  virtual ~DeviceHooks() = default;
  // A device buffer of `count` elements of bufferType->elem(); returns its
  // handle (never 0). `site` is the alloc op's location, for messages.
  virtual Expected<uint64_t> alloc(const ir::Type* bufferType, uint64_t count, Loc site) = 0;
  virtual Status free(uint64_t handle, Loc site) = 0;
  // h2d: copy the host buffer `src` (same length, every element written) in.
  virtual Status upload(uint64_t dst, const BufferData& src, Loc site) = 0;
  // d2h: copy a device buffer out into `dst` (same length; marks every element
  // written). Waits for the work that writes it.
  virtual Status download(BufferData& dst, uint64_t src, Loc site) = 0;
  // Runs `kernel` over the grid; buffer arguments carry device handles. May
  // return before the work is done.
  virtual Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                          std::span<const RtValue> args, Loc site) = 0;
  // Blocks until all submitted work has finished.
  virtual Status wait(Loc site) = 0;

  // Several devices (runtime::DeviceSet): `alloc {device = k}` allocates on
  // device k. Hooks that drive one device have only device 0.
  virtual Expected<uint64_t> allocOn(unsigned device, const ir::Type* bufferType, uint64_t count,
                                     Loc site) {
    if (device == 0) return alloc(bufferType, count, site);
    return Error{site, "the buffer is allocated on device " + std::to_string(device) +
                           " but the program runs on 1 device (device 0)"};
  }
  // `buffer.len` of a device buffer in host code: its element count. The
  // default knows no buffers; runtime::DeviceSet answers from its own
  // records of the buffers allocated through it.
  virtual Expected<uint64_t> length(uint64_t handle, Loc site) {
    return Error{site, "buffer.len of device buffer handle " + std::to_string(handle) +
                           ": these device hooks do not know its length (freed, or not allocated by this program)"};
  }
  // `copy %dst, %src`: copies one device buffer into another of the same
  // length, on any devices.
  virtual Status copy(uint64_t dst, uint64_t src, Loc site) {
    (void)dst, (void)src;
    return Error{site, "copy between device buffers is not supported by these device hooks"};
  }
  // `device.count`: how many devices the program runs on (device numbers
  // 0..count-1 for `alloc {device = k}`).
  virtual unsigned deviceCount() const { return 1; }
  // Whether these hooks take views (buffer.view): buffer arguments of
  // dispatch with RtValue::isView(), and viewUpload/viewDownload. Hooks that
  // do not make a dispatch or transfer through a view an error.
  virtual bool supportsViews() const { return false; }
  // h2d / d2h through a view: elements [offset, offset + src.size) of device
  // buffer `dst`, or [offset, offset + dst.size) of `src`.
  virtual Status viewUpload(uint64_t dst, uint64_t offset, const BufferData& src, Loc site) {
    (void)dst, (void)offset, (void)src;
    return Error{site, "these device hooks do not support buffer views"};
  }
  virtual Status viewDownload(BufferData& dst, uint64_t src, uint64_t offset, Loc site) {
    (void)dst, (void)src, (void)offset;
    return Error{site, "these device hooks do not support buffer views"};
  }
  // A handle C code gives back (ir/interp/ForeignCall.h): it came out of the
  // program through an extern call, and may be stale or made up, so it must
  // be checked before a device sees it. `what` names the C function for
  // messages. The defaults refuse: these hooks keep no record of buffers.
  virtual Status freeForeign(uint64_t handle, Loc site, const char* what) {
    (void)handle;
    return Error{site, std::string(what) + ": these device hooks do not take buffers back from C code"};
  }
  virtual Expected<uint64_t> lengthForeign(uint64_t handle, Loc site, const char* what) {
    (void)handle;
    return Error{site, std::string(what) + ": these device hooks do not take buffers back from C code"};
  }
};

class Interpreter {
 public:
  explicit Interpreter(const ir::Module& m);
  ~Interpreter();
  Memory& memory();
  // Sends device work of host functions to `hooks` (null: run it here).
  void setDeviceHooks(DeviceHooks* hooks);

  // Runs a host or device function to completion and returns its results.
  Expected<std::vector<RtValue>> call(const ir::Function& f, std::vector<RtValue> args);
  // Runs a kernel over groups[0] x groups[1] x groups[2] workgroups.
  Status dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                  std::vector<RtValue> args);

  // Invocations per subgroup the interpreter models (builtin subgroup_size).
  static constexpr uint32_t kSubgroupSize = 8;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Evaluates a pure op on known operand values (constant folding uses this, so
// folding and execution cannot disagree). nullopt when the op has no interpreter
// semantics, is not pure, or would trap (e.g. integer division by zero).
std::optional<std::vector<RtValue>> evalPure(const ir::Op& op, std::span<const RtValue> operands);

// Formats a value for people and for `ephc run` output: 42, -1.5, true,
// (1, 2.5) for structs, <1, 2> for vectors, [1, 2] for arrays, #1(3) for sums,
// buffers as their element list.
std::string format(const RtValue& v, Memory* mem = nullptr);

// Parses a command-line argument of type t: "42", "1.5", "true", and for
// buffers a list "[1, 2, 3]" that becomes a new buffer in `mem`.
Expected<RtValue> parseValue(std::string_view text, const ir::Type* t, Memory& mem);

}  // namespace eph::interp
