#include "frontends/value/Signature.h"

#include <cstring>
#include <unordered_map>

namespace eph::value {

namespace {
template <class T>
void put(std::string& key, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  key.append(b, sizeof(T));
}
}  // namespace

void Canonicalizer::run(NodeId root, Canonical& out) {
  out.nodes.clear();
  out.leaves.clear();
  out.key.clear();
  if (++epoch_ == 0) {  // wrapped: clear the marks once every 2^32 walks
    std::fill(mark_.begin(), mark_.end(), 0);
    epoch_ = 1;
  }
  stack_.clear();
  stack_.emplace_back(root, 0);
  mark_[root] = epoch_;
  while (!stack_.empty()) {
    auto& [n, next] = stack_.back();
    auto args = g_.args(n);
    if (next < args.size()) {
      NodeId a = args[next++];
      if (mark_[a] != epoch_) {
        mark_[a] = epoch_;
        stack_.emplace_back(a, 0);
      }
      continue;
    }
    // All arguments are numbered: number n and encode it.
    NodeId id = n;
    stack_.pop_back();
    const Node& node = g_.node(id);
    local_[id] = uint32_t(out.nodes.size());
    out.nodes.push_back(id);
    put(out.key, uint8_t(node.kind));
    switch (node.kind) {
      case OpKind::Param: case OpKind::Const:
        put(out.key, uint32_t(out.leaves.size()));
        out.leaves.push_back(id);
        break;
      case OpKind::Literal: put(out.key, node.value); break;
      case OpKind::Clamp: put(out.key, node.value), put(out.key, node.hi); break;
      case OpKind::Custom: put(out.key, node.aux); break;
      default: break;
    }
    put(out.key, uint32_t(args.size()));
    for (NodeId a : args) put(out.key, local_[a]);
  }
}

std::vector<Group> groupResiduals(const Graph& g) {
  std::vector<Group> groups;
  std::unordered_map<std::string, uint32_t> bySignature;
  Canonicalizer canon(g);
  Canonical c;
  const auto& residuals = g.residuals();
  for (uint32_t r = 0; r < residuals.size(); ++r) {
    canon.run(residuals[r], c);
    auto [it, fresh] = bySignature.try_emplace(c.key, uint32_t(groups.size()));
    if (fresh) {
      Group& grp = groups.emplace_back();
      grp.form = c;
      for (NodeId leaf : c.leaves) grp.trainable.push_back(g.node(leaf).kind == OpKind::Param);
    }
    Group& grp = groups[it->second];
    grp.residuals.push_back(r);
    grp.leaves.insert(grp.leaves.end(), c.leaves.begin(), c.leaves.end());
  }
  return groups;
}

}  // namespace eph::value
