// Storage layout: how values are laid out in buffer memory. Every target and
// every transfer uses these functions, so the SPIR-V emitter's Offset and
// ArrayStride decorations, the LLVM target's loads and stores and the bytes
// the runtime copies always agree.
//
// The rules (std430-like): scalars take their natural size and alignment;
// bool is stored as a u32 (0 or 1); vec2/vec4 take 2/4 elements aligned to
// their size, vec3 takes 16 bytes like vec4; arrays and buffers place elements
// at a stride of the element size rounded up to its alignment; struct fields
// follow in order, each at the next multiple of its alignment, and the struct
// is padded to its alignment; a sum is a u32 tag then the payload at the next
// multiple of the largest payload alignment. Buffers of buffers do not exist
// in memory (a buffer handle is not storable).
//
// Value layout (what a kernel computes with) is the target's own business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "ir/Types.h"
#include "ir/interp/Interp.h"

namespace eph::ir {

size_t storageSize(const Type* t);
size_t storageAlign(const Type* t);
// Distance between consecutive elements of type t in an array or buffer.
size_t storageStride(const Type* t);
// Offset of field i of a struct.
size_t fieldOffset(const Type* structType, unsigned i);
// Offset of the payload in a sum.
size_t sumPayloadOffset(const Type* sumType);
// Whether values of t can live in a buffer (no buffer or function inside).
bool isStorable(const Type* t);

// Writes v (of a storable type) at `out` (storageSize(v.type) bytes).
void encode(const interp::RtValue& v, std::byte* out);
// Reads a value of type t from `in`.
interp::RtValue decode(const Type* t, const std::byte* in);

// A whole interpreter buffer as bytes; an error (at `site`) names the first
// element that was never written (it has no value to copy).
Status encodeBuffer(const interp::BufferData& b, std::vector<std::byte>& out, Loc site);
// Fills `b` (its elemType and size already set) from bytes; marks every element written.
void decodeBuffer(std::span<const std::byte> bytes, interp::BufferData& b);

}  // namespace eph::ir
