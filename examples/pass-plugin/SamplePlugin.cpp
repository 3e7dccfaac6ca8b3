// A sample pass plugin. Build it as a shared library and load it with
//   ephc opt FILE --load-pass-plugin=libeph_sample_plugin.so --passes=strength-reduce
//
// It registers one pass, `strength-reduce`, that rewrites an integer
// multiplication by a constant power of two into a left shift:
//   %y = mul %x, %c8 : i32      (%c8 = const {value = 8})
// becomes
//   %k = const {value = 3} : i32
//   %y = shl %x, %k : i32
// Integer multiplication wraps, and so does the shift, so the two agree on
// every input (negative numbers included).
#include <bit>
#include <cstdint>

#include "ir/Builder.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

// The shift amount when `v` is a scalar integer constant 2^k with k >= 1.
std::optional<int64_t> log2OfConstant(ir::Value* v) {
  ir::Op* def = v->definingOp();
  if (!def || def->name() != "const" || !v->type()->isInt()) return std::nullopt;
  const ir::Attr* a = def->attr("value");
  if (!a || a->kind != ir::Attr::Kind::Int) return std::nullopt;
  uint64_t bits = static_cast<uint64_t>(a->i);
  unsigned width = v->type()->bits();
  if (width < 64) bits &= (uint64_t(1) << width) - 1;
  if (bits < 2 || !std::has_single_bit(bits)) return std::nullopt;
  return std::countr_zero(bits);
}

bool strengthReduce(ir::Module& m, passes::Diagnostics&) {
  bool changed = false;
  for (auto& fn : m.functions()) {
    std::vector<ir::Op*> muls;
    fn->walk([&](ir::Op* op) {
      if (op->name() == "mul" && op->result()->type()->isInt()) muls.push_back(op);
    });
    for (ir::Op* mul : muls) {
      for (unsigned side = 0; side < 2; ++side) {
        auto k = log2OfConstant(mul->operand(1 - side));
        if (!k) continue;
        ir::Builder b(m.context(), *mul->parentRegion(), mul);
        b.setLoc(mul->loc());
        const ir::Type* t = mul->result()->type();
        ir::Value* amount = b.constInt(t, *k);
        ir::Value* shl = b.op("shl", {mul->operand(side), amount}, t);
        shl->setName(mul->result()->name());
        mul->result()->replaceAllUsesWith(shl);
        mul->erase();
        changed = true;
        break;
      }
    }
  }
  return changed;
}

}  // namespace

extern "C" void ephRegisterPasses(passes::PassRegistry& registry) {
  registry.add(passes::Pass{"strength-reduce",
                            "(sample plugin) integer mul by a power of two becomes shl",
                            strengthReduce});
}
