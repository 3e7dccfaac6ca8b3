// The runtime calls of compiled host code (HostAbi.h). Each mirrors the
// interpreter's semantics of its op (ir/ops/Host.cpp, ir/ops/Memory.cpp,
// ir/ops/Box.cpp, ir/ops/Foreign.cpp, ir/interp/Exec.cpp), messages included,
// and forwards device work to the DeviceHooks of the run.
#include "runtime/cpu/HostAbi.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ir/Layout.h"
#include "runtime/DeviceSet.h"
#include "runtime/cpu/HostContext.h"

namespace eph::runtime {
namespace {

using llvmtarget::HostBufferRecord;
using llvmtarget::HostContextHeader;

HostContext& ctxOf(HostContextHeader* h) { return *static_cast<HostContext*>(h); }
HostBuffer& bufferOf(void* rec) { return *static_cast<HostBuffer*>(static_cast<HostBufferRecord*>(rec)); }

std::string elements(uint64_t n) { return std::to_string(n) + " element" + (n == 1 ? "" : "s"); }

std::string allocatedAt(const HostBuffer& b) {
  return b.allocSite.known() ? " allocated at " + b.allocSite.str() : "";
}

// An integer operand as a count (interp countOperand); false after failing.
bool countOf(HostContext& c, const ir::Op& op, unsigned i, int64_t raw, const char* what, uint64_t& out) {
  if (op.operand(i)->type()->isSigned() && raw < 0)
    return c.fail(op, std::string(what) + " is negative (" + std::to_string(raw) + ")");
  out = uint64_t(raw);
  return true;
}

// The live host buffer (Exec::buffer); null after failing.
HostBuffer* liveBuffer(HostContext& c, const ir::Op& op, void* rec) {
  HostBuffer& b = bufferOf(rec);
  if (b.freed) {
    c.fail(op, "use of a freed buffer" + allocatedAt(b));
    return nullptr;
  }
  return &b;
}

bool check(HostContext& c, Status s) { return s ? true : c.fail(s.error()); }

void* allocHost(HostContextHeader* h, uint32_t site, int64_t count) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  uint64_t n = 0;
  if (!countOf(c, op, 0, count, "the element count", n)) return nullptr;
  if (n > HostContext::kMaxElements)
    return c.fail(op, "allocation of " + std::to_string(n) + " elements is larger than the interpreter's limit of " +
                          std::to_string(HostContext::kMaxElements)),
           nullptr;
  return static_cast<HostBufferRecord*>(&c.newBuffer(op.result(0)->type()->elem(), n, op.loc()));
}

uint64_t allocDevice(HostContextHeader* h, uint32_t site, int64_t count) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  uint64_t n = 0;
  if (!countOf(c, op, 0, count, "the element count", n)) return 0;
  // No cap here: the device says what it can hold.
  const ir::Type* t = op.result(0)->type();
  unsigned device = op.attr("device") ? unsigned(op.intAttr("device")) : 0;
  auto handle = device ? c.hooks->allocOn(device, t, n, op.loc()) : c.hooks->alloc(t, n, op.loc());
  if (!handle) return c.fail(handle.error()), 0;
  return *handle;
}

void freeHost(HostContextHeader* h, uint32_t site, void* rec) {
  HostContext& c = ctxOf(h);
  HostBuffer& b = bufferOf(rec);
  if (b.freed) {
    c.fail(c.op(site), "double free of a buffer" + allocatedAt(b));
    return;
  }
  b.release();
}

void freeDevice(HostContextHeader* h, uint32_t site, uint64_t handle) {
  HostContext& c = ctxOf(h);
  check(c, c.hooks->free(handle, c.op(site).loc()));
}

// The device set a transfer of `b` to or from `handle` can move raw bytes
// through (Device::uploadBytes): the handle's device keeps no written flags
// and the buffer has b's length; else null, and the transfer takes the
// general path (which reports any error). Host buffers hold storage bytes
// already, so no element is converted.
DeviceSet* rawPath(HostContext& c, uint64_t handle, const HostBuffer& b) {
  auto* set = dynamic_cast<DeviceSet*>(c.hooks);
  if (!set || set->tracksWrites(handle)) return nullptr;
  bool known = false;
  uint64_t n = set->countOf(handle, known);
  return known && n == b.length && b.bytes.size() >= n * b.stride ? set : nullptr;
}

