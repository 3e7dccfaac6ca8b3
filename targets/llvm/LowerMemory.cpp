// Buffer memory: converting between value layout and the storage layout of
// ir/Layout.h, bounds-checked loads and stores, atomics and buffer.len.
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>

#include "ir/Layout.h"
#include "ir/OpTable.h"
#include "targets/llvm/Emitter.h"

namespace eph::llvmtarget {
namespace {

llvm::Align alignOf(const ir::Type* t) { return llvm::Align(ir::storageAlign(t)); }

}  // namespace

llvm::Value* FunctionEmitter::loadStorage(const ir::Type* t, llvm::Value* p) {
  auto at = [&](size_t off) { return off ? b.CreateConstInBoundsGEP1_64(M.i8, p, off) : p; };
  llvm::Type* lt = M.valueType(t);
  switch (t->kind()) {
    case ir::TypeKind::Bool:
      return b.CreateICmpNE(b.CreateAlignedLoad(M.i32, p, llvm::Align(4)), b.getInt32(0));
    case ir::TypeKind::Int:
    case ir::TypeKind::Float: return b.CreateAlignedLoad(lt, p, alignOf(t));
    case ir::TypeKind::Vector: {
      if (!t->elem()->isBool()) return b.CreateAlignedLoad(lt, p, alignOf(t));
      llvm::Value* v = llvm::PoisonValue::get(lt);
      for (unsigned i = 0; i < t->count(); ++i) v = b.CreateInsertElement(v, loadStorage(t->elem(), at(4 * i)), i);
      return v;
    }
    case ir::TypeKind::Array: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      size_t stride = ir::storageStride(t->elem());
      for (unsigned i = 0; i < t->count(); ++i) v = b.CreateInsertValue(v, loadStorage(t->elem(), at(i * stride)), i);
      return v;
    }
    case ir::TypeKind::Struct: {
      llvm::Value* v = llvm::PoisonValue::get(lt);
      for (unsigned i = 0; i < t->members().size(); ++i)
        v = b.CreateInsertValue(v, loadStorage(t->members()[i], at(ir::fieldOffset(t, i))), i);
      return v;
    }
    case ir::TypeKind::Sum: {
      // A tag out of range (garbage) reads as variant 0, like ir::decode.
      unsigned n = unsigned(t->members().size());
      llvm::Value* tag = b.CreateAlignedLoad(M.i32, p, llvm::Align(4));
      tag = b.CreateSelect(b.CreateICmpULT(tag, b.getInt32(n)), tag, b.getInt32(0));
      llvm::Value* v = b.CreateInsertValue(llvm::PoisonValue::get(lt), tag, 0);
      size_t off = ir::sumPayloadOffset(t);
      for (unsigned i = 0; i < n; ++i) v = b.CreateInsertValue(v, loadStorage(t->members()[i], at(off)), i + 1);
      return v;
    }
    default: break;
  }
  assert(false && "not a storable type");
  return nullptr;
}

