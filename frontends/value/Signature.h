// Signatures: residuals that differ only in which leaves they read and in the
// values of their constant leaves share one kernel.
//
// A residual's canonical form is its DAG in the post-order of a depth-first
// walk from the residual (arguments left to right, explicit stack), with
// every node renumbered by that order and every leaf replaced by its slot:
// slot j is the j-th distinct leaf the walk meets (first use), so the order
// in which a residual happens to list its leaves does not matter, while
// reading one leaf twice (x*x) differs from reading two (x*y). The form
// records each node's op, its attributes (clamp bounds, the custom op), the
// value of every numeric literal, and for each slot whether it is trainable.
//
// Numeric literals are part of the signature: they are compiled into the
// kernel as constants (x^2 and x^3 are different kernels). Values that should
// vary per instance belong in `const` leaves, which are not.
//
// Grouping costs O(size of the residual's graph) per residual: the walk uses
// per-node scratch marks that are never cleared (an epoch counter), and the
// form is hashed; nothing depends on the number of parameters.
#pragma once

#include <string>
#include <vector>

#include "frontends/value/Graph.h"

namespace eph::value {

// One residual's canonical form.
struct Canonical {
  std::vector<NodeId> nodes;   // the residual's nodes, in canonical (post-)order; the last is the residual
  std::vector<NodeId> leaves;  // the leaf nodes, by slot
  std::string key;             // the encoded form (equal keys ⇔ same signature)
};

class Canonicalizer {
 public:
  explicit Canonicalizer(const Graph& g) : g_(g), mark_(g.nodes().size(), 0), local_(g.nodes().size(), 0) {}
  // The canonical form of the DAG under `root` (reuses `out`'s storage).
  void run(NodeId root, Canonical& out);

 private:
  const Graph& g_;
  std::vector<uint32_t> mark_, local_;  // mark_[n] == epoch_: visited in this walk; local_: its canonical number
  uint32_t epoch_ = 0;
  std::vector<std::pair<NodeId, uint32_t>> stack_;
};

// All instances of one signature.
struct Group {
  Canonical form;                   // of the first residual with this signature
  std::vector<char> trainable;      // by slot
  std::vector<uint32_t> residuals;  // residual indices, in order
  std::vector<NodeId> leaves;       // slots() leaf nodes per instance, instance after instance
  size_t slots() const { return form.leaves.size(); }
};

// The residuals of `g` grouped by signature, groups in order of first appearance.
std::vector<Group> groupResiduals(const Graph& g);

}  // namespace eph::value
