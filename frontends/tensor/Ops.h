// The tensor op table: one entry per op, giving its arity, its dtype and
// shape rule (`infer`, which runs when the op is applied, so a wrong shape is
// an error at the call site before anything runs), and its lowering to IR
// kernels (Lower.h). A family of ops is one file under ops/ with an add*Ops
// function, called from Ops.cpp: a new op is a table entry plus tests.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/tensor/Program.h"

namespace eph::ir {
class Value;
}

namespace eph::tensor {

class Lowering;
struct LowerOptions;
class Kernel;
struct Fused;

// A lowered tensor: the device buffer holding its root's storage and the
// layout of the tensor in it; or, when `fused` is set, no buffer: an
// elementwise node computed inside the kernel that reads it (Lower.h).
struct Operand {
  ir::Value* buf = nullptr;
  DType dtype = DType::F32;
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::shared_ptr<const Fused> fused;
};

struct OpDef {
  std::string name;
  int minInputs = 1, maxInputs = 1;  // maxInputs < 0: no limit
  // Sets n.dtype and n.shape (a view: also n.strides and n.offset, in the
  // input's root's storage, from p.strides(input) and the input's offset)
  // from the inputs and attributes; returns what is wrong, or "" when fine.
  // Messages name shapes with shapeText, dtypes with dtypeName.
  std::function<std::string(const Program& p, Node& n)> infer;
  // A view makes no kernel (Program.h); `infer` sets its layout.
  bool view = false;
  // The lowering of a node that is not a view: returns a fresh contiguous
  // device buffer of max(numel, 1) elements of the node's dtype, holding it.
  std::function<Expected<ir::Value*>(Lowering& l, const Node& n, std::span<const Operand> in)> lower;
  // Elementwise ops: the output element at k.index, in the node's compute
  // type, from the inputs read with k.loadBroadcast. Such an op needs no
  // `lower` (Lowering::map runs `element`), and the lowering may fuse it:
  // compute it inside the kernel of each consumer instead of storing it.
  std::function<ir::Value*(Kernel& k, const Node& n, std::span<const Operand> in)> element;
  // Whether `lower` reads its inputs only through Kernel's load functions, so
  // that an input may be a fused operand. True for every op with `element`.
  bool fusesInputs = false;
  // With fusesInputs: the op reduces (its output is smaller than its input)
  // and reads each input element once, so a fused input of the input's size
  // is computed once per element, not recomputed (reduce_*).
  bool reduces = false;
  // A dynamic first dimension (docs/tensor.md, "Dynamic dimensions"):
  // whether node n, an input of which has it, computes each index of it from
  // the same index of its inputs alone (a batch of independent problems:
  // matmul's rows, softmax over another axis), so that the lowering builds
  // its kernels for one index and runs them over N. Elementwise ops
  // (`element`) and views always do; null: the op does not take it.
  std::function<bool(const Program& p, const Node& n)> batched;
  // Epilogues (matmul): whether node n, with options o, lowers to a kernel
  // that can compute an elementwise reader of it where it stores each
  // element (LowerOptions::fuse); and that lowering: n (inputs `in`) whose
  // sums are computed into reader r (inputs rIn, one of whose operand trees
  // holds n as a Fused::accumulator), returning r's fresh buffer.
  std::function<bool(const Program& p, const Node& n, const LowerOptions& o)> takesEpilogue;
  std::function<Expected<ir::Value*>(Lowering& l, const Node& n, std::span<const Operand> in, const Node& r,
                                     std::span<const Operand> rIn)>
      lowerWithEpilogue;
};

// An elementwise node that is not stored: its inputs, computed where it is
// read. Or, with `accumulator`, a node whose kernel computes its reader as
// an epilogue (OpDef::takesEpilogue): the reader's Kernel::accumulator holds
// its element, and `in` (the node's own inputs) are no leaves of the reader.
struct Fused {
  const Node* node = nullptr;
  const OpDef* def = nullptr;
  std::vector<Operand> in;
  bool accumulator = false;
};

const OpDef* findOp(std::string_view name);
const std::vector<OpDef>& allOps();

// The families, one per file in ops/.
void addElementwiseOps(std::vector<OpDef>& ops);
void addViewOps(std::vector<OpDef>& ops);
void addReduceOps(std::vector<OpDef>& ops);    // reductions, softmax
void addNormOps(std::vector<OpDef>& ops);      // layer, batch, instance, mean-variance and Lp normalisation
void addScanOps(std::vector<OpDef>& ops);      // cumsum, topk, sort, argsort
void addLinalgOps(std::vector<OpDef>& ops);   // matmul, gemm, einsum
void addAttentionOps(std::vector<OpDef>& ops);  // attention
void addConvOps(std::vector<OpDef>& ops);     // conv, conv_transpose, pooling
void addIndexOps(std::vector<OpDef>& ops);    // concat, tile, pad, gather/scatter, one-hot, trilu, resize, random

// Node i of p as the attention op (ops/Attention.cpp) where it is
// matmul(softmax(scale·matmul(q, kᵀ) [+ mask], last axis), v), every part
// read only by the next and none an output, f32, where
// LowerOptions::fuseAttention asks for it: inputs q, kᵀ (its last two
// dimensions still to be swapped: Lowering reads it transposed), v [, the
// added mask]; attrs the scale.
std::optional<Node> attentionFromParts(const Program& p, uint32_t i, const std::vector<std::vector<uint32_t>>& readers,
                                       const std::vector<bool>& isOutputRoot, const LowerOptions& o);

// Why node n (made by `def`) may not have its shapes (a dynamic first
// dimension in an input or the result), or "" when it may (Program::apply).
std::string dynamicDimensionError(const Program& p, const OpDef& def, const Node& n);

// Shared by families: the axis `a` of a rank-r tensor, counted from the end
// when negative; false when out of range.
bool normaliseAxis(int64_t& a, size_t rank);

}  // namespace eph::tensor
