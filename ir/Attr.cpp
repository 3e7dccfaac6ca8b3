#include "ir/Attr.h"

#include <charconv>
#include <cmath>
#include <cstring>

namespace eph::ir {

bool Attr::operator==(const Attr& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int: return i == o.i;
    // Bitwise, so that -0.0 != 0.0 and nan == nan (same bits) for CSE.
    case Kind::Float: return std::memcmp(&f, &o.f, sizeof f) == 0;
    case Kind::Bool: return b == o.b;
    case Kind::String:
    case Kind::Symbol: return s == o.s;
    case Kind::Type: return type == o.type;
    case Kind::Array: return elems == o.elems;
  }
  return false;
}

static std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string Attr::str() const {
  switch (kind) {
    case Kind::Int: return std::to_string(i);
    case Kind::Float: {
      if (std::isnan(f)) return std::signbit(f) ? "-nan" : "nan";
      if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, f);
      std::string s(buf, r.ptr);
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s;
    }
    case Kind::Bool: return b ? "true" : "false";
    case Kind::String: return quote(s);
    case Kind::Symbol: return "@" + s;
    case Kind::Type: return type->str();
    case Kind::Array: {
      std::string out = "[";
      for (size_t k = 0; k < elems.size(); ++k) out += (k ? ", " : "") + elems[k].str();
      return out + "]";
    }
  }
  return "?";
}

}  // namespace eph::ir
