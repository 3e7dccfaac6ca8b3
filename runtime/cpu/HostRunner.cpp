// Running compiled host code (HostAbi.h): the context and its host buffers,
// arguments and results as slots, and the write-back of host buffers to the
// interpreter's Memory when the entry returns.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "ir/Layout.h"
#include "ir/interp/Fiber.h"
#include "ir/ops/TypeVars.h"
#include "runtime/cpu/HostAbi.h"
#include "runtime/cpu/HostContext.h"

namespace eph::runtime {

// ---- host buffers ---------------------------------------------------------------

void HostBuffer::reset(const ir::Type* elemType, uint64_t n, Loc site) {
  elem = elemType;
  stride = ir::storageStride(elemType);
  length = n;
  allocSite = site;
  bytes.assign(n * stride, std::byte{0});
  flags.assign(n, 0);
  data = bytes.data();
  count = n;
  written = flags.data();
}

void HostBuffer::release() {
  freed = true;
  bytes = {};
  flags = {};
  data = nullptr;
  written = nullptr;
  count = 0;
}

interp::BufferData HostBuffer::toBufferData() const {
  interp::BufferData d;
  d.elemType = elem;
  d.space = ir::Space::Host;
  d.allocSite = allocSite;
  d.elems.resize(length);
  d.written.assign(length, false);
  for (uint64_t i = 0; i < length; ++i) {
    if (flags[i]) {
      d.elems[i] = ir::decode(elem, bytes.data() + i * stride);
      d.written[i] = true;
    } else {
      d.elems[i].type = elem;
    }
  }
  return d;
}

void HostBuffer::fromBufferData(const interp::BufferData& d) {
  for (uint64_t i = 0; i < length && i < d.elems.size(); ++i) {
    flags[i] = d.written[i] ? 1 : 0;
    if (d.written[i]) ir::encode(d.elems[i], bytes.data() + i * stride);
  }
}

// ---- the context ----------------------------------------------------------------

HostBuffer& HostContext::newBuffer(const ir::Type* elem, uint64_t n, Loc site) {
  HostBuffer& b = buffers.emplace_back();
  b.reset(elem, n, site);
  return b;
}

const ir::Function* HostContext::functionAt(void* code) const {
  for (size_t i = 0; i < functionAddrs.size() && i < functions.size(); ++i)
    if (functionAddrs[i] == code) return functions[i];
  return nullptr;
}

HostBuffer& HostContext::importBuffer(uint64_t id) {
  if (auto it = imported.find(id); it != imported.end()) return *it->second;
  HostBuffer& b = buffers.emplace_back();
  const interp::BufferData* d = memory ? memory->get(id) : nullptr;
  if (!d) {
    b.release();  // an invalid handle: every use is an error
  } else {
    b.reset(d->elemType, d->elems.size(), d->allocSite);
    if (d->freed) b.release();
    else b.fromBufferData(*d);
  }
  b.memoryId = id;
  imported[id] = &b;
  return b;
}

uint64_t HostContext::exportBuffer(HostBuffer& b) {
  if (b.memoryId) return b.memoryId;
  b.memoryId = memory->allocate(b.elem, ir::Space::Host, b.length, b.allocSite);
  interp::BufferData* d = memory->get(b.memoryId);
  if (b.freed) {
    d->freed = true;
    d->elems = {};
    d->written = {};
  } else {
    interp::BufferData now = b.toBufferData();
    d->elems = std::move(now.elems);
    d->written = std::move(now.written);
  }
  return b.memoryId;
}

interp::RtValue HostContext::fromSlots(const ir::Type* t, const uint64_t*& p) {
  interp::RtValue v;
  v.type = t;
  switch (t->kind()) {
    case ir::TypeKind::Bool: return interp::RtValue::ofBool(t, *p++ != 0);
    case ir::TypeKind::Int: return interp::RtValue::ofInt(t, int64_t(*p++));
    case ir::TypeKind::Float: {
      double d;
      std::memcpy(&d, p++, sizeof d);
      return interp::RtValue::ofFloat(t, d);
    }
    case ir::TypeKind::Vector:
    case ir::TypeKind::Array:
      for (unsigned k = 0; k < t->count(); ++k) v.elems.push_back(fromSlots(t->elem(), p));
      return v;
    case ir::TypeKind::Struct:
      for (const ir::Type* m : t->members()) v.elems.push_back(fromSlots(m, p));
      return v;
    case ir::TypeKind::Sum: {
      // Only the active variant's slots are meaningful (the others may hold
      // anything, pointers included).
      v.i = int64_t(*p++);
      for (unsigned k = 0; k < t->members().size(); ++k) {
        if (int64_t(k) == v.i) v.elems.push_back(fromSlots(t->members()[k], p));
        else p += llvmtarget::hostSlotCount(t->members()[k]);
      }
      return v;
    }
    case ir::TypeKind::Box:
      v.box = toInterpCell(reinterpret_cast<const llvmtarget::HostBoxCell*>(*p++));
      return v;
    case ir::TypeKind::Buffer: {
      uint64_t slot = *p++;
      if (t->space() != ir::Space::Host) {
        v.buffer = slot;
      } else {
        auto* b = static_cast<HostBuffer*>(reinterpret_cast<llvmtarget::HostBufferRecord*>(slot));
        v.buffer = b ? exportBuffer(*b) : 0;
      }
      return v;
    }
    default: ++p; return v;
  }
}

void HostContext::toSlots(const interp::RtValue& v, const ir::Type* t, std::vector<uint64_t>& out) {
  switch (t->kind()) {
    case ir::TypeKind::Bool:
    case ir::TypeKind::Int: out.push_back(uint64_t(v.i)); return;
    case ir::TypeKind::Float: {
      uint64_t bits;
      std::memcpy(&bits, &v.f, sizeof bits);
      out.push_back(bits);
      return;
    }
    case ir::TypeKind::Vector:
    case ir::TypeKind::Array:
      for (unsigned k = 0; k < t->count(); ++k)
        toSlots(k < v.elems.size() ? v.elems[k] : interp::RtValue{t->elem()}, t->elem(), out);
      return;
    case ir::TypeKind::Struct:
      for (unsigned k = 0; k < t->members().size(); ++k)
        toSlots(k < v.elems.size() ? v.elems[k] : interp::RtValue{t->members()[k]}, t->members()[k], out);
      return;
    case ir::TypeKind::Sum:
      out.push_back(uint64_t(v.i));
      for (unsigned k = 0; k < t->members().size(); ++k) {
        if (int64_t(k) == v.i && !v.elems.empty()) toSlots(v.elems[0], t->members()[k], out);
        else out.insert(out.end(), llvmtarget::hostSlotCount(t->members()[k]), 0);
      }
      return;
    case ir::TypeKind::Buffer:
      if (t->space() != ir::Space::Host) out.push_back(v.buffer);
      else out.push_back(reinterpret_cast<uint64_t>(static_cast<llvmtarget::HostBufferRecord*>(&importBuffer(v.buffer))));
      return;
    case ir::TypeKind::Box: out.push_back(reinterpret_cast<uint64_t>(toCompiledCell(v.box))); return;
    default: out.push_back(0); return;
  }
}

// ---- running ----------------------------------------------------------------------

namespace {

// Compiled host code runs on a large stack, as interpreted host code does
// (interp::Interpreter::call), so that recursion up to the call-depth limit
// with large aggregate values in its frames cannot overflow the caller's
// stack. One fiber per thread, reserved once (memory is committed as used).
template <class F>
void runOnLargeStack(F&& fn) {
  if (interp::stackHeadroom() != static_cast<size_t>(-1)) {
    fn();  // already on an interpreter fiber
    return;
  }
  thread_local std::unique_ptr<interp::Fiber> fiber;
  if (!fiber) fiber = std::make_unique<interp::Fiber>(size_t(256) << 20);
  using Fn = std::remove_reference_t<F>;
  fiber->start([](void* p) { (*static_cast<Fn*>(p))(); }, &fn);
  fiber->resume();
}

}  // namespace

std::optional<Error> compiledHostProblem(const llvmtarget::JitModule& jit, const ir::Function& entry) {
  if (entry.module())
    if (auto why = jit.hostUnsupported(*entry.module())) return why;
  if (!entry.isHost())
    return Error{entry.loc(), "@" + entry.name() + " is not a host function; only host functions run compiled"};
  if (!jit.hostEntry(entry.name()))
    return Error{entry.loc(), "@" + entry.name() + " takes or returns function values, which compiled host code "
                              "cannot pass to or from the runtime"};
  return std::nullopt;
}

Expected<std::vector<interp::RtValue>> runCompiledHost(const llvmtarget::JitModule& jit, interp::DeviceHooks& hooks,
                                                       interp::Memory& memory, const ir::Function& entry,
                                                       std::vector<interp::RtValue> args) {
  if (auto why = compiledHostProblem(jit, entry)) return *why;
  // The interpreter's checks of an entry call (Exec::callFunction).
  if (args.size() != entry.paramTypes().size())
    return Error{entry.loc(), "@" + entry.name() + " takes " + std::to_string(entry.paramTypes().size()) +
                                  " arguments, got " + std::to_string(args.size())};
  for (unsigned i = 0; i < args.size(); ++i) {
    const ir::Type* want = entry.paramTypes()[i];
    const ir::Type* got = args[i].type;
    if (!(got == want || (got && got->isBuffer() && want->isBuffer() && got->elem() == want->elem())))
      return Error{entry.loc(), "argument " + std::to_string(i) + " of @" + entry.name() + " has type " +
                                    (got ? got->str() : "?") + ", expected " + want->str()};
  }
  HostContext c;
  c.hooks = &hooks;
  c.module = entry.module();
  c.sites = llvmtarget::hostSites(*c.module);
  c.functions = jit.hostLowered(*c.module);
  c.functionAddrs = jit.hostFunctions();
  c.memory = &memory;
  c.boxRead = jit.hostBoxRead();
  c.boxMake = jit.hostBoxMake();
  c.setBoxTypes(*c.module);
  std::vector<uint64_t> in;
  for (unsigned i = 0; i < args.size(); ++i) c.toSlots(args[i], entry.paramTypes()[i], in);
  size_t outSlots = 0;
  for (const ir::Type* t : entry.resultTypes()) outSlots += llvmtarget::hostSlotCount(t);
  std::vector<uint64_t> out(std::max<size_t>(outSlots, 1), 0);
  c.depth = 1;  // the entry call itself, as in the interpreter
  runOnLargeStack([&] { jit.hostEntry(entry.name())(&c, in.data(), out.data()); });

  // The interpreter's Memory as the interpreter would leave it: argument
  // buffers updated, results and other live buffers added.
  for (auto& [id, b] : c.imported) {
    interp::BufferData* d = memory.get(id);
    if (!d) continue;
    if (b->freed) {
      d->freed = true;
      d->elems = {};
      d->written = {};
    } else {
      interp::BufferData now = b->toBufferData();
      d->elems = std::move(now.elems);
      d->written = std::move(now.written);
    }
  }
  std::vector<interp::RtValue> results;
  if (!c.error) {
    const uint64_t* p = out.data();
    for (const ir::Type* t : entry.resultTypes()) results.push_back(c.fromSlots(t, p));
  }
  for (HostBuffer& b : c.buffers)
    if (!b.memoryId && !b.freed) c.exportBuffer(b);
  if (c.error) return *c.error;
  return results;
}

}  // namespace eph::runtime
