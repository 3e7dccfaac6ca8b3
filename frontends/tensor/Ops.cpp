#include "frontends/tensor/Ops.h"

#include <algorithm>

namespace eph::tensor {

const std::vector<OpDef>& allOps() {
  static const std::vector<OpDef> ops = [] {
    std::vector<OpDef> v;
    addElementwiseOps(v);
    addViewOps(v);
    addReduceOps(v);
    addScanOps(v);
    addLinalgOps(v);
    addConvOps(v);
    addAttentionOps(v);
    addIndexOps(v);
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
