// The words every target uses for an index out of bounds, so that interp,
// cpu and vulkan report the same error:
//
//   FILE:LINE:COL: error: index 20 is out of bounds for a buffer of 15 elements
//   (in the invocation with global id (2, 0, 0))
//
// The interpreter builds it from its values; the cpu and vulkan targets from
// the record their compiled code leaves (the op, the index's bits, the
// length, the global id).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "ir/IR.h"

namespace eph::interp {

// "index I is out of bounds for WHAT of N elements"; WHAT is "a buffer" or "an array".
std::string outOfBoundsMessage(std::string_view index, uint64_t length, std::string_view what);

// " (in the invocation with global id (x, y, z))"
std::string invocationSuffix(const std::array<uint32_t, 3>& globalId);

// The whole error for an access by `op` (load, store, an atomic, array.get or
// array.set): its index operand's type says how to print `indexBits` (the
// index sign- or zero-extended to 64 bits).
Error outOfBoundsError(const ir::Op& op, uint64_t indexBits, uint64_t length,
                       const std::array<uint32_t, 3>& globalId);

}  // namespace eph::interp
