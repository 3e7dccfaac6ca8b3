// A standalone SPIR-V module builder: knows nothing about our IR.
//
// Instructions go into the logical sections of a module (SPIR-V spec 2.4,
// "Logical Layout of a Module"): capabilities, extensions, extended
// instruction imports, the memory model, entry points, execution modes, debug
// names, annotations, types/constants/global variables, and functions.
// finish() flattens them in that order behind a header whose id bound is one
// past the largest id handed out.
//
// Types and constants are deduplicated: asking twice for the same type (with
// the same layout decorations) or the same constant gives the same id.
// Capabilities and extensions are never declared by hand: they are derived
// from what is emitted (a 64-bit float type adds Float64, a pointer into a
// StorageBuffer that holds 16-bit values adds StorageBuffer16BitAccess and
// SPV_KHR_16bit_storage, OpAtomicFAddEXT adds AtomicFloat32AddEXT and its
// extension, a subgroup builtin adds GroupNonUniform, ...).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <spirv/unified1/spirv.hpp11>

namespace eph::spirv {

using Id = uint32_t;

// SPIR-V versions as they appear in the header.
constexpr uint32_t kSpirv13 = 0x00010300;
constexpr uint32_t kSpirv14 = 0x00010400;
constexpr uint32_t kSpirv15 = 0x00010500;
constexpr uint32_t kSpirv16 = 0x00010600;

class ModuleBuilder {
 public:
  explicit ModuleBuilder(uint32_t version = kSpirv16) : version_(version) {}
  uint32_t version() const { return version_; }

  Id newId() { return nextId_++; }

  // ---- module-level sections ------------------------------------------------
  Id importExtInst(const std::string& name);  // deduplicated
  Id glsl() { return importExtInst("GLSL.std.450"); }
  void setMemoryModel(spv::AddressingModel a, spv::MemoryModel m);
  void addEntryPoint(spv::ExecutionModel model, Id fn, const std::string& name,
                     const std::vector<Id>& interface);
  void addExecutionMode(Id fn, spv::ExecutionMode mode, const std::vector<uint32_t>& literals);
  void addName(Id id, const std::string& name);
  void addMemberName(Id type, uint32_t member, const std::string& name);
  void decorate(Id id, spv::Decoration d, const std::vector<uint32_t>& literals = {});
  void decorateMember(Id type, uint32_t member, spv::Decoration d,
                      const std::vector<uint32_t>& literals = {});

  // ---- types (deduplicated, layout decorations are part of the key) ---------
  Id typeVoid();
  Id typeBool();
  Id typeInt(unsigned width, bool isSigned);
  Id typeFloat(unsigned width);
  Id typeVector(Id component, unsigned count);
  // OpTypeCooperativeMatrixNV of rows x cols components, subgroup scope
  // (SPV_NV_cooperative_matrix; requires its capability and extension).
  Id typeCoopMatrixNV(Id component, unsigned rows, unsigned cols);
  // OpTypeCooperativeMatrixKHR at workgroup scope, use 0 (A), 1 (B) or 2
  // (accumulator): SPV_KHR_cooperative_matrix, which needs the Vulkan memory
  // model (the builder switches to it).
  Id typeCoopMatrixWorkgroup(Id component, unsigned rows, unsigned cols, unsigned use);
  // Whether the module has SPV_KHR_cooperative_matrix, which the validator
  // of spirv-tools before mid-2023 (Debian 12's) does not know.
  bool usesCoopMatrixKhr() const { return coopKhr_; }
  // stride 0: no ArrayStride decoration (Function/Workgroup storage, values).
  Id typeArray(Id elem, unsigned length, uint32_t stride = 0);
  Id typeRuntimeArray(Id elem, uint32_t stride);
  // offsets empty: no Offset decorations. block: decorated Block (an interface
  // struct for StorageBuffer/PushConstant); offsets are then required.
  Id typeStruct(const std::vector<Id>& members, const std::vector<uint32_t>& offsets = {},
                bool block = false);
  // A Block struct of its own for one interface variable (`tag` tells them
  // apart), never shared with another. Drivers may apply what a variable is
  // decorated with (NonWritable) to every variable of its type: NVIDIA's
  // compiler turned loads of a written buffer into non-coherent reads that
  // ignored an earlier store when it shared its Block type with a read-only
  // buffer.
  Id typeBlockStruct(const std::vector<Id>& members, const std::vector<uint32_t>& offsets,
                     uint32_t tag);
  Id typePointer(spv::StorageClass sc, Id pointee);
  Id typeFunction(Id result, const std::vector<Id>& params);

