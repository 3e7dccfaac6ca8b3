#include "frontends/value/Vec.h"

#include <numbers>

namespace eph::value {

Value cross(const Vec2& a, const Vec2& b) { return a[0] * b[1] - a[1] * b[0]; }

Vec3 cross(const Vec3& a, const Vec3& b) {
  return {{a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}};
}

Value angle(const Vec2& a, const Vec2& b) { return atan2(abs(cross(a, b)), dot(a, b)); }
Value angle(const Vec3& a, const Vec3& b) { return atan2(magnitude(cross(a, b)), dot(a, b)); }
Value angle(const Vec4& a, const Vec4& b) { return acos(clamp(dot(a, b) / (magnitude(a) * magnitude(b)), -1, 1)); }

Vec3 triangleNormal(const Vec3& a, const Vec3& b, const Vec3& c) { return normalize(cross(b - a, c - a)); }

Value triangleArea(const Vec3& a, const Vec3& b, const Vec3& c) { return 0.5 * magnitude(cross(b - a, c - a)); }

Value interiorAngle(const Vec3& at, const Vec3& b, const Vec3& c) { return angle(b - at, c - at); }

Value angleDefect(const Vec3& center, std::span<const Vec3> ring) {
  Value total = center.graph()->literal(2 * std::numbers::pi);
  for (size_t i = 0; i < ring.size(); ++i) total = total - interiorAngle(center, ring[i], ring[(i + 1) % ring.size()]);
  return total;
}

Value dihedralAngle(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d) {
  Vec3 n1 = triangleNormal(a, b, c), n2 = triangleNormal(b, a, d);
  Vec3 e = normalize(b - a);
  return atan2(dot(cross(n1, n2), e), dot(n1, n2));
}

}  // namespace eph::value
