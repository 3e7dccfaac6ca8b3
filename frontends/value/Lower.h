// Lowering a Value graph to IR (docs/value.md, "Lowering"). Each signature
// (Signature.h) becomes
//   - a device function `@vgK.r(%x0: T, ..., %xn: T) -> T`: the residual from
//     its canonical leaves,
//   - a kernel `@vgK` over all instances of the signature: instance i reads its
//     leaves through the signature's index table (slots()+1 u32 per instance:
//     the leaf indices, then the residual's index) from one buffer of all
//     parameter values and one of all constant values, calls @vgK.r and
//     writes r[index], and
//   - when a slot is trainable, `@vgK.r.vjp` (passes/Autodiff.h, with respect
//     to the trainable slots) and, per output asked for (Outputs), a kernel
//     that calls it with seed 1 per instance: `@vgK.g` adds each trainable
//     slot's adjoint into grad[the leaf's parameter index] (atomically, or
//     stores it for `@vg.reduce` in deterministic mode), `@vgK.c` the same
//     times r (Jᵀr), `@vgK.j` stores the Jacobian row and `@vgK.n` adds the
//     products of its entries into JᵀJ.
// A host `@main() -> (buffer<T, host, linear>, ...)` uploads the leaves and
// tables, dispatches each kernel once and returns the residuals and the
// outputs (by default the gradient of their sum: one element per trainable
// leaf in declaration order; one 0 when there is none). T is f64 or f32.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "frontends/value/Graph.h"
#include "frontends/value/Signature.h"
#include "ir/IR.h"

namespace eph::value {

// What @main returns after the residuals, in this order (those set), each a
// buffer<T, host, linear> with at least one element (a single 0 when empty).
struct Outputs {
  bool gradient = true;       // ∂(Σr)/∂x: one per parameter (trainable leaf), declaration order
  bool costGradient = false;  // ∂(½Σr²)/∂x = Jᵀr, likewise
  bool jacobian = false;      // J's values in jacobianLayout order (DerivativeLayout maps them to rows)
  bool normal = false;        // JᵀJ's values in DerivativeLayout::normal's order
};

struct LowerOptions {
  bool f32 = false;            // T = f32 (else f64)
  unsigned workgroupSize = 64;
  // For the solvers: `@main(%x: buffer<T, host, read>)` takes the parameter
  // values (max(params, 1) of them) and returns the residuals and the
  // Jacobian's values instead of the gradient: kernels `@vgK.j` write, per
  // instance i of signature K, its trainable slots' ∂r/∂x in slot order at
  // jacobianLayout's offset for K plus i·(trainable slots of K). Shorthand for
  // parameterInput and outputs = {jacobian}.
  bool jacobian = false;
  // `@main(%x: buffer<T, host, read>)`: the parameter values come from the
  // caller (else the declared values are compiled in).
  bool parameterInput = false;
  Outputs outputs;
  // Shared parameters accumulate without atomics: each instance stores its
  // contributions (Layout.h) and `@vg.reduce` sums each output element's in a
  // fixed order, so the results are bit-identical from run to run and for any
  // thread count. Else the kernels `atomic.add` into the outputs.
  bool deterministic = false;
  // False: no host `@main`, only the functions and kernels, for a caller that
  // allocates the buffers and dispatches the kernels itself through the
  // runtime's Device API (examples/value/DeviceEnergy.h), keeping constants
  // and tables on the device across evaluations.
  bool hostMain = true;
};

// Where signature K's Jacobian values start in that buffer (one more entry:
// the total).
std::vector<uint64_t> jacobianLayout(const std::vector<Group>& groups);

// The parameter / constant buffer index of every leaf node (by node id; other
// nodes get 0): trainable leaves in declaration order in one buffer, constant
// leaves in another.
std::vector<uint32_t> leafSlots(const Graph& g, uint32_t& numParams, uint32_t& numConsts);

// Emits the device function of one signature into `m` (named `name`).
// False with `error` naming the op when the residual uses an op without an IR
// lowering (a custom op without `lower`).
bool lowerResidualFunction(ir::Module& m, const Graph& g, const Group& grp, const std::string& name,
                           const ir::Type* t, std::string& error);

// The whole module (verified by the caller). Null with `error` set when an op
// cannot be lowered.
std::unique_ptr<ir::Module> lowerGraph(ir::Context& ctx, const Graph& g, const std::vector<Group>& groups,
                                       const LowerOptions& opts, std::string& error);

}  // namespace eph::value
