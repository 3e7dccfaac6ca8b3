#include "frontends/value/Eval.h"

#include <cmath>

namespace eph::value {

namespace {
double sigmoidOf(double x) { return 1 / (1 + std::exp(-x)); }
// log(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|) (the form the kernels use too).
double softplusOf(double x) { return std::fmax(x, 0) + std::log1p(std::exp(-std::fabs(x))); }
double signOf(double x) { return x > 0 ? 1 : x < 0 ? -1 : x; }
}  // namespace

double forward(const Graph& g, const Node& n, std::span<const double> in) {
  double x = in.empty() ? 0 : in[0], y = in.size() > 1 ? in[1] : 0;
  switch (n.kind) {
    case OpKind::Param: case OpKind::Const: case OpKind::Literal: return n.value;
    case OpKind::Add: return x + y;
    case OpKind::Sub: return x - y;
    case OpKind::Mul: return x * y;
    case OpKind::Div: return x / y;
    case OpKind::Neg: return -x;
    case OpKind::Pow: return std::pow(x, y);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Exp: return std::exp(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Cos: return std::cos(x);
    case OpKind::Tan: return std::tan(x);
    case OpKind::Asin: return std::asin(x);
    case OpKind::Acos: return std::acos(x);
    case OpKind::Atan: return std::atan(x);
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Sigmoid: return sigmoidOf(x);
    case OpKind::Softplus: return softplusOf(x);
    case OpKind::Reciprocal: return 1 / x;
    case OpKind::Square: return x * x;
    case OpKind::Cube: return x * x * x;
    case OpKind::Abs: return std::fabs(x);
    case OpKind::Relu: return x > 0 ? x : 0;
    case OpKind::Sign: return signOf(x);
    case OpKind::Floor: return std::floor(x);
    case OpKind::Ceil: return std::ceil(x);
    case OpKind::Round: return std::round(x);
    case OpKind::Atan2: return std::atan2(x, y);
    case OpKind::Min: return std::fmin(x, y);
    case OpKind::Max: return std::fmax(x, y);
    case OpKind::Clamp: return std::fmax(n.value, std::fmin(x, n.hi));
    case OpKind::Mod: return x - y * std::trunc(x / y);
    case OpKind::Sum: case OpKind::Mean: {
      double s = 0;
      for (double v : in) s += v;
      return n.kind == OpKind::Sum ? s : s / double(in.size());
    }
    case OpKind::Eq: return x == y;
    case OpKind::Ne: return x != y;
    case OpKind::Lt: return x < y;
    case OpKind::Le: return x <= y;
    case OpKind::Gt: return x > y;
    case OpKind::Ge: return x >= y;
    case OpKind::Select: return x != 0 ? y : in[2];
    case OpKind::Custom: return customOp(n.aux).forward(in);
  }
  return NAN;
}

void partials(const Graph& g, const Node& n, std::span<const double> in, double out, std::span<double> d) {
  (void)g;
  double x = in.empty() ? 0 : in[0], y = in.size() > 1 ? in[1] : 0;
  for (double& v : d) v = 0;
  switch (n.kind) {
    case OpKind::Param: case OpKind::Const: case OpKind::Literal: return;
    case OpKind::Add: d[0] = 1, d[1] = 1; return;
    case OpKind::Sub: d[0] = 1, d[1] = -1; return;
    case OpKind::Mul: d[0] = y, d[1] = x; return;
    case OpKind::Div: d[0] = 1 / y, d[1] = -x / (y * y); return;
    case OpKind::Neg: d[0] = -1; return;
    case OpKind::Pow:  // as PyTorch: 0 for a zero exponent, and to y where x = 0 and y >= 0
      d[0] = y == 0 ? 0 : y * std::pow(x, y - 1);
      d[1] = x == 0 && y >= 0 ? 0 : out * std::log(x);
      return;
    case OpKind::Sqrt: d[0] = 0.5 / out; return;
    case OpKind::Exp: d[0] = out; return;
    case OpKind::Log: d[0] = 1 / x; return;
    case OpKind::Sin: d[0] = std::cos(x); return;
    case OpKind::Cos: d[0] = -std::sin(x); return;
    case OpKind::Tan: d[0] = 1 + out * out; return;
    case OpKind::Asin: d[0] = 1 / std::sqrt(1 - x * x); return;
    case OpKind::Acos: d[0] = -1 / std::sqrt(1 - x * x); return;
    case OpKind::Atan: d[0] = 1 / (1 + x * x); return;
    case OpKind::Tanh: d[0] = 1 - out * out; return;
    case OpKind::Sigmoid: d[0] = out * (1 - out); return;
    case OpKind::Softplus: d[0] = sigmoidOf(x); return;
    case OpKind::Reciprocal: d[0] = -out * out; return;
    case OpKind::Square: d[0] = 2 * x; return;
    case OpKind::Cube: d[0] = 3 * x * x; return;
    case OpKind::Abs: d[0] = x >= 0 ? 1 : -1; return;  // abs'(0) = +1
    case OpKind::Relu: d[0] = x > 0 ? 1 : 0; return;   // relu'(0) = 0
    case OpKind::Sign: case OpKind::Floor: case OpKind::Ceil: case OpKind::Round: return;
    case OpKind::Atan2: {  // atan2(y = in[0], x = in[1])
      double r2 = x * x + y * y;
      d[0] = y / r2, d[1] = -x / r2;
      return;
    }
    case OpKind::Min: if (x != y) d[x < y ? 0 : 1] = 1; return;  // a tie gives 0 to both
    case OpKind::Max: if (x != y) d[x > y ? 0 : 1] = 1; return;
    case OpKind::Clamp: d[0] = x > n.value && x < n.hi ? 1 : 0; return;
    case OpKind::Mod: d[0] = 1; return;
    case OpKind::Sum: for (double& v : d) v = 1; return;
    case OpKind::Mean: for (double& v : d) v = 1 / double(d.size()); return;
    case OpKind::Eq: case OpKind::Ne: case OpKind::Lt: case OpKind::Le: case OpKind::Gt: case OpKind::Ge: return;
    case OpKind::Select: d[x != 0 ? 1 : 2] = 1; return;
    case OpKind::Custom: customOp(n.aux).derivative(in, out, d); return;
  }
}

namespace {
void forwardAll(const Graph& g, NodeId upTo, std::vector<double>& values) {
  values.assign(size_t(upTo) + 1, 0);
  std::vector<double> in;
  for (NodeId id = 0; id <= upTo; ++id) {
    in.clear();
    for (NodeId a : g.args(id)) in.push_back(values[a]);
    values[id] = forward(g, g.node(id), in);
  }
}
}  // namespace

double evalNode(const Graph& g, NodeId id) {
  std::vector<double> values;
  forwardAll(g, id, values);
  return values[id];
}

std::vector<NodeId> gradientLeaves(const Graph& g) {
  std::vector<NodeId> out;
  for (const LeafDecl& d : g.decls())
    if (d.trainable)
      for (uint32_t i = 0; i < d.count; ++i) out.push_back(d.first + i);
  return out;
}

Evaluation evaluate(const Graph& g) {
  Evaluation e;
  const size_t n = g.nodes().size();
  if (n) forwardAll(g, NodeId(n - 1), e.values);
  for (NodeId r : g.residuals()) {
    double v = e.values[r];
    e.residuals.push_back(v);
    e.sum += v;
    e.cost += 0.5 * v * v;
  }
  // Reverse sweep over the nodes the residuals reach (as autograd does, a
  // reached node passes its adjoint on even when it is 0, so 0·inf is NaN).
  std::vector<double> adj(n, 0);
  std::vector<char> reached(n, 0);
  for (NodeId r : g.residuals()) adj[r] += 1, reached[r] = 1;
  std::vector<double> in, d;
  for (size_t k = n; k-- > 0;) {
    if (!reached[k]) continue;
    auto args = g.args(NodeId(k));
    if (args.empty()) continue;
    in.clear();
    for (NodeId a : args) in.push_back(e.values[a]);
    d.assign(args.size(), 0);
    partials(g, g.node(NodeId(k)), in, e.values[k], d);
    for (size_t i = 0; i < args.size(); ++i) adj[args[i]] += adj[k] * d[i], reached[args[i]] = 1;
  }
  for (NodeId leaf : gradientLeaves(g)) e.gradient.push_back(adj[leaf]);
  return e;
}

}  // namespace eph::value
