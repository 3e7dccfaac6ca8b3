#include "ir/KernelText.h"

#include <unordered_set>

#include "ir/Printer.h"

namespace eph::ir {

std::vector<const Function*> reachedDeviceFunctions(const Function& kernel) {
  const Module* m = kernel.module();
  std::unordered_set<const Function*> reached;
  std::vector<const Function*> work = {&kernel};
  while (!work.empty()) {
    const Function* f = work.back();
    work.pop_back();
    const_cast<Function&>(*f).walk([&](Op* op) {
      if (!op->is(OpId::Call) || !m) return;
      const Function* callee = m->lookup(op->symbolAttr("callee"));
      if (callee && callee->kind() == FunctionKind::Device && reached.insert(callee).second)
        work.push_back(callee);
    });
  }
  std::vector<const Function*> out;
  if (m)
    for (const auto& f : m->functions())
      if (reached.count(f.get())) out.push_back(f.get());
  return out;
}

std::string kernelText(const Function& kernel) {
  std::string text = print(kernel);
  for (const Function* f : reachedDeviceFunctions(kernel)) text += "\n" + print(*f);
  return text;
}

std::vector<const Op*> kernelOps(const Function& kernel) {
  std::vector<const Op*> ops;
  auto add = [&](const Function& f) { const_cast<Function&>(f).walk([&](Op* op) { ops.push_back(op); }); };
  add(kernel);
  for (const Function* f : reachedDeviceFunctions(kernel)) add(*f);
  return ops;
}

}  // namespace eph::ir
