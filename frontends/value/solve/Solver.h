// Nonlinear least-squares and energy solvers for Value graphs (docs/value-solvers.md):
// Levenberg–Marquardt (Marquardt diagonal scaling, gain-ratio damping
// update), Gauss–Newton and L-BFGS (strong Wolfe line search). The normal
// equations (JᵀJ + λD) h = −Jᵀr are solved by sparse Cholesky on the CPU
// (Eigen's SimplicialLDLT) or matrix-free by preconditioned conjugate
// gradients (Pcg.h: the vector operations go through an interface that a
// device can implement).
//
// The solvers see a problem only through LeastSquaresProblem / EnergyProblem,
// so the same loop runs over a hand-written C++ problem (the tests), the
// float64 reference evaluator or compiled kernels on interp, cpu and vulkan.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "ir/Diagnostics.h"

namespace eph::value {

class DeviceProblem;  // DeviceProblem.h

// A sparse Jacobian, one row per residual, in compressed-row form: row i holds
// ∂r_i/∂x_c for the few parameters c that residual i reads. A column appears
// at most once per row. Build it with add() and endRow(), one row at a time.
struct SparseRows {
  size_t numCols = 0;
  std::vector<size_t> rowStart{0};  // rows() + 1 entries
  std::vector<uint32_t> cols;
  std::vector<double> vals;

  void reset(size_t columns);  // no rows, `columns` columns
  void add(uint32_t col, double value) { cols.push_back(col); vals.push_back(value); }
  void endRow() { rowStart.push_back(cols.size()); }
  size_t rows() const { return rowStart.size() - 1; }
  size_t nonZeros() const { return cols.size(); }

  void multiply(std::span<const double> v, std::span<double> out) const;            // out = J·v
  void multiplyTransposed(std::span<const double> u, std::span<double> out) const;  // out = Jᵀ·u
  void columnSquares(std::span<double> out) const;                                  // out = diag(JᵀJ)
};

// What a problem can say about one residual when it is NaN or infinite: where
// it comes from (a .vg line) and which op made it non-finite.
struct ResidualNote {
  Loc loc;
  std::string note;  // e.g. "log of -1", empty when the problem cannot tell
};

// r(x) ∈ ℝᵐ over x ∈ ℝⁿ; the solvers minimise ½‖r(x)‖².
class LeastSquaresProblem {
 public:
  virtual ~LeastSquaresProblem() = default;
  virtual size_t numParams() const = 0;
  virtual size_t numResiduals() const = 0;
  // r = r(x) (numResiduals() entries); when J is not null also its Jacobian,
  // J->reset(numParams()) then one row per residual. An error here (a device
  // failure) stops the solver with that error.
  virtual Status evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) = 0;
  // Called when residual i is not finite at x; the default knows nothing.
  virtual ResidualNote explainResidual(size_t i, std::span<const double> x) { return {}; }
  // A problem whose residuals and Jacobian live on a device (DeviceProblem.h):
  // Levenberg–Marquardt and Gauss–Newton with LinearSolver::Pcg then keep x,
  // r, J and the PCG vectors on the device.
  virtual DeviceProblem* deviceResident() { return nullptr; }
};

// f(x) ∈ ℝ with its gradient; L-BFGS minimises it.
class EnergyProblem {
 public:
  virtual ~EnergyProblem() = default;
  virtual size_t numParams() const = 0;
  // Returns f(x); fills `grad` (numParams() entries) unless it is empty. A
  // non-finite f or gradient is reported by the solver, with explainEnergy's
  // words when the problem can tell where it came from.
  virtual Expected<double> evaluate(std::span<const double> x, std::span<double> grad) = 0;
  virtual std::string explainEnergy(std::span<const double> x) { return {}; }
};

// FORMAT.md's `lbfgs`: f(x) = Σ r_i(x), ∇f = Jᵀ·1 (the energy form used for
// mesh optimisation). A non-finite f names the residual that made it so.
class SumOfResiduals : public EnergyProblem {
 public:
  explicit SumOfResiduals(LeastSquaresProblem& p) : p_(p) {}
  size_t numParams() const override { return p_.numParams(); }
  Expected<double> evaluate(std::span<const double> x, std::span<double> grad) override;
  std::string explainEnergy(std::span<const double> x) override;

 private:
  LeastSquaresProblem& p_;
  std::vector<double> r_, ones_;
  SparseRows J_;
};

// f(x) = ½ Σ r_i(x)², ∇f = Jᵀr: a least-squares problem for L-BFGS.
class HalfSquaredNorm : public EnergyProblem {
 public:
  explicit HalfSquaredNorm(LeastSquaresProblem& p) : p_(p) {}
  size_t numParams() const override { return p_.numParams(); }
  Expected<double> evaluate(std::span<const double> x, std::span<double> grad) override;
  std::string explainEnergy(std::span<const double> x) override;

 private:
  LeastSquaresProblem& p_;
  std::vector<double> r_;
  SparseRows J_;
};

