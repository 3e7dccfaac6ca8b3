#include "frontends/value/solve/GraphProblem.h"

#include <cmath>

#include "frontends/value/Eval.h"
#include "frontends/value/Text.h"
#include "frontends/value/Signature.h"

namespace eph::value {

GraphProblem::GraphProblem(Graph g) : g_(std::move(g)), leaves_(gradientLeaves(g_)), column_(g_.nodes().size(), 0) {
  for (size_t c = 0; c < leaves_.size(); ++c) column_[leaves_[c]] = uint32_t(c + 1);
  Canonicalizer canon(g_);
  Canonical form;
  for (NodeId r : g_.residuals()) {
    canon.run(r, form);
    dags_.push_back(form.nodes);
  }
  adj_.assign(g_.nodes().size(), 0);
}

std::vector<double> GraphProblem::initial() const {
  std::vector<double> x;
  for (NodeId leaf : leaves_) x.push_back(g_.node(leaf).value);
  return x;
}

Status GraphProblem::evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) {
  for (size_t c = 0; c < leaves_.size(); ++c) g_.setLeaf(leaves_[c], x[c]);
  const size_t n = g_.nodes().size();
  values_.assign(n, 0);
  for (NodeId id = 0; id < n; ++id) {
    in_.clear();
    for (NodeId a : g_.args(id)) in_.push_back(values_[a]);
    values_[id] = forward(g_, g_.node(id), in_);
  }
  for (size_t i = 0; i < g_.residuals().size(); ++i) r[i] = values_[g_.residuals()[i]];
  if (!J) return {};
  J->reset(leaves_.size());
  for (const std::vector<NodeId>& dag : dags_) {
    for (NodeId id : dag) adj_[id] = 0;
    adj_[dag.back()] = 1;
    for (size_t k = dag.size(); k-- > 0;) {
      NodeId id = dag[k];
      auto args = g_.args(id);
      if (args.empty()) continue;
      in_.clear();
      for (NodeId a : args) in_.push_back(values_[a]);
      d_.assign(args.size(), 0);
      partials(g_, g_.node(id), in_, values_[id], d_);
      for (size_t i = 0; i < args.size(); ++i) adj_[args[i]] += adj_[id] * d_[i];
    }
    // One entry per trainable leaf of the DAG (each appears once in it).
    for (NodeId id : dag)
      if (column_[id]) J->add(column_[id] - 1, adj_[id]);
    J->endRow();
  }
  return {};
}

ResidualNote GraphProblem::explainResidual(size_t i, std::span<const double> x) {
  ResidualNote note;
  std::vector<double> r(numResiduals());
  if (i >= r.size() || !evaluate(x, r, nullptr)) return note;
  auto kind = [](double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; };
  for (NodeId id : dags_[i]) {
    double v = values_[id];
    if (std::isfinite(v)) continue;
    const Node& n = g_.node(id);
    auto args = g_.args(id);
    if (args.empty()) {
      note.note = std::string(n.kind == OpKind::Const ? "constant " : n.kind == OpKind::Param ? "parameter " : "literal ") +
                  (n.kind == OpKind::Literal ? formatNumber(n.value) : g_.leafName(id)) + " is " + kind(v);
      return note;
    }
    bool finiteArgs = true;
    for (NodeId a : args) finiteArgs = finiteArgs && std::isfinite(values_[a]);
    if (!finiteArgs) continue;  // an argument's own op is named first (post-order)
    std::string name = n.kind == OpKind::Custom ? customOp(n.aux).name : std::string(opInfo(n.kind).name);
    std::string from;
    for (size_t k = 0; k < args.size(); ++k) from += (k ? ", " : "") + formatNumber(values_[args[k]]);
    note.note = name + " of " + from + " (op " + name + ")";
    return note;
  }
  return note;
}

}  // namespace eph::value