void FunctionEmitter::storeStorage(const ir::Type* t, llvm::Value* p, llvm::Value* v) {
  auto at = [&](size_t off) { return off ? b.CreateConstInBoundsGEP1_64(M.i8, p, off) : p; };
  switch (t->kind()) {
    case ir::TypeKind::Bool: b.CreateAlignedStore(b.CreateZExt(v, M.i32), p, llvm::Align(4)); return;
    case ir::TypeKind::Int:
    case ir::TypeKind::Float: b.CreateAlignedStore(v, p, alignOf(t)); return;
    case ir::TypeKind::Vector:
      if (!t->elem()->isBool()) {
        b.CreateAlignedStore(v, p, alignOf(t));
        return;
      }
      for (unsigned i = 0; i < t->count(); ++i) storeStorage(t->elem(), at(4 * i), b.CreateExtractElement(v, i));
      return;
    case ir::TypeKind::Array: {
      size_t stride = ir::storageStride(t->elem());
      for (unsigned i = 0; i < t->count(); ++i) storeStorage(t->elem(), at(i * stride), b.CreateExtractValue(v, i));
      return;
    }
    case ir::TypeKind::Struct:
      for (unsigned i = 0; i < t->members().size(); ++i)
        storeStorage(t->members()[i], at(ir::fieldOffset(t, i)), b.CreateExtractValue(v, i));
      return;
    case ir::TypeKind::Sum: {
      // Zero the element, then the tag and the active variant's payload (ir::encode).
      b.CreateMemSet(p, b.getInt8(0), ir::storageSize(t), alignOf(t));
      llvm::Value* tag = b.CreateExtractValue(v, 0);
      b.CreateAlignedStore(tag, p, llvm::Align(4));
      size_t off = ir::sumPayloadOffset(t);
      unsigned n = unsigned(t->members().size());
      llvm::BasicBlock* done = newBlock("sum.stored");
      llvm::SwitchInst* sw = b.CreateSwitch(tag, done, n);
      for (unsigned i = 0; i < n; ++i) {
        llvm::BasicBlock* bb = newBlock("sum.store");
        sw->addCase(b.getInt32(i), bb);
        b.SetInsertPoint(bb);
        storeStorage(t->members()[i], at(off), b.CreateExtractValue(v, i + 1));
        b.CreateBr(done);
      }
      b.SetInsertPoint(done);
      return;
    }
    default: assert(false && "not a storable type");
  }
}

// The access itself at p; the loaded or old value, or null for a store.
llvm::Value* FunctionEmitter::accessAt(const ir::Op& op, const ir::Type* et, llvm::Value* p) {
  ir::OpId n = op.id();
  auto order = llvm::AtomicOrdering::SequentiallyConsistent;
  if (n == ir::OpId::Load) return loadStorage(et, p);
  if (n == ir::OpId::Store) {
    storeStorage(et, p, get(op.operand(2)));
    return nullptr;
  }
  if (n == ir::OpId::VecLoad) return b.CreateAlignedLoad(M.valueType(op.result(0)->type()), p, alignOf(et));
  if (n == ir::OpId::VecStore) {
    b.CreateAlignedStore(get(op.operand(2)), p, alignOf(et));
    return nullptr;
  }
  if (n == ir::OpId::AtomicCmpXchg) {
    llvm::Value* pair = b.CreateAtomicCmpXchg(p, get(op.operand(2)), get(op.operand(3)), alignOf(et), order, order);
    return b.CreateExtractValue(pair, 0);
  }
  using K = llvm::AtomicRMWInst::BinOp;
  bool sg = et->isInt() && et->isSigned();
  K k = n == ir::OpId::AtomicAdd ? (et->isFloat() ? K::FAdd : K::Add)
        : n == ir::OpId::AtomicMin ? (sg ? K::Min : K::UMin)
        : n == ir::OpId::AtomicMax ? (sg ? K::Max : K::UMax) : K::Xchg;
  return b.CreateAtomicRMW(k, p, get(op.operand(2)), alignOf(et), order);
}

