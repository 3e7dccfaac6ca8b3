// The normal equations by sparse Cholesky on the CPU: JᵀJ + diag(d) is formed
// in Eigen's compressed-column form and factored by SimplicialLDLT (LDLᵀ with
// an AMD fill-reducing ordering). Eigen is header-only (Debian libeigen3-dev),
// so the installed libraries gain no link dependency.
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <limits>

#include "frontends/value/solve/Internal.h"

namespace eph::value::detail {

bool solveCholesky(const SparseRows& J, std::span<const double> g, std::span<const double> damping,
                   std::span<double> h) {
  using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;
  const auto n = static_cast<Eigen::Index>(J.numCols);
  std::vector<Eigen::Triplet<double, int>> entries;
  entries.reserve(J.nonZeros());
  for (size_t i = 0; i < J.rows(); ++i)
    for (size_t k = J.rowStart[i]; k < J.rowStart[i + 1]; ++k)
      entries.emplace_back(int(i), int(J.cols[k]), J.vals[k]);
  SpMat Jm(static_cast<Eigen::Index>(J.rows()), n);
  Jm.setFromTriplets(entries.begin(), entries.end());

  // Every diagonal entry is stored (explicit zeros included), so the pattern
  // of A is JᵀJ's plus the diagonal whatever the damping.
  std::vector<Eigen::Triplet<double, int>> diag;
  diag.reserve(J.numCols);
  for (Eigen::Index j = 0; j < n; ++j) diag.emplace_back(int(j), int(j), damping[j]);
  SpMat D(n, n);
  D.setFromTriplets(diag.begin(), diag.end());
  SpMat A = SpMat(Jm.transpose() * Jm) + D;

  Eigen::SimplicialLDLT<SpMat> ldlt(A);
  if (ldlt.info() != Eigen::Success) return false;
  // LDLᵀ of a singular matrix finishes with a pivot that is zero up to
  // rounding (or negative): JᵀJ + diag(d) is positive semidefinite, so a
  // pivot below n·ε·max diag(A) means singular.
  double scale = A.diagonal().cwiseAbs().maxCoeff();
  double tiny = double(n) * std::numeric_limits<double>::epsilon() * scale;
  if (!(scale > 0) || (ldlt.vectorD().array() <= tiny).any()) return false;
  Eigen::VectorXd rhs = -Eigen::Map<const Eigen::VectorXd>(g.data(), n);
  Eigen::VectorXd sol = ldlt.solve(rhs);
  if (ldlt.info() != Eigen::Success || !sol.allFinite()) return false;
  Eigen::Map<Eigen::VectorXd>(h.data(), n) = sol;
  return true;
}

}  // namespace eph::value::detail
