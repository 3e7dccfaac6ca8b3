// RtValue construction and comparison.
#include <cstring>

#include "ir/interp/Interp.h"
#include "ir/interp/Scalar.h"

namespace eph::interp {

RtValue RtValue::ofInt(const ir::Type* t, int64_t v) {
  RtValue r;
  r.type = t;
  r.i = t->isBool() ? int64_t(v != 0) : wrapInt(t, static_cast<uint64_t>(v));
  return r;
}

RtValue RtValue::ofFloat(const ir::Type* t, double v) {
  RtValue r;
  r.type = t;
  r.f = roundFloat(t, v);
  return r;
}

RtValue RtValue::ofBool(const ir::Type* t, bool v) {
  RtValue r;
  r.type = t;
  r.i = v ? 1 : 0;
  return r;
}

bool RtValue::operator==(const RtValue& o) const {
  return type == o.type && i == o.i && std::memcmp(&f, &o.f, sizeof f) == 0 &&
         buffer == o.buffer && elems == o.elems;
}

}  // namespace eph::interp
