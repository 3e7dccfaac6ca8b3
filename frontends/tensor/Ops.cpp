#include "frontends/tensor/Ops.h"

#include <algorithm>
#include <cassert>
#include <map>

namespace eph::tensor {

namespace {

// OpDef::batched of the ops whose kernels take a dynamic first dimension as
// a batch: those that work along other axes (`attr`, an axis or a list of
// axes, `fallback` when absent, must not name axis 0) or along none.
// Elementwise ops and views need no entry. Not here, so an error when given
// one: ops that mix indices of the first axis whatever their attributes
// (trilu of a matrix, gather_elements, scatter, einsum, attention, the
// random ops, which draw by linear index).
void markBatched(std::vector<OpDef>& ops) {
  auto always = [](const Program&, const Node&) { return true; };
  auto notAxis0 = [](const char* attr, std::vector<int64_t> fallback) {
    return [attr, fallback](const Program& p, const Node& n) {
      size_t rank = p.node(n.inputs[0]).shape.size();
      for (int64_t a : n.attrs.ints(attr, fallback))
        if (normaliseAxis(a, rank) && a == 0) return false;
      return true;
    };
  };
  const std::map<std::string, std::function<bool(const Program&, const Node&)>> table = {
      {"matmul", always}, {"gemm", always}, {"conv", always}, {"conv_transpose", always},
      {"max_pool", always}, {"avg_pool", always}, {"lp_pool", always}, {"global_avg_pool", always},
      {"global_max_pool", always}, {"global_lp_pool", always}, {"batch_norm", always}, {"instance_norm", always},
      // The reductions drop or shrink what they reduce: reducing the first
      // axis leaves a result without N, which Program::apply refuses.
      {"reduce_sum", always}, {"reduce_mean", always}, {"reduce_max", always}, {"reduce_min", always},
      {"reduce_prod", always}, {"reduce_l1", always}, {"reduce_l2", always}, {"reduce_log_sum_exp", always},
      {"reduce_sum_square", always}, {"reduce_log_sum", always}, {"var", always}, {"argmax", always},
      {"argmin", always}, {"pad", always}, {"tile", always}, {"concat", always}, {"one_hot", always},
      {"resize", always}, {"contiguous", always}, {"identity", always}, {"clip", always}, {"where", always},
      {"cast", always},
      {"softmax", notAxis0("axis", {-1})}, {"log_softmax", notAxis0("axis", {-1})},
      {"hardmax", notAxis0("axis", {-1})}, {"lp_normalization", notAxis0("axis", {-1})},
      {"layer_norm", notAxis0("axis", {-1})}, {"mean_variance_normalization", notAxis0("axes", {0, 2, 3})},
      {"cumsum", notAxis0("axis", {0})}, {"topk", notAxis0("axis", {-1})}, {"topk_indices", notAxis0("axis", {-1})},
      {"sort", notAxis0("axis", {-1})}, {"argsort", notAxis0("axis", {-1})},
      // gather: the data's first axis indexed by other tensors mixes its rows.
      {"gather", [](const Program& p, const Node& n) {
         int64_t axis = n.attrs.i("axis", 0);
         return !isDynamic(p.node(n.inputs[0]).shape) || !normaliseAxis(axis, p.node(n.inputs[0]).shape.size()) ||
                axis != 0;
       }},
  };
  size_t found = 0;
  for (OpDef& d : ops)
    if (auto it = table.find(d.name); it != table.end()) d.batched = it->second, ++found;
  assert(found == table.size() && "markBatched names an op that is not in the table");
  (void)found;
}

}  // namespace

std::string dynamicDimensionError(const Program& p, const OpDef& def, const Node& n) {
  int input = -1;
  for (size_t k = 0; k < n.inputs.size() && input < 0; ++k)
    if (isDynamic(p.node(n.inputs[k]).shape)) input = int(k);
  bool moved = false;  // N anywhere but as the first extent, or a multiple of it
  for (size_t d = 0; d < n.shape.size(); ++d) moved |= involvesDynamic(n.shape[d]) && !(d == 0 && isDynamic(n.shape));
  if (n.isView)
    for (int64_t s : n.strides) moved |= involvesDynamic(s);
  if (input < 0 && !moved && !isDynamic(n.shape)) return "";
  if (input < 0)
    return n.op + ": the result's shape " + shapeText(n.shape) +
           " is computed from the dynamic first dimension N; only inputs may have it";
  std::string has = n.op + ": input " + std::to_string(input) + " has the dynamic first dimension N (shape " +
                    shapeText(p.node(n.inputs[size_t(input)]).shape) + ")";
  if (moved || !isDynamic(n.shape))
    return has + ", which the result " + shapeText(n.shape) + " would " +
           (moved ? "merge, move or repeat" : "reduce or drop") +
           ": ops keep N as the first dimension of their results; give the input a fixed shape";
  if (!def.view && !n.isView && !def.element && !(def.batched && def.batched(p, n)))
    return has + ", and " + n.op +
           " does not run over it with these attributes (it would combine different indices of it); give the "
           "input a fixed shape";
  return "";
}

const std::vector<OpDef>& allOps() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    addElementwiseOps(v);
    addViewOps(v);
    addReduceOps(v);
    addNormOps(v);
    addScanOps(v);
    addLinalgOps(v);
    addConvOps(v);
    addAttentionOps(v);
    addIndexOps(v);
    markBatched(v);
    std::sort(v.begin(), v.end(), [](const OpDef& a, const OpDef& b) { return a.name < b.name; });
    return v;
  }();
  return ops;
}

const OpDef* findOp(std::string_view name) {
  const auto& ops = allOps();
  auto it = std::lower_bound(ops.begin(), ops.end(), name, [](const OpDef& d, std::string_view n) { return d.name < n; });
  return it != ops.end() && it->name == name ? &*it : nullptr;
}

bool normaliseAxis(int64_t& a, size_t rank) {
  if (a < 0) a += int64_t(rank);
  return a >= 0 && a < int64_t(rank);
}

}  // namespace eph::tensor
