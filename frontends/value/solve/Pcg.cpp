// Preconditioned conjugate gradients (Hestenes–Stiefel with a Jacobi
// preconditioner; Nocedal & Wright, Algorithm 5.3) over PcgOps.
#include "frontends/value/solve/Pcg.h"

#include <algorithm>
#include <cmath>

namespace eph::value {

PcgResult pcg(PcgOps& ops, int maxIterations, double tolerance) {
  using V = PcgOps::Vec;
  PcgResult res;
  ops.zero(V::X);
  ops.copy(V::B, V::R);  // R = B − A·0
  double bb = ops.dot(V::B, V::B);
  if (bb == 0) return {true, 0, 0};
  double target = tolerance * tolerance * bb;
  ops.precondition(V::R, V::Z);
  ops.copy(V::Z, V::P);
  double rz = ops.dot(V::R, V::Z);
  double rr = bb;
  for (int k = 0; k < maxIterations; ++k) {
    ops.applyNormal(V::P, V::Q);
    double pq = ops.dot(V::P, V::Q);
    // A is positive semidefinite: pᵀAp ≤ 0 means p lies in its null space.
    if (!(pq > 0) || !std::isfinite(pq)) {
      res.iterations = k;
      res.relativeResidual = std::sqrt(rr / bb);
      return res;
    }
    double alpha = rz / pq;
    ops.axpy(alpha, V::P, V::X);
    ops.axpy(-alpha, V::Q, V::R);
    rr = ops.dot(V::R, V::R);
    res.iterations = k + 1;
    if (rr <= target) {
      res.ok = true;
      res.relativeResidual = std::sqrt(rr / bb);
      return res;
    }
    ops.precondition(V::R, V::Z);
    double rzNew = ops.dot(V::R, V::Z);
    ops.xpay(V::Z, rzNew / rz, V::P);  // P = Z + β·P
    rz = rzNew;
  }
  res.relativeResidual = std::sqrt(rr / bb);
  return res;
}

HostPcgOps::HostPcgOps(const SparseRows& J, std::span<const double> damping)
    : J_(J), d_(damping), invDiag_(J.numCols), t_(J.rows()) {
  for (auto& v : v_) v.assign(J.numCols, 0.0);
  J.columnSquares(invDiag_);
  for (size_t i = 0; i < invDiag_.size(); ++i) {
    double m = invDiag_[i] + d_[i];
    invDiag_[i] = m > 0 ? 1.0 / m : 1.0;
  }
}

double HostPcgOps::dot(Vec a, Vec b) {
  const auto &x = v_[a], &y = v_[b];
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

void HostPcgOps::axpy(double a, Vec x, Vec y) {
  auto &xs = v_[x], &ys = v_[y];
  for (size_t i = 0; i < xs.size(); ++i) ys[i] += a * xs[i];
}

void HostPcgOps::xpay(Vec x, double a, Vec y) {
  auto &xs = v_[x], &ys = v_[y];
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = xs[i] + a * ys[i];
}

void HostPcgOps::zero(Vec v) { std::fill(v_[v].begin(), v_[v].end(), 0.0); }

void HostPcgOps::addDamping(Vec in, Vec out) {
  auto &xs = v_[in], &ys = v_[out];
  for (size_t i = 0; i < xs.size(); ++i) ys[i] += d_[i] * xs[i];
}

void HostPcgOps::precondition(Vec in, Vec out) {
  auto &xs = v_[in], &ys = v_[out];
  for (size_t i = 0; i < xs.size(); ++i) ys[i] = invDiag_[i] * xs[i];
}

}  // namespace eph::value
