#include "ir/Layout.h"

#include <cstring>

#include "ir/interp/Half.h"

namespace eph::ir {

namespace {
size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

template <class T>
void put(std::byte* out, T v) { std::memcpy(out, &v, sizeof v); }

template <class T>
T take(const std::byte* in) {
  T v;
  std::memcpy(&v, in, sizeof v);
  return v;
}
}  // namespace

size_t storageSize(const Type* t) { return t->sizeInBytes(); }
size_t storageAlign(const Type* t) { return t->alignInBytes(); }
size_t storageStride(const Type* t) { return roundUp(storageSize(t), storageAlign(t)); }

size_t fieldOffset(const Type* s, unsigned i) {
  size_t off = 0;
  for (unsigned k = 0;; ++k) {
    off = roundUp(off, storageAlign(s->members()[k]));
    if (k == i) return off;
    off += storageSize(s->members()[k]);
  }
}

size_t sumPayloadOffset(const Type* s) { return roundUp(4, storageAlign(s)); }

bool isStorable(const Type* t) {
  switch (t->kind()) {
    case TypeKind::Bool:
    case TypeKind::Int:
    case TypeKind::Float:
    case TypeKind::Vector: return true;
    case TypeKind::Array: return isStorable(t->elem());
    case TypeKind::Struct:
    case TypeKind::Sum:
      for (const Type* m : t->members())
        if (!isStorable(m)) return false;
      return true;
    default: return false;
  }
}

void encode(const interp::RtValue& v, std::byte* out) {
  const Type* t = v.type;
  switch (t->kind()) {
    case TypeKind::Bool: put<uint32_t>(out, v.i ? 1 : 0); return;
    case TypeKind::Int:
      switch (t->bits()) {
        case 8: put<uint8_t>(out, uint8_t(v.i)); return;
        case 16: put<uint16_t>(out, uint16_t(v.i)); return;
        case 32: put<uint32_t>(out, uint32_t(v.i)); return;
        default: put<uint64_t>(out, uint64_t(v.i)); return;
      }
    case TypeKind::Float:
      switch (t->bits()) {
        case 16: put<Half>(out, Half(v.f)); return;
        case 32: put<float>(out, float(v.f)); return;
        default: put<double>(out, v.f); return;
      }
    case TypeKind::Vector:
      for (unsigned k = 0; k < t->count(); ++k) encode(v.elems[k], out + k * storageSize(t->elem()));
      return;
    case TypeKind::Array:
      for (unsigned k = 0; k < t->count(); ++k) encode(v.elems[k], out + k * storageStride(t->elem()));
      return;
    case TypeKind::Struct:
      for (unsigned k = 0; k < t->members().size(); ++k) encode(v.elems[k], out + fieldOffset(t, k));
      return;
    case TypeKind::Sum:
      std::memset(out, 0, storageSize(t));
      put<uint32_t>(out, uint32_t(v.i));
      encode(v.elems[0], out + sumPayloadOffset(t));
      return;
    default: assert(false && "not a storable type"); return;
  }
}

interp::RtValue decode(const Type* t, const std::byte* in) {
  using interp::RtValue;
  switch (t->kind()) {
    case TypeKind::Bool: return RtValue::ofBool(t, take<uint32_t>(in) != 0);
    case TypeKind::Int:
      switch (t->bits()) {
        case 8: return RtValue::ofInt(t, take<uint8_t>(in));
        case 16: return RtValue::ofInt(t, take<uint16_t>(in));
        case 32: return RtValue::ofInt(t, take<uint32_t>(in));
        default: return RtValue::ofInt(t, int64_t(take<uint64_t>(in)));
      }
    case TypeKind::Float:
      switch (t->bits()) {
        case 16: return RtValue::ofFloat(t, double(take<Half>(in)));
        case 32: return RtValue::ofFloat(t, take<float>(in));
        default: return RtValue::ofFloat(t, take<double>(in));
      }
    default: break;
  }
  RtValue v;
  v.type = t;
  if (t->isVector() || t->isArray()) {
    size_t step = t->isVector() ? storageSize(t->elem()) : storageStride(t->elem());
    for (unsigned k = 0; k < t->count(); ++k) v.elems.push_back(decode(t->elem(), in + k * step));
  } else if (t->isStruct()) {
    for (unsigned k = 0; k < t->members().size(); ++k)
      v.elems.push_back(decode(t->members()[k], in + fieldOffset(t, k)));
  } else if (t->isSum()) {
    uint32_t tag = take<uint32_t>(in);
    if (tag >= t->members().size()) tag = 0;  // garbage from a device: keep it well formed
    v.i = tag;
    v.elems.push_back(decode(t->members()[tag], in + sumPayloadOffset(t)));
  }
  return v;
}

Status encodeBuffer(const interp::BufferData& b, std::vector<std::byte>& out, Loc site) {
  if (Status s = interp::checkFullyWritten(b, site); !s) return s;
  size_t stride = storageStride(b.elemType);
  out.assign(b.elems.size() * stride, std::byte{0});
  for (size_t i = 0; i < b.elems.size(); ++i) encode(b.elems[i], out.data() + i * stride);
  return Status::ok();
}

void decodeBuffer(std::span<const std::byte> bytes, interp::BufferData& b) {
  size_t stride = storageStride(b.elemType);
  for (size_t i = 0; i < b.elems.size() && (i + 1) * stride <= bytes.size(); ++i) {
    b.elems[i] = decode(b.elemType, bytes.data() + i * stride);
    b.written[i] = true;
  }
}

}  // namespace eph::ir