  // What kind of type an id is (for the emitters' own bookkeeping).
  spv::Op typeOp(Id type) const;
  unsigned typeWidth(Id type) const;  // Int/Float width; Vector: its component's
  Id componentType(Id type) const;    // Vector/Array/RuntimeArray/Pointer: the element
  unsigned vectorCount(Id type) const;

  // ---- constants (deduplicated) ---------------------------------------------
  Id constBool(bool v);
  // `bits` holds the value's bit pattern (truncated to the type's width).
  Id constInt(Id intType, uint64_t bits);
  // Encoded at the type's width (f16/f32 rounded to nearest even).
  Id constFloat(Id floatType, double v);
  Id constComposite(Id type, const std::vector<Id>& parts);
  Id constNull(Id type);
  // A scalar constant splatted to `type` when it is a vector.
  Id splat(Id type, Id scalarConst);

  // A global OpVariable (any storage class but Function).
  Id globalVariable(Id pointerType, spv::StorageClass sc);

  // ---- functions --------------------------------------------------------------
  // Starts a function and its entry block; returns the function id.
  Id beginFunction(Id resultType, Id fnType, spv::FunctionControlMask control = spv::FunctionControlMask::MaskNone);
  void endFunction();
  // A Function-storage variable, placed at the start of the entry block.
  Id functionVariable(Id pointerType);
  // Starts block `label` (a fresh id from newId()).
  void label(Id label);
  Id currentLabel() const { return curLabel_; }
  // An instruction with a result: returns the result id.
  Id op(spv::Op op, Id resultType, const std::vector<uint32_t>& operands);
  // Like op(), defining a result id handed out earlier by newId() (for values
  // that a phi names before they are computed).
  void opWithId(spv::Op op, Id resultType, Id result, const std::vector<uint32_t>& operands);
  // An instruction without a result type or id (stores, branches, barriers).
  void opVoid(spv::Op op, const std::vector<uint32_t>& operands);
  // OpExtInst from GLSL.std.450.
  Id glslOp(uint32_t inst, Id resultType, const std::vector<Id>& args);

  // ---- output ----------------------------------------------------------------
  std::vector<uint32_t> finish() const;
  const std::set<spv::Capability>& capabilities() const { return caps_; }
  const std::set<std::string>& extensions() const { return exts_; }
  uint32_t bound() const { return nextId_; }

  // Adds a capability (and what it implies) because something needs it. The
  // public entry point exists for instructions the builder cannot see into.
  void require(spv::Capability c);
  void requireExtension(const std::string& name);

  // Encodes a string literal as words (nul-terminated, padded).
  static void appendString(std::vector<uint32_t>& out, const std::string& s);

 private:
  struct TypeInfo {
    spv::Op op = spv::Op::OpNop;
    unsigned width = 0, count = 0;
    Id elem = 0;
    std::vector<Id> members;
  };
  using Words = std::vector<uint32_t>;
  static void emit(Words& out, spv::Op op, const std::vector<uint32_t>& operands);
  Id typeFor(const Words& key, spv::Op op, TypeInfo info, const std::vector<uint32_t>& operands);
  void noteStorageAccess(spv::StorageClass sc, Id pointee);
  void scanWidths(Id type, bool& has8, bool& has16) const;
  void noteOp(spv::Op op, Id resultType);

  uint32_t version_;
  bool coopKhr_ = false;
  Id nextId_ = 1;
  std::set<spv::Capability> caps_;
  std::set<std::string> exts_;
  std::map<std::string, Id> extImports_;
  Words memoryModel_, entryPoints_, executionModes_, debug_, annotations_, globals_;
  std::map<Words, Id> typeIds_;
  std::map<Id, TypeInfo> types_;
  std::map<Words, Id> constIds_;
  Words functions_;
  // The function being built.
  Words fnHeader_, fnVars_, fnBody_;
  Id curLabel_ = 0;
  bool inFunction_ = false;
};

}  // namespace eph::spirv