void h2d(HostContextHeader* h, uint32_t site, uint64_t dst, void* src) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  HostBuffer* b = liveBuffer(c, op, src);
  if (!b) return;
  // Same layout on both sides: the bytes as they are, when every element was written.
  if (DeviceSet* set = rawPath(c, dst, *b); set && std::find(b->flags.begin(), b->flags.end(), 0) == b->flags.end()) {
    check(c, set->uploadBytes(dst, std::span<const std::byte>(b->bytes.data(), b->length * b->stride), op.loc()));
    return;
  }
  interp::BufferData data = b->toBufferData();
  check(c, c.hooks->upload(dst, data, op.loc()));
}

void d2h(HostContextHeader* h, uint32_t site, void* dst, uint64_t src) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  HostBuffer* b = liveBuffer(c, op, dst);
  if (!b) return;
  if (DeviceSet* set = rawPath(c, src, *b)) {
    if (!check(c, set->downloadBytes(std::span<std::byte>(b->bytes.data(), b->length * b->stride), src, op.loc())))
      return;
    std::fill(b->flags.begin(), b->flags.end(), 1);
    return;
  }
  interp::BufferData data = b->toBufferData();
  if (!check(c, c.hooks->download(data, src, op.loc()))) return;
  b->fromBufferData(data);
}

void copy(HostContextHeader* h, uint32_t site, uint64_t dst, uint64_t src) {
  HostContext& c = ctxOf(h);
  check(c, c.hooks->copy(dst, src, c.op(site).loc()));
}

void wait(HostContextHeader* h, uint32_t site) {
  HostContext& c = ctxOf(h);
  check(c, c.hooks->wait(c.op(site).loc()));
}

// interpDispatch: the kernel, no written aliasing, the grid, then the device.
void dispatch(HostContextHeader* h, uint32_t site, const uint64_t* slots) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  const ir::Function* k = c.module->lookup(op.symbolAttr("kernel"));
  if (!k) return void(c.fail(op, "dispatches unknown kernel @" + op.symbolAttr("kernel")));
  std::vector<interp::RtValue> values;
  for (const ir::Value* v : op.operands()) values.push_back(c.fromSlots(v->type(), slots));
  auto params = k->paramTypes();
  for (unsigned i = 0; i < params.size(); ++i) {
    if (!params[i]->isBuffer()) continue;
    for (unsigned j = i + 1; j < params.size(); ++j) {
      if (!params[j]->isBuffer()) continue;
      bool written = params[i]->ownership() != ir::Ownership::Read || params[j]->ownership() != ir::Ownership::Read;
      if (written && values[3 + i].buffer == values[3 + j].buffer)
        return void(c.fail(op, "the same buffer is passed as arguments " + std::to_string(i) + " and " +
                                   std::to_string(j) + " of @" + k->name() +
                                   ", which writes it: a kernel's buffers may alias only when all of them are read"));
    }
  }
  std::array<uint32_t, 3> groups{};
  for (unsigned i = 0; i < 3; ++i) {
    uint64_t n = 0;
    if (!countOf(c, op, i, values[i].i, "the workgroup count", n)) return;
    if (n > UINT32_MAX) return void(c.fail(op, "workgroup count " + std::to_string(n) + " is too large"));
    groups[i] = uint32_t(n);
  }
  check(c, c.hooks->dispatch(*k, groups, std::span<const interp::RtValue>(values).subspan(3), op.loc()));
}

uint64_t lenHost(HostContextHeader* h, uint32_t site, void* rec) {
  HostContext& c = ctxOf(h);
  HostBuffer* b = liveBuffer(c, c.op(site), rec);
  return b ? b->length : 0;
}

uint64_t lenDevice(HostContextHeader* h, uint32_t site, uint64_t handle) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  auto n = c.hooks->length(handle, op.loc());
  if (!n) return c.fail(n.error()), 0;
  return *n;
}

// A load or store that failed the inline checks (Exec::readElement/writeElement).
void badAccess(HostContextHeader* h, uint32_t site, void* rec, int64_t index) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  HostBuffer* b = liveBuffer(c, op, rec);
  if (!b) return;
  interp::RtValue idx = interp::RtValue::ofInt(op.operand(1)->type(), index);
  bool negative = idx.type->isSigned() && idx.i < 0;
  if (negative || uint64_t(idx.i) >= b->length)
    return void(c.fail(op, "index " + interp::format(idx) + " is out of bounds for a buffer of " + elements(b->length)));
  if (op.is(ir::OpId::Load))
    c.fail(op, "read of uninitialised element " + std::to_string(idx.i) + " of a buffer of " +
                   std::to_string(b->length) + allocatedAt(*b));
}

