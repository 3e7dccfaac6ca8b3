// emitKernel: checks the kernel against the device, declares its interface
// (the ABI in Spirv.h), and walks its body: regions, structured control flow
// and calls. The op families live in EmitArith/EmitAggregate/EmitMemory.cpp.
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>

#include "ir/Layout.h"
#include "ir/OpTable.h"
#include "targets/spirv/Emitter.h"
#include "targets/spirv/Spirv.h"
#include "targets/spirv/SpirvEnv.h"

namespace eph::spirv {

using spv::Op;

Emitter::Emitter(const ir::Function& k, const DeviceCaps& c, ModuleBuilder& builder, const EmitOptions& o)
    : b(builder), kernel(k), caps(c), options(o), tuning(EmitTuning::fromEnvironment()) {}

EmitTuning EmitTuning::fromEnvironment() {
  EmitTuning t;
  const char* env = std::getenv("EPH_SPIRV_TUNE");
  if (!env) return t;
  std::stringstream in(env);
  for (std::string item; std::getline(in, item, ',');) {
    if (item == "uniform-barrier") t.uniformBarrier = true;
    else if (item == "no-unroll") t.unroll = false;
    else if (item == "wrap-check") t.wrapCheck = true;
    else if (item == "restrict") t.restrict = true;
  }
  return t;
}

Error Emitter::error(const ir::Op& op, const std::string& message) const {
  Loc loc = op.loc().known() ? op.loc() : kernel.loc();
  return Error{loc, "kernel @" + kernel.name() + ": " + message};
}

Val Emitter::get(const ir::Value* v) const {
  auto it = frames_.back().find(v);
  assert(it != frames_.back().end() && "value used before it was emitted");
  return it->second;
}

// ---- types -------------------------------------------------------------------

Id Emitter::valueType(const ir::Type* t) {
  if (auto it = valueTypes_.find(t); it != valueTypes_.end()) return it->second;
  Id id = 0;
  switch (t->kind()) {
    case ir::TypeKind::Bool: id = b.typeBool(); break;
    case ir::TypeKind::Int: id = b.typeInt(t->bits(), false); break;
    case ir::TypeKind::Float: id = b.typeFloat(t->bits()); break;
    case ir::TypeKind::Vector: id = b.typeVector(valueType(t->elem()), t->count()); break;
    case ir::TypeKind::Array: id = b.typeArray(valueType(t->elem()), t->count()); break;
    case ir::TypeKind::CoopMatrix:
      id = t->coopScope() == ir::CoopScope::Workgroup
               ? b.typeCoopMatrixWorkgroup(valueType(t->elem()), t->rows(), t->cols(), unsigned(t->coopUse()) - 1)
               : b.typeCoopMatrixNV(valueType(t->elem()), t->rows(), t->cols());
      break;
    case ir::TypeKind::Struct: {
      std::vector<Id> members;
      for (const ir::Type* m : t->members()) members.push_back(valueType(m));
      id = b.typeStruct(members);
      break;
    }
    case ir::TypeKind::Sum: {
      std::vector<Id> members = {u32T()};
      for (const ir::Type* m : t->members()) members.push_back(valueType(m));
      id = b.typeStruct(members);
      break;
    }
    default: assert(false && "no SPIR-V value type (checkDevice rejects these)"); break;
  }
  return valueTypes_[t] = id;
}

Id Emitter::memoryType(const ir::Type* t) {
  if (auto it = memoryTypes_.find(t); it != memoryTypes_.end()) return it->second;
  Id id = 0;
  switch (t->kind()) {
    case ir::TypeKind::Bool: id = u32T(); break;
    case ir::TypeKind::Int:
    case ir::TypeKind::Float: id = valueType(t); break;
    case ir::TypeKind::Vector: id = b.typeVector(memoryType(t->elem()), t->count()); break;
    case ir::TypeKind::Array:
      id = b.typeArray(memoryType(t->elem()), t->count(), uint32_t(ir::storageStride(t->elem())));
      break;
    case ir::TypeKind::Struct: {
      std::vector<Id> members;
      std::vector<uint32_t> offsets;
      for (unsigned i = 0; i < t->members().size(); ++i) {
        members.push_back(memoryType(t->members()[i]));
        offsets.push_back(uint32_t(ir::fieldOffset(t, i)));
      }
      id = b.typeStruct(members, offsets);
      break;
    }
    default: assert(false && "no SPIR-V memory type (checkDevice rejects these)"); break;
  }
  return memoryTypes_[t] = id;
}

Id Emitter::fromMemory(Id m, const ir::Type* t) {
  switch (t->kind()) {
    case ir::TypeKind::Bool: return b.op(Op::OpINotEqual, boolT(), {m, u32(0)});
    case ir::TypeKind::Vector:
      if (!t->elem()->isBool()) return m;
      return b.op(Op::OpINotEqual, valueType(t), {m, b.splat(memoryType(t), u32(0))});
    case ir::TypeKind::Array:
    case ir::TypeKind::Struct: {
      std::vector<uint32_t> parts;
      unsigned n = t->isArray() ? t->count() : unsigned(t->members().size());
      for (unsigned i = 0; i < n; ++i) {
        const ir::Type* mt = t->isArray() ? t->elem() : t->members()[i];
        parts.push_back(fromMemory(b.op(Op::OpCompositeExtract, memoryType(mt), {m, i}), mt));
      }
      return b.op(Op::OpCompositeConstruct, valueType(t), parts);
    }
    default: return m;
  }
}

Id Emitter::toMemory(Id v, const ir::Type* t) {
  switch (t->kind()) {
    case ir::TypeKind::Bool: return b.op(Op::OpSelect, u32T(), {v, u32(1), u32(0)});
    case ir::TypeKind::Vector: {
      if (!t->elem()->isBool()) return v;
      Id mt = memoryType(t);
      return b.op(Op::OpSelect, mt, {v, b.splat(mt, u32(1)), b.splat(mt, u32(0))});
    }
    case ir::TypeKind::Array:
    case ir::TypeKind::Struct: {
      std::vector<uint32_t> parts;
      unsigned n = t->isArray() ? t->count() : unsigned(t->members().size());
      for (unsigned i = 0; i < n; ++i) {
        const ir::Type* mt = t->isArray() ? t->elem() : t->members()[i];
        parts.push_back(toMemory(b.op(Op::OpCompositeExtract, valueType(mt), {v, i}), mt));
      }
      return b.op(Op::OpCompositeConstruct, memoryType(t), parts);
    }
    default: return v;
  }
}

Id Emitter::boolLike(const ir::Type* t) {
  return t->isVector() ? b.typeVector(boolT(), t->count()) : boolT();
}

Id Emitter::constLike(const ir::Type* t, double v) {
  const ir::Type* s = t->scalar();
  Id c = s->isFloat() ? b.constFloat(valueType(s), v) : b.constInt(valueType(s), uint64_t(int64_t(v)));
  return b.splat(valueType(t), c);
}

Id Emitter::intConstLike(const ir::Type* t, uint64_t bits) {
  return b.splat(valueType(t), b.constInt(valueType(t->scalar()), bits));
}

// ---- device checks -------------------------------------------------------------

namespace {

// A kernel's types ordered by text (shorter first), not by address, so that
// the first type an error names is the same on every run ('!T' before
// 'fn(!T) -> (!T)').
struct ByText {
  bool operator()(const ir::Type* a, const ir::Type* b) const {
    std::string as = a->str(), bs = b->str();
    if (as.size() != bs.size()) return as.size() < bs.size();
    return as != bs ? as < bs : std::less<const ir::Type*>()(a, b);
  }
};
using TypeSet = std::set<const ir::Type*, ByText>;

void collectTypes(const ir::Type* t, TypeSet& out) {
  if (!out.insert(t).second) return;
  if (t->elem()) collectTypes(t->elem(), out);
  for (const ir::Type* m : t->members()) collectTypes(m, out);
  for (const ir::Type* r : t->results()) collectTypes(r, out);
}

bool contains(const ir::Type* t, const std::function<bool(const ir::Type*)>& pred) {
  if (pred(t)) return true;
  if (t->elem() && !t->isBuffer() && contains(t->elem(), pred)) return true;
  for (const ir::Type* m : t->members())
    if (contains(m, pred)) return true;
  return false;
}

// The kernel and every device function it reaches, callers first.
std::vector<const ir::Function*> reachable(const ir::Function& kernel) {
  std::vector<const ir::Function*> out = {&kernel};
  std::set<const ir::Function*> seen = {&kernel};
  for (size_t i = 0; i < out.size(); ++i) {
    const_cast<ir::Function*>(out[i])->walk([&](ir::Op* op) {
      if (!op->is(ir::OpId::Call)) return;
      const ir::Function* f = kernel.module()->lookup(op->symbolAttr("callee"));
      if (f && seen.insert(f).second) out.push_back(f);
    });
  }
  return out;
}

}  // namespace

bool Emitter::nativeFloatAdd(const ir::Type* elem, ir::Space space) const {
  if (space != ir::Space::Device || floatAsBits(elem, space)) return false;
  return (elem->bits() == 32 && caps.atomicFloat32Add) || (elem->bits() == 64 && caps.atomicFloat64Add);
}

Status Emitter::checkDevice() {
  std::string device = caps.name.empty() ? "the device" : "device '" + caps.name + "'";
  auto lacks = [&](const std::string& what, const std::string& why) {
    return Error{kernel.loc(), "kernel @" + kernel.name() + " needs " + what + " (" + why +
                                   "), which " + device + " does not support"};
  };
  auto limit = [&](const std::string& what, uint64_t have, uint64_t max) {
    return Error{kernel.loc(), "kernel @" + kernel.name() + " uses " + what + " of " +
                                   std::to_string(have) + ", above the limit of " +
                                   std::to_string(max) + " of " + device};
  };

  // Workgroup size.
  auto wg = kernel.workgroupSize;
  uint64_t invocations = uint64_t(wg[0]) * wg[1] * wg[2];
  if (caps.maxWorkgroupInvocations && invocations > caps.maxWorkgroupInvocations)
    return limit("a workgroup of " + std::to_string(wg[0]) + "x" + std::to_string(wg[1]) + "x" +
                     std::to_string(wg[2]) + " invocations (maxWorkgroupInvocations)",
                 invocations, caps.maxWorkgroupInvocations);
  for (int d = 0; d < 3; ++d)
    if (caps.maxWorkgroupSize[d] && wg[d] > caps.maxWorkgroupSize[d])
      return limit("a workgroup size in dimension " + std::to_string(d) + " (maxWorkgroupSize)",
                   wg[d], caps.maxWorkgroupSize[d]);

  // Types, atomics and memory, over the kernel and every function it calls.
  TypeSet types;
  uint64_t sharedBytes = 0;
  std::vector<const ir::Type*> scalarParams;
  for (const ir::Type* p : kernel.paramTypes())
    if (!p->isBuffer()) scalarParams.push_back(p);
  Status st;
  for (const ir::Function* f : reachable(kernel)) {
    for (const ir::Type* p : f->paramTypes()) collectTypes(p, types);
    const_cast<ir::Function*>(f)->walk([&](ir::Op* op) {
      if (!st) return;
      for (ir::Value* v : op->operands()) collectTypes(v->type(), types);
      for (ir::Value* v : op->results()) collectTypes(v->type(), types);
      for (unsigned r = 0; r < op->numRegions(); ++r)
        for (ir::Value* a : op->region(r).args()) collectTypes(a->type(), types);
      ir::OpId name = op->id();
      if (std::string need = missingSubgroupFeature(*op); !need.empty()) {
        Error e = lacks(need, "'" + std::string(op->name()) + "'");
        e.loc = op->loc().known() ? op->loc() : e.loc;
        st = e;
        return;
      }
      if (name == ir::OpId::CoopMulAdd) {
        const ir::Type *a = op->operand(0)->type(), *c = op->operand(2)->type();
        std::string shape = std::to_string(a->rows()) + "x" + std::to_string(c->cols()) + "x" + std::to_string(a->cols()) +
                            " " + a->elem()->str() + " " + c->elem()->str();
        if (a->coopScope() == ir::CoopScope::Workgroup) {
          unsigned w = kernel.workgroupSize[0] * kernel.workgroupSize[1] * kernel.workgroupSize[2];
          if (caps.workgroupMatrixShapeFor(a->rows(), c->cols(), a->cols(), a->elem()->str(), c->elem()->str(), w)
                  .empty()) {
            Error e = caps.workgroupMatrixShapes.empty()
                          ? lacks("workgroup cooperative matrices (VK_NV_cooperative_matrix2)", "'coop.muladd'")
                          : lacks("a " + shape + " workgroup cooperative matrix multiply-add in workgroups of " +
                                      std::to_string(w) + " invocations",
                                  "'coop.muladd'");
            e.loc = op->loc().known() ? op->loc() : e.loc;
            st = e;
          }
          return;
        }
        if (!caps.hasCoopShape(shape)) {
          Error e = lacks("a " + shape + " cooperative matrix multiply-add", "'coop.muladd'");
          e.loc = op->loc().known() ? op->loc() : e.loc;
          st = e;
          return;
        }
      }
      if (name == ir::OpId::WorkgroupAlloc)
        sharedBytes += uint64_t(op->intAttr("size")) * ir::storageStride(op->result(0)->type()->elem());
      if (ir::isAtomic(name)) {
        const ir::Type* buf = op->operand(0)->type();
        const ir::Type* elem = buf->elem();
        if (elem->isFloat()) {
          if (elem->bits() == 16) {
            st = error(*op, "'" + std::string(op->name()) + "' on f16 elements is not supported by the SPIR-V target (atomics need 32- or 64-bit elements)");
            return;
          }
          bool native = name == ir::OpId::AtomicAdd && buf->space() == ir::Space::Device &&
                        ((elem->bits() == 32 && caps.atomicFloat32Add) ||
                         (elem->bits() == 64 && caps.atomicFloat64Add));
          if (!native) bitsFloats_.insert({elem, buf->space()});
          if (!native && elem->bits() == 64 && !(caps.atomicInt64 && caps.int64))
            st = lacks("64-bit atomics", "'" + std::string(op->name()) + "' on f64 elements, done as a 64-bit compare-exchange loop");
        } else if (elem->bits() == 64 && !caps.atomicInt64) {
          st = lacks("64-bit integer atomics", "'" + std::string(op->name()) + "' on " + elem->str() + " elements");
        }
      }
    });
    if (!st) return st;
  }
  for (const ir::Type* t : types) {
    std::string ts = "'" + t->str() + "' values";
    if (contains(t, [](const ir::Type* x) { return x->isVar(); }))
      return Error{kernel.loc(), "kernel @" + kernel.name() + " still has a type variable in '" + t->str() +
                                     "': it is generic (run the monomorphize pass first)"};
    if (contains(t, [](const ir::Type* x) { return x->isFunction(); }))
      return Error{kernel.loc(), "kernel @" + kernel.name() + ": function values ('" + t->str() +
                                     "') are not supported by the SPIR-V target (run the monomorphize pass first: "
                                     "it makes calls through known functions direct)"};
    if (t->isCoopMatrix() && t->coopScope() == ir::CoopScope::Subgroup && caps.cooperativeMatrixShapes.empty())
      return lacks("cooperative matrices (VK_NV_cooperative_matrix)", ts);
    if (t->isCoopMatrix() && t->coopScope() == ir::CoopScope::Workgroup && caps.workgroupMatrixShapes.empty())
      return lacks("workgroup cooperative matrices (VK_NV_cooperative_matrix2)", ts);
    if (t->isFloat() && t->bits() == 64 && !caps.float64) return lacks("float64", ts);
    if (t->isFloat() && t->bits() == 16 && !caps.float16) return lacks("float16", ts);
    if (t->isInt() && t->bits() == 64 && !caps.int64) return lacks("int64", ts);
    if (t->isInt() && t->bits() == 16 && !caps.int16) return lacks("int16", ts);
    if (t->isInt() && t->bits() == 8 && !caps.int8) return lacks("int8", ts);
    if (!t->isBuffer() && contains(t, [](const ir::Type* x) { return x->isBuffer(); }))
      return Error{kernel.loc(), "kernel @" + kernel.name() + ": '" + t->str() +
                                     "' holds a buffer; the SPIR-V target passes buffers only directly, not inside structs, sums or arrays"};
    if (t->isBuffer() && t->space() != ir::Space::Workgroup &&
        contains(t->elem(), [](const ir::Type* x) { return x->isSum(); }))
      return Error{kernel.loc(), "kernel @" + kernel.name() + ": '" + t->str() +
                                     "': sum types in buffer memory are not supported by the SPIR-V target"};
  }
  for (const ir::Type* p : scalarParams)
    if (contains(p, [](const ir::Type* x) { return x->isSum(); }))
      return Error{kernel.loc(), "kernel @" + kernel.name() + ": parameter of type '" + p->str() +
                                     "': sum types as push constants are not supported by the SPIR-V target"};
  // Workgroup-scope matrices: the driver keeps some workgroup memory for itself.
  const bool wgMatrices = std::any_of(types.begin(), types.end(), [](const ir::Type* t) {
    return t->isCoopMatrix() && t->coopScope() == ir::CoopScope::Workgroup;
  });
  if (wgMatrices && caps.maxWorkgroupMemoryBytes &&
      sharedBytes + caps.workgroupMatrixReservedMemory > caps.maxWorkgroupMemoryBytes)
    return limit("workgroup memory (bytes, maxWorkgroupMemoryBytes less the " +
                     std::to_string(caps.workgroupMatrixReservedMemory) + " the driver keeps for workgroup matrices)",
                 sharedBytes, caps.maxWorkgroupMemoryBytes - caps.workgroupMatrixReservedMemory);
  if (caps.maxWorkgroupMemoryBytes && sharedBytes > caps.maxWorkgroupMemoryBytes)
    return limit("workgroup memory (bytes, maxWorkgroupMemoryBytes)", sharedBytes, caps.maxWorkgroupMemoryBytes);
  if (!scalarParams.empty()) {
    uint64_t bytes = ir::storageSize(kernel.module()->context().structType(scalarParams));
    if (caps.maxPushConstantBytes && bytes > caps.maxPushConstantBytes)
      return limit("push constants (bytes of scalar parameters, maxPushConstantBytes)", bytes,
                   caps.maxPushConstantBytes);
  }
  return Status::ok();
}

// ---- the kernel interface --------------------------------------------------------

Id Emitter::builtinVariable(spv::BuiltIn which, bool vector) {
  if (auto it = builtins_.find(which); it != builtins_.end()) return it->second;
  Id t = vector ? b.typeVector(u32T(), 3) : u32T();
  Id var = b.globalVariable(b.typePointer(spv::StorageClass::Input, t), spv::StorageClass::Input);
  b.decorate(var, spv::Decoration::BuiltIn, {uint32_t(which)});
  interface_.push_back(var);
  return builtins_[which] = var;
}

Status Emitter::declareInterface(std::vector<Val>& params) {
  ir::Context& ctx = kernel.module()->context();
  std::vector<const ir::Type*> scalars;
  for (unsigned i = 0; i < kernel.paramTypes().size(); ++i) {
    const ir::Type* t = kernel.paramTypes()[i];
    if (t->isBuffer()) {
      BufferRef& ref = buffers_.emplace_back();
      ref.sc = spv::StorageClass::StorageBuffer;
      ref.elem = t->elem();
      ref.asBits = floatAsBits(t->elem(), ir::Space::Device);
      ref.elemMemType = ref.asBits ? b.typeInt(t->elem()->bits(), false) : memoryType(t->elem());
      ref.binding = uint32_t(kernel.bindingOf(i));
      uint32_t stride = uint32_t(ir::storageStride(t->elem()));
      Id block = b.typeBlockStruct({b.typeRuntimeArray(ref.elemMemType, stride)}, {0},
                                   uint32_t(kernel.bindingOf(i)));
      ref.var = b.globalVariable(b.typePointer(ref.sc, block), ref.sc);
      b.decorate(ref.var, spv::Decoration::DescriptorSet, {0});
      b.decorate(ref.var, spv::Decoration::Binding, {uint32_t(kernel.bindingOf(i))});
      ref.readOnly = t->ownership() == ir::Ownership::Read;
      if (ref.readOnly) b.decorate(ref.var, spv::Decoration::NonWritable);
      if (tuning.restrict) b.decorate(ref.var, spv::Decoration::Restrict);
      if (!kernel.param(i)->name().empty()) b.addName(ref.var, kernel.param(i)->name());
      interface_.push_back(ref.var);
      params.push_back(Val{0, &ref});
    } else {
      scalars.push_back(t);
      params.push_back(Val{});
    }
  }
  if (scalars.empty()) return Status::ok();
  // One push-constant block: member k is scalar parameter k at its Layout offset.
  const ir::Type* st = ctx.structType(scalars);
  std::vector<Id> members;
  std::vector<uint32_t> offsets;
  for (unsigned k = 0; k < scalars.size(); ++k) {
    members.push_back(memoryType(scalars[k]));
    offsets.push_back(uint32_t(ir::fieldOffset(st, k)));
  }
  Id block = b.typeStruct(members, offsets, true);
  Id var = b.globalVariable(b.typePointer(spv::StorageClass::PushConstant, block),
                            spv::StorageClass::PushConstant);
  b.addName(var, "push_constants");
  interface_.push_back(var);
  // Loaded once at the top of the kernel (emit() calls this inside the function).
  unsigned k = 0;
  for (unsigned i = 0; i < params.size(); ++i) {
    if (params[i].buf) continue;
    Id mt = members[k];
    Id ptr = b.op(Op::OpAccessChain, b.typePointer(spv::StorageClass::PushConstant, mt), {var, u32(k)});
    Id mem = b.op(Op::OpLoad, mt, {ptr});
    params[i].id = fromMemory(mem, scalars[k]);
    ++k;
  }
  return Status::ok();
}

Status Emitter::emit() {
  if (Status st = checkDevice(); !st) return st;
  barrierOrdersDeviceMemory_ = tuning.uniformBarrier || analyzeDeviceMemoryUse(kernel).barrierNeedsDeviceMemory();
  b.setMemoryModel(spv::AddressingModel::Logical, spv::MemoryModel::GLSL450);
  Id voidT = b.typeVoid();
  Id fn = b.beginFunction(voidT, b.typeFunction(voidT, {}));
  b.addName(fn, kernel.name());
  frames_.emplace_back();
  std::vector<Val> params;
  if (Status st = declareInterface(params); !st) return st;
  std::vector<Val> returned;
  if (Status st = emitRegion(kernel.body(), params, returned); !st) return st;
  b.opVoid(Op::OpReturn, {});
  b.endFunction();
  frames_.pop_back();

  // Before SPIR-V 1.4 the interface lists only Input/Output variables; from
  // 1.4 on, every global the entry point uses.
  std::vector<Id> iface;
  for (Id v : interface_) {
    bool input = false;
    for (const auto& [which, var] : builtins_) input |= var == v;
    if (input || b.version() >= kSpirv14) iface.push_back(v);
  }
  b.addEntryPoint(spv::ExecutionModel::GLCompute, fn, kernel.name(), iface);
  auto wg = kernel.workgroupSize;
  b.addExecutionMode(fn, spv::ExecutionMode::LocalSize, {wg[0], wg[1], wg[2]});
  return Status::ok();
}

// ---- regions and control flow ---------------------------------------------------

void Emitter::addControlEmitters(EmitTable& t) {
  using enum ir::OpId;
  t[If] = &Emitter::emitIf;
  t[For] = &Emitter::emitFor;
  t[While] = &Emitter::emitWhile;
  t[Match] = &Emitter::emitMatch;
  t[Call] = &Emitter::emitCall;
  for (ir::OpId n : {Yield, Condition, Return}) t[n] = &Emitter::emitTerminator;
  // Function values: kernels have no function pointers in SPIR-V.
  for (ir::OpId n : {FuncRef, CallIndirect}) t[n] = &Emitter::emitUnsupported;
}

const Emitter::EmitTable& Emitter::table() {
  static const EmitTable table = [] {
    EmitTable t;
    addArithEmitters(t);
    addAggregateEmitters(t);
    addMemoryEmitters(t);
    addControlEmitters(t);
    addSubgroupEmitters(t);
    addCoopMatrixEmitters(t);
    return t;
  }();
  return table;
}

ir::Lowering lowersOp(ir::OpId id) {
  Emitter::EmitFn fn = Emitter::table()[id];
  if (!fn) return ir::Lowering::Missing;
  return fn == &Emitter::emitUnsupported ? ir::Lowering::Unsupported : ir::Lowering::Lowered;
}

Status Emitter::emitRegion(const ir::Region& r, const std::vector<Val>& args, std::vector<Val>& out) {
  for (unsigned i = 0; i < r.numArgs(); ++i) set(r.arg(i), args[i]);
  out.clear();
  for (const auto& op : r.ops()) {
    if (op->info().has(ir::kTerminator)) {
      for (ir::Value* v : op->operands()) out.push_back(get(v));
      return Status::ok();
    }
    if (Status st = emitOp(*op); !st) return st;
  }
  return Status::ok();
}

Status Emitter::emitOp(const ir::Op& op) {
  EmitFn fn = table()[op.id()];
  if (!fn) return emitUnsupported(op);
  return (this->*fn)(op);
}

Status Emitter::emitUnsupported(const ir::Op& op) {
  return error(op, "op '" + std::string(op.name()) + "' is not supported on target spirv");
}

// Terminators end regions; emitRegion reads their operands and never emits them.
Status Emitter::emitTerminator(const ir::Op& op) {
  return error(op, "'" + std::string(op.name()) + "' is not at the end of its region");
}

Status Emitter::phiResults(const ir::Op& op, const std::vector<std::vector<Val>>& incoming,
                           const std::vector<Id>& labels) {
  for (unsigned i = 0; i < op.numResults(); ++i) {
    const ir::Type* t = op.result(i)->type();
    if (t->isBuffer()) {
      const BufferRef* same = incoming[0][i].buf;
      for (const auto& in : incoming)
        if (in[i].buf != same)
          return error(op, "result " + std::to_string(i) +
                               " chooses between different buffers at run time, which SPIR-V's logical addressing cannot express");
      set(op.result(i), incoming[0][i]);
      continue;
    }
    std::vector<uint32_t> ops;
    for (size_t k = 0; k < incoming.size(); ++k) {
      ops.push_back(incoming[k][i].id);
      ops.push_back(labels[k]);
    }
    setId(op.result(i), b.op(Op::OpPhi, valueType(t), ops));
  }
  return Status::ok();
}

Status Emitter::emitIf(const ir::Op& op) {
  Id thenL = b.newId(), elseL = b.newId(), merge = b.newId();
  b.opVoid(Op::OpSelectionMerge, {merge, 0});
  b.opVoid(Op::OpBranchConditional, {id(op.operand(0)), thenL, elseL});
  std::vector<std::vector<Val>> incoming(2);
  std::vector<Id> ends;
  for (unsigned r = 0; r < 2; ++r) {
    b.label(r == 0 ? thenL : elseL);
    if (Status st = emitRegion(op.region(r), {}, incoming[r]); !st) return st;
    ends.push_back(b.currentLabel());
    b.opVoid(Op::OpBranch, {merge});
  }
  b.label(merge);
  return phiResults(op, incoming, ends);
}

Status Emitter::emitMatch(const ir::Op& op) {
  const ir::Type* sumT = op.operand(0)->type();
  Id sum = id(op.operand(0));
  Id tag = b.op(Op::OpCompositeExtract, u32T(), {sum, 0});
  Id merge = b.newId();
  std::vector<Id> labels;
  for (unsigned r = 0; r < op.numRegions(); ++r) labels.push_back(b.newId());
  b.opVoid(Op::OpSelectionMerge, {merge, 0});
  // Variant 0 is the default: a well-formed sum has no other tags.
  std::vector<uint32_t> sw = {tag, labels[0]};
  for (unsigned r = 1; r < op.numRegions(); ++r) {
    sw.push_back(r);
    sw.push_back(labels[r]);
  }
  b.opVoid(Op::OpSwitch, sw);
  std::vector<std::vector<Val>> incoming(op.numRegions());
  std::vector<Id> ends;
  for (unsigned r = 0; r < op.numRegions(); ++r) {
    b.label(labels[r]);
    Id payload = b.op(Op::OpCompositeExtract, valueType(sumT->members()[r]), {sum, r + 1});
    if (Status st = emitRegion(op.region(r), {Val{payload, nullptr}}, incoming[r]); !st) return st;
    ends.push_back(b.currentLabel());
    b.opVoid(Op::OpBranch, {merge});
  }
  b.label(merge);
  return phiResults(op, incoming, ends);
}

namespace {

// The value of an integer `const` as a mathematical integer (by its type's
// signedness), or nothing for any other value.
std::optional<__int128> constantInt(const ir::Value* v) {
  const ir::Op* def = v->definingOp();
  const ir::Type* t = v->type();
  if (!def || !def->is(ir::OpId::Const) || !t->isInt()) return std::nullopt;
  uint64_t bits = uint64_t(def->attr("value")->i);
  unsigned w = t->bits();
  if (w < 64) bits &= (uint64_t(1) << w) - 1;
  if (t->isSigned() && w < 64 && (bits >> (w - 1)) & 1) return __int128(bits) - (__int128(1) << w);
  if (t->isSigned() && w == 64) return __int128(int64_t(bits));
  return __int128(bits);
}

__int128 maxOf(const ir::Type* t) {
  unsigned w = t->bits() - (t->isSigned() ? 1 : 0);
  return (__int128(1) << w) - 1;
}

}  // namespace

// The interpreter's `for`: iv runs from lo by step while iv < hi (step > 0) or
// iv > hi (a negative step of a signed type), compared in the type's
// signedness, and the loop ends when iv + step would wrap. A step of 0 (an
// error in the interpreter) runs no iterations here instead of hanging.
//
//   pre:    br header
//   header: iv = phi(lo, ivNext); acc = phi(init, accNext); live = phi(true, liveNext)
//           go = live && step != 0 && (up ? iv < hi : iv > hi)
//           LoopMerge merge cont; br go ? body : merge
//   body:   ...region...; br cont
//   cont:   ivNext = iv + step; liveNext = up ? ivNext > iv : ivNext < iv
//           accNext = copy(yielded); br header
//   merge:  results = acc
//
// A constant positive step needs neither `up` nor the zero check (go = live
// && iv < hi), and no `live` flag where iv + step cannot wrap: a step of 1, or
// a constant hi with hi + step - 1 <= the type's maximum (iv < hi). A loop
// with a constant trip count of at most 16 gets the Unroll hint.
Status Emitter::emitFor(const ir::Op& op) {
  const ir::Type* t = op.operand(0)->type();
  bool s = t->isSigned();
  Id T = valueType(t), B = boolT();
  Id lo = id(op.operand(0)), hi = id(op.operand(1)), step = id(op.operand(2));
  for (unsigned i = 3; i < op.numOperands(); ++i)
    if (op.operand(i)->type()->isBuffer())
      return error(op, "loop-carried buffers are not supported by the SPIR-V target");
  std::optional<__int128> cLo = constantInt(op.operand(0)), cHi = constantInt(op.operand(1)),
                          cStep = constantInt(op.operand(2));
  bool knownUp = cStep && *cStep > 0 && !tuning.wrapCheck;
  bool noWrap = knownUp && (*cStep == 1 || (cHi && *cHi + *cStep - 1 <= maxOf(t)));
  uint32_t control = 0;
  if (tuning.unroll && cLo && cHi && cStep && *cStep > 0) {
    __int128 trips = *cHi > *cLo ? (*cHi - *cLo + *cStep - 1) / *cStep : 0;
    if (trips >= 1 && trips <= 16) control = uint32_t(spv::LoopControlMask::Unroll);
  }
  Id pre = b.currentLabel(), header = b.newId(), body = b.newId(), cont = b.newId(), merge = b.newId();
  Id ivNext = b.newId(), liveNext = noWrap ? 0 : b.newId();
  std::vector<Id> accNext;
  for (unsigned i = 3; i < op.numOperands(); ++i) accNext.push_back(b.newId());
  b.opVoid(Op::OpBranch, {header});

  b.label(header);
  Id iv = b.op(Op::OpPhi, T, {lo, pre, ivNext, cont});
  std::vector<Val> args = {Val{iv, nullptr}};
  for (unsigned i = 3; i < op.numOperands(); ++i)
    args.push_back(Val{b.op(Op::OpPhi, valueType(op.operand(i)->type()),
                            {id(op.operand(i)), pre, accNext[i - 3], cont}),
                       nullptr});
  Id live = noWrap ? 0 : b.op(Op::OpPhi, B, {b.constBool(true), pre, liveNext, cont});
  Id up = 0;
  Id below = b.op(s ? Op::OpSLessThan : Op::OpULessThan, B, {iv, hi});
  Id go = below;
  if (!knownUp) {
    Id zero = b.constInt(T, 0);
    up = s ? b.op(Op::OpSGreaterThan, B, {step, zero}) : b.constBool(true);
    Id inRange = below;
    if (s) inRange = b.op(Op::OpSelect, B, {up, below, b.op(Op::OpSGreaterThan, B, {iv, hi})});
    Id nonzero = b.op(Op::OpINotEqual, B, {step, zero});
    go = b.op(Op::OpLogicalAnd, B, {live, b.op(Op::OpLogicalAnd, B, {inRange, nonzero})});
  } else if (!noWrap) {
    go = b.op(Op::OpLogicalAnd, B, {live, below});
  }
  b.opVoid(Op::OpLoopMerge, {merge, cont, control});
  b.opVoid(Op::OpBranchConditional, {go, body, merge});

  b.label(body);
  std::vector<Val> yielded;
  if (Status st = emitRegion(op.region(0), args, yielded); !st) return st;
  b.opVoid(Op::OpBranch, {cont});

  b.label(cont);
  b.opWithId(Op::OpIAdd, T, ivNext, {iv, step});
  if (!noWrap) {
    Id grew = b.op(s ? Op::OpSGreaterThan : Op::OpUGreaterThan, B, {ivNext, iv});
    if (s && !knownUp)
      b.opWithId(Op::OpSelect, B, liveNext, {up, grew, b.op(Op::OpSLessThan, B, {ivNext, iv})});
    else
      b.opWithId(Op::OpCopyObject, B, liveNext, {grew});
  }
  for (size_t k = 0; k < accNext.size(); ++k) {
    if (yielded[k].buf) return error(op, "loop-carried buffers are not supported by the SPIR-V target");
    b.opWithId(Op::OpCopyObject, valueType(op.result(k)->type()), accNext[k], {yielded[k].id});
  }
  b.opVoid(Op::OpBranch, {header});

  b.label(merge);
  for (unsigned k = 0; k < op.numResults(); ++k) set(op.result(k), args[k + 1]);
  return Status::ok();
}

// while: region 0 runs in the loop (its `condition` breaks to the merge block
// when false), region 1 is the rest of the body; the continue block carries
// the yielded values back to the header.
//
//   header: a = phi(init, aNext); LoopMerge merge cont; br before
//   before: ...region 0...; br c ? body : merge
//   body:   ...region 1 (on the forwarded values)...; br cont
//   cont:   aNext = copy(yielded); br header
//   merge:  results = the forwarded values
Status Emitter::emitWhile(const ir::Op& op) {
  for (ir::Value* v : op.operands())
    if (v->type()->isBuffer()) return error(op, "loop-carried buffers are not supported by the SPIR-V target");
  Id pre = b.currentLabel(), header = b.newId(), before = b.newId(), body = b.newId(),
     cont = b.newId(), merge = b.newId();
  std::vector<Id> next;
  for (unsigned i = 0; i < op.numOperands(); ++i) next.push_back(b.newId());
  b.opVoid(Op::OpBranch, {header});

  b.label(header);
  std::vector<Val> carried;
  for (unsigned i = 0; i < op.numOperands(); ++i)
    carried.push_back(Val{b.op(Op::OpPhi, valueType(op.operand(i)->type()),
                               {id(op.operand(i)), pre, next[i], cont}),
                          nullptr});
  b.opVoid(Op::OpLoopMerge, {merge, cont, 0});
  b.opVoid(Op::OpBranch, {before});

  b.label(before);
  std::vector<Val> cond;
  if (Status st = emitRegion(op.region(0), carried, cond); !st) return st;
  for (size_t i = 1; i < cond.size(); ++i)
    if (cond[i].buf) return error(op, "buffers forwarded by 'condition' are not supported by the SPIR-V target");
  // Break out of the loop when the condition is false: a conditional branch
  // whose false target is the loop's merge block needs no selection merge.
  b.opVoid(Op::OpBranchConditional, {cond[0].id, body, merge});

  b.label(body);
  std::vector<Val> fwd(cond.begin() + 1, cond.end()), yielded;
  if (Status st = emitRegion(op.region(1), fwd, yielded); !st) return st;
  b.opVoid(Op::OpBranch, {cont});

  b.label(cont);
  for (size_t k = 0; k < next.size(); ++k) {
    if (yielded[k].buf) return error(op, "loop-carried buffers are not supported by the SPIR-V target");
    b.opWithId(Op::OpCopyObject, valueType(op.operand(k)->type()), next[k], {yielded[k].id});
  }
  b.opVoid(Op::OpBranch, {header});

  b.label(merge);
  // The block that branched here dominates the merge block, so the forwarded
  // values are usable as they are.
  for (unsigned k = 0; k < op.numResults(); ++k) set(op.result(k), fwd[k]);
  return Status::ok();
}

// Device functions are inlined: the callee's body is emitted in a new value
// frame with its parameters bound to the arguments (buffers included).
Status Emitter::emitCall(const ir::Op& op) {
  const ir::Function* callee = kernel.module()->lookup(op.symbolAttr("callee"));
  if (!callee) return error(op, "calls unknown function @" + op.symbolAttr("callee"));
  if (inlineDepth_ > 64) return error(op, "calls nest deeper than 64 levels");
  std::vector<Val> args;
  for (ir::Value* v : op.operands()) args.push_back(get(v));
  frames_.emplace_back();
  ++inlineDepth_;
  std::vector<Val> results;
  Status st = emitRegion(callee->body(), args, results);
  --inlineDepth_;
  frames_.pop_back();
  if (!st) return st;
  for (unsigned i = 0; i < op.numResults(); ++i) set(op.result(i), results[i]);
  return Status::ok();
}

// ---- the public entry point -------------------------------------------------------

std::string emitKey(const DeviceCaps& caps, const EmitOptions& options) {
  auto n = [](uint64_t v) { return std::to_string(v); };
  std::string key = "spirv 1 vulkan " + n(caps.vulkanApiVersion);
  // Features: each one changes what is emitted (or whether it can be).
  std::pair<const char*, bool> features[] = {{"f16", caps.float16},
                                             {"f64", caps.float64},
                                             {"i8", caps.int8},
                                             {"i16", caps.int16},
                                             {"i64", caps.int64},
                                             {"atomic-f32-add", caps.atomicFloat32Add},
                                             {"atomic-f64-add", caps.atomicFloat64Add},
                                             {"atomic-i64", caps.atomicInt64},
                                             {"subgroup-arith", caps.subgroupArithmetic},
                                             {"subgroup-broadcast", caps.subgroupBroadcast},
                                             {"subgroup-shuffle", caps.subgroupShuffle}};
  for (auto [name, on] : features)
    if (on) key += std::string(" ") + name;
  key += " align " + n(caps.storageBufferOffsetAlignment);
  for (const std::string& shape : caps.cooperativeMatrixShapes) key += " coop(" + shape + ")";
  for (const std::string& shape : caps.workgroupMatrixShapes) key += " wgcoop(" + shape + ")";
  if (!caps.workgroupMatrixShapes.empty())
    key += " wgcoop " + n(caps.workgroupMatrixMaxDimension) + " " + n(caps.workgroupMatrixMaxInvocations) + " " +
           n(caps.workgroupMatrixReservedMemory);
  // Limits: checked, so they decide whether a kernel emits at all.
  key += " limits " + n(caps.maxWorkgroupInvocations) + " " + n(caps.maxWorkgroupSize[0]) + "x" +
         n(caps.maxWorkgroupSize[1]) + "x" + n(caps.maxWorkgroupSize[2]) + " " + n(caps.maxWorkgroupMemoryBytes) +
         " " + n(caps.maxPushConstantBytes);
  if (options.checkBounds) key += " check-bounds";
  return key + "\n";
}

Expected<std::vector<uint32_t>> emitKernel(const ir::Function& kernel, const DeviceCaps& caps,
                                           const EmitOptions& options) {
  if (!kernel.isKernel())
    return Error{kernel.loc(), "@" + kernel.name() + " is not a kernel"};
  uint32_t api = caps.vulkanApiVersion;
  if (api != 0 && (api >> 22 & 0x7f) == 1 && (api >> 12 & 0x3ff) == 0)
    return Error{kernel.loc(), "kernel @" + kernel.name() +
                                   ": the SPIR-V target needs Vulkan 1.1 or later (SPIR-V 1.3)"};
  ModuleBuilder builder(spirvVersionFor(api));
  std::vector<const ir::Op*> ownSites;
  EmitOptions opts = options;
  if (!opts.sites) opts.sites = &ownSites;
  Emitter e(kernel, caps, builder, opts);
  if (Status st = e.emit(); !st) return st.error();
  std::vector<uint32_t> words = builder.finish();
  // Debian 12's spirv-tools (2023.1) predates SPV_KHR_cooperative_matrix:
  // such modules go to the driver unvalidated (tests check their words).
  if (builder.usesCoopMatrixKhr() && !validatorKnowsCoopMatrixKhr()) return words;
  if (Status st = validate(words, api, "kernel @" + kernel.name()); !st) return st.error();
  return words;
}

}  // namespace eph::spirv
