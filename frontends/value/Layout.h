// Where the derivative outputs of a lowered Value graph live (docs/value.md,
// "Derivative outputs"), computed on the host once per problem from the
// signature groups: the sparse Jacobian's rows, the pattern of JᵀJ, the
// per-instance positions the atomic JᵀJ kernel adds into, and, for the
// deterministic mode, the transposes that say which per-instance
// contributions each output element sums, in a fixed order.
//
// Contributions. A signature K with t trainable slots and n instances makes
// t contributions per instance to a gradient (slot j of instance i at
// jacobianLayout(groups)[K] + i·t + j: the Jacobian's own layout) and
// t(t+1)/2 to JᵀJ (the pair (a, b), a ≤ b, in row-major order of the upper
// triangle, at pairOffset[K] + i·t(t+1)/2 + q). In deterministic mode the
// kernels store contributions there, and a second kernel sums, for each
// output element, the contributions that gradientSources (normalSources)
// lists for it: in the order of (signature, instance, slot), the same for
// every run, thread count and target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/Signature.h"

namespace eph::value {

// Compressed rows: row r's entries are index[start[r] .. start[r + 1]).
struct CsrIndex {
  std::vector<uint32_t> start{0};
  std::vector<uint32_t> index;
  size_t rows() const { return start.size() - 1; }
};

struct DerivativeLayout {
  uint32_t numParams = 0, numResiduals = 0;
  std::vector<uint64_t> jacobianOffset;  // jacobianLayout(groups): per signature, then the total
  // The Jacobian by residual: columns (parameter indices, increasing) in
  // jacobianRows.index, and for each entry its position in the Jacobian
  // values buffer (jacobianOffset order) in jacobianValue.
  CsrIndex jacobianRows;
  std::vector<uint32_t> jacobianValue;
  // JᵀJ's pattern by parameter row (both triangles, the diagonal included,
  // columns increasing): every pair of parameters some residual reads
  // together. Its values buffer holds one value per entry in this order.
  CsrIndex normal;
  std::vector<uint64_t> pairOffset;  // per signature, then the total number of pair contributions
  // Per signature: t² entries per instance, the position in JᵀJ's values of
  // (column of trainable slot a, column of slot b) at a·t + b.
  std::vector<std::vector<uint32_t>> pairTable;
  // Deterministic sums: per parameter, its contributions' positions in the
  // Jacobian layout; per JᵀJ entry, its pair contributions' positions.
  CsrIndex gradientSources, normalSources;
};

// Trainable slots of a signature.
uint32_t trainableSlots(const Group& grp);

// The layout of `groups` (of g). False with `error` when an index would not
// fit in 32 bits (the kernels index with u32). `withNormal`: also the JᵀJ
// parts (normal, pairOffset, pairTable, normalSources), which cost O(Σ t²).
bool derivativeLayout(const Graph& g, const std::vector<Group>& groups, bool withNormal, DerivativeLayout& out,
                      std::string& error);

}  // namespace eph::value
