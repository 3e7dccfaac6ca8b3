// The parts of the CPU host ABI that need no LLVM: site numbering, the slot
// count of a type and the functions that are lowered for host code.
#include "targets/llvm/HostAbi.h"
#include "ir/OpTable.h"

#include <algorithm>
#include <set>

namespace eph::llvmtarget {

std::vector<const ir::Op*> hostSites(const ir::Module& m) {
  std::vector<const ir::Op*> sites;
  for (const auto& f : m.functions()) {
    if (f->isKernel()) continue;
    const_cast<ir::Function&>(*f).walk([&](ir::Op* op) { sites.push_back(op); });
  }
  return sites;
}

std::vector<const ir::Type*> hostBoxTypes(const ir::Module& m) {
  std::vector<const ir::Type*> types;
  for (const ir::Op* op : hostSites(m)) {
    const ir::Type* t = op->is(ir::OpId::BoxNew) ? op->operand(0)->type()
                        : op->is(ir::OpId::BoxGet) ? ir::boxCellType(m.context(), op->result(0)->type()) : nullptr;
    if (t && std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  }
  return types;
}

size_t hostSlotCount(const ir::Type* t) {
  switch (t->kind()) {
    case ir::TypeKind::Vector: return t->count();
    case ir::TypeKind::Array: return t->count() * hostSlotCount(t->elem());
    case ir::TypeKind::Struct:
    case ir::TypeKind::Sum: {
      size_t n = t->isSum() ? 1 : 0;
      for (const ir::Type* m : t->members()) n += hostSlotCount(m);
      return n;
    }
    default: return 1;
  }
}

std::vector<const ir::Function*> hostLoweredFunctions(const ir::Module& m, const std::string& entry) {
  // Host functions, then the device functions they reach by call or func.ref.
  std::set<const ir::Function*> seen;
  std::vector<const ir::Function*> order, work;
  for (const auto& f : m.functions())
    if (f->isHost() && (entry.empty() || f->name() == entry)) {
      seen.insert(f.get());
      work.push_back(f.get());
    }
  while (!work.empty()) {
    const ir::Function* f = work.back();
    work.pop_back();
    const_cast<ir::Function*>(f)->walk([&](ir::Op* op) {
      if (!op->is(ir::OpId::Call) && !op->is(ir::OpId::FuncRef)) return;
      const ir::Attr* a = op->attr("callee");
      const ir::Function* callee = a && a->kind == ir::Attr::Kind::Symbol ? m.lookup(a->s) : nullptr;
      if (callee && !callee->isKernel() && seen.insert(callee).second) work.push_back(callee);
    });
  }
  for (const auto& f : m.functions())
    if (seen.count(f.get())) order.push_back(f.get());
  return order;
}

}  // namespace eph::llvmtarget
