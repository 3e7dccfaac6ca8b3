#include "ir/Attr.h"

#include <cctype>
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

std::string quoteString(std::string_view s) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (u < 0x20 || u == 0x7f) {
          out += "\\x";
          out += hex[u >> 4];
          out += hex[u & 15];
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool isBareName(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
  return true;
}

std::string nameText(std::string_view name) {
  return isBareName(name) ? std::string(name) : quoteString(name);
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
    case Kind::String: return quoteString(s);
    case Kind::Symbol: return "@" + nameText(s);
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
