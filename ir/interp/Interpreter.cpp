// The Interpreter entry points and evalPure. Host code runs on a large fiber
// stack (see Fiber.h), so interpreted recursion up to Exec::kMaxCallDepth
// cannot overflow the caller's stack.
#include <type_traits>

#include "ir/OpTable.h"
#include "ir/interp/Dispatch.h"
#include "ir/interp/Exec.h"
#include "ir/interp/Fiber.h"

namespace eph::interp {
namespace {

constexpr size_t kHostStackBytes = size_t(256) << 20;  // reserved, committed as used

// Runs fn on a fresh large stack, unless already on an interpreter fiber.
template <class F>
void onInterpreterStack(F&& fn) {
  if (stackHeadroom() != static_cast<size_t>(-1)) {
    fn();
    return;
  }
  Fiber fiber(kHostStackBytes);
  using Fn = std::remove_reference_t<F>;
  fiber.start([](void* p) { (*static_cast<Fn*>(p))(); }, &fn);
  fiber.resume();
}

}  // namespace

struct Interpreter::Impl {
  const ir::Module& module;
  Memory memory;
  DeviceHooks* device = nullptr;
};

Interpreter::Interpreter(const ir::Module& m) : impl_(std::make_unique<Impl>(Impl{m, {}})) {}

void Interpreter::setDeviceHooks(DeviceHooks* hooks) { impl_->device = hooks; }
Interpreter::~Interpreter() = default;

Memory& Interpreter::memory() { return impl_->memory; }

Expected<std::vector<RtValue>> Interpreter::call(const ir::Function& f, std::vector<RtValue> args) {
  if (f.isKernel())
    return Error{f.loc(), "@" + f.name() + " is a kernel; run it with dispatch"};
  Exec ex(&impl_->memory);
  ex.setDeviceHooks(impl_->device);
  std::vector<RtValue> results;
  bool ok = false;
  onInterpreterStack([&] { ok = ex.callFunction(nullptr, f, std::move(args), results); });
  if (!ok) return *ex.error();
  return results;
}

Status Interpreter::dispatch(const ir::Function& kernel, std::array<uint32_t, 3> groups,
                             std::vector<RtValue> args) {
  Status s;
  onInterpreterStack([&] { s = runKernel(impl_->memory, kernel, groups, std::move(args)); });
  return s;
}

std::optional<std::vector<RtValue>> evalPure(const ir::Op& op, std::span<const RtValue> operands) {
  const ir::OpInfo& info = op.info();
  if (!info.has(ir::kPure) || !info.interp || op.numRegions() != 0 ||
      operands.size() != op.numOperands())
    return std::nullopt;
  Exec ex(nullptr);
  ex.overrideOperands(op, operands);
  if (!info.interp(ex, op)) return std::nullopt;
  std::vector<RtValue> results;
  for (unsigned i = 0; i < op.numResults(); ++i) results.push_back(ex.get(op.result(i)));
  return results;
}

}  // namespace eph::interp
