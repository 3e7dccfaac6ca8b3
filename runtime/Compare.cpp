// Comparing results across targets (Compare.h).
#include "runtime/Compare.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace eph::runtime {

std::string Tolerance::str() const {
  std::ostringstream s;
  s << ulps << " ulp, " << relative << " relative or " << absolute << " absolute";
  return s.str();
}

bool floatsAgree(double a, double b, unsigned bits, const Tolerance& tol) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;  // -0 and +0 agree
  if (std::isinf(a) || std::isinf(b)) return false;
  double diff = std::fabs(a - b), mag = std::max(std::fabs(a), std::fabs(b));
  int mantissa = bits == 16 ? 10 : bits == 32 ? 23 : 52;
  int minExp = bits == 16 ? -14 : bits == 32 ? -126 : -1022;
  int e = std::max(std::ilogb(mag), minExp);
  double ulp = std::ldexp(1.0, e - mantissa);
  return diff <= tol.ulps * ulp || diff <= tol.relative * mag || diff <= tol.absolute;
}

namespace {

// Scalars of a value in order: vector, struct and array elements, a sum's tag
// then payload, a buffer's elements (read from `mem`). A buffer element never
// written (the interpreter knows) is a value with no type.
void flatten(const interp::RtValue& v, interp::Memory& mem, std::vector<interp::RtValue>& out) {
  const ir::Type* t = v.type;
  if (t && t->isBuffer()) {
    if (interp::BufferData* b = mem.get(v.buffer))
      for (size_t i = 0; i < b->elems.size(); ++i) {
        if (i < b->written.size() && !b->written[i]) out.push_back(interp::RtValue{});
        else flatten(b->elems[i], mem, out);
      }
    return;
  }
  if (t && t->kind() == ir::TypeKind::Sum) {
    interp::RtValue tag = v;
    tag.elems.clear();
    out.push_back(tag);
  }
  if (!v.elems.empty()) {
    for (auto& e : v.elems) flatten(e, mem, out);
    return;
  }
  if (t && t->kind() != ir::TypeKind::Sum) out.push_back(v);
}

bool scalarsAgree(const interp::RtValue& a, const interp::RtValue& b, const Tolerance& tol) {
  if (a.type != b.type) return false;
  if (a.type && a.type->isFloat()) return floatsAgree(a.f, b.f, a.type->bits(), tol);
  return a.i == b.i;
}

}  // namespace

std::optional<Difference> compareResults(const std::vector<interp::RtValue>& a, interp::Memory& memA,
                                         const std::vector<interp::RtValue>& b, interp::Memory& memB,
                                         const Tolerance& tol) {
  if (a.size() != b.size())
    return Difference{0, 0, {}, {}, std::to_string(a.size()) + " results vs " + std::to_string(b.size())};
  for (size_t r = 0; r < a.size(); ++r) {
    std::vector<interp::RtValue> fa, fb;
    flatten(a[r], memA, fa);
    flatten(b[r], memB, fb);
    if (fa.size() != fb.size())
      return Difference{r, 0, {}, {}, std::to_string(fa.size()) + " elements vs " + std::to_string(fb.size())};
    // (An element never written on one side differs from any value: reading
    // it is undefined, and the targets need not agree.)
    auto text = [](const interp::RtValue& x) { return x.type ? interp::format(x) : std::string("? (never written)"); };
    for (size_t e = 0; e < fa.size(); ++e)
      if ((fa[e].type || fb[e].type) && !scalarsAgree(fa[e], fb[e], tol))
        return Difference{r, e, text(fa[e]), text(fb[e]), {}};
  }
  return std::nullopt;
}

}  // namespace eph::runtime
