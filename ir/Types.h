// IR types. Types are immutable and interned by a Context, so two types are
// equal exactly when their pointers are equal. Every type prints to the text
// form used by .eir files (see docs/ir.md), and that text is also its key.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace eph::ir {

enum class TypeKind : uint8_t {
  Bool,
  Int,       // i8..i64, u8..u64
  Float,     // f16, f32, f64
  Vector,    // vec<T, 2..4> of bool/int/float
  Struct,    // struct<T, ...>: also tuples; struct<> is the unit type
  Sum,       // sum<T, ...>: tagged union, one payload type per variant
  Array,     // array<T, N>: fixed-size value array
  Buffer,    // buffer<T, space, ownership>: a handle to memory
  Function,  // fn(T, ...) -> (R, ...)
  Var,       // !T: a type variable in a generic function (monomorphized away)
  Box,       // box: an opaque, copyable handle to an immutable host heap cell
  CoopMatrix,  // coopmat<T, R, C>: an R x C matrix of T held by a subgroup (ir/ops/CoopMatrix.cpp)
};

// Who holds a cooperative matrix, and (workgroup scope) which operand of a
// multiply-add it is: coopmat<T, R, C> is a subgroup's, for any use;
// coopmat<T, R, C, workgroup, a|b|acc> the whole workgroup's (the driver
// stages the tiles through workgroup memory itself: VK_NV_cooperative_matrix2).
enum class CoopScope : uint8_t { Subgroup, Workgroup };
enum class CoopUse : uint8_t { Any, A, B, Acc };

// Where a buffer's memory lives.
enum class Space : uint8_t { Host, Device, Workgroup };
// Who is responsible for a buffer: linear (consume exactly once), affine (at most
// once, may be dropped), or a borrow that may only read / may read and write.
enum class Ownership : uint8_t { Linear, Affine, Read, Write };

std::string_view spaceName(Space s);
std::string_view ownershipName(Ownership o);
std::string_view coopUseName(CoopUse u);

class Type {
 public:
  TypeKind kind() const { return kind_; }
  bool isBool() const { return kind_ == TypeKind::Bool; }
  bool isInt() const { return kind_ == TypeKind::Int; }
  bool isFloat() const { return kind_ == TypeKind::Float; }
  bool isVector() const { return kind_ == TypeKind::Vector; }
  bool isStruct() const { return kind_ == TypeKind::Struct; }
  bool isSum() const { return kind_ == TypeKind::Sum; }
  bool isArray() const { return kind_ == TypeKind::Array; }
  bool isBuffer() const { return kind_ == TypeKind::Buffer; }
  bool isFunction() const { return kind_ == TypeKind::Function; }
  bool isVar() const { return kind_ == TypeKind::Var; }
  bool isBox() const { return kind_ == TypeKind::Box; }
  bool isCoopMatrix() const { return kind_ == TypeKind::CoopMatrix; }
  bool isScalar() const { return isBool() || isInt() || isFloat(); }
  bool isNumeric() const { return isInt() || isFloat(); }
  bool isUnit() const { return isStruct() && members_.empty(); }

  // Int/Float: bit width. Int: signedness.
  unsigned bits() const { return bits_; }
  bool isSigned() const { return signed_; }
  // Vector/Array: element count. CoopMatrix: rows.
  unsigned count() const { return count_; }
  // CoopMatrix: rows and columns, scope and use.
  unsigned rows() const { return count_; }
  unsigned cols() const { return cols_; }
  CoopScope coopScope() const { return coopScope_; }
  CoopUse coopUse() const { return coopUse_; }
  // Vector/Array/Buffer: element type.
  const Type* elem() const { return elem_; }
  // Buffer only.
  Space space() const { return space_; }
  Ownership ownership() const { return own_; }
  // Struct fields, Sum variants, Function parameters.
  std::span<const Type* const> members() const { return members_; }
  // Function results.
  std::span<const Type* const> results() const { return results_; }
  // Var: its name.
  const std::string& name() const { return name_; }

  // The scalar type of a scalar, or the element type of a vector.
  const Type* scalar() const { return isVector() ? elem_ : this; }
  // Must be consumed exactly once: a linear buffer, or an aggregate holding one.
  bool isLinear() const { return linear_; }
  // May be consumed at most once: affine buffers (and aggregates of them).
  bool isAffine() const { return affine_; }
  // Value size in bytes for scalars/vectors/arrays/structs laid out naturally
  // (vec3 takes 16 bytes, like std430). Buffers/functions: 8 (a handle).
  unsigned sizeInBytes() const;
  unsigned alignInBytes() const;

  // The text form, e.g. "buffer<f32, device, linear>".
  const std::string& str() const { return text_; }

 private:
  friend class Context;
  Type() = default;
  TypeKind kind_ = TypeKind::Bool;
  unsigned bits_ = 0, count_ = 0, cols_ = 0;
  bool signed_ = false, linear_ = false, affine_ = false;
  Space space_ = Space::Host;
  Ownership own_ = Ownership::Read;
  CoopScope coopScope_ = CoopScope::Subgroup;
  CoopUse coopUse_ = CoopUse::Any;
  const Type* elem_ = nullptr;
  std::vector<const Type*> members_, results_;
  std::string name_, text_;
};

// Owns and interns types and interned strings (file names of locations).
class Context {
 public:
  Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Type* boolType();
  const Type* intType(unsigned bits, bool isSigned);
  const Type* i32() { return intType(32, true); }
  const Type* u32() { return intType(32, false); }
  const Type* i64() { return intType(64, true); }
  const Type* floatType(unsigned bits);
  const Type* f32() { return floatType(32); }
  const Type* f64() { return floatType(64); }
  const Type* vectorType(const Type* elem, unsigned count);
  // coopmat<elem, rows, cols>: elem a float or integer scalar. Workgroup
  // scope needs a use other than Any.
  const Type* coopMatrixType(const Type* elem, unsigned rows, unsigned cols, CoopScope scope = CoopScope::Subgroup,
                             CoopUse use = CoopUse::Any);
  const Type* structType(std::vector<const Type*> fields);
  const Type* unitType() { return structType({}); }
  const Type* sumType(std::vector<const Type*> variants);
  const Type* arrayType(const Type* elem, unsigned count);
  const Type* bufferType(const Type* elem, Space space, Ownership own);
  const Type* functionType(std::vector<const Type*> params, std::vector<const Type*> results);
  const Type* varType(const std::string& name);
  // The host heap cell (box.new / box.get): one type, whatever it holds.
  const Type* boxType();

  // Interned copy of a string; the pointer lives as long as the context.
  const std::string* intern(std::string_view s);

 private:
  const Type* get(Type proto);
  static void inheritOwnership(Type& t, const std::vector<const Type*>& parts);
  std::unordered_map<std::string, std::unique_ptr<Type>> types_;
  std::unordered_map<std::string, std::unique_ptr<std::string>> strings_;
};

}  // namespace eph::ir
