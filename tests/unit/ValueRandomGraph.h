// Random smooth Value graphs for the gradient and derivative-output tests:
// a few leaf arrays (params and consts), residuals of a few smooth ops over
// them, leaves and nodes shared between residuals.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"

namespace eph::value::test {

// Smooth ops over values of moderate size, so the gradient is finite and the
// comparison tight: every residual reads a few leaves, some shared.
inline Graph smoothGraph(std::mt19937& rng) {
  Graph g;
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  auto some = [&](int n) { return pick(rng) % n; };
  std::uniform_real_distribution<double> real(-1.5, 1.5);
  std::vector<Value> leaves;
  for (int d = 0, n = 1 + some(3); d < n; ++d) {
    std::vector<double> vs(1 + some(4));
    for (double& v : vs) v = real(rng);
    auto ls = g.leaves("l" + std::to_string(d), some(4) != 0, vs.size() > 1, vs);
    leaves.insert(leaves.end(), ls.begin(), ls.end());
  }
  for (int r = 0, n = 1 + some(12); r < n; ++r) {
    std::vector<Value> pool;
    for (int i = 0; i < 3; ++i) pool.push_back(leaves[some(int(leaves.size()))]);
    for (int i = 0, steps = 1 + some(6); i < steps; ++i) {
      Value a = pool[pool.size() - 1 - some(int(std::min<size_t>(pool.size(), 4)))];
      Value b = pool[some(int(pool.size()))];
      Value v;
      switch (some(12)) {
        case 0: v = a + b; break;
        case 1: v = a - b; break;
        case 2: v = a * b; break;
        case 3: v = a / g.op(OpKind::Add, std::vector<Value>{g.literal(1.5), g.op(OpKind::Square, std::vector<Value>{b})}); break;
        case 4: v = g.op(OpKind::Sin, std::vector<Value>{a}); break;
        case 5: v = g.op(OpKind::Tanh, std::vector<Value>{a}); break;
        case 6: v = g.op(OpKind::Sigmoid, std::vector<Value>{a}); break;
        case 7: v = g.op(OpKind::Softplus, std::vector<Value>{a}); break;
        case 8: v = g.op(OpKind::Atan2, std::vector<Value>{a, g.op(OpKind::Add, std::vector<Value>{b, g.literal(3.5)})}); break;
        case 9: v = g.op(OpKind::Cube, std::vector<Value>{a}); break;
        case 10: v = g.op(OpKind::Exp, std::vector<Value>{g.op(OpKind::Cos, std::vector<Value>{a})}); break;
        default: v = g.op(OpKind::Mean, std::vector<Value>{a, b, pool[0]}); break;
      }
      pool.push_back(v);
    }
    g.residual(pool.back());
  }
  return g;
}

}  // namespace eph::value::test
