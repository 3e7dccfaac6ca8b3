// Op attributes: compile-time constants attached to an op by name
// (`{value = 1.5, dim = 0, callee = @f}`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ir/Types.h"

namespace eph::ir {

struct Attr {
  enum class Kind : uint8_t { Int, Float, Bool, String, Symbol, Type, Array };
  Kind kind = Kind::Int;
  int64_t i = 0;           // Int (u64 values are stored by their bits)
  double f = 0;            // Float
  bool b = false;          // Bool
  std::string s;           // String, Symbol (without '@')
  const ir::Type* type = nullptr;  // Type
  std::vector<Attr> elems;         // Array

  static Attr integer(int64_t v) { Attr a; a.kind = Kind::Int; a.i = v; return a; }
  static Attr floating(double v) { Attr a; a.kind = Kind::Float; a.f = v; return a; }
  static Attr boolean(bool v) { Attr a; a.kind = Kind::Bool; a.b = v; return a; }
  static Attr string(std::string v) { Attr a; a.kind = Kind::String; a.s = std::move(v); return a; }
  static Attr symbol(std::string v) { Attr a; a.kind = Kind::Symbol; a.s = std::move(v); return a; }
  static Attr typeAttr(const ir::Type* t) { Attr a; a.kind = Kind::Type; a.type = t; return a; }
  static Attr array(std::vector<Attr> v) { Attr a; a.kind = Kind::Array; a.elems = std::move(v); return a; }

  bool operator==(const Attr& o) const;
  // Text form: 3, -2, 1.5, 0x1p-3 style floats never appear: floats print in the
  // shortest decimal that round-trips (and always with '.', 'e', "inf" or "nan").
  std::string str() const;
};

// Text-form helpers shared by the printer and type names.
// A string literal with escapes: \" \\ \n \t \r, and \xHH for other control bytes.
std::string quoteString(std::string_view s);
// Can `name` follow a sigil (%, @, !) bare? Letters, digits, '_' and '.'.
bool isBareName(std::string_view name);
// `name` as written after a sigil: bare when possible, else a quoted string
// (so @"my-kernel" and !"T'" round-trip).
std::string nameText(std::string_view name);

}  // namespace eph::ir
