#include "frontends/tensor/DType.h"

#include <algorithm>

namespace eph::tensor {

namespace {
struct Info {
  DType t;
  std::string_view name;
  unsigned bits;
  bool isFloat, isSigned;
};
constexpr Info kInfo[] = {
    {DType::Bool, "bool", 8, false, false}, {DType::U8, "u8", 8, false, false},
    {DType::I8, "i8", 8, false, true},      {DType::U16, "u16", 16, false, false},
    {DType::I16, "i16", 16, false, true},   {DType::U32, "u32", 32, false, false},
    {DType::I32, "i32", 32, false, true},   {DType::U64, "u64", 64, false, false},
    {DType::I64, "i64", 64, false, true},   {DType::F16, "f16", 16, true, true},
    {DType::F32, "f32", 32, true, true},    {DType::F64, "f64", 64, true, true},
};
const Info& info(DType t) { return kInfo[size_t(t)]; }
}  // namespace

std::string_view dtypeName(DType t) { return info(t).name; }
std::optional<DType> dtypeFromName(std::string_view name) {
  for (const Info& i : kInfo)
    if (i.name == name) return i.t;
  return std::nullopt;
}
bool isFloat(DType t) { return info(t).isFloat; }
bool isInt(DType t) { return t != DType::Bool && !info(t).isFloat; }
bool isSigned(DType t) { return info(t).isSigned; }
unsigned bits(DType t) { return info(t).bits; }
size_t hostBytes(DType t) { return info(t).bits / 8; }

const ir::Type* irType(ir::Context& ctx, DType t) {
  if (t == DType::Bool) return ctx.boolType();
  if (isFloat(t)) return ctx.floatType(bits(t));
  return ctx.intType(bits(t), isSigned(t));
}

const ir::Type* computeType(ir::Context& ctx, DType t) {
  return t == DType::F16 ? ctx.f32() : irType(ctx, t);
}

DType promote(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  auto widerFloat = [](DType x, DType y) { return bits(x) >= bits(y) ? x : y; };
  if (isFloat(a) || isFloat(b)) {
    if (isFloat(a) && isFloat(b)) return widerFloat(a, b);
    DType f = isFloat(a) ? a : b, i = isFloat(a) ? b : a;
    // The smallest float that holds every value of the integer type.
    DType holds = bits(i) == 8 ? DType::F16 : bits(i) == 16 ? DType::F32 : DType::F64;
    return widerFloat(f, holds);
  }
  if (isSigned(a) == isSigned(b)) return bits(a) >= bits(b) ? a : b;
  DType s = isSigned(a) ? a : b, u = isSigned(a) ? b : a;
  if (bits(s) > bits(u)) return s;
  switch (bits(u)) {
    case 8: return DType::I16;
    case 16: return DType::I32;
    case 32: return DType::I64;
    default: return DType::F64;  // no integer type holds both i64 and u64
  }
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

static std::string extentText(int64_t e) {
  if (!involvesDynamic(e)) return std::to_string(e);
  return e == kDynamicExtent ? "N" : std::to_string(e / kDynamicExtent) + "N";
}

std::string shapeText(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + extentText(s[i]);
  return out + "]";
}

int64_t rowElements(const Shape& s) {
  int64_t n = 1;
  for (size_t i = 1; i < s.size(); ++i) n *= s[i];
  return n;
}

Shape withExtent(Shape s, int64_t n) {
  if (isDynamic(s)) s[0] = n;
  return s;
}

std::vector<int64_t> contiguousStrides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t i = s.size(); i-- > 1;) st[i - 1] = st[i] * std::max<int64_t>(s[i], 1);
  return st;
}

std::optional<Shape> broadcastShapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

}  // namespace eph::tensor
