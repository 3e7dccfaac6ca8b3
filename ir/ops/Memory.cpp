// Buffer access, atomics, workgroup memory, barriers and the invocation
// builtins (ids, sizes, subgroups).
#include "ir/interp/Exec.h"
#include "ir/interp/Scalar.h"
#include "ir/ops/Rules.h"

namespace eph::ir {
namespace {
using namespace rules;

std::string checkBufferIndex(const Op& op) {
  const Type* b = operandType(op, 0);
  if (!b->isBuffer()) return "operand 0 must be a buffer, got " + typeStr(b);
  if (!operandType(op, 1)->isInt()) return "index must be an integer, got " + typeStr(operandType(op, 1));
  // Host code reaches device memory only through h2d/d2h; kernels never see host memory.
  const Function* f = op.parentFunction();
  if (f && f->isHost() && b->space() != Space::Host)
    return "host code accesses only host buffers, not " + typeStr(b) + " (copy with h2d/d2h)";
  if (f && !f->isHost() && b->space() == Space::Host)
    return "kernels and device functions cannot access host buffer " + typeStr(b);
  return {};
}

std::string checkWritable(const Op& op) {
  if (operandType(op, 0)->ownership() == Ownership::Read)
    return "writes through a read-only borrow " + typeStr(operandType(op, 0));
  return {};
}

std::string verifyLoad(const Op& op) {
  if (auto e = checkBufferIndex(op); !e.empty()) return e;
  if (resultType(op) != operandType(op, 0)->elem())
    return "result must be the element type " + typeStr(operandType(op, 0)->elem());
  return {};
}

std::string verifyStore(const Op& op) {
  if (auto e = checkBufferIndex(op); !e.empty()) return e;
  if (operandType(op, 2) != operandType(op, 0)->elem())
    return "stores " + typeStr(operandType(op, 2)) + " into a buffer of " +
           typeStr(operandType(op, 0)->elem());
  return checkWritable(op);
}

// vec.load / vec.store: the vector type of N consecutive elements (N is 2 or
// 4) of a buffer of scalars, in device or workgroup memory.
std::string checkVectorAccess(const Op& op, const Type* v) {
  if (auto e = checkBufferIndex(op); !e.empty()) return e;
  const Type* elem = operandType(op, 0)->elem();
  if (!(elem->isInt() || elem->isFloat()))
    return "vector access needs a buffer of integers or floats, not " + typeStr(elem);
  if (!v->isVector() || v->elem() != elem || (v->count() != 2 && v->count() != 4))
    return "a vector access moves vec<" + typeStr(elem) + ", 2> or vec<" + typeStr(elem) + ", 4>, not " + typeStr(v);
  return {};
}

std::string verifyVecLoad(const Op& op) { return checkVectorAccess(op, resultType(op)); }

std::string verifyVecStore(const Op& op) {
  if (auto e = checkVectorAccess(op, operandType(op, 2)); !e.empty()) return e;
  return checkWritable(op);
}

std::string verifyBufferLen(const Op& op) {
  if (!operandType(op, 0)->isBuffer()) return "operand must be a buffer, got " + typeStr(operandType(op, 0));
  if (!resultType(op)->isInt()) return "result must be an integer";
  return {};
}

std::string verifyAtomic(const Op& op) {
  if (auto e = checkBufferIndex(op); !e.empty()) return e;
  if (auto e = checkWritable(op); !e.empty()) return e;
  const Type* elem = operandType(op, 0)->elem();
  bool floatOk = op.is(OpId::AtomicAdd) || op.is(OpId::AtomicXchg);
  if (!elem->isInt() && !(floatOk && elem->isFloat()))
    return "'" + std::string(op.name()) + "' works on integer" + (floatOk ? " or float" : "") +
           " buffers, not " + typeStr(elem);
  if (elem->isInt() && elem->bits() < 32) return "atomics need 32- or 64-bit elements";
  for (unsigned i = 2; i < op.numOperands(); ++i)
    if (operandType(op, i) != elem) return "operand " + std::to_string(i) + " must be " + typeStr(elem);
  if (resultType(op) != elem) return "result (the old value) must be " + typeStr(elem);
  return {};
}

std::string verifyWorkgroupAlloc(const Op& op) {
  const Type* b = resultType(op);
  if (!b->isBuffer() || b->space() != Space::Workgroup || b->ownership() != Ownership::Write)
    return "result must be a buffer<T, workgroup, write>, got " + typeStr(b);
  if (auto e = needIndexAttr(op, "size", 1, 1 << 20); !e.empty()) return e;
  const Function* f = op.parentFunction();
  if (op.parentOp() || !f || !f->isKernel()) return "must be at the top level of a kernel";
  return {};
}

std::string verifyBuiltin(const Op& op) {
  if (resultType(op) != resultType(op)->scalar() || !resultType(op)->isInt() ||
      resultType(op)->bits() != 32)
    return "result must be a 32-bit integer";
  if (op.attr("dim") || op.info().name.find("subgroup") == std::string_view::npos)
    return needIndexAttr(op, "dim", 0, 2);
  return {};
}

// ---- interpreter semantics -------------------------------------------------

bool interpLoad(interp::Exec& ex, const Op& op) {
  interp::RtValue v;
  if (!ex.readElement(op, ex.operand(op, 0), ex.operand(op, 1), v)) return false;
  return ex.setResult(op, std::move(v));
}

bool interpStore(interp::Exec& ex, const Op& op) {
  return ex.writeElement(op, ex.operand(op, 0), ex.operand(op, 1), ex.operand(op, 2));
}

// Element N·i + k of the buffer, for lane k of a vector access.
interp::RtValue laneIndex(const interp::RtValue& i, unsigned n, unsigned k) {
  interp::RtValue at = i;  // the index's type (its sign) with an unwrapped value
  at.i = i.i * int64_t(n) + int64_t(k);
  if (i.i < 0 && !i.type->isSigned()) at.i = -1;  // a u64 index past 2^63: out of bounds
  return at;
}

bool interpVecLoad(interp::Exec& ex, const Op& op) {
  interp::RtValue v;
  v.type = resultType(op);
  v.elems.resize(v.type->count());
  for (unsigned k = 0; k < v.type->count(); ++k)
    if (!ex.readElement(op, ex.operand(op, 0), laneIndex(ex.operand(op, 1), v.type->count(), k), v.elems[k]))
      return false;
  return ex.setResult(op, std::move(v));
}

bool interpVecStore(interp::Exec& ex, const Op& op) {
  const interp::RtValue& v = ex.operand(op, 2);
  for (unsigned k = 0; k < v.elems.size(); ++k)
    if (!ex.writeElement(op, ex.operand(op, 0), laneIndex(ex.operand(op, 1), unsigned(v.elems.size()), k), v.elems[k]))
      return false;
  return true;
}

bool interpBufferLen(interp::Exec& ex, const Op& op) {
  // A view (buffer.view) has its count, wherever its buffer lives.
  if (const interp::RtValue& v = ex.operand(op, 0); v.isView())
    return ex.setResult(op, interp::RtValue::ofInt(resultType(op), int64_t(v.viewCount)));
  // A device buffer of host code behind device hooks lives on the device:
  // the hooks know its length.
  if (interp::DeviceHooks* d = operandType(op, 0)->space() == Space::Device ? ex.deviceHooks() : nullptr) {
    auto n = d->length(ex.operand(op, 0).buffer, op.loc());
    if (!n) return ex.fail(n.takeError());
    return ex.setResult(op, interp::RtValue::ofInt(resultType(op), int64_t(*n)));
  }
  interp::BufferData* b = ex.buffer(op, ex.operand(op, 0));
  if (!b) return false;
  return ex.setResult(op, interp::RtValue::ofInt(resultType(op), int64_t(b->elems.size())));
}

enum class AtomicKind { Add, Min, Max, Xchg, CmpXchg };

// Reads the element (it must have been written), stores the combined value
// and returns the old one. Invocations run one at a time between barriers,
// so every atomic is indivisible.
template <AtomicKind K>
bool interpAtomic(interp::Exec& ex, const Op& op) {
  const interp::RtValue& buf = ex.operand(op, 0);
  const interp::RtValue& index = ex.operand(op, 1);
  interp::RtValue old, now;
  if (!ex.readElement(op, buf, index, old)) return false;
  const interp::RtValue& v = ex.operand(op, 2);
  std::string error;
  switch (K) {
    case AtomicKind::Add:
      if (!interp::binaryScalar(interp::BinaryKind::Add, old, v, now, error)) return ex.fail(op, error);
      break;
    case AtomicKind::Min:
      if (!interp::binaryScalar(interp::BinaryKind::Min, old, v, now, error)) return ex.fail(op, error);
      break;
    case AtomicKind::Max:
      if (!interp::binaryScalar(interp::BinaryKind::Max, old, v, now, error)) return ex.fail(op, error);
      break;
    case AtomicKind::Xchg: now = v; break;
    case AtomicKind::CmpXchg:
      now = interp::bitsOf(old) == interp::bitsOf(v) ? ex.operand(op, 3) : old;
      break;
  }
  if (!ex.writeElement(op, buf, index, std::move(now))) return false;
  return ex.setResult(op, std::move(old));
}

bool interpWorkgroupAlloc(interp::Exec& ex, const Op& op) {
  interp::RtValue b;
  if (!ex.workgroupBuffer(op, b)) return false;
  return ex.setResult(op, std::move(b));
}

bool interpBarrier(interp::Exec& ex, const Op& op) { return ex.barrier(op); }

enum class BuiltinKind {
  GlobalId, LocalId, WorkgroupId, NumWorkgroups, WorkgroupSize, SubgroupSize, SubgroupId,
  SubgroupLocalId,
};

template <BuiltinKind K>
bool interpBuiltin(interp::Exec& ex, const Op& op) {
  const interp::Invocation* inv = ex.invocation();
  if (!inv) return ex.fail(op, "'" + std::string(op.name()) + "' outside a kernel invocation");
  unsigned dim = op.attr("dim") ? static_cast<unsigned>(op.intAttr("dim")) : 0;
  constexpr uint32_t sg = interp::Interpreter::kSubgroupSize;
  uint32_t v = 0;
  switch (K) {
    case BuiltinKind::GlobalId: v = inv->globalId[dim]; break;
    case BuiltinKind::LocalId: v = inv->localId[dim]; break;
    case BuiltinKind::WorkgroupId: v = inv->workgroupId[dim]; break;
    case BuiltinKind::NumWorkgroups: v = inv->numWorkgroups[dim]; break;
    case BuiltinKind::WorkgroupSize: v = inv->workgroupSize[dim]; break;
    case BuiltinKind::SubgroupSize: v = sg; break;
    case BuiltinKind::SubgroupId: v = inv->localIndex / sg; break;
    case BuiltinKind::SubgroupLocalId: v = inv->localIndex % sg; break;
  }
  return ex.setResult(op, interp::RtValue::ofInt(resultType(op), v));
}

OpInfo atomic(std::string_view name, int operands, std::string_view summary, InterpFn interp) {
  return {.name = name, .numOperands = operands, .numResults = 1,
          .effects = {Effect::Write, Effect::None}, .verify = verifyAtomic, .interp = interp,
          .summary = summary, .diffTest = "VulkanDifferential.MemoryAndAtomics"};
}

OpInfo builtin(std::string_view name, std::string_view summary, InterpFn interp) {
  return {.name = name, .numOperands = 0, .numResults = 1, .flags = kPure | kKernelOnly,
          .verify = verifyBuiltin, .interp = interp, .summary = summary, .diffTest = "VulkanDifferential.Builtins"};
}

OpInfo kOps[] = {
    {.name = "load", .numOperands = 2, .numResults = 1, .flags = kReadOnly,
     .effects = {Effect::Read, Effect::None}, .verify = verifyLoad, .interp = interpLoad,
     .summary = "element i of a buffer (out of bounds or never written is an error)",
     .diffTest = "VulkanDifferential.MemoryAndAtomics"},
    {.name = "store", .numOperands = 3, .numResults = 0,
     .effects = {Effect::Write, Effect::None}, .verify = verifyStore, .interp = interpStore,
     .summary = "store %buf, %i, %v: write element i",
     .diffTest = "VulkanDifferential.MemoryAndAtomics"},
    {.name = "vec.load", .numOperands = 2, .numResults = 1, .flags = kReadOnly,
     .effects = {Effect::Read, Effect::None}, .verify = verifyVecLoad, .interp = interpVecLoad,
     .summary = "vec.load %buf, %i : vec<T, N>: elements N·i to N·i+N-1 of a buffer of T (N is 2 or 4)",
     .diffTest = "VulkanDifferential.VectorAccess"},
    {.name = "vec.store", .numOperands = 3, .numResults = 0,
     .effects = {Effect::Write, Effect::None}, .verify = verifyVecStore, .interp = interpVecStore,
     .summary = "vec.store %buf, %i, %v: write vec<T, N> %v to elements N·i to N·i+N-1",
     .diffTest = "VulkanDifferential.VectorAccess"},
    {.name = "buffer.len", .numOperands = 1, .numResults = 1, .flags = kPure,
     .effects = {Effect::Read}, .verify = verifyBufferLen, .interp = interpBufferLen, .summary = "number of elements",
     .diffTest = "VulkanDifferential.MemoryAndAtomics"},
    atomic("atomic.add", 3, "atomically add; returns the old value",
           interpAtomic<AtomicKind::Add>),
    atomic("atomic.min", 3, "atomically take the minimum; returns the old value",
           interpAtomic<AtomicKind::Min>),
    atomic("atomic.max", 3, "atomically take the maximum; returns the old value",
           interpAtomic<AtomicKind::Max>),
    atomic("atomic.xchg", 3, "atomically exchange; returns the old value",
           interpAtomic<AtomicKind::Xchg>),
    atomic("atomic.cmpxchg", 4,
           "atomic.cmpxchg %buf, %i, %expected, %new: store if equal; returns the old value",
           interpAtomic<AtomicKind::CmpXchg>),
    {.name = "workgroup.alloc", .numOperands = 0, .numResults = 1, .flags = kKernelOnly,
     .verify = verifyWorkgroupAlloc, .interp = interpWorkgroupAlloc, .summary = "workgroup memory of {size} elements, shared by a workgroup",
     .diffTest = "VulkanDifferential.WorkgroupMemoryKernels"},
    {.name = "barrier", .numOperands = 0, .numResults = 0, .flags = kKernelOnly | kBarrier, .interp = interpBarrier,
     .summary = "wait for the whole workgroup; makes workgroup and device memory writes visible",
     .diffTest = "VulkanDifferential.WorkgroupMemoryKernels"},
    builtin("global_id", "global invocation id in {dim}",
            interpBuiltin<BuiltinKind::GlobalId>),
    builtin("local_id", "invocation id within the workgroup in {dim}",
            interpBuiltin<BuiltinKind::LocalId>),
    builtin("workgroup_id", "workgroup id in {dim}",
            interpBuiltin<BuiltinKind::WorkgroupId>),
    builtin("num_workgroups", "number of workgroups in {dim}",
            interpBuiltin<BuiltinKind::NumWorkgroups>),
    builtin("workgroup_size", "invocations per workgroup in {dim}",
            interpBuiltin<BuiltinKind::WorkgroupSize>),
    builtin("subgroup_size", "invocations per subgroup",
            interpBuiltin<BuiltinKind::SubgroupSize>),
    builtin("subgroup_id", "subgroup number within the workgroup",
            interpBuiltin<BuiltinKind::SubgroupId>),
    builtin("subgroup_local_id", "invocation number within the subgroup",
            interpBuiltin<BuiltinKind::SubgroupLocalId>),
};

}  // namespace

void registerMemoryOps(OpTable& t) { t.add(kOps); }

}  // namespace eph::ir
