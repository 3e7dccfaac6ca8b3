// A Value graph evaluated by its compiled kernels on a runtime Device, driven
// from C++ through the Device API (runtime/Device.h) rather than a host
// `@main`: the graph is lowered once (LowerOptions::hostMain = false), the
// constants and the index tables are uploaded once and stay on the device, and
// an evaluation uploads x, dispatches the kernels and downloads the results.
//
//   DeviceEnergy  f(x) = Σ r_i(x), ∇f from the gradient kernels @vgK.g
//                 (an EnergyProblem for L-BFGS: the developable flow)
// The least-squares side (r(x) and its sparse Jacobian from the kernels
// @vgK.j, for Levenberg–Marquardt: the sketch) is the solver library's
// DeviceProblem (frontends/value/solve/DeviceProblem.h).
//
// T is float64. The graph and the device must outlive the problem. Construction errors (an op without an IR lowering, a device
// that cannot run the kernels) are reported by create().
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/Signature.h"
#include "frontends/value/solve/Solver.h"
#include "ir/IR.h"
#include "runtime/Device.h"

namespace eph::value::demo {

// What both problems share: the module, the device buffers and the dispatches.
class DeviceGraph {
 public:
  ~DeviceGraph();
  size_t numParams() const { return numParams_; }
  size_t numResiduals() const { return numResiduals_; }
  size_t kernels() const { return groups_.size(); }  // residual kernels: one per signature
  // The residuals of the last evaluation.
  const std::vector<double>& residuals() const { return r_; }
  // The trainable leaves' values as declared (the starting point).
  std::vector<double> initial() const;

 protected:
  DeviceGraph(const Graph& g, runtime::Device& dev) : g_(g), dev_(dev) {}
  Status init(bool jacobian);
  // Uploads x, runs the residual kernels and, when `derivatives`, the
  // gradient (@vgK.g, into a zeroed buffer) or Jacobian (@vgK.j) kernels;
  // downloads r into r_ and the derivatives into `out`.
  Status run(std::span<const double> x, bool derivatives, std::vector<double>& out);

  const Graph& g_;
  runtime::Device& dev_;
  ir::Context ctx_;
  std::unique_ptr<ir::Module> m_;
  std::vector<Group> groups_;
  bool jacobian_ = false;
  size_t numParams_ = 0, numConsts_ = 0, numResiduals_ = 0, derivLen_ = 0;
  uint64_t params_ = 0, consts_ = 0, r_dev_ = 0, deriv_ = 0;
  std::vector<uint64_t> tables_;
  std::vector<uint64_t> owned_;  // every buffer, freed by the destructor
  std::vector<double> r_;
};

class DeviceEnergy : public DeviceGraph, public EnergyProblem {
 public:
  static Expected<std::unique_ptr<DeviceEnergy>> create(const Graph& g, runtime::Device& dev);
  size_t numParams() const override { return DeviceGraph::numParams(); }
  Expected<double> evaluate(std::span<const double> x, std::span<double> grad) override;

 private:
  using DeviceGraph::DeviceGraph;
  std::vector<double> grad_;
};

}  // namespace eph::value::demo
