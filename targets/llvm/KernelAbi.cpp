// The parts of the CPU kernel ABI that need no LLVM: parameter block and
// workgroup memory layouts, trap site numbering and trap messages.
#include "targets/llvm/KernelAbi.h"

#include "ir/KernelText.h"
#include "ir/Layout.h"
#include "ir/OpTable.h"
#include "ir/interp/OutOfBounds.h"

namespace eph::llvmtarget {
namespace {

size_t roundUp(size_t x, size_t a) { return (x + a - 1) / a * a; }

// Ops that set a bit of the trap mask.
bool canTrap(const ir::Op& op) {
  ir::OpId n = op.id();
  if (n == ir::OpId::Load || n == ir::OpId::Store || ir::isAtomic(n) || n == ir::OpId::For) return true;
  if (n == ir::OpId::VecLoad || n == ir::OpId::VecStore) return true;
  if (n == ir::OpId::ArrayGet || n == ir::OpId::ArraySet) return true;
  if (n == ir::OpId::SubgroupBroadcast || n == ir::OpId::SubgroupShuffle) return true;
  if (n == ir::OpId::Div || n == ir::OpId::Rem) return op.result(0)->type()->scalar()->isInt();
  return false;
}

// Control flow that may hold a barrier: it diverges when its condition (or
// its bounds) differ between the invocations of a workgroup.
bool canDiverge(const ir::Op& op) {
  return op.is(ir::OpId::If) || op.is(ir::OpId::While) || op.is(ir::OpId::For);
}

}  // namespace

ParamBlockLayout paramBlockLayout(const ir::Function& kernel) {
  ParamBlockLayout l;
  size_t off = 0, align = 1;
  for (const ir::Type* t : kernel.paramTypes()) {
    if (t->isBuffer()) {
      l.offsets.push_back(SIZE_MAX);
      continue;
    }
    off = roundUp(off, ir::storageAlign(t));
    align = std::max(align, ir::storageAlign(t));
    l.offsets.push_back(off);
    off += ir::storageSize(t);
  }
  l.size = roundUp(off, align);
  return l;
}

WorkgroupLayout workgroupLayout(const ir::Function& kernel) {
  WorkgroupLayout l;
  for (const auto& op : kernel.body().ops()) {
    if (!op->is(ir::OpId::WorkgroupAlloc)) continue;
    l.bytes = roundUp(l.bytes, 64);
    l.offsets.emplace_back(op.get(), l.bytes);
    l.bytes += size_t(op->intAttr("size")) * ir::storageStride(op->result(0)->type()->elem());
  }
  return l;
}

namespace {

std::vector<const ir::Op*> sitesOf(const std::vector<const ir::Function*>& fns) {
  // Trapping ops first, so that the 63 precise bits go to them.
  std::vector<const ir::Op*> sites;
  for (auto* pick : {&canTrap, &canDiverge})
    for (const ir::Function* f : fns)
      const_cast<ir::Function&>(*f).walk([&](ir::Op* op) {
        if ((*pick)(*op) && (pick == &canTrap || !canTrap(*op))) sites.push_back(op);
      });
  return sites;
}

}  // namespace

std::vector<const ir::Op*> trapSites(const ir::Module& m) {
  std::vector<const ir::Function*> fns;
  for (const auto& f : m.functions())
    if (!f->isHost()) fns.push_back(f.get());
  return sitesOf(fns);
}

std::vector<const ir::Op*> trapSites(const ir::Function& kernel) {
  std::vector<const ir::Function*> fns = {&kernel};
  for (const ir::Function* f : ir::reachedDeviceFunctions(kernel)) fns.push_back(f);
  return sitesOf(fns);
}

Status statusError(const ir::Module& m, const ir::Function& kernel, const KernelStatus& st) {
  if (!st.diverged && !st.trapMask) return Status::ok();
  return statusError(trapSites(m), kernel, st);
}

Status statusError(const ir::Function& kernel, const KernelStatus& st) {
  if (!st.diverged && !st.trapMask) return Status::ok();
  return statusError(trapSites(kernel), kernel, st);
}

Status statusError(const std::vector<const ir::Op*>& sites, const ir::Function& kernel, const KernelStatus& st) {
  auto locOf = [&](const ir::Op* op) { return op && op->loc().known() ? op->loc() : kernel.loc(); };
  if (st.diverged) {
    const ir::Op* op = st.diverged - 1 < sites.size() ? sites[st.diverged - 1] : nullptr;
    return Error{locOf(op), "barrier divergence in kernel @" + kernel.name() +
                                ": the invocations of a workgroup disagree on the condition or "
                                "bounds of this '" + std::string(op ? op->name() : "op") +
                                "', which holds a barrier"};
  }
  if (st.oob.site && st.oob.site - 1 < sites.size()) {
    const ir::Op& op = *sites[st.oob.site - 1];
    Error e = interp::outOfBoundsError(op, st.oob.index, st.oob.length,
                                       {st.oob.globalId[0], st.oob.globalId[1], st.oob.globalId[2]});
    e.loc = locOf(&op);
    return e;
  }
  unsigned bit = 0;
  while (!((st.trapMask >> bit) & 1)) ++bit;
  const ir::Op* op = bit < 63 && bit < sites.size() ? sites[bit] : nullptr;
  if (!op)
    return Error{kernel.loc(), "kernel @" + kernel.name() +
                                   ": an out-of-bounds access, integer division by zero or "
                                   "'for' step of 0"};
  ir::OpId n = op->id();
  std::string what;
  if (n == ir::OpId::Div || n == ir::OpId::Rem)
    what = std::string("integer ") + (n == ir::OpId::Div ? "division" : "remainder") + " by zero";
  else if (n == ir::OpId::For)
    what = "'for' has a step of 0";
  else if (n == ir::OpId::SubgroupBroadcast)
    what = "the lane is not in the subgroup or not the same for the whole subgroup";
  else if (n == ir::OpId::SubgroupShuffle)
    what = "the lane is not in the subgroup";
  else if (n == ir::OpId::ArrayGet || n == ir::OpId::ArraySet)
    what = "index is out of bounds for an array";
  else
    what = "index is out of bounds for a buffer";
  return Error{locOf(op), "'" + std::string(op->name()) + "': " + what + " (in kernel @" + kernel.name() +
                              " on the cpu target)"};
}

}  // namespace eph::llvmtarget