void trap(HostContextHeader* h, uint32_t site, int64_t value) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  ir::OpId n = op.id();
  if (n == ir::OpId::Div || n == ir::OpId::Rem)
    c.fail(op, std::string("integer ") + (n == ir::OpId::Div ? "division" : "remainder") + " by zero");
  else if (n == ir::OpId::For)
    c.fail(op, "'for' has a step of 0");
  else if (n == ir::OpId::ArrayGet || n == ir::OpId::ArraySet)
    c.fail(op, "index " + interp::format(interp::RtValue::ofInt(op.operand(1)->type(), value)) +
                   " is out of bounds for an array of " + elements(op.operand(0)->type()->count()));
  else
    c.fail(op, "'" + std::string(op.name()) + "' trapped in compiled host code");
}

void depthExceeded(HostContextHeader* h, uint32_t site, void* callee) {
  HostContext& c = ctxOf(h);
  const ir::Function* f = c.functionAt(callee);
  c.fail(c.op(site), "call depth limit of " + std::to_string(llvmtarget::kHostMaxCallDepth) + " exceeded calling @" +
                         (f ? f->name() : std::string("?")) + " (unbounded recursion?)");
}

uint64_t deviceCount(HostContextHeader* h) { return ctxOf(h).hooks->deviceCount(); }

void* boxAlloc(HostContextHeader* h, uint64_t bytes) { return ctxOf(h).allocBox(bytes); }

// A box.get whose cell is null or of another type (interpBoxGet).
void boxBadGet(HostContextHeader* h, uint32_t site, const llvmtarget::HostBoxCell* cell) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  if (!cell) return void(c.fail(op, "box.get: the box holds no value (it was never made by box.new)"));
  std::string held = cell->type ? cell->type->str() : "?";
  c.fail(op, "box.get: the box holds a value of type '" + held + "', read as '" + op.result(0)->type()->str() + "'");
}

// The address of a call.c's C function, looked up in the process as the
// interpreter does (ir/interp/ForeignCall.h), with its error.
void* ffiResolve(HostContextHeader* h, uint32_t site) {
  HostContext& c = ctxOf(h);
  const ir::Op& op = c.op(site);
  const ir::Attr* sym = op.attr("symbol");
  std::string why;
  void* fn = interp::resolveForeignSymbol(sym && sym->kind == ir::Attr::Kind::String ? sym->s : "", why);
  if (!fn) c.fail(op, why);
  return fn;
}

// Around an extern call: C code reaches the run's device buffers through
// runtime/eph_buffer.h while it runs; its first error fails the op.
void ffiEnter(HostContextHeader* h, uint32_t site) {
  HostContext& c = ctxOf(h);
  c.foreignCall = interp::ForeignCall{c.hooks, nullptr, c.op(site).loc(), std::nullopt};
  c.foreignScope.emplace(c.foreignCall);
}

void ffiLeave(HostContextHeader* h, uint32_t site) {
  HostContext& c = ctxOf(h);
  c.foreignScope.reset();
  if (c.foreignCall.error) c.fail(std::move(*c.foreignCall.error));
  (void)site;
}

}  // namespace

std::vector<std::pair<std::string, void*>> hostAbiSymbols() {
  using namespace llvmtarget::hostabi;
  auto p = [](auto* fn) { return reinterpret_cast<void*>(fn); };
  return {{kAllocHost, p(&allocHost)}, {kAllocDevice, p(&allocDevice)}, {kFreeHost, p(&freeHost)},
          {kFreeDevice, p(&freeDevice)}, {kH2D, p(&h2d)},           {kD2H, p(&d2h)},
          {kCopy, p(&copy)},             {kDispatch, p(&dispatch)}, {kWait, p(&wait)},
          {kLenHost, p(&lenHost)},       {kLenDevice, p(&lenDevice)}, {kBadAccess, p(&badAccess)},
          {kTrap, p(&trap)},             {kDepth, p(&depthExceeded)}, {kDeviceCount, p(&deviceCount)},
          {kBoxAlloc, p(&boxAlloc)},     {kBoxBadGet, p(&boxBadGet)}, {kFfiResolve, p(&ffiResolve)},
          {kFfiEnter, p(&ffiEnter)},     {kFfiLeave, p(&ffiLeave)}};
}

llvmtarget::LowerOptions hostLowerOptions() {
  llvmtarget::LowerOptions o;
  o.lowerHost = true;
  return o;
}

}  // namespace eph::runtime
