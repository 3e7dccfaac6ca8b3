// The normal equations by sparse Cholesky on the CPU: JᵀJ + diag(d) is formed
// in Eigen's compressed-column form and factored by SimplicialLDLT (LDLᵀ with
// an AMD fill-reducing ordering). Eigen is header-only (Debian libeigen3-dev),
// so the installed libraries gain no link dependency.
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>

#include <limits>

#include "frontends/value/solve/Internal.h"

namespace eph::value::detail {

using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, int>;

struct CholeskySolver::Impl {
  Eigen::SimplicialLDLT<SpMat> ldlt;
  std::vector<size_t> rowStart;  // J's pattern when `ldlt` was analysed
  std::vector<uint32_t> cols;
  size_t numCols = 0;
  bool analysed = false;
};

CholeskySolver::CholeskySolver() : impl_(std::make_unique<Impl>()) {}
CholeskySolver::~CholeskySolver() = default;

bool CholeskySolver::solve(const SparseRows& J, std::span<const double> g, std::span<const double> damping,
                           std::span<double> h) {
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

  // A's pattern is a function of J's (Eigen keeps explicit zeros), so the
  // analysis of the last call holds while J's pattern is the same.
  Impl& s = *impl_;
  auto& ldlt = s.ldlt;
  if (!s.analysed || s.numCols != J.numCols || s.rowStart != J.rowStart || s.cols != J.cols) {
    ldlt.analyzePattern(A);
    s.rowStart = J.rowStart, s.cols = J.cols, s.numCols = J.numCols, s.analysed = true;
    ++analyses_;
  }
  ldlt.factorize(A);
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
