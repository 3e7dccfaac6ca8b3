#include "targets/spirv/Builder.h"

#include <cassert>
#include <cstring>

namespace eph::spirv {

namespace {
uint32_t u(spv::Op o) { return static_cast<uint32_t>(o); }
template <class E>
uint32_t w(E e) { return static_cast<uint32_t>(e); }
}  // namespace

void ModuleBuilder::emit(Words& out, spv::Op op, const std::vector<uint32_t>& operands) {
  out.push_back((uint32_t(operands.size() + 1) << 16) | u(op));
  out.insert(out.end(), operands.begin(), operands.end());
}

void ModuleBuilder::appendString(std::vector<uint32_t>& out, const std::string& s) {
  size_t words = s.size() / 4 + 1;  // always room for the terminating nul
  size_t at = out.size();
  out.resize(at + words, 0);
  std::memcpy(out.data() + at, s.data(), s.size());  // little-endian byte order
}

// ---- capabilities ------------------------------------------------------------

void ModuleBuilder::require(spv::Capability c) {
  caps_.insert(c);
  switch (c) {
    case spv::Capability::Int64Atomics: caps_.insert(spv::Capability::Int64); break;
    case spv::Capability::StorageBuffer8BitAccess:
    case spv::Capability::StoragePushConstant8: requireExtension("SPV_KHR_8bit_storage"); break;
    case spv::Capability::StorageBuffer16BitAccess:
    case spv::Capability::StoragePushConstant16: requireExtension("SPV_KHR_16bit_storage"); break;
    case spv::Capability::AtomicFloat32AddEXT:
    case spv::Capability::AtomicFloat64AddEXT:
      requireExtension("SPV_EXT_shader_atomic_float_add");
      break;
    case spv::Capability::AtomicFloat16AddEXT:
      requireExtension("SPV_EXT_shader_atomic_float16_add");
      break;
    default: break;
  }
}

void ModuleBuilder::requireExtension(const std::string& name) { exts_.insert(name); }

void ModuleBuilder::scanWidths(Id type, bool& has8, bool& has16) const {
  auto it = types_.find(type);
  if (it == types_.end()) return;
  const TypeInfo& t = it->second;
  switch (t.op) {
    case spv::Op::OpTypeInt:
    case spv::Op::OpTypeFloat:
      has8 |= t.width == 8;
      has16 |= t.width == 16;
      break;
    case spv::Op::OpTypeVector:
    case spv::Op::OpTypeArray:
    case spv::Op::OpTypeRuntimeArray: scanWidths(t.elem, has8, has16); break;
    case spv::Op::OpTypeStruct:
      for (Id m : t.members) scanWidths(m, has8, has16);
      break;
    default: break;
  }
}

// 8- and 16-bit values in externally visible memory need the storage
// capabilities (SPV_KHR_8bit_storage / SPV_KHR_16bit_storage); Function and
// Workgroup memory only need Int8/Int16/Float16, which the types add.
void ModuleBuilder::noteStorageAccess(spv::StorageClass sc, Id pointee) {
  bool has8 = false, has16 = false;
  scanWidths(pointee, has8, has16);
  if (sc == spv::StorageClass::StorageBuffer) {
    if (has8) require(spv::Capability::StorageBuffer8BitAccess);
    if (has16) require(spv::Capability::StorageBuffer16BitAccess);
  } else if (sc == spv::StorageClass::PushConstant) {
    if (has8) require(spv::Capability::StoragePushConstant8);
    if (has16) require(spv::Capability::StoragePushConstant16);
  }
}

void ModuleBuilder::noteOp(spv::Op op, Id resultType) {
  switch (op) {
    case spv::Op::OpAtomicFAddEXT: {
      unsigned width = typeWidth(resultType);
      require(width == 64   ? spv::Capability::AtomicFloat64AddEXT
              : width == 16 ? spv::Capability::AtomicFloat16AddEXT
                            : spv::Capability::AtomicFloat32AddEXT);
      break;
    }
    case spv::Op::OpAtomicLoad:
    case spv::Op::OpAtomicExchange:
    case spv::Op::OpAtomicCompareExchange:
    case spv::Op::OpAtomicIAdd:
    case spv::Op::OpAtomicISub:
    case spv::Op::OpAtomicSMin:
    case spv::Op::OpAtomicUMin:
    case spv::Op::OpAtomicSMax:
    case spv::Op::OpAtomicUMax:
    case spv::Op::OpAtomicAnd:
    case spv::Op::OpAtomicOr:
    case spv::Op::OpAtomicXor:
      if (typeOp(resultType) == spv::Op::OpTypeInt && typeWidth(resultType) == 64)
        require(spv::Capability::Int64Atomics);
      break;
    default: break;
  }
}

// ---- module-level sections ---------------------------------------------------

Id ModuleBuilder::importExtInst(const std::string& name) {
  auto it = extImports_.find(name);
  if (it != extImports_.end()) return it->second;
  Id id = newId();
  extImports_[name] = id;
  return id;
}

void ModuleBuilder::setMemoryModel(spv::AddressingModel a, spv::MemoryModel m) {
  memoryModel_.clear();
  emit(memoryModel_, spv::Op::OpMemoryModel, {w(a), w(m)});
}

void ModuleBuilder::addEntryPoint(spv::ExecutionModel model, Id fn, const std::string& name,
                                  const std::vector<Id>& interface) {
  if (model == spv::ExecutionModel::GLCompute) require(spv::Capability::Shader);
  Words ops = {w(model), fn};
  appendString(ops, name);
  ops.insert(ops.end(), interface.begin(), interface.end());
  emit(entryPoints_, spv::Op::OpEntryPoint, ops);
}

void ModuleBuilder::addExecutionMode(Id fn, spv::ExecutionMode mode,
                                     const std::vector<uint32_t>& literals) {
  Words ops = {fn, w(mode)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  emit(executionModes_, spv::Op::OpExecutionMode, ops);
}

void ModuleBuilder::addName(Id id, const std::string& name) {
  Words ops = {id};
  appendString(ops, name);
  emit(debug_, spv::Op::OpName, ops);
}

void ModuleBuilder::addMemberName(Id type, uint32_t member, const std::string& name) {
  Words ops = {type, member};
  appendString(ops, name);
  emit(debug_, spv::Op::OpMemberName, ops);
}

void ModuleBuilder::decorate(Id id, spv::Decoration d, const std::vector<uint32_t>& literals) {
  if (d == spv::Decoration::BuiltIn && !literals.empty()) {
    switch (static_cast<spv::BuiltIn>(literals[0])) {
      case spv::BuiltIn::SubgroupSize:
      case spv::BuiltIn::SubgroupLocalInvocationId:
      case spv::BuiltIn::SubgroupId:
      case spv::BuiltIn::NumSubgroups: require(spv::Capability::GroupNonUniform); break;
      default: break;
    }
  }
  Words ops = {id, w(d)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  emit(annotations_, spv::Op::OpDecorate, ops);
}

void ModuleBuilder::decorateMember(Id type, uint32_t member, spv::Decoration d,
                                   const std::vector<uint32_t>& literals) {
  Words ops = {type, member, w(d)};
  ops.insert(ops.end(), literals.begin(), literals.end());
  emit(annotations_, spv::Op::OpMemberDecorate, ops);
}

// ---- types -------------------------------------------------------------------

Id ModuleBuilder::typeFor(const Words& key, spv::Op op, TypeInfo info,
                          const std::vector<uint32_t>& operands) {
  auto it = typeIds_.find(key);
  if (it != typeIds_.end()) return it->second;
  Id id = newId();
  Words ops = {id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(globals_, op, ops);
  info.op = op;
  typeIds_[key] = id;
  types_[id] = std::move(info);
  return id;
}

Id ModuleBuilder::typeVoid() { return typeFor({u(spv::Op::OpTypeVoid)}, spv::Op::OpTypeVoid, {}, {}); }
Id ModuleBuilder::typeBool() { return typeFor({u(spv::Op::OpTypeBool)}, spv::Op::OpTypeBool, {}, {}); }

Id ModuleBuilder::typeInt(unsigned width, bool isSigned) {
  if (width == 8) require(spv::Capability::Int8);
  if (width == 16) require(spv::Capability::Int16);
  if (width == 64) require(spv::Capability::Int64);
  return typeFor({u(spv::Op::OpTypeInt), width, isSigned}, spv::Op::OpTypeInt, {.width = width},
                 {width, isSigned ? 1u : 0u});
}

Id ModuleBuilder::typeFloat(unsigned width) {
  if (width == 16) require(spv::Capability::Float16);
  if (width == 64) require(spv::Capability::Float64);
  return typeFor({u(spv::Op::OpTypeFloat), width}, spv::Op::OpTypeFloat, {.width = width}, {width});
}

Id ModuleBuilder::typeVector(Id component, unsigned count) {
  return typeFor({u(spv::Op::OpTypeVector), component, count}, spv::Op::OpTypeVector,
                 {.width = typeWidth(component), .count = count, .elem = component}, {component, count});
}

Id ModuleBuilder::typeCoopMatrixNV(Id component, unsigned rows, unsigned cols) {
  require(spv::Capability::CooperativeMatrixNV);
  requireExtension("SPV_NV_cooperative_matrix");
  Id u32 = typeInt(32, false);
  Id scope = constInt(u32, 3), r = constInt(u32, rows), c = constInt(u32, cols);  // 3: Subgroup
  return typeFor({u(spv::Op::OpTypeCooperativeMatrixNV), component, rows, cols}, spv::Op::OpTypeCooperativeMatrixNV,
                 {.width = typeWidth(component), .count = rows * cols, .elem = component}, {component, scope, r, c});
}

Id ModuleBuilder::typeCoopMatrixWorkgroup(Id component, unsigned rows, unsigned cols, unsigned use) {
  constexpr auto kCapabilityCoopMatrixKhr = spv::Capability(6022);
  constexpr auto kOpTypeCoopMatrixKhr = spv::Op(4456);
  require(kCapabilityCoopMatrixKhr);
  requireExtension("SPV_KHR_cooperative_matrix");
  if (!coopKhr_) {
    coopKhr_ = true;
    require(spv::Capability::VulkanMemoryModel);
    setMemoryModel(spv::AddressingModel::Logical, spv::MemoryModel::Vulkan);
  }
  Id u32 = typeInt(32, false);
  Id scope = constInt(u32, 2);  // Workgroup
  Id r = constInt(u32, rows), c = constInt(u32, cols), usage = constInt(u32, use);
  return typeFor({u(kOpTypeCoopMatrixKhr), component, rows, cols, use}, kOpTypeCoopMatrixKhr,
                 {.width = typeWidth(component), .count = rows * cols, .elem = component},
                 {component, scope, r, c, usage});
}

Id ModuleBuilder::typeArray(Id elem, unsigned length, uint32_t stride) {
  Id len = constInt(typeInt(32, false), length);
  Words key = {u(spv::Op::OpTypeArray), elem, length, stride};
  bool fresh = !typeIds_.count(key);
  Id id = typeFor(key, spv::Op::OpTypeArray, {.count = length, .elem = elem}, {elem, len});
  if (fresh && stride) decorate(id, spv::Decoration::ArrayStride, {stride});
  return id;
}

Id ModuleBuilder::typeRuntimeArray(Id elem, uint32_t stride) {
  Words key = {u(spv::Op::OpTypeRuntimeArray), elem, stride};
  bool fresh = !typeIds_.count(key);
  Id id = typeFor(key, spv::Op::OpTypeRuntimeArray, {.elem = elem}, {elem});
  if (fresh) decorate(id, spv::Decoration::ArrayStride, {stride});
  return id;
}

Id ModuleBuilder::typeStruct(const std::vector<Id>& members, const std::vector<uint32_t>& offsets,
                             bool block) {
  assert(offsets.empty() || offsets.size() == members.size());
  assert(!block || offsets.size() == members.size());
  Words key = {u(spv::Op::OpTypeStruct), uint32_t(members.size())};
  key.insert(key.end(), members.begin(), members.end());
  key.push_back(uint32_t(offsets.size()));
  key.insert(key.end(), offsets.begin(), offsets.end());
  key.push_back(block);
  bool fresh = !typeIds_.count(key);
  Id id = typeFor(key, spv::Op::OpTypeStruct, {.members = members}, members);
  if (fresh) {
    if (block) decorate(id, spv::Decoration::Block);
    for (size_t i = 0; i < offsets.size(); ++i)
      decorateMember(id, uint32_t(i), spv::Decoration::Offset, {offsets[i]});
  }
  return id;
}

Id ModuleBuilder::typeBlockStruct(const std::vector<Id>& members, const std::vector<uint32_t>& offsets,
                                  uint32_t tag) {
  assert(offsets.size() == members.size());
  Words key = {u(spv::Op::OpTypeStruct), uint32_t(members.size())};
  key.insert(key.end(), members.begin(), members.end());
  key.insert(key.end(), offsets.begin(), offsets.end());
  key.push_back(0xB10C0000u);  // cannot collide with typeStruct's keys (they end in 0 or 1)
  key.push_back(tag);
  bool fresh = !typeIds_.count(key);
  Id id = typeFor(key, spv::Op::OpTypeStruct, {.members = members}, members);
  if (fresh) {
    decorate(id, spv::Decoration::Block);
    for (size_t i = 0; i < offsets.size(); ++i)
      decorateMember(id, uint32_t(i), spv::Decoration::Offset, {offsets[i]});
  }
  return id;
}

Id ModuleBuilder::typePointer(spv::StorageClass sc, Id pointee) {
  Words key = {u(spv::Op::OpTypePointer), w(sc), pointee};
  if (!typeIds_.count(key)) noteStorageAccess(sc, pointee);
  return typeFor(key, spv::Op::OpTypePointer, {.elem = pointee}, {w(sc), pointee});
}

Id ModuleBuilder::typeFunction(Id result, const std::vector<Id>& params) {
  Words key = {u(spv::Op::OpTypeFunction), result};
  key.insert(key.end(), params.begin(), params.end());
  Words ops = {result};
  ops.insert(ops.end(), params.begin(), params.end());
  return typeFor(key, spv::Op::OpTypeFunction, {.members = params}, ops);
}

spv::Op ModuleBuilder::typeOp(Id type) const {
  auto it = types_.find(type);
  return it == types_.end() ? spv::Op::OpNop : it->second.op;
}
unsigned ModuleBuilder::typeWidth(Id type) const {
  auto it = types_.find(type);
  return it == types_.end() ? 0 : it->second.width;
}
Id ModuleBuilder::componentType(Id type) const {
  auto it = types_.find(type);
  return it == types_.end() ? 0 : it->second.elem;
}
unsigned ModuleBuilder::vectorCount(Id type) const {
  auto it = types_.find(type);
  return it == types_.end() || it->second.op != spv::Op::OpTypeVector ? 1 : it->second.count;
}

// ---- constants ---------------------------------------------------------------

namespace {
template <class K>
Id lookupOr(std::map<K, Id>& m, const K& key, Id fresh) {
  auto [it, inserted] = m.emplace(key, fresh);
  return it->second;
}
}  // namespace

Id ModuleBuilder::constBool(bool v) {
  Id t = typeBool();
  spv::Op op = v ? spv::Op::OpConstantTrue : spv::Op::OpConstantFalse;
  Words key = {u(op), t};
  auto it = constIds_.find(key);
  if (it != constIds_.end()) return it->second;
  Id id = newId();
  emit(globals_, op, {t, id});
  return constIds_[key] = id;
}

Id ModuleBuilder::constInt(Id intType, uint64_t bits) {
  unsigned width = typeWidth(intType);
  Words lits;
  if (width == 64) {
    lits = {uint32_t(bits), uint32_t(bits >> 32)};
  } else {
    uint64_t mask = width >= 32 ? 0xffffffffu : (uint64_t(1) << width) - 1;
    lits = {uint32_t(bits & mask)};  // our integer types are signless: zero-extended
  }
  Words key = {u(spv::Op::OpConstant), intType};
  key.insert(key.end(), lits.begin(), lits.end());
  auto it = constIds_.find(key);
  if (it != constIds_.end()) return it->second;
  Id id = newId();
  Words ops = {intType, id};
  ops.insert(ops.end(), lits.begin(), lits.end());
  emit(globals_, spv::Op::OpConstant, ops);
  return constIds_[key] = id;
}

Id ModuleBuilder::constFloat(Id floatType, double v) {
  unsigned width = typeWidth(floatType);
  Words lits;
  if (width == 64) {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    lits = {uint32_t(b), uint32_t(b >> 32)};
  } else if (width == 32) {
    float f = static_cast<float>(v);
    uint32_t b;
    std::memcpy(&b, &f, 4);
    lits = {b};
  } else {
    _Float16 h = static_cast<_Float16>(v);
    uint16_t b;
    std::memcpy(&b, &h, 2);
    lits = {b};
  }
  Words key = {u(spv::Op::OpConstant), floatType};
  key.insert(key.end(), lits.begin(), lits.end());
  auto it = constIds_.find(key);
  if (it != constIds_.end()) return it->second;
  Id id = newId();
  Words ops = {floatType, id};
  ops.insert(ops.end(), lits.begin(), lits.end());
  emit(globals_, spv::Op::OpConstant, ops);
  return constIds_[key] = id;
}

Id ModuleBuilder::constComposite(Id type, const std::vector<Id>& parts) {
  Words key = {u(spv::Op::OpConstantComposite), type};
  key.insert(key.end(), parts.begin(), parts.end());
  auto it = constIds_.find(key);
  if (it != constIds_.end()) return it->second;
  Id id = newId();
  Words ops = {type, id};
  ops.insert(ops.end(), parts.begin(), parts.end());
  emit(globals_, spv::Op::OpConstantComposite, ops);
  return constIds_[key] = id;
}

Id ModuleBuilder::constNull(Id type) {
  Words key = {u(spv::Op::OpConstantNull), type};
  auto it = constIds_.find(key);
  if (it != constIds_.end()) return it->second;
  Id id = newId();
  emit(globals_, spv::Op::OpConstantNull, {type, id});
  return constIds_[key] = id;
}

Id ModuleBuilder::splat(Id type, Id scalarConst) {
  if (typeOp(type) != spv::Op::OpTypeVector) return scalarConst;
  return constComposite(type, std::vector<Id>(vectorCount(type), scalarConst));
}

Id ModuleBuilder::globalVariable(Id pointerType, spv::StorageClass sc) {
  assert(sc != spv::StorageClass::Function);
  Id id = newId();
  emit(globals_, spv::Op::OpVariable, {pointerType, id, w(sc)});
  return id;
}

// ---- functions -------------------------------------------------------------------

Id ModuleBuilder::beginFunction(Id resultType, Id fnType, spv::FunctionControlMask control) {
  assert(!inFunction_);
  inFunction_ = true;
  Id fn = newId();
  fnHeader_.clear();
  fnVars_.clear();
  fnBody_.clear();
  emit(fnHeader_, spv::Op::OpFunction, {resultType, fn, w(control), fnType});
  Id entry = newId();
  emit(fnHeader_, spv::Op::OpLabel, {entry});
  curLabel_ = entry;
  return fn;
}

void ModuleBuilder::endFunction() {
  assert(inFunction_);
  functions_.insert(functions_.end(), fnHeader_.begin(), fnHeader_.end());
  functions_.insert(functions_.end(), fnVars_.begin(), fnVars_.end());
  functions_.insert(functions_.end(), fnBody_.begin(), fnBody_.end());
  emit(functions_, spv::Op::OpFunctionEnd, {});
  inFunction_ = false;
  curLabel_ = 0;
}

Id ModuleBuilder::functionVariable(Id pointerType) {
  Id id = newId();
  emit(fnVars_, spv::Op::OpVariable, {pointerType, id, w(spv::StorageClass::Function)});
  return id;
}

void ModuleBuilder::label(Id label) {
  emit(fnBody_, spv::Op::OpLabel, {label});
  curLabel_ = label;
}

Id ModuleBuilder::op(spv::Op op, Id resultType, const std::vector<uint32_t>& operands) {
  noteOp(op, resultType);
  Id id = newId();
  Words ops = {resultType, id};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(fnBody_, op, ops);
  return id;
}

void ModuleBuilder::opWithId(spv::Op op, Id resultType, Id result,
                             const std::vector<uint32_t>& operands) {
  noteOp(op, resultType);
  Words ops = {resultType, result};
  ops.insert(ops.end(), operands.begin(), operands.end());
  emit(fnBody_, op, ops);
}

void ModuleBuilder::opVoid(spv::Op op, const std::vector<uint32_t>& operands) {
  emit(fnBody_, op, operands);
}

Id ModuleBuilder::glslOp(uint32_t inst, Id resultType, const std::vector<Id>& args) {
  std::vector<uint32_t> ops = {glsl(), inst};
  ops.insert(ops.end(), args.begin(), args.end());
  return op(spv::Op::OpExtInst, resultType, ops);
}

// ---- output ----------------------------------------------------------------------

std::vector<uint32_t> ModuleBuilder::finish() const {
  Words out = {spv::MagicNumber, version_, /*generator*/ 0, nextId_, /*schema*/ 0};
  for (spv::Capability c : caps_) emit(out, spv::Op::OpCapability, {w(c)});
  for (const std::string& e : exts_) {
    Words ops;
    appendString(ops, e);
    emit(out, spv::Op::OpExtension, ops);
  }
  for (const auto& [name, id] : extImports_) {
    Words ops = {id};
    appendString(ops, name);
    emit(out, spv::Op::OpExtInstImport, ops);
  }
  for (const Words* s : {&memoryModel_, &entryPoints_, &executionModes_, &debug_, &annotations_,
                         &globals_, &functions_})
    out.insert(out.end(), s->begin(), s->end());
  return out;
}

}  // namespace eph::spirv
