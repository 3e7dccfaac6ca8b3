// Cooperative matrices (ir/ops/CoopMatrix.cpp). A subgroup's coopmat<T, R, C>
// is SPV_NV_cooperative_matrix's OpTypeCooperativeMatrixNV at subgroup scope
// (the builder adds the capability and extension); coop.fill is a
// one-operand OpCompositeConstruct, coop.load/coop.store are
// OpCooperativeMatrixLoadNV/StoreNV from a pointer to element %offset of the
// buffer with the stride in elements, coop.muladd is
// OpCooperativeMatrixMulAddNV, coop.convert OpFConvert. A workgroup's
// coopmat<T, R, C, workgroup, use> is SPV_KHR_cooperative_matrix's type at
// workgroup scope with its use (VK_NV_cooperative_matrix2 allows the scope),
// with the KHR load, store and multiply-add (layout and stride as ids).
// checkDevice (Emit.cpp) has already refused a device without the extension
// or the op's shape. The accesses are not bounds-checked (--check-bounds
// covers load/store and the atomics); the interpreter checks every element.
#include "targets/spirv/Emitter.h"

namespace eph::spirv {

using spv::Op;

namespace {
constexpr auto kOpLoadKhr = Op(4457), kOpStoreKhr = Op(4458), kOpMulAddKhr = Op(4459);
}  // namespace

Status Emitter::emitCoopMatrix(const ir::Op& op) {
  const ir::Type* m = op.is(ir::OpId::CoopStore) ? op.operand(3)->type() : op.result(0)->type();
  const bool khr = m->coopScope() == ir::CoopScope::Workgroup;
  switch (op.id()) {
    case ir::OpId::CoopFill:
      setId(op.result(0), b.op(Op::OpCompositeConstruct, valueType(op.result(0)->type()), {id(op.operand(0))}));
      return Status::ok();
    case ir::OpId::CoopMulAdd:
      setId(op.result(0), b.op(khr ? kOpMulAddKhr : Op::OpCooperativeMatrixMulAddNV, valueType(op.result(0)->type()),
                               {id(op.operand(0)), id(op.operand(1)), id(op.operand(2))}));
      return Status::ok();
    case ir::OpId::CoopConvert:
      setId(op.result(0), b.op(Op::OpFConvert, valueType(op.result(0)->type()), {id(op.operand(0))}));
      return Status::ok();
    default: break;
  }
  const BufferRef& buf = *get(op.operand(0)).buf;
  if (buf.asBits || (buf.sc == spv::StorageClass::StorageBuffer && buf.elemMemType != valueType(buf.elem)))
    return error(op, "'" + std::string(op.name()) + "' on a buffer whose elements are not stored as " +
                         buf.elem->str() + " (float atomics on it?) is not supported by the SPIR-V target");
  Id ptr = elementPointer(buf, id(op.operand(1)), op.operand(1)->type());
  Id stride = id(op.operand(2));
  const bool col = op.attr("col_major") && op.intAttr("col_major");
  if (khr) {
    Id layout = b.constInt(b.typeInt(32, false), col ? 1 : 0);  // ColumnMajorKHR / RowMajorKHR
    if (op.is(ir::OpId::CoopLoad))
      setId(op.result(0), b.op(kOpLoadKhr, valueType(op.result(0)->type()), {ptr, layout, stride}));
    else
      b.opVoid(kOpStoreKhr, {ptr, id(op.operand(3)), layout, stride});
    return Status::ok();
  }
  Id colMajor = b.constBool(col);
  if (op.is(ir::OpId::CoopLoad))
    setId(op.result(0), b.op(Op::OpCooperativeMatrixLoadNV, valueType(op.result(0)->type()), {ptr, stride, colMajor}));
  else
    b.opVoid(Op::OpCooperativeMatrixStoreNV, {ptr, id(op.operand(3)), stride, colMajor});
  return Status::ok();
}

void Emitter::addCoopMatrixEmitters(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {CoopFill, CoopLoad, CoopStore, CoopMulAdd, CoopConvert}) t[n] = &Emitter::emitCoopMatrix;
}

}  // namespace eph::spirv
