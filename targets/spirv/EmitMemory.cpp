// Buffers, atomics, workgroup memory, barriers and invocation builtins.
//
// A device buffer parameter is a StorageBuffer Block {T[] data} (Emit.cpp);
// element i is data[i] and buffer.len is OpArrayLength. A workgroup buffer is
// a Workgroup-storage T[size]. Atomics are relaxed (the interpreter promises
// indivisibility, not ordering) at Device scope for buffers and Workgroup
// scope for workgroup memory.
//
// Float atomics: atomic.add is OpAtomicFAddEXT when DeviceCaps says the device
// has it (device buffers only); otherwise, and for atomic.xchg, the buffer's
// elements are declared as same-width unsigned integers (same bytes), loads
// and stores bitcast, and the add is a compare-exchange loop on the bit
// pattern.
#include <algorithm>

#include "ir/Layout.h"
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
constexpr uint32_t kScopeDevice = 1, kScopeWorkgroup = 2;
// AcquireRelease | WorkgroupMemory (GLSL's barrier()), and with UniformMemory
// for a kernel whose invocations may communicate through device memory
// (DeviceMemoryUse.h).
constexpr uint32_t kBarrierWorkgroupSemantics = 0x8 | 0x100;
constexpr uint32_t kBarrierDeviceSemantics = kBarrierWorkgroupSemantics | 0x40;
}  // namespace

Id Emitter::elementPointer(const BufferRef& buf, Id index, const ir::Type* indexType) {
  Id i = indexToU32(index, indexType);
  Id ptrT = b.typePointer(buf.sc, buf.elemMemType);
  if (buf.sc == spv::StorageClass::StorageBuffer) return b.op(Op::OpAccessChain, ptrT, {buf.var, u32(0), i});
  return b.op(Op::OpAccessChain, ptrT, {buf.var, i});
}

Status Emitter::emitLoad(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  Id v = guardAccess(op, buf, valueType(buf.elem), [&] {
    Id ptr = elementPointer(buf, id(op.operand(1)), op.operand(1)->type());
    Id mem = b.op(Op::OpLoad, buf.elemMemType, {ptr});
    return buf.asBits ? b.op(Op::OpBitcast, valueType(buf.elem), {mem})
           : buf.sc == spv::StorageClass::StorageBuffer ? fromMemory(mem, buf.elem)
                                                        : mem;
  });
  setId(op.result(0), v);
  return Status::ok();
}

Status Emitter::emitStore(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  guardAccess(op, buf, 0, [&] {
    Id ptr = elementPointer(buf, id(op.operand(1)), op.operand(1)->type());
    Id v = id(op.operand(2));
    Id mem = buf.asBits ? b.op(Op::OpBitcast, buf.elemMemType, {v})
             : buf.sc == spv::StorageClass::StorageBuffer ? toMemory(v, buf.elem)
                                                          : v;
    b.opVoid(Op::OpStore, {ptr, mem});
    return Id(0);
  });
  return Status::ok();
}

