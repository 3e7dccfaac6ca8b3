#include "ir/interp/OutOfBounds.h"

namespace eph::interp {

std::string outOfBoundsMessage(std::string_view index, uint64_t length, std::string_view what) {
  return "index " + std::string(index) + " is out of bounds for " + std::string(what) + " of " +
         std::to_string(length) + " element" + (length == 1 ? "" : "s");
}

std::string invocationSuffix(const std::array<uint32_t, 3>& g) {
  return " (in the invocation with global id (" + std::to_string(g[0]) + ", " + std::to_string(g[1]) + ", " +
         std::to_string(g[2]) + "))";
}

Error outOfBoundsError(const ir::Op& op, uint64_t indexBits, uint64_t length,
                       const std::array<uint32_t, 3>& globalId) {
  bool isSigned = op.numOperands() > 1 && op.operand(1)->type()->isSigned();
  std::string index = isSigned ? std::to_string(int64_t(indexBits)) : std::to_string(indexBits);
  const char* what = (op.is(ir::OpId::ArrayGet) || op.is(ir::OpId::ArraySet)) ? "an array" : "a buffer";
  return Error{op.loc(), outOfBoundsMessage(index, length, what) + invocationSuffix(globalId)};
}

}  // namespace eph::interp
