// Op semantics for the elementwise ops (arithmetic, comparisons, math, casts):
// read the operands of `op`, apply the scalar rule of ir/interp/Scalar.h to
// each element (vectors) or to the scalar, and set the result. The op files
// (ir/ops/Arith.cpp) point their `.interp` hooks here.
#pragma once

#include "ir/interp/Exec.h"
#include "ir/interp/Scalar.h"

namespace eph::interp {

bool applyBinary(Exec& ex, const ir::Op& op, BinaryKind k);
bool applyUnary(Exec& ex, const ir::Op& op, UnaryKind k);
bool applyFma(Exec& ex, const ir::Op& op);
bool applyCompare(Exec& ex, const ir::Op& op, CompareKind k);
bool applyCast(Exec& ex, const ir::Op& op);
bool applyBitcast(Exec& ex, const ir::Op& op);

// Geometric functions on float vectors, computed in double and rounded once
// to the element type.
RtValue dotProduct(const RtValue& a, const RtValue& b);
RtValue crossProduct(const RtValue& a, const RtValue& b);
RtValue vectorLength(const RtValue& v);
RtValue normalizeVector(const RtValue& v);

}  // namespace eph::interp
