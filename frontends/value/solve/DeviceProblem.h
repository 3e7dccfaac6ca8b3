// A Value graph as a LeastSquaresProblem evaluated by its compiled kernels on
// a runtime Device (docs/value-solvers.md, "On the device"), driven through
// the Device API: the graph is lowered once with LowerOptions::hostMain =
// false and jacobian = true, the constants and the index tables are uploaded
// once and stay on the device.
//
// Two ways to use it:
//   - as any LeastSquaresProblem (evaluate(): x goes up, r and the Jacobian's
//     rows come down), for the sparse Cholesky solve and L-BFGS;
//   - device-resident (deviceResident() is not null): Levenberg–Marquardt and
//     Gauss–Newton with SolverOptions::linearSolver = Pcg keep x, r, J, Jᵀr
//     and every PCG vector in device buffers (DevicePcg.h); per iteration only
//     scalars come back (dot products, max norms), and x once at the end.
//
// A NaN or infinite residual found on the device is re-evaluated on the host
// (GraphProblem, the float64 reference evaluator) to name the op that made it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/Signature.h"
#include "frontends/value/solve/DevicePcg.h"
#include "frontends/value/solve/GraphProblem.h"
#include "frontends/value/solve/Solver.h"
#include "ir/IR.h"
#include "runtime/Device.h"

namespace eph::value {

struct LowerOptions;  // Lower.h

class DeviceProblem : public LeastSquaresProblem {
 public:
  // Lowers (f32: the kernels compute in f32; the solver stays f64), verifies,
  // prepares the kernels and uploads the constants and tables. The error of an
  // op without an IR lowering is lowerGraph's. `dev` must outlive the problem.
  static Expected<std::unique_ptr<DeviceProblem>> create(const Graph& g, runtime::Device& dev, bool f32 = false);
  ~DeviceProblem() override;

  size_t numParams() const override { return numParams_; }
  size_t numResiduals() const override { return numResiduals_; }
  Status evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) override;
  ResidualNote explainResidual(size_t i, std::span<const double> x) override;
  DeviceProblem* deviceResident() override { return this; }

  std::vector<double> initial() const { return initial_; }  // the declared parameter values
  size_t kernels() const { return groups_.size(); }  // residual kernels: one per signature
  DeviceLinalg& linalg() { return *la_; }
  runtime::Device& device() { return dev_; }

  // ---- the device-resident interface (DeviceSolve.cpp) -----------------------------
  // A Jacobian sharing this problem's row and column tables, with its own
  // values buffer (owned by linalg()).
  Expected<DeviceJacobian> newJacobian();
  // r(x) into r (f64, numResiduals()) and, when J is not null, the
  // Jacobian's values into J->vals; x is an f64 buffer of numParams().
  Status evaluateOn(uint64_t x, uint64_t r, const DeviceJacobian* J);
  // Both checked: a non-finite residual or Jacobian entry becomes the solvers'
  // error naming it (r and J are downloaded only then). `cost` gets ½‖r‖².
  Status checkedCost(uint64_t x, uint64_t r, const DeviceJacobian* J, double& cost);
  // The first non-finite residual's index (numResiduals() when none), from a download of r.
  Expected<size_t> firstNonFiniteResidual(uint64_t r, std::vector<double>& host);

 private:
  DeviceProblem(const Graph& g, runtime::Device& dev) : host_(g), dev_(dev) {}
  Status init(bool f32);
  Status jacobianError(const DeviceJacobian& J, uint64_t x);
  Status downloadValues(const DeviceJacobian& J, std::span<double> vals);  // numValues_ of them, as f64

  GraphProblem host_;  // the graph, the reference evaluator for explainResidual
  runtime::Device& dev_;
  bool f32_ = false;
  ir::Context ctx_;
  std::unique_ptr<ir::Module> m_;
  std::vector<Group> groups_;
  std::unique_ptr<DeviceLinalg> la_;
  size_t numParams_ = 0, numConsts_ = 0, numResiduals_ = 0, numValues_ = 0;
  uint64_t params_ = 0, consts_ = 0, rNarrow_ = 0;  // params_, rNarrow_: T buffers (f32 mode), or f64 scratch
  uint64_t x64_ = 0, r64_ = 0;                      // for evaluate()
  std::vector<uint64_t> tables_;
  std::vector<uint64_t> owned_;
  DeviceJacobian tablesOnly_, hostJ_;
  // Per entry of the values buffer: its residual and parameter; per residual its first entry and count.
  std::vector<uint32_t> rowOf_, colOf_, rowLen_;
  std::vector<uint64_t> rowStart_;
  std::vector<double> initial_;
};

// DeviceProblem's pieces, for a device problem of another shape
// (examples/value's DeviceEnergy: gradient kernels, no DeviceLinalg).
//
// lowerGraph, ir::verify and dev.prepare; the error of an op without an IR
// lowering is lowerGraph's (E301).
Expected<std::unique_ptr<ir::Module>> compileGraph(ir::Context& ctx, const Graph& g, const std::vector<Group>& groups,
                                                   const LowerOptions& opts, runtime::Device& dev);
// The constant leaves' values, in their buffer's order (leafSlots).
std::vector<double> constantValues(const Graph& g);
// The kernels' index tables, a u32 buffer per signature (also appended to
// `owned`): per instance, each slot's index in the params or consts buffer
// (`slot` from leafSlots), then the residual's index (Lower.h).
Expected<std::vector<uint64_t>> uploadTables(runtime::Device& dev, ir::Context& ctx, const std::vector<Group>& groups,
                                             std::span<const uint32_t> slot, std::vector<uint64_t>& owned);
// Dispatches, per signature K, @vgK<derivSuffix> (".j": Jacobian values,
// ".g": the gradient) into derivOut when derivOut is not 0, and the
// residuals into rOut: from that kernel where it stores them too (its %r,
// lowerGraph's first derivative kernel), else from @vgK. A derivative
// kernel that does not exist (no trainable slot) is skipped. Does not wait.
Status dispatchGraph(runtime::Device& dev, const ir::Module& m, const std::vector<Group>& groups, uint64_t params,
                     uint64_t consts, std::span<const uint64_t> tables, uint64_t rOut, uint64_t derivOut,
                     const std::string& derivSuffix);

}  // namespace eph::value