// load, store, vec.load, vec.store and the atomics: the index is checked
// against the length; an access out of bounds sets the op's trap bit, is
// recorded with its index and length when it is the workgroup's first, and
// is skipped (a load or an atomic then gives 0). A vector access of N lanes
// at index i touches elements N·i to N·i+N-1, so it is in bounds when
// i < length / N; its elements are contiguous scalars (vec.load's verifier
// allows only ints and floats, whose storage is their natural size).
bool FunctionEmitter::emitAccess(const ir::Op& op) {
  const ir::Type* bt = op.operand(0)->type();
  const ir::Type* et = bt->elem();
  llvm::Value* buf = get(op.operand(0));
  llvm::Value* base = b.CreateExtractValue(buf, 0);
  llvm::Value* len = b.CreateExtractValue(buf, 1);
  llvm::Value* idx = get(op.operand(1));
  idx = op.operand(1)->type()->isSigned() ? b.CreateSExtOrTrunc(idx, M.i64) : b.CreateZExtOrTrunc(idx, M.i64);
  const ir::Type* vt = op.is(ir::OpId::VecLoad) ? op.result(0)->type()
                       : op.is(ir::OpId::VecStore) ? op.operand(2)->type() : nullptr;
  uint64_t lanes = vt ? vt->count() : 1;
  llvm::Type* lt = M.valueType(vt ? vt : et);
  auto pointer = [&] {
    llvm::Value* first = lanes == 1 ? idx : b.CreateMul(idx, b.getInt64(lanes));
    size_t stride = ir::storageStride(et);
    bool natural = (et->isInt() || et->isFloat()) && stride == ir::storageSize(et);
    return natural ? b.CreateInBoundsGEP(M.valueType(et), base, first)
                   : b.CreateInBoundsGEP(M.i8, base, b.CreateMul(first, b.getInt64(stride)));
  };
  if (unchecked.count(&op)) {
    llvm::Value* r = accessAt(op, et, pointer());
    if (r) set(op.result(0), r);
    return true;
  }
  llvm::Value* inb = b.CreateICmpULT(idx, lanes == 1 ? len : b.CreateUDiv(len, b.getInt64(lanes)));
  llvm::Value* none = noOutOfBoundsYet();

  // The check is a branch to a cold block that records the trap, in the
  // shape LLVM's inductive range check elimination recognises: in loops over
  // invocations it moves the check out of the main loop (Pipeline.cpp).
  llvm::BasicBlock* access = newBlock(std::string(op.name()) + ".inbounds");
  llvm::BasicBlock* oob = newBlock(std::string(op.name()) + ".outofbounds");
  llvm::BasicBlock* cont = newBlock(std::string(op.name()) + ".done");
  llvm::MDNode* likely = llvm::MDBuilder(M.ctx).createBranchWeights(1 << 20, 1);
  b.CreateCondBr(inb, access, oob, likely);
  b.SetInsertPoint(oob);
  // A vector's record names its first element out of bounds, max(N·i, length).
  recordOutOfBounds(op, lanes == 1 ? idx : b.CreateBinaryIntrinsic(llvm::Intrinsic::umax, b.CreateMul(idx, b.getInt64(lanes)), len), len, none);
  llvm::BasicBlock* oobEnd = b.GetInsertBlock();
  b.CreateBr(cont);
  b.SetInsertPoint(access);
  llvm::Value* result = accessAt(op, et, pointer());
  llvm::BasicBlock* accessEnd = b.GetInsertBlock();
  b.CreateBr(cont);
  b.SetInsertPoint(cont);
  if (result) {
    llvm::PHINode* phi = b.CreatePHI(lt, 2);
    phi->addIncoming(result, accessEnd);
    phi->addIncoming(llvm::Constant::getNullValue(lt), oobEnd);
    set(op.result(0), phi);
  }
  trapIf(op, b.CreateNot(inb));
  return true;
}

bool FunctionEmitter::emitBufferLen(const ir::Op& op) {
  llvm::Value* len = b.CreateExtractValue(get(op.operand(0)), 1);
  set(op.result(0), b.CreateZExtOrTrunc(len, M.valueType(op.result(0)->type())));
  return true;
}

// Kernels' top-level workgroup.alloc is lowered by KernelEmitter (LowerKernel.cpp).
bool FunctionEmitter::emitWorkgroupAlloc(const ir::Op& op) {
  return fail(op, "workgroup memory outside the top level of a kernel");
}

void FunctionEmitter::addMemoryLowerings(EmitTable& t) {
  using enum ir::OpId;
  for (ir::OpId n : {Load, Store, VecLoad, VecStore, AtomicAdd, AtomicMin, AtomicMax, AtomicXchg, AtomicCmpXchg})
    t[n] = &FunctionEmitter::emitAccess;
  t[BufferLen] = &FunctionEmitter::emitBufferLen;
  t[WorkgroupAlloc] = &FunctionEmitter::emitWorkgroupAlloc;
}

}  // namespace eph::llvmtarget
