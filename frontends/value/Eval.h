// The float64 reference evaluator: forward values of every node and the
// reverse-mode gradient of Σ r_i with FORMAT.md's conventions at the kinks
// (abs'(0) = +1, relu'(0) = 0, a min/max tie gives 0 to both, clamp is 1
// strictly inside, ...). Both sweeps run over node ids in order (arguments
// always precede their users), so no graph depth can overflow a stack.
// Compiled kernels are tested against it.
#pragma once

#include <span>
#include <vector>

#include "frontends/value/Graph.h"

namespace eph::value {

struct Evaluation {
  std::vector<double> values;     // by node
  std::vector<double> residuals;  // by residual
  double sum = 0, cost = 0;       // Σ r_i and ½ Σ r_i²
  // ∂(Σ r_i)/∂ leaf, one per trainable leaf element in declaration order
  // (gradientLeaves() names them).
  std::vector<double> gradient;
};

Evaluation evaluate(const Graph& g);
// The value of one node (evaluates the nodes before it).
double evalNode(const Graph& g, NodeId id);
// The trainable leaf elements in declaration order.
std::vector<NodeId> gradientLeaves(const Graph& g);

// One node's forward value from its arguments' values.
double forward(const Graph& g, const Node& n, std::span<const double> in);
// d[i] = ∂n/∂in[i], with `out` the node's value.
void partials(const Graph& g, const Node& n, std::span<const double> in, double out, std::span<double> d);

}  // namespace eph::value
