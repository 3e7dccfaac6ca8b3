// A Value graph as a LeastSquaresProblem (Solver.h), for `ephc solve`: x is
// the trainable leaves in declaration order (gradientLeaves()), r the
// residuals. Residuals and Jacobian rows come from the float64 reference
// evaluator (Eval.h) on the host: one forward sweep over the graph, then per
// residual a reverse sweep over the nodes of its own DAG (its canonical form,
// Signature.h), so a row costs the residual's size, not the graph's.
// The compiled kernels: DeviceProblem.h.
#pragma once

#include "frontends/value/Graph.h"
#include "frontends/value/solve/Solver.h"

namespace eph::value {

class GraphProblem : public LeastSquaresProblem {
 public:
  explicit GraphProblem(Graph g);
  size_t numParams() const override { return leaves_.size(); }
  size_t numResiduals() const override { return g_.residuals().size(); }
  Status evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) override;
  // Re-evaluates at x and names the first op of residual i's DAG whose value
  // is NaN or infinite from finite arguments ("log of -1 (op log)"), or
  // the leaf that already is.
  ResidualNote explainResidual(size_t i, std::span<const double> x) override;
  // The graph's leaves as they are now (the declared values until evaluate()).
  const Graph& graph() const { return g_; }
  // The starting point: the declared values of the trainable leaves.
  std::vector<double> initial() const;

 private:
  Graph g_;
  std::vector<NodeId> leaves_;     // trainable leaf elements, by parameter index
  std::vector<uint32_t> column_;   // node -> parameter index + 1 (0: not a trainable leaf)
  std::vector<std::vector<NodeId>> dags_;  // per residual: its nodes in post-order, the residual last
  std::vector<double> values_, adj_, in_, d_;
};

}  // namespace eph::value