enum class Method { LevenbergMarquardt, GaussNewton, Lbfgs };
enum class LinearSolver { SparseCholesky, Pcg };

// Why a solver stopped. The first three mean converged; the others do not.
enum class StopReason {
  GradientTolerance,    // ‖g‖∞ ≤ gradientTolerance (g = Jᵀr, or ∇f)
  StepTolerance,        // ‖h‖∞ ≤ stepTolerance·(‖x‖∞ + stepTolerance)
  CostChangeTolerance,  // |Δcost| ≤ costChangeTolerance·cost
  MaxIterations,        // maxIterations iterations done
  LinearSolverFailed,   // Gauss–Newton: JᵀJ singular (Cholesky) or PCG broke down
  LineSearchFailed,     // L-BFGS: no step satisfies the strong Wolfe conditions
};
const char* stopReasonName(StopReason r);  // "gradient tolerance", ...
bool isConverged(StopReason r);

// One line of progress, reported after every iteration.
struct IterationInfo {
  int iteration = 0;          // 1-based
  double cost = 0;            // after the iteration: ½‖r‖² (or f for L-BFGS)
  double gradientNorm = 0;    // ‖g‖∞ at the new point
  double damping = 0;         // LM: λ for the next iteration; GN: 0; L-BFGS: the step length α
  double stepNorm = 0;        // ‖h‖∞
  bool accepted = true;       // LM: whether the step was taken
  int linearIterations = 0;   // PCG iterations of this step (0 for Cholesky)
  double seconds = 0;         // since the solve began
};
// "iter 3: cost 1.25e-02 |g| 4.1e-03 damping 1.0e-04 time 0.012s" (ephc solve's stderr line).
std::string formatProgress(const IterationInfo& it);

struct SolverOptions {
  Method method = Method::LevenbergMarquardt;
  LinearSolver linearSolver = LinearSolver::SparseCholesky;
  int maxIterations = 100;
  double gradientTolerance = 1e-10;
  double stepTolerance = 1e-8;
  double costChangeTolerance = 1e-6;
  // Levenberg–Marquardt.
  double initialDamping = 1e-4;        // λ₀, relative to the Marquardt scaling D
  double minDiagonal = 1e-6;           // D = clamp(diag(JᵀJ), minDiagonal, maxDiagonal)
  double maxDiagonal = 1e32;
  double minRelativeDecrease = 1e-3;   // accept a step when the gain ratio ρ exceeds this
  bool rejectNonFiniteSteps = false;   // a NaN/Inf trial point: reject the step (true) or stop with an error
  // Preconditioned conjugate gradients (Jacobi preconditioner).
  int pcgMaxIterations = 1000;
  double pcgTolerance = 1e-10;         // ‖residual‖ ≤ pcgTolerance·‖rhs‖
  // L-BFGS.
  int lbfgsMemory = 10;
  double wolfeC1 = 1e-4;               // sufficient decrease
  double wolfeC2 = 0.9;                // curvature (strong: |φ'(α)| ≤ c2·|φ'(0)|)
  int maxLineSearchEvaluations = 30;
  std::function<void(const IterationInfo&)> progress;
};

struct SolveResult {
  bool converged = false;
  StopReason reason = StopReason::MaxIterations;
  int iterations = 0;
  int evaluations = 0;      // residual (or energy) evaluations
  double initialCost = 0;
  double cost = 0;          // ½‖r‖² at x (LM, GN) or f(x) (L-BFGS)
  double gradientNorm = 0;  // ‖g‖∞ at x
  double seconds = 0;
};

// Solve in place: x holds the starting point and gets the result. A
// non-finite residual, Jacobian entry or energy is an error naming it.
Expected<SolveResult> levenbergMarquardt(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o);
Expected<SolveResult> gaussNewton(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o);
Expected<SolveResult> lbfgs(EnergyProblem& p, std::span<double> x, const SolverOptions& o);
// Dispatches on o.method; Lbfgs minimises Σ r_i (SumOfResiduals), as `ephc solve --method=lbfgs`.
Expected<SolveResult> solve(LeastSquaresProblem& p, std::span<double> x, const SolverOptions& o);

// One step of the normal equations: (JᵀJ + diag(damping)) h = −g, by the
// chosen solver. Returns false when the system could not be solved (a zero
// pivot, PCG breakdown); `iterations` gets the PCG iteration count.
bool solveNormalEquations(const SparseRows& J, std::span<const double> g, std::span<const double> damping,
                          LinearSolver solver, const SolverOptions& o, std::span<double> h,
                          int* iterations = nullptr);

// The Jacobian of p at x against central finite differences.
struct JacobianCheck {
  double maxAbsError = 0;   // max |J_ij − FD_ij|
  double maxRelError = 0;   // max |J_ij − FD_ij| / max(1, |FD_ij|)
  size_t worstRow = 0, worstCol = 0;
};
Expected<JacobianCheck> checkJacobian(LeastSquaresProblem& p, std::span<const double> x, double step = 1e-6);

}  // namespace eph::value
