// Preconditioned conjugate gradients on the normal equations
// (JᵀJ + diag(d)) h = b, matrix-free: JᵀJ is never formed, only J·v and Jᵀ·u.
//
// The algorithm (pcg()) sees the vectors only through PcgOps, by slot number,
// so a device implementation can keep every vector (and J) in GPU buffers and
// run each operation as a kernel: per PCG iteration only the two dot products
// come back to the host, never a vector. HostPcgOps is the CPU version.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "frontends/value/solve/Solver.h"

namespace eph::value {

// The operations PCG needs. Parameter-space vectors are named by slot; the
// residual-space temporary of applyNormal is the implementation's own.
class PcgOps {
 public:
  enum Vec : unsigned { B, X, R, Z, P, Q, NumVecs };  // rhs, solution, residual, M⁻¹r, direction, A·p
  virtual ~PcgOps() = default;
  virtual double dot(Vec a, Vec b) = 0;
  virtual void axpy(double a, Vec x, Vec y) = 0;    // y ← a·x + y
  virtual void xpay(Vec x, double a, Vec y) = 0;    // y ← x + a·y
  virtual void copy(Vec from, Vec to) = 0;
  virtual void zero(Vec v) = 0;
  virtual void multiplyJ(Vec in) = 0;               // t ← J·in (t: residual space)
  virtual void multiplyJt(Vec out) = 0;             // out ← Jᵀ·t
  virtual void addDamping(Vec in, Vec out) = 0;     // out ← out + d ⊙ in
  virtual void precondition(Vec in, Vec out) = 0;   // out ← M⁻¹ in, M = diag(JᵀJ) + d
  // out ← (JᵀJ + diag(d))·in; a device may fuse the three.
  virtual void applyNormal(Vec in, Vec out) {
    multiplyJ(in);
    multiplyJt(out);
    addDamping(in, out);
  }
};

struct PcgResult {
  bool ok = false;          // converged (or b = 0); false: breakdown or no convergence
  int iterations = 0;
  double relativeResidual = 0;  // ‖b − A·x‖ / ‖b‖ (recurrence estimate)
};

// Solves A·X = B from X = 0, to ‖R‖ ≤ tolerance·‖B‖ or maxIterations. B is set
// by the caller; X holds the answer.
PcgResult pcg(PcgOps& ops, int maxIterations, double tolerance);

// PcgOps over host vectors, J in compressed rows.
class HostPcgOps : public PcgOps {
 public:
  HostPcgOps(const SparseRows& J, std::span<const double> damping);
  std::vector<double>& vec(Vec v) { return v_[v]; }

  double dot(Vec a, Vec b) override;
  void axpy(double a, Vec x, Vec y) override;
  void xpay(Vec x, double a, Vec y) override;
  void copy(Vec from, Vec to) override { v_[to] = v_[from]; }
  void zero(Vec v) override;
  void multiplyJ(Vec in) override { J_.multiply(v_[in], t_); }
  void multiplyJt(Vec out) override { J_.multiplyTransposed(t_, v_[out]); }
  void addDamping(Vec in, Vec out) override;
  void precondition(Vec in, Vec out) override;

 private:
  const SparseRows& J_;
  std::span<const double> d_;
  std::vector<double> invDiag_, t_;
  std::array<std::vector<double>, NumVecs> v_;
};

}  // namespace eph::value
