// Cooperative matrices (ir/ops/CoopMatrix.cpp) as SPV_NV_cooperative_matrix:
// coopmat<T, R, C> is OpTypeCooperativeMatrixNV at subgroup scope (the
// builder adds the capability and extension); coop.fill is a one-operand
// OpCompositeConstruct, coop.load/coop.store are OpCooperativeMatrixLoadNV/
// StoreNV from a pointer to element %offset of the buffer with the stride in
// elements, coop.muladd is OpCooperativeMatrixMulAddNV. checkDevice (Emit.cpp)
// has already refused a device without the extension or the op's shape.
// The accesses are not bounds-checked (--check-bounds covers load/store and
// the atomics); the interpreter checks every element.
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

Status Emitter::emitCoopMatrix(const ir::Op& op) {
  switch (op.id()) {
    case ir::OpId::CoopFill:
      setId(op.result(0), b.op(Op::OpCompositeConstruct, valueType(op.result(0)->type()), {id(op.operand(0))}));
      return Status::ok();
    case ir::OpId::CoopMulAdd:
      setId(op.result(0), b.op(Op::OpCooperativeMatrixMulAddNV, valueType(op.result(0)->type()),
                               {id(op.operand(0)), id(op.operand(1)), id(op.operand(2))}));
      return Status::ok();
    default: break;
  }
  const BufferRef& buf = *get(op.operand(0)).buf;
  if (buf.asBits || (buf.sc == spv::StorageClass::StorageBuffer && buf.elemMemType != valueType(buf.elem)))
    return error(op, "'" + std::string(op.name()) + "' on a buffer whose elements are not stored as " +
                         buf.elem->str() + " (float atomics on it?) is not supported by the SPIR-V target");
  Id ptr = elementPointer(buf, id(op.operand(1)), op.operand(1)->type());
  Id stride = id(op.operand(2));
  Id colMajor = b.constBool(op.attr("col_major") && op.intAttr("col_major"));
  if (op.is(ir::OpId::CoopLoad))
    setId(op.result(0), b.op(Op::OpCooperativeMatrixLoadNV, valueType(op.result(0)->type()), {ptr, stride, colMajor}));
  else
    b.opVoid(Op::OpCooperativeMatrixStoreNV, {ptr, id(op.operand(3)), stride, colMajor});
  return Status::ok();
}

void Emitter::addCoopMatrixEmitters(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {CoopFill, CoopLoad, CoopStore, CoopMulAdd}) t[n] = &Emitter::emitCoopMatrix;
}

}  // namespace eph::spirv