// vec.load and vec.store: N consecutive elements from element N·i. A device
// buffer's vector accesses go through a second variable on the same binding,
// a Block {vecN[]}, so they are one 8- or 16-byte access instead of N; that
// needs the elements stored as themselves and every binding to start at a
// multiple of the vector's size (the device's minStorageBufferOffsetAlignment),
// and both variables are then Aliased (they name the same memory). Elsewhere
// (workgroup memory, atomics on the buffer, a device whose bindings may start
// anywhere) the N elements are N scalar accesses. Either way one bounds check
// covers the vector: i < length / N.
Id Emitter::vectorView(const BufferRef& buf, unsigned lanes) {
  if (buf.sc != spv::StorageClass::StorageBuffer || buf.asBits || buf.elemMemType != valueType(buf.elem)) return 0;
  uint32_t bytes = lanes * uint32_t(ir::storageSize(buf.elem));
  if (caps.storageBufferOffsetAlignment % bytes != 0) return 0;
  auto [it, fresh] = vectorViews_.try_emplace({&buf, lanes}, 0);
  if (!fresh) return it->second;
  Id block = b.typeBlockStruct({b.typeRuntimeArray(b.typeVector(buf.elemMemType, lanes), bytes)}, {0},
                               buf.binding | (lanes << 24));
  auto sc = spv::StorageClass::StorageBuffer;
  Id var = b.globalVariable(b.typePointer(sc, block), sc);
  b.decorate(var, spv::Decoration::DescriptorSet, {0});
  b.decorate(var, spv::Decoration::Binding, {buf.binding});
  b.decorate(var, spv::Decoration::Aliased);
  if (buf.readOnly) b.decorate(var, spv::Decoration::NonWritable);
  bool first = std::count_if(vectorViews_.begin(), vectorViews_.end(), [&](auto& v) { return v.first.first == &buf; }) == 1;
  if (first) b.decorate(buf.var, spv::Decoration::Aliased);
  interface_.push_back(var);
  return it->second = var;
}

Status Emitter::emitVectorAccess(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  bool load = op.is(ir::OpId::VecLoad);
  const ir::Type* vt = load ? op.result(0)->type() : op.operand(2)->type();
  unsigned lanes = vt->count();
  Id V = valueType(vt), E = valueType(buf.elem);
  Id i = indexToU32(id(op.operand(1)), op.operand(1)->type());
  Id view = vectorView(buf, lanes);
  auto access = [&]() -> Id {
    if (view) {
      Id ptr = b.op(Op::OpAccessChain, b.typePointer(buf.sc, V), {view, u32(0), i});
      if (load) return b.op(Op::OpLoad, V, {ptr});
      b.opVoid(Op::OpStore, {ptr, id(op.operand(2))});
      return Id(0);
    }
    Id first = b.op(Op::OpIMul, u32T(), {i, u32(lanes)});
    std::vector<Id> parts;
    for (unsigned k = 0; k < lanes; ++k) {
      Id at = k ? b.op(Op::OpIAdd, u32T(), {first, u32(k)}) : first;
      Id ptr = elementPointer(buf, at, kernel.module()->context().u32());
      bool device = buf.sc == spv::StorageClass::StorageBuffer;
      if (load) {
        Id mem = b.op(Op::OpLoad, buf.elemMemType, {ptr});
        parts.push_back(buf.asBits ? b.op(Op::OpBitcast, E, {mem}) : device ? fromMemory(mem, buf.elem) : mem);
      } else {
        Id v = b.op(Op::OpCompositeExtract, E, {id(op.operand(2)), k});
        b.opVoid(Op::OpStore, {ptr, buf.asBits ? b.op(Op::OpBitcast, buf.elemMemType, {v})
                                    : device      ? toMemory(v, buf.elem)
                                                  : v});
      }
    }
    return load ? b.op(Op::OpCompositeConstruct, V, parts) : Id(0);
  };
  Id r = 0;
  if (!options.checkBounds) {
    r = access();
  } else {
    // In bounds when i < length / N; the record names the first element
    // out of bounds, max(N·i, length), and the length in elements.
    Id length = bufferLength(buf);
    Id firstOut = b.glslOp(GLSLstd450UMax, u32T(), {b.op(Op::OpIMul, u32T(), {i, u32(lanes)}), length});
    BoundsCheck c = beginBoundsCheck(op, b.op(Op::OpUDiv, u32T(), {length, u32(lanes)}));
    c.length = length;
    c.low = firstOut;
    r = access();
    r = endBoundsCheck(c, load ? V : 0, r, b.currentLabel());
  }
  if (load) setId(op.result(0), r);
  return Status::ok();
}

