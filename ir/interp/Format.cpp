// Values as text: format() for people and `ephc run` output, parseValue() for
// command-line arguments. parseValue accepts everything format prints (except
// that buffers print their elements and parse into a new buffer).
#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "ir/interp/Interp.h"
#include "ir/interp/Scalar.h"

namespace eph::interp {
namespace {

// The shortest decimal that reads back as the same value of type t, always
// recognisable as a float ("1.0", not "1"); whole numbers below 1e16 in full.
std::string formatFloat(const ir::Type* t, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  if (v == std::trunc(v) && std::fabs(v) < 1e16) {  // whole numbers: "65504.0", not "6.55e+04"
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
  }
  for (int p = 1; p <= 17; ++p) {
    std::snprintf(buf, sizeof buf, "%.*g", p, v);
    if (roundFloat(t, std::strtod(buf, nullptr)) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// Boxes nested deeper than this print as "box(...)": a long list is a chain
// of cells, and formatting recurses.
constexpr unsigned kMaxBoxDepth = 32;
thread_local unsigned tBoxDepth = 0;

void formatList(std::string& out, const std::vector<RtValue>& elems, Memory* mem) {
  for (size_t i = 0; i < elems.size(); ++i) {
    if (i) out += ", ";
    out += format(elems[i], mem);
  }
}

}  // namespace

std::string format(const RtValue& v, Memory* mem) {
  const ir::Type* t = v.type;
  if (!t) return "<no value>";
  std::string out;
  switch (t->kind()) {
    case ir::TypeKind::Bool: return v.i ? "true" : "false";
    case ir::TypeKind::Int:
      return t->isSigned() ? std::to_string(v.i) : std::to_string(static_cast<uint64_t>(v.i));
    case ir::TypeKind::Float: return formatFloat(t, v.f);
    case ir::TypeKind::Vector:
      out = "<";
      formatList(out, v.elems, mem);
      return out + ">";
    case ir::TypeKind::Struct:
      out = "(";
      formatList(out, v.elems, mem);
      return out + ")";
    case ir::TypeKind::Array:
    case ir::TypeKind::CoopMatrix:  // its elements, row by row
      out = "[";
      formatList(out, v.elems, mem);
      return out + "]";
    case ir::TypeKind::Sum:
      out = "#" + std::to_string(v.i) + "(";
      formatList(out, v.elems, mem);
      return out + ")";
    case ir::TypeKind::Buffer: {
      BufferData* b = mem ? mem->get(v.buffer) : nullptr;
      if (!b) return "buffer#" + std::to_string(v.buffer);
      if (b->freed) return "<freed buffer>";
      out = "[";
      size_t first = v.viewOffset, n = viewLength(v, *b);  // a view: its window
      for (size_t i = first; i < first + n && i < b->elems.size(); ++i) {
        if (i > first) out += ", ";
        out += b->written[i] ? format(b->elems[i], mem) : "?";
      }
      return out + "]";
    }
    case ir::TypeKind::Function:  // RtValue::i holds the function (ir/ops/Function.cpp)
      if (v.i) return "@" + ir::nameText(reinterpret_cast<const ir::Function*>(static_cast<intptr_t>(v.i))->name());
      break;
    case ir::TypeKind::Var: break;
    case ir::TypeKind::Box: {
      if (!v.box) return "box(<empty>)";
      if (v.box->value.type && v.box->value.type->isBuffer()) return format(v.box->value, mem);  // a boxed list
      if (tBoxDepth >= kMaxBoxDepth) return "box(...)";
      ++tBoxDepth;
      out = "box(" + format(v.box->value, mem) + ")";
      --tBoxDepth;
      return out;
    }
  }
  return "<" + t->str() + ">";
}

namespace {

class ValueParser {
 public:
  ValueParser(std::string_view text, Memory& mem) : s_(text), mem_(mem) {}

  Expected<RtValue> parseAll(const ir::Type* t) {
    RtValue v;
    if (!value(t, v)) return Error{{}, err_};
    skipSpace();
    if (pos_ < s_.size()) return Error{{}, "unexpected '" + std::string(s_.substr(pos_)) + "' after the value"};
    return v;
  }

 private:
  void skipSpace() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  static bool isDelimiter(char c) {
    return std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '<' || c == '>' ||
           c == '(' || c == ')' || c == '[' || c == ']' || c == '#';
  }
  // The next scalar word ("42", "-1.5e3", "true", "abc").
  std::string_view word() {
    skipSpace();
    size_t start = pos_;
    while (pos_ < s_.size() && !isDelimiter(s_[pos_])) ++pos_;
    return s_.substr(start, pos_ - start);
  }
  std::string describeNext() {
    skipSpace();
    if (pos_ >= s_.size()) return "end of input";
    return "'" + std::string(1, s_[pos_]) + "'";
  }
  bool fail(std::string msg) {
    if (err_.empty()) err_ = std::move(msg);
    return false;
  }
  bool expectChar(char c) {
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return fail(std::string("expected '") + c + "', got " + describeNext());
  }
  static std::string article(const ir::Type* t) {
    char c = t->str()[0];
    bool vowel = c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'f';  // "an f32", "a u32"
    return (vowel ? "an " : "a ") + t->str();
  }
  bool expected(const ir::Type* t, std::string_view got) {
    return fail("expected " + article(t) + ", got " +
                (got.empty() ? describeNext() : "'" + std::string(got) + "'"));
  }

  bool scalar(const ir::Type* t, RtValue& out) {
    std::string_view w = word();
    if (t->isBool()) {
      if (w == "true" || w == "false") return out = RtValue::ofBool(t, w == "true"), true;
      return expected(t, w);
    }
    if (t->isInt()) return integer(t, w, out);
    // float
    std::string_view body = w;
    bool neg = !body.empty() && body[0] == '-';
    if (!body.empty() && (body[0] == '-' || body[0] == '+')) body.remove_prefix(1);
    double v = 0;
    if (body == "inf") v = std::numeric_limits<double>::infinity();
    else if (body == "nan") v = std::numeric_limits<double>::quiet_NaN();
    else {
      auto r = std::from_chars(body.data(), body.data() + body.size(), v);
      if (body.empty() || r.ptr != body.data() + body.size()) return expected(t, w);
      if (r.ec == std::errc::result_out_of_range)
        return fail("float '" + std::string(w) + "' is out of range for " + t->str());
      if (r.ec != std::errc()) return expected(t, w);
    }
    out = RtValue::ofFloat(t, neg ? -v : v);
    return true;
  }

  bool integer(const ir::Type* t, std::string_view w, RtValue& out) {
    uint64_t top = uint64_t(1) << (t->bits() - 1);
    int64_t lo = t->isSigned() ? wrapInt(t, top) : 0;       // most negative
    int64_t hi = wrapInt(t, t->isSigned() ? top - 1 : ~uint64_t(0));  // u64 max: by bits
    auto outOfRange = [&] {
      std::string range = t->isSigned() ? std::to_string(lo) + ".." + std::to_string(hi)
                                        : "0.." + std::to_string(static_cast<uint64_t>(hi));
      return fail("integer " + std::string(w) + " is out of range for " + t->str() + " (" +
                  range + ")");
    };
    std::string_view digits = w;
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    bool neg = !digits.empty() && digits[0] == '-';
    std::string_view mag = neg ? digits.substr(1) : digits;
    auto isDigit = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; };
    if (mag.empty() || !std::all_of(mag.begin(), mag.end(), isDigit)) return expected(t, w);
    if (t->isSigned()) {
      int64_t v = 0;
      auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (r.ec != std::errc() || v < lo || v > hi) return outOfRange();
      out = RtValue::ofInt(t, v);
      return true;
    }
    uint64_t v = 0;
    auto r = std::from_chars(mag.data(), mag.data() + mag.size(), v);
    if (neg || r.ec != std::errc() || v > static_cast<uint64_t>(hi)) return outOfRange();
    out = RtValue::ofInt(t, static_cast<int64_t>(v));
    return true;
  }

  // open elem (, elem)* close, each parsed with typeOf(index).
  template <class TypeOf>
  bool list(char open, char close, TypeOf typeOf, std::vector<RtValue>& out) {
    if (!expectChar(open)) return false;
    skipSpace();
    if (pos_ < s_.size() && s_[pos_] == close) return ++pos_, true;
    while (true) {
      const ir::Type* et = typeOf(out.size());
      if (!et) return fail("too many elements");
      RtValue e;
      if (!value(et, e)) return false;
      out.push_back(std::move(e));
      skipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      return expectChar(close);
    }
  }

  bool countIs(const ir::Type* t, size_t want, size_t got) {
    if (want == got) return true;
    return fail(t->str() + " has " + std::to_string(want) + " elements, got " + std::to_string(got));
  }

  bool value(const ir::Type* t, RtValue& out) {
    out = RtValue{};
    out.type = t;
    switch (t->kind()) {
      case ir::TypeKind::Bool:
      case ir::TypeKind::Int:
      case ir::TypeKind::Float: return scalar(t, out);
      case ir::TypeKind::Vector:
      case ir::TypeKind::Array:
        if (!list(t->isVector() ? '<' : '[', t->isVector() ? '>' : ']',
                  [&](size_t i) { return i < t->count() ? t->elem() : nullptr; }, out.elems))
          return false;
        return countIs(t, t->count(), out.elems.size());
      case ir::TypeKind::Struct: {
        auto ms = t->members();
        if (!list('(', ')', [&](size_t i) { return i < ms.size() ? ms[i] : nullptr; }, out.elems))
          return false;
        return countIs(t, ms.size(), out.elems.size());
      }
      case ir::TypeKind::Sum: {
        if (!expectChar('#')) return false;
        std::string_view w = word();
        unsigned tag = 0;
        auto r = std::from_chars(w.data(), w.data() + w.size(), tag);
        if (w.empty() || r.ec != std::errc() || r.ptr != w.data() + w.size() || tag >= t->members().size())
          return fail("expected a variant number 0.." + std::to_string(t->members().size() - 1) +
                      " of " + t->str() + ", got '" + std::string(w) + "'");
        out.i = tag;
        return list('(', ')', [&](size_t i) { return i == 0 ? t->members()[tag] : nullptr; },
                    out.elems) && countIs(t, 1, out.elems.size());
      }
      case ir::TypeKind::Buffer: {
        std::vector<RtValue> elems;
        if (!list('[', ']', [&](size_t) { return t->elem(); }, elems)) return false;
        out.buffer = mem_.adopt(t->elem(), t->space(), std::move(elems));
        return true;
      }
      case ir::TypeKind::Function:
      case ir::TypeKind::Var:
      case ir::TypeKind::Box:
      case ir::TypeKind::CoopMatrix: break;
    }
    return fail("cannot give a value of type " + t->str() + " on the command line");
  }

  std::string_view s_;
  size_t pos_ = 0;
  Memory& mem_;
  std::string err_;
};

}  // namespace

Expected<RtValue> parseValue(std::string_view text, const ir::Type* t, Memory& mem) {
  return ValueParser(text, mem).parseAll(t);
}

}  // namespace eph::interp
