// Host ops: the program a host function runs against a device. Buffers are
// allocated, filled, transferred, used by dispatches and freed; `wait` blocks
// until all submitted work is done.
#include <algorithm>

#include "ir/interp/Exec.h"
#include "ir/ops/Rules.h"
#include "ir/ops/TypeVars.h"

namespace eph::ir {
namespace {
using namespace rules;

// The largest `{device = k}` an alloc may name.
constexpr int64_t kMaxDeviceIndex = 255;

std::string verifyAlloc(const Op& op) {
  if (!operandType(op, 0)->isInt()) return "element count must be an integer";
  const Type* b = resultType(op);
  if (!b->isBuffer() || b->space() == Space::Workgroup ||
      (b->ownership() != Ownership::Linear && b->ownership() != Ownership::Affine))
    return "result must be a linear or affine host or device buffer, got " + typeStr(b);
  if (op.attr("device")) {
    if (b->space() != Space::Device) return "attribute 'device' is only for device buffers";
    if (auto e = needIndexAttr(op, "device", 0, kMaxDeviceIndex); !e.empty()) return e;
  }
  return {};
}

std::string verifyFree(const Op& op) {
  const Type* b = operandType(op, 0);
  if (!b->isBuffer() || (b->ownership() != Ownership::Linear && b->ownership() != Ownership::Affine))
    return "frees a linear or affine buffer, not " + typeStr(b);
  return {};
}

std::string verifyTransfer(const Op& op, Space dst, Space src) {
  const Type* d = operandType(op, 0);
  const Type* s = operandType(op, 1);
  if (!d->isBuffer() || d->space() != dst)
    return "destination must be a " + std::string(spaceName(dst)) + " buffer, got " + typeStr(d);
  if (!s->isBuffer() || s->space() != src)
    return "source must be a " + std::string(spaceName(src)) + " buffer, got " + typeStr(s);
  if (d->elem() != s->elem()) return "element types differ: " + typeStr(d->elem()) + " and " + typeStr(s->elem());
  if (d->ownership() == Ownership::Read) return "destination is a read-only borrow";
  return {};
}

std::string verifyH2D(const Op& op) { return verifyTransfer(op, Space::Device, Space::Host); }
std::string verifyCopy(const Op& op) { return verifyTransfer(op, Space::Device, Space::Device); }
std::string verifyD2H(const Op& op) { return verifyTransfer(op, Space::Host, Space::Device); }

// buffer.view %buf, %offset, %count : buffer<T, space, read|write>: a borrow
// of elements [offset, offset + count) of %buf, of the same element type and
// space; a write view needs a buffer that may be written.
std::string verifyView(const Op& op) {
  const Type* b = operandType(op, 0);
  const Type* v = resultType(op);
  if (!b->isBuffer() || b->space() == Space::Workgroup)
    return "views a host or device buffer, not " + typeStr(b);
  if (!operandType(op, 1)->isInt() || !operandType(op, 2)->isInt())
    return "offset and count must be integers";
  if (!v->isBuffer() || v->elem() != b->elem() || v->space() != b->space() ||
      (v->ownership() != Ownership::Read && v->ownership() != Ownership::Write))
    return "result must be a read or write borrow buffer<" + b->elem()->str() + ", " +
           std::string(spaceName(b->space())) + ", read|write>, got " + typeStr(v);
  if (v->ownership() == Ownership::Write && b->ownership() == Ownership::Read)
    return "a write view of a read-only borrow " + typeStr(b);
  return {};
}

// A view borrows its buffer as it is typed: a write view may write through it.
Effect viewEffect(const Op& op, unsigned i) {
  if (i > 0) return Effect::None;
  return resultType(op)->ownership() == Ownership::Write ? Effect::Write : Effect::Read;
}

std::string verifyDeviceCount(const Op& op) {
  const Type* t = op.result(0)->type();
  return t->isInt() ? std::string{} : "the device count is an integer, not " + typeStr(t);
}

const Function* kernelOf(const Op& op) {
  const Attr* a = op.attr("kernel");
  const Function* f = op.parentFunction();
  if (!a || a->kind != Attr::Kind::Symbol || !f) return nullptr;
  return f->module()->lookup(a->s);
}

std::string verifyDispatch(const Op& op) {
  if (auto e = needAttr(op, "kernel", Attr::Kind::Symbol, "the kernel to run"); !e.empty()) return e;
  const Function* k = kernelOf(op);
  if (!k) return "dispatches unknown kernel @" + op.symbolAttr("kernel");
  if (!k->isKernel()) return "@" + k->name() + " is not a kernel";
  if (op.numOperands() < 3) return "needs the number of workgroups in x, y and z";
  for (unsigned i = 0; i < 3; ++i)
    if (!operandType(op, i)->isInt()) return "workgroup counts must be integers";
  auto params = k->paramTypes();
  if (op.numOperands() - 3 != params.size())
    return "kernel @" + k->name() + " takes " + countOf(params.size(), "argument") + ", got " +
           std::to_string(op.numOperands() - 3);
  // A generic kernel's type variables are bound by unification (TypeVars.h).
  TypeBinding binding;
  std::vector<const Type*> args = typesOf(op.operands());
  args.erase(args.begin(), args.begin() + 3);
  return checkCallTypes(*k, args, {}, binding);
}

Effect dispatchEffect(const Op& op, unsigned i) {
  const Function* k = kernelOf(op);
  if (i < 3 || !k || i - 3 >= k->paramTypes().size()) return Effect::None;
  const Type* t = k->paramTypes()[i - 3];
  if (!t->isBuffer()) return Effect::None;
  return t->ownership() == Ownership::Read ? Effect::Read : Effect::Write;
}

// ---- interpreter semantics -------------------------------------------------

// An integer operand as a count; false after failing when it is negative.
bool countOperand(interp::Exec& ex, const Op& op, unsigned i, const char* what, uint64_t& out) {
  const interp::RtValue& v = ex.operand(op, i);
  if (v.type->isSigned() && v.i < 0)
    return ex.fail(op, std::string(what) + " is negative (" + std::to_string(v.i) + ")");
  out = static_cast<uint64_t>(v.i);
  return true;
}

// The device hooks that own buffers of type t, or null when the interpreter
// holds them itself (host buffers always; device buffers without hooks).
interp::DeviceHooks* deviceFor(interp::Exec& ex, const Type* t) {
  return t->space() == Space::Device ? ex.deviceHooks() : nullptr;
}

// Passes a hook's Status on as the interpreter's result.
bool check(interp::Exec& ex, Status s) { return s ? true : ex.fail(s.error()); }

bool interpAlloc(interp::Exec& ex, const Op& op) {
  uint64_t n = 0;
  if (!countOperand(ex, op, 0, "the element count", n)) return false;
  if (!ex.memory()) return ex.fail(op, "no memory to allocate from");
  const Type* t = resultType(op);
  interp::DeviceHooks* d = deviceFor(ex, t);
  // The interpreter's cap holds for the buffers it stores itself; a device
  // buffer behind hooks is limited by its device (which says so at alloc).
  if (!d && n > interp::kMaxElements)
    return ex.fail(op, "allocation of " + std::to_string(n) +
                           " elements is larger than the interpreter's limit of " +
                           std::to_string(interp::kMaxElements));
  interp::RtValue b;
  b.type = t;
  if (d) {
    unsigned device = op.attr("device") ? static_cast<unsigned>(op.intAttr("device")) : 0;
    auto handle = device ? d->allocOn(device, t, n, op.loc()) : d->alloc(t, n, op.loc());
    if (!handle) return ex.fail(handle.takeError());
    b.buffer = *handle;
  } else {
    b.buffer = ex.memory()->allocate(t->elem(), t->space(), static_cast<size_t>(n), op.loc());
  }
  return ex.setResult(op, std::move(b));
}

// The length of the buffer (or view) `v`: a view's count; a device buffer's
// from the hooks; else from Memory.
bool lengthOf(interp::Exec& ex, const Op& op, const interp::RtValue& v, uint64_t& out) {
  if (v.isView()) return out = v.viewCount, true;
  if (interp::DeviceHooks* d = deviceFor(ex, v.type)) {
    auto n = d->length(v.buffer, op.loc());
    if (!n) return ex.fail(n.takeError());
    return out = *n, true;
  }
  interp::BufferData* b = ex.buffer(op, v);
  if (!b) return false;
  return out = b->elems.size(), true;
}

// buffer.view: the same buffer id with a window; a view of a view is a
// window of the parent's window.
bool interpView(interp::Exec& ex, const Op& op) {
  uint64_t offset = 0, count = 0, length = 0;
  if (!countOperand(ex, op, 1, "the view's offset", offset) ||
      !countOperand(ex, op, 2, "the view's count", count))
    return false;
  interp::RtValue v = ex.operand(op, 0);
  if (!lengthOf(ex, op, v, length)) return false;
  if (offset > length || count > length - offset)
    return ex.fail(op, "view of elements [" + std::to_string(offset) + ", " + std::to_string(offset) +
                           " + " + std::to_string(count) + ") is out of range for a buffer of " +
                           std::to_string(length) + " elements");
  v.type = resultType(op);
  v.viewOffset += offset;
  v.viewCount = count;
  return ex.setResult(op, std::move(v));
}

bool interpFree(interp::Exec& ex, const Op& op) {
  if (interp::DeviceHooks* d = deviceFor(ex, operandType(op, 0)))
    return check(ex, d->free(ex.operand(op, 0).buffer, op.loc()));
  interp::BufferData* b = ex.memory() ? ex.memory()->get(ex.operand(op, 0).buffer) : nullptr;
  if (!b) return ex.fail(op, "free of an invalid buffer handle");
  if (b->freed) return ex.fail(op, "double free of a buffer" + interp::allocatedAt(*b));
  b->freed = true;
  b->elems = {};
  b->written = {};
  return true;
}

// ---- transfers through views ------------------------------------------------

// The hooks for a buffer value, failing when they cannot take a view.
bool viewHooks(interp::Exec& ex, const Op& op, const interp::RtValue& v, interp::DeviceHooks*& d) {
  d = deviceFor(ex, v.type);
  if (d && !d->supportsViews())
    return ex.fail(op, "this device does not support buffer views (buffer.view) yet; run on the interp target");
  return true;
}

// Reads the elements `v` reaches (a view's window, else all) into `out`.
bool readRange(interp::Exec& ex, const Op& op, const interp::RtValue& v, interp::BufferData& out) {
  interp::DeviceHooks* d = nullptr;
  uint64_t n = 0;
  if (!viewHooks(ex, op, v, d) || !lengthOf(ex, op, v, n)) return false;
  out.elemType = v.type->elem();
  out.elems.assign(n, interp::RtValue{});
  out.written.assign(n, false);
  if (d) return check(ex, v.isView() ? d->viewDownload(out, v.buffer, v.viewOffset, op.loc())
                                     : d->download(out, v.buffer, op.loc()));
  interp::BufferData* b = ex.buffer(op, v);
  if (!b) return false;
  std::copy_n(b->elems.begin() + v.viewOffset, n, out.elems.begin());
  std::copy_n(b->written.begin() + v.viewOffset, n, out.written.begin());
  out.copiedFrom = b->copiedFrom.known() ? b->copiedFrom : b->allocSite;
  return true;
}

// Writes `in` over the elements `v` reaches (same length, checked before).
bool writeRange(interp::Exec& ex, const Op& op, const interp::RtValue& v, const interp::BufferData& in) {
  interp::DeviceHooks* d = nullptr;
  if (!viewHooks(ex, op, v, d)) return false;
  if (d) return check(ex, v.isView() ? d->viewUpload(v.buffer, v.viewOffset, in, op.loc())
                                     : d->upload(v.buffer, in, op.loc()));
  interp::BufferData* b = ex.buffer(op, v);
  if (!b) return false;
  std::copy(in.elems.begin(), in.elems.end(), b->elems.begin() + v.viewOffset);
  std::copy(in.written.begin(), in.written.end(), b->written.begin() + v.viewOffset);
  return true;
}

// h2d, d2h or copy where either side is a view: the source's elements go
// through a host-side BufferData into the destination's; lengths must match,
// and (h2d, copy) every source element must have been written.
bool interpViewCopy(interp::Exec& ex, const Op& op) {
  const interp::RtValue& dst = ex.operand(op, 0);
  const interp::RtValue& src = ex.operand(op, 1);
  uint64_t nd = 0, ns = 0;
  if (!lengthOf(ex, op, dst, nd) || !lengthOf(ex, op, src, ns)) return false;
  if (nd != ns)
    return ex.fail(op, "copies a buffer of " + std::to_string(ns) + " elements into a buffer of " +
                           std::to_string(nd));
  interp::BufferData tmp;
  if (!readRange(ex, op, src, tmp)) return false;
  if (!op.is(OpId::D2H) && !check(ex, interp::checkFullyWritten(tmp, op.loc()))) return false;
  return writeRange(ex, op, dst, tmp);
}

// h2d / d2h: copy every element and its written flag; lengths must match.
bool interpCopy(interp::Exec& ex, const Op& op) {
  if (ex.operand(op, 0).isView() || ex.operand(op, 1).isView()) return interpViewCopy(ex, op);
  if (interp::DeviceHooks* d = ex.deviceHooks()) {
    bool up = op.is(OpId::H2D);
    interp::BufferData* host = ex.buffer(op, ex.operand(op, up ? 1 : 0));
    if (!host) return false;
    uint64_t device = ex.operand(op, up ? 0 : 1).buffer;
    return check(ex, up ? d->upload(device, *host, op.loc()) : d->download(*host, device, op.loc()));
  }
  interp::BufferData* dst = ex.buffer(op, ex.operand(op, 0));
  interp::BufferData* src = dst ? ex.buffer(op, ex.operand(op, 1)) : nullptr;
  if (!src) return false;
  if (op.is(OpId::H2D) && !check(ex, interp::checkFullyWritten(*src, op.loc()))) return false;
  if (dst->elems.size() != src->elems.size())
    return ex.fail(op, "copies a buffer of " + std::to_string(src->elems.size()) +
                           " elements into a buffer of " + std::to_string(dst->elems.size()));
  dst->elems = src->elems;
  dst->written = src->written;
  dst->copiedFrom = src->copiedFrom.known() ? src->copiedFrom : src->allocSite;
  return true;
}

// copy %dst, %src between device buffers. Without device hooks both live in
// the interpreter's Memory, whatever device they were allocated on. As on a
// runtime::DeviceSet (which copies through the host), every source element
// must have been written.
bool interpDeviceCopy(interp::Exec& ex, const Op& op) {
  if (ex.operand(op, 0).isView() || ex.operand(op, 1).isView()) return interpViewCopy(ex, op);
  if (interp::DeviceHooks* d = ex.deviceHooks())
    return check(ex, d->copy(ex.operand(op, 0).buffer, ex.operand(op, 1).buffer, op.loc()));
  interp::BufferData* dst = ex.buffer(op, ex.operand(op, 0));
  interp::BufferData* src = dst ? ex.buffer(op, ex.operand(op, 1)) : nullptr;
  if (!src) return false;
  if (dst->elems.size() != src->elems.size())
    return ex.fail(op, "copies a buffer of " + std::to_string(src->elems.size()) +
                           " elements into a buffer of " + std::to_string(dst->elems.size()));
  for (size_t i = 0; i < src->written.size(); ++i)
    if (!src->written[i])
      return ex.fail(op, "element " + std::to_string(i) + " of the source of a copy was never written");
  dst->elems = src->elems;
  dst->written = src->written;
  return true;
}

// Kernels are compiled assuming their buffer parameters do not alias when
// one of them is written (SPIR-V NonWritable, barrier semantics, LLVM noalias),
// so a buffer passed twice with a write is an error, not a wrong answer.
// Whether two buffer values reach a common element (views of one buffer
// overlap when their windows do; an empty view reaches nothing).
bool overlap(const interp::RtValue& a, const interp::RtValue& b) {
  if (a.buffer != b.buffer) return false;
  if (!a.isView() || !b.isView()) return true;
  return a.viewOffset < b.viewOffset + b.viewCount && b.viewOffset < a.viewOffset + a.viewCount;
}

bool checkNoWrittenAlias(interp::Exec& ex, const Op& op, const Function& k) {
  auto params = k.paramTypes();
  for (unsigned i = 0; i < params.size(); ++i) {
    if (!params[i]->isBuffer()) continue;
    for (unsigned j = i + 1; j < params.size(); ++j) {
      if (!params[j]->isBuffer()) continue;
      bool written = params[i]->ownership() != Ownership::Read || params[j]->ownership() != Ownership::Read;
      if (written && overlap(ex.operand(op, 3 + i), ex.operand(op, 3 + j)))
        return ex.fail(op, "the same buffer is passed as arguments " + std::to_string(i) + " and " +
                               std::to_string(j) + " of @" + k.name() +
                               ", which writes it: a kernel's buffers may alias only when all of them are read");
    }
  }
  return true;
}

bool interpDispatch(interp::Exec& ex, const Op& op) {
  const Function* k = kernelOf(op);
  if (!k) return ex.fail(op, "dispatches unknown kernel @" + op.symbolAttr("kernel"));
  if (!checkNoWrittenAlias(ex, op, *k)) return false;
  std::array<uint32_t, 3> groups{};
  for (unsigned i = 0; i < 3; ++i) {
    uint64_t n = 0;
    if (!countOperand(ex, op, i, "the workgroup count", n)) return false;
    if (n > UINT32_MAX) return ex.fail(op, "workgroup count " + std::to_string(n) + " is too large");
    groups[i] = static_cast<uint32_t>(n);
  }
  if (interp::DeviceHooks* d = ex.deviceHooks()) {
    for (unsigned i = 3; i < op.numOperands(); ++i)
      if (ex.operand(op, i).isView() && !viewHooks(ex, op, ex.operand(op, i), d)) return false;
    return check(ex, d->dispatch(*k, groups, ex.operands(op, 3), op.loc()));
  }
  return ex.dispatch(op, *k, groups, ex.operands(op, 3));
}

// Without device hooks, dispatches run to completion, so there is nothing to wait for.
bool interpWait(interp::Exec& ex, const Op& op) {
  if (interp::DeviceHooks* d = ex.deviceHooks()) return check(ex, d->wait(op.loc()));
  return true;
}

// device.count: the devices the program runs on; 1 without device hooks.
bool interpDeviceCount(interp::Exec& ex, const Op& op) {
  interp::DeviceHooks* d = ex.deviceHooks();
  return ex.setResult(op, interp::RtValue::ofInt(op.result(0)->type(), d ? d->deviceCount() : 1));
}

OpInfo kOps[] = {
    {.name = "alloc", .numOperands = 1, .numResults = 1, .flags = kHostOnly, .verify = verifyAlloc, .interp = interpAlloc,
     .summary = "alloc %n [{device = k}] : buffer<T, host|device, linear|affine>: a buffer of n elements (a device buffer on device k, default 0)"},
    {.name = "free", .numOperands = 1, .numResults = 0, .flags = kHostOnly,
     .effects = {Effect::Consume}, .verify = verifyFree, .interp = interpFree, .summary = "release a buffer (consumes it)"},
    {.name = "h2d", .numOperands = 2, .numResults = 0, .flags = kHostOnly,
     .effects = {Effect::Write, Effect::Read}, .verify = verifyH2D, .interp = interpCopy,
     .summary = "h2d %device_dst, %host_src: copy host to device (same length)"},
    {.name = "d2h", .numOperands = 2, .numResults = 0, .flags = kHostOnly,
     .effects = {Effect::Write, Effect::Read}, .verify = verifyD2H, .interp = interpCopy,
     .summary = "d2h %host_dst, %device_src: copy device to host (same length)"},
    {.name = "copy", .numOperands = 2, .numResults = 0, .flags = kHostOnly,
     .effects = {Effect::Write, Effect::Read}, .verify = verifyCopy, .interp = interpDeviceCopy,
     .summary = "copy %device_dst, %device_src: copy between device buffers (same length, any devices)"},
    {.name = "dispatch", .numOperands = kVariadic, .numResults = 0, .flags = kHostOnly | kTypeVarAware,
     .effectFn = dispatchEffect, .verify = verifyDispatch, .interp = interpDispatch,
     .summary = "dispatch %gx, %gy, %gz, %args... {kernel = @k}: run a grid of workgroups"},
    {.name = "buffer.view", .numOperands = 3, .numResults = 1, .flags = kHostOnly | kReadOnly,
     .effectFn = viewEffect, .verify = verifyView, .interp = interpView,
     .summary = "buffer.view %buf, %offset, %count : buffer<T, space, read|write>: a borrow of elements [offset, offset + count) of %buf"},
    {.name = "wait", .numOperands = 0, .numResults = 0, .flags = kHostOnly, .interp = interpWait,
     .summary = "block until all submitted device work has finished"},
    // Read-only, not pure: the count is known only when the program runs, so
    // canonicalize must not fold it.
    {.name = "device.count", .numOperands = 0, .numResults = 1, .flags = kHostOnly | kReadOnly,
     .verify = verifyDeviceCount, .interp = interpDeviceCount,
     .summary = "device.count : i32: how many devices the program runs on (alloc {device = k} takes k below it)"},
};

}  // namespace

void registerHostOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
