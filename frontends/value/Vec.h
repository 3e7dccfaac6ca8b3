// Small vectors of Values and the geometry built on them (mesh energies,
// constraint sketches). Everything is ordinary Value arithmetic: no new ops.
#pragma once

#include <array>
#include <span>

#include "frontends/value/Graph.h"

namespace eph::value {

template <size_t N>
struct Vec {
  std::array<Value, N> v;
  Value& operator[](size_t i) { return v[i]; }
  const Value& operator[](size_t i) const { return v[i]; }
  Graph* graph() const { return v[0].graph(); }
};
using Vec2 = Vec<2>;
using Vec3 = Vec<3>;
using Vec4 = Vec<4>;

template <size_t N> Vec<N> operator+(const Vec<N>& a, const Vec<N>& b) { Vec<N> r; for (size_t i = 0; i < N; ++i) r[i] = a[i] + b[i]; return r; }
template <size_t N> Vec<N> operator-(const Vec<N>& a, const Vec<N>& b) { Vec<N> r; for (size_t i = 0; i < N; ++i) r[i] = a[i] - b[i]; return r; }
template <size_t N> Vec<N> operator*(const Vec<N>& a, Value s) { Vec<N> r; for (size_t i = 0; i < N; ++i) r[i] = a[i] * s; return r; }
template <size_t N> Vec<N> operator/(const Vec<N>& a, Value s) { Vec<N> r; for (size_t i = 0; i < N; ++i) r[i] = a[i] / s; return r; }
template <size_t N> Value dot(const Vec<N>& a, const Vec<N>& b) {
  Value s = a[0] * b[0];
  for (size_t i = 1; i < N; ++i) s = s + a[i] * b[i];
  return s;
}
template <size_t N> Value magnitude(const Vec<N>& a) { return sqrt(dot(a, a)); }
template <size_t N> Vec<N> normalize(const Vec<N>& a) { return a / magnitude(a); }

// The 2-D cross product (a scalar: a.x b.y - a.y b.x) and the 3-D one.
Value cross(const Vec2& a, const Vec2& b);
Vec3 cross(const Vec3& a, const Vec3& b);
// The unsigned angle between two vectors, in [0, π]: atan2(|a×b|, a·b) in 2-D and
// 3-D (accurate near 0 and π); acos of the clamped cosine in 4-D.
Value angle(const Vec2& a, const Vec2& b);
Value angle(const Vec3& a, const Vec3& b);
Value angle(const Vec4& a, const Vec4& b);

// Triangle (a, b, c), counter-clockwise: the unit normal and the area.
Vec3 triangleNormal(const Vec3& a, const Vec3& b, const Vec3& c);
Value triangleArea(const Vec3& a, const Vec3& b, const Vec3& c);
// The interior angle at `at` of the triangle (at, b, c).
Value interiorAngle(const Vec3& at, const Vec3& b, const Vec3& c);
// 2π minus the interior angles at `center` of the fan of triangles
// (center, ring[i], ring[i+1]) around a closed ring (the discrete Gaussian curvature).
Value angleDefect(const Vec3& center, std::span<const Vec3> ring);
// The signed dihedral angle across edge (a, b) between triangles (a, b, c) and
// (b, a, d): 0 when flat, positive when the surface bends away from c's normal.
Value dihedralAngle(const Vec3& a, const Vec3& b, const Vec3& c, const Vec3& d);

// Leaves as vectors: elements `first`.. of a declaration's values.
template <size_t N>
Vec<N> vec(std::span<const Value> xs, size_t first = 0) {
  Vec<N> r;
  for (size_t i = 0; i < N; ++i) r[i] = xs[first + i];
  return r;
}

}  // namespace eph::value