Status Emitter::emitBufferLen(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  const ir::Type* t = op.result(0)->type();
  Id n = 0;
  if (buf.sc == spv::StorageClass::StorageBuffer) {
    n = b.op(Op::OpArrayLength, u32T(), {buf.var, 0});
    if (t->bits() != 32) n = b.op(Op::OpUConvert, valueType(t), {n});
  } else {
    n = b.constInt(valueType(t), buf.length);
  }
  setId(op.result(0), n);
  return Status::ok();
}

Status Emitter::emitAtomic(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  setId(op.result(0), guardAccess(op, buf, valueType(buf.elem), [&] { return atomicAt(op); }));
  return Status::ok();
}

// The atomic itself; its result (the old value).
Id Emitter::atomicAt(const ir::Op& op) {
  const BufferRef& buf = *get(op.operand(0)).buf;
  const ir::Type* elem = buf.elem;
  Id T = valueType(elem);
  Id ptr = elementPointer(buf, id(op.operand(1)), op.operand(1)->type());
  bool shared = buf.sc == spv::StorageClass::Workgroup;
  Id scope = u32(shared ? kScopeWorkgroup : kScopeDevice), relaxed = u32(0);
  Id v = id(op.operand(2));
  ir::OpId n = op.id();
  Id r = 0;
  if (elem->isInt()) {
    bool sg = elem->isSigned();
    if (n == ir::OpId::AtomicAdd) r = b.op(Op::OpAtomicIAdd, T, {ptr, scope, relaxed, v});
    else if (n == ir::OpId::AtomicMin) r = b.op(sg ? Op::OpAtomicSMin : Op::OpAtomicUMin, T, {ptr, scope, relaxed, v});
    else if (n == ir::OpId::AtomicMax) r = b.op(sg ? Op::OpAtomicSMax : Op::OpAtomicUMax, T, {ptr, scope, relaxed, v});
    else if (n == ir::OpId::AtomicXchg) r = b.op(Op::OpAtomicExchange, T, {ptr, scope, relaxed, v});
    else r = b.op(Op::OpAtomicCompareExchange, T, {ptr, scope, relaxed, relaxed, id(op.operand(3)), v});
    return r;
  }
  if (!buf.asBits)  // checkDevice found a native float add for this buffer
    return b.op(Op::OpAtomicFAddEXT, T, {ptr, scope, relaxed, v});
  Id U = buf.elemMemType;
  if (n == ir::OpId::AtomicXchg) {
    Id old = b.op(Op::OpAtomicExchange, U, {ptr, scope, relaxed, b.op(Op::OpBitcast, U, {v})});
    return b.op(Op::OpBitcast, T, {old});
  }
  // atomic.add as a compare-exchange loop on the bits:
  //   pre:    init = atomic load; br header
  //   header: expected = phi(init, seen); seen = cas(ptr, bits(float(expected) + v), expected)
  //           LoopMerge merge cont; br seen == expected ? merge : cont
  //   cont:   br header
  Id init = b.op(Op::OpAtomicLoad, U, {ptr, scope, relaxed});
  Id pre = b.currentLabel(), header = b.newId(), cont = b.newId(), merge = b.newId(), seen = b.newId();
  b.opVoid(Op::OpBranch, {header});
  b.label(header);
  Id expected = b.op(Op::OpPhi, U, {init, pre, seen, cont});
  Id sum = b.op(Op::OpFAdd, T, {b.op(Op::OpBitcast, T, {expected}), v});
  b.opWithId(Op::OpAtomicCompareExchange, U, seen,
             {ptr, scope, relaxed, relaxed, b.op(Op::OpBitcast, U, {sum}), expected});
  Id done = b.op(Op::OpIEqual, boolT(), {seen, expected});
  b.opVoid(Op::OpLoopMerge, {merge, cont, 0});
  b.opVoid(Op::OpBranchConditional, {done, merge, cont});
  b.label(cont);
  b.opVoid(Op::OpBranch, {header});
  b.label(merge);
  return b.op(Op::OpBitcast, T, {expected});
}

