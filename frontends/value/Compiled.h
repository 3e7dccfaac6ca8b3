// A Value graph compiled once and evaluated on a runtime device at any
// parameter values (docs/value.md, "Derivative outputs"): the residuals and
// the outputs asked for — the gradient of Σr, the gradient of ½Σr² (Jᵀr), the
// sparse Jacobian rows and JᵀJ — optionally in deterministic mode.
//
//   value::LowerOptions o;
//   o.outputs = {.gradient = true, .costGradient = true, .jacobian = true, .normal = true};
//   o.deterministic = true;
//   auto c = value::CompiledGraph::compile(g, o);          // Expected<unique_ptr<CompiledGraph>>
//   auto dev = runtime::openDevice("vulkan");
//   auto out = (*c)->run(**dev, (*c)->initial());          // Expected<DeviceOutputs>
//   // out->jacobian.row(i): residual i's parameter columns and ∂r_i/∂x_c
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "frontends/value/Layout.h"
#include "frontends/value/Lower.h"
#include "ir/Diagnostics.h"
#include "runtime/Device.h"

namespace eph::value {

// Compressed sparse rows: row r's columns are cols[rowStart[r] .. rowStart[r+1]),
// increasing, with their values beside them.
struct SparseMatrix {
  size_t numRows = 0, numCols = 0;
  std::vector<uint32_t> rowStart{0};
  std::vector<uint32_t> cols;
  std::vector<double> values;
  // The value at (r, c); 0 where the pattern has no entry.
  double at(size_t r, uint32_t c) const;
};

struct DeviceOutputs {
  std::vector<double> residuals;
  std::vector<double> gradient;      // ∂(Σr)/∂x (Outputs::gradient)
  std::vector<double> costGradient;  // ∂(½Σr²)/∂x = Jᵀr (Outputs::costGradient)
  SparseMatrix jacobian;             // numResiduals × numParams (Outputs::jacobian)
  SparseMatrix normal;               // JᵀJ, numParams × numParams, both triangles (Outputs::normal)
};

class CompiledGraph {
 public:
  // Groups, lowers (with `opts.parameterInput` on) and verifies; the error is
  // lowerGraph's (an op without an IR lowering).
  static Expected<std::unique_ptr<CompiledGraph>> compile(const Graph& g, LowerOptions opts);
  // Runs @main on `dev` at x (numParams() values).
  Expected<DeviceOutputs> run(runtime::Device& dev, std::span<const double> x) const;

  size_t numParams() const { return layout_.numParams; }
  size_t numResiduals() const { return layout_.numResiduals; }
  std::vector<double> initial() const { return initial_; }  // the declared parameter values
  const DerivativeLayout& layout() const { return layout_; }
  const ir::Module& module() const { return *m_; }

 private:
  CompiledGraph() = default;
  LowerOptions opts_;
  std::unique_ptr<ir::Context> ctx_;
  std::unique_ptr<ir::Module> m_;
  DerivativeLayout layout_;
  std::vector<double> initial_;
};

}  // namespace eph::value
