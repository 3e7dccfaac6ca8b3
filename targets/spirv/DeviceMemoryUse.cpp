// analyzeDeviceMemoryUse: walks the kernel body and, through each call, the
// callee's body with its buffer parameters bound to the caller's buffers (the
// emitter inlines calls the same way), recording per kernel buffer parameter
// whether it is loaded, stored or used by an atomic.
#include "targets/spirv/DeviceMemoryUse.h"

#include <map>

namespace eph::spirv {

namespace {

using ParamOf = std::map<const ir::Value*, unsigned>;

void walkRegion(const ir::Function& kernel, const ir::Region& r, const ParamOf& paramOf,
                DeviceMemoryUse& use, unsigned depth) {
  for (const auto& op : r.ops()) {
    ir::OpId n = op->id();
    bool load = n == ir::OpId::Load || n == ir::OpId::VecLoad;
    bool store = n == ir::OpId::Store || n == ir::OpId::VecStore, atomic = ir::isAtomic(n);
    if (load || store || atomic) {
      const ir::Value* buf = op->operand(0);
      if (buf->type()->space() != ir::Space::Device) continue;
      auto it = paramOf.find(buf);
      if (it == paramOf.end()) {
        use.untraced = true;
        continue;
      }
      BufferParamUse& u = use.params[it->second];
      u.read |= load;
      u.written |= store;
      u.atomic |= atomic;
      continue;
    }
    if (n == ir::OpId::Call) {
      const ir::Function* callee = kernel.module()->lookup(op->symbolAttr("callee"));
      if (!callee || depth > 64) {  // the emitter reports these
        use.untraced = true;
        continue;
      }
      ParamOf inner;
      for (unsigned i = 0; i < op->numOperands() && i < callee->body().numArgs(); ++i)
        if (auto it = paramOf.find(op->operand(i)); it != paramOf.end())
          inner[callee->body().arg(i)] = it->second;
      walkRegion(kernel, callee->body(), inner, use, depth + 1);
      continue;
    }
    for (unsigned k = 0; k < op->numRegions(); ++k) walkRegion(kernel, op->region(k), paramOf, use, depth);
  }
}

}  // namespace

bool DeviceMemoryUse::barrierNeedsDeviceMemory() const {
  if (untraced) return true;
  for (const BufferParamUse& u : params)
    if (u.atomic || (u.read && u.written)) return true;
  return false;
}

DeviceMemoryUse analyzeDeviceMemoryUse(const ir::Function& kernel) {
  DeviceMemoryUse use;
  const ir::Region& body = kernel.body();
  use.params.resize(body.numArgs());
  ParamOf paramOf;
  for (unsigned i = 0; i < body.numArgs(); ++i)
    if (body.arg(i)->type()->isBuffer()) paramOf[body.arg(i)] = i;
  walkRegion(kernel, body, paramOf, use, 0);
  return use;
}

}  // namespace eph::spirv