Status Emitter::emitWorkgroupAlloc(const ir::Op& op) {
  const ir::Type* elem = op.result(0)->type()->elem();
  BufferRef& ref = buffers_.emplace_back();
  ref.sc = spv::StorageClass::Workgroup;
  ref.elem = elem;
  ref.asBits = floatAsBits(elem, ir::Space::Workgroup);
  ref.elemMemType = ref.asBits ? b.typeInt(elem->bits(), false) : valueType(elem);
  ref.length = uint32_t(op.intAttr("size"));
  Id arr = b.typeArray(ref.elemMemType, ref.length);
  ref.var = b.globalVariable(b.typePointer(ref.sc, arr), ref.sc);
  if (!op.result(0)->name().empty()) b.addName(ref.var, op.result(0)->name());
  interface_.push_back(ref.var);
  set(op.result(0), Val{0, &ref});
  return Status::ok();
}

Status Emitter::emitBarrier(const ir::Op& op) {
  uint32_t semantics = barrierOrdersDeviceMemory_ ? kBarrierDeviceSemantics : kBarrierWorkgroupSemantics;
  b.opVoid(Op::OpControlBarrier, {u32(kScopeWorkgroup), u32(kScopeWorkgroup), u32(semantics)});
  return Status::ok();
}

Status Emitter::emitBuiltin(const ir::Op& op) {
  ir::OpId n = op.id();
  uint32_t dim = op.attr("dim") ? uint32_t(op.intAttr("dim")) : 0;
  if (n == ir::OpId::WorkgroupSize) {
    setId(op.result(0), u32(kernel.workgroupSize[dim]));
    return Status::ok();
  }
  struct Entry { ir::OpId id; spv::BuiltIn builtin; bool vector; };
  static const Entry kBuiltins[] = {
      {ir::OpId::GlobalId, spv::BuiltIn::GlobalInvocationId, true},
      {ir::OpId::LocalId, spv::BuiltIn::LocalInvocationId, true},
      {ir::OpId::WorkgroupId, spv::BuiltIn::WorkgroupId, true},
      {ir::OpId::NumWorkgroups, spv::BuiltIn::NumWorkgroups, true},
      {ir::OpId::SubgroupSize, spv::BuiltIn::SubgroupSize, false},
      {ir::OpId::SubgroupId, spv::BuiltIn::SubgroupId, false},
      {ir::OpId::SubgroupLocalId, spv::BuiltIn::SubgroupLocalInvocationId, false},
  };
  for (const Entry& e : kBuiltins) {
    if (e.id != n) continue;
    Id var = builtinVariable(e.builtin, e.vector);
    Id v = b.op(Op::OpLoad, e.vector ? b.typeVector(u32T(), 3) : u32T(), {var});
    if (e.vector) v = b.op(Op::OpCompositeExtract, u32T(), {v, dim});
    setId(op.result(0), v);
    return Status::ok();
  }
  return error(op, "unknown builtin '" + std::string(op.name()) + "'");
}

void Emitter::addMemoryEmitters(EmitTable& t) {
  using enum ir::OpId;
  t[Load] = &Emitter::emitLoad;
  t[VecLoad] = &Emitter::emitVectorAccess;
  t[VecStore] = &Emitter::emitVectorAccess;
  t[Store] = &Emitter::emitStore;
  t[BufferLen] = &Emitter::emitBufferLen;
  for (ir::OpId n : {AtomicAdd, AtomicMin, AtomicMax, AtomicXchg, AtomicCmpXchg})
    t[n] = &Emitter::emitAtomic;
  t[WorkgroupAlloc] = &Emitter::emitWorkgroupAlloc;
  t[Barrier] = &Emitter::emitBarrier;
  for (ir::OpId n : {GlobalId, LocalId, WorkgroupId, NumWorkgroups, WorkgroupSize,
                     SubgroupSize, SubgroupId, SubgroupLocalId})
    t[n] = &Emitter::emitBuiltin;
}

}  // namespace eph::spirv
