// The custom ops every graph knows: eigmin3, the smallest eigenvalue of a
// symmetric 3x3 matrix, built as a user would build one (a forward, its
// derivative, and its body in IR for the kernels).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "frontends/value/Graph.h"
#include "ir/Builder.h"

namespace eph::value {

namespace {
// Smith's closed form: with q = tr(A)/3, p = sqrt(|A - qI|_F² / 6) and
// r = det((A - qI)/p)/2, the eigenvalues are q + 2p·cos(acos(r)/3 + 2πk/3);
// k = 1 gives the smallest. A = qI (p = 0) has q threefold.
double smallest(const double c[6]) {
  double p1 = c[1] * c[1] + c[2] * c[2] + c[4] * c[4];
  double q = (c[0] + c[3] + c[5]) / 3;
  double a = c[0] - q, d = c[3] - q, f = c[5] - q;
  double p2 = a * a + d * d + f * f + 2 * p1;
  if (p2 == 0) return q;
  double p = std::sqrt(p2 / 6);
  // det(A - qI) / p³ / 2
  double det = a * (d * f - c[4] * c[4]) - c[1] * (c[1] * f - c[4] * c[2]) + c[2] * (c[1] * c[4] - d * c[2]);
  double r = std::clamp(det / (p * p * p) / 2, -1.0, 1.0);
  double phi = std::acos(r) / 3;
  return q + 2 * p * std::cos(phi + 2 * std::numbers::pi / 3);
}

double eigmin3Forward(std::span<const double> in) { return smallest(in.data()); }

void eigmin3Derivative(std::span<const double> in, double, std::span<double> d) {
  double v[3];
  eigmin3Value(in.data(), v);
  // in = c00 c01 c02 c11 c12 c22
  d[0] = v[0] * v[0], d[3] = v[1] * v[1], d[5] = v[2] * v[2];
  d[1] = 2 * v[0] * v[1], d[2] = 2 * v[0] * v[2], d[4] = 2 * v[1] * v[2];
}

// The same closed form in IR (selects, so the p = 0 branch needs no control flow).
ir::Value* eigmin3Lower(ir::Builder& b, std::span<ir::Value* const> c, const ir::Type* t) {
  auto k = [&](double v) { return b.constFloat(t, v); };
  auto op = [&](std::string_view name, std::vector<ir::Value*> xs) { return b.op(name, std::move(xs), t); };
  auto mul = [&](ir::Value* x, ir::Value* y) { return op("mul", {x, y}); };
  auto add = [&](ir::Value* x, ir::Value* y) { return op("add", {x, y}); };
  auto sub = [&](ir::Value* x, ir::Value* y) { return op("sub", {x, y}); };
  ir::Value* p1 = add(add(mul(c[1], c[1]), mul(c[2], c[2])), mul(c[4], c[4]));
  ir::Value* q = op("div", {add(add(c[0], c[3]), c[5]), k(3)});
  ir::Value *a = sub(c[0], q), *d = sub(c[3], q), *f = sub(c[5], q);
  ir::Value* p2 = add(add(add(mul(a, a), mul(d, d)), mul(f, f)), mul(k(2), p1));
  ir::Value* p = op("sqrt", {op("div", {p2, k(6)})});
  ir::Value* det = add(sub(mul(a, sub(mul(d, f), mul(c[4], c[4]))), mul(c[1], sub(mul(c[1], f), mul(c[4], c[2])))),
                       mul(c[2], sub(mul(c[1], c[4]), mul(d, c[2]))));
  ir::Value* r = op("div", {op("div", {det, mul(mul(p, p), p)}), k(2)});
  r = op("max", {k(-1), op("min", {r, k(1)})});
  ir::Value* phi = op("div", {op("acos", {r}), k(3)});
  ir::Value* lambda = add(q, mul(mul(k(2), p), op("cos", {add(phi, k(2 * std::numbers::pi / 3))})));
  ir::Value* isotropic = b.op("eq", {p2, k(0)}, b.context().boolType());
  return b.op("select", {isotropic, q, lambda}, t);
}
// ∂λ/∂c in IR, as eigmin3Derivative: v is the longest of the cross products
// of two rows of A - λI (normalised), chosen with selects; (1, 0, 0) when all
// three vanish.
std::vector<ir::Value*> eigmin3LowerDerivative(ir::Builder& b, std::span<ir::Value* const> c, ir::Value* lambda,
                                               const ir::Type* t) {
  auto k = [&](double v) { return b.constFloat(t, v); };
  auto op = [&](std::string_view name, std::vector<ir::Value*> xs) { return b.op(name, std::move(xs), t); };
  auto mul = [&](ir::Value* x, ir::Value* y) { return op("mul", {x, y}); };
  auto sub = [&](ir::Value* x, ir::Value* y) { return op("sub", {x, y}); };
  ir::Value* m[3][3] = {{sub(c[0], lambda), c[1], c[2]}, {c[1], sub(c[3], lambda), c[4]}, {c[2], c[4], sub(c[5], lambda)}};
  ir::Value* best[3] = {k(1), k(0), k(0)};
  ir::Value* bestN2 = k(0);
  for (int i = 0; i < 3; ++i) {
    ir::Value* const* x = m[i];
    ir::Value* const* y = m[(i + 1) % 3];
    ir::Value* w[3] = {sub(mul(x[1], y[2]), mul(x[2], y[1])), sub(mul(x[2], y[0]), mul(x[0], y[2])),
                       sub(mul(x[0], y[1]), mul(x[1], y[0]))};
    ir::Value* n2 = op("add", {op("add", {mul(w[0], w[0]), mul(w[1], w[1])}), mul(w[2], w[2])});
    ir::Value* longer = b.op("gt", {n2, bestN2}, b.context().boolType());
    ir::Value* n = op("sqrt", {n2});
    for (int j = 0; j < 3; ++j) best[j] = b.op("select", {longer, op("div", {w[j], n}), best[j]}, t);
    bestN2 = b.op("select", {longer, n2, bestN2}, t);
  }
  ir::Value* two = k(2);
  return {mul(best[0], best[0]),           mul(two, mul(best[0], best[1])), mul(two, mul(best[0], best[2])),
          mul(best[1], best[1]),           mul(two, mul(best[1], best[2])), mul(best[2], best[2])};
}
}  // namespace

double eigmin3Value(const double c[6], double v[3]) {
  double lambda = smallest(c);
  // v spans the null space of A - λI: the longest cross product of two rows.
  double m[3][3] = {{c[0] - lambda, c[1], c[2]}, {c[1], c[3] - lambda, c[4]}, {c[2], c[4], c[5] - lambda}};
  double best = -1;
  v[0] = 1, v[1] = v[2] = 0;
  for (int i = 0; i < 3; ++i) {
    const double *x = m[i], *y = m[(i + 1) % 3];
    double w[3] = {x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]};
    double n2 = w[0] * w[0] + w[1] * w[1] + w[2] * w[2];
    if (n2 > best && n2 > 0) {
      best = n2;
      double n = std::sqrt(n2);
      v[0] = w[0] / n, v[1] = w[1] / n, v[2] = w[2] / n;
    }
  }
  return lambda;
}

void registerBuiltinCustomOps(std::vector<std::unique_ptr<CustomOp>>& ops) {
  ops.push_back(std::make_unique<CustomOp>(
      CustomOp{"eigmin3", 6, eigmin3Forward, eigmin3Derivative, eigmin3Lower, eigmin3LowerDerivative}));
}

uint32_t eigmin3Id() { return 0; }

}  // namespace eph::value
