// RtValue construction and comparison; freeing box cells.
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
         buffer == o.buffer && viewOffset == o.viewOffset && viewCount == o.viewCount && box == o.box && elems == o.elems;
}

namespace {

// Moves every box held directly by `v` (not through another cell) to `out`.
void takeBoxes(RtValue& v, std::vector<std::shared_ptr<const BoxCell>>& out) {
  if (v.box) out.push_back(std::move(v.box));
  for (RtValue& e : v.elems) takeBoxes(e, out);
}

// The cells whose last reference is being dropped by the outermost ~BoxCell
// running on this thread; null when none runs.
thread_local std::vector<std::shared_ptr<const BoxCell>>* tDropping = nullptr;

}  // namespace

BoxCell::~BoxCell() {
  if (tDropping) {  // an outer ~BoxCell drains the list: no recursion
    takeBoxes(value, *tDropping);
    return;
  }
  std::vector<std::shared_ptr<const BoxCell>> work;
  tDropping = &work;
  takeBoxes(value, work);
  while (!work.empty()) {
    std::shared_ptr<const BoxCell> cell = std::move(work.back());
    work.pop_back();
    cell.reset();  // the last reference runs ~BoxCell, which appends to `work`
  }
  tDropping = nullptr;
}

}  // namespace eph::interp
