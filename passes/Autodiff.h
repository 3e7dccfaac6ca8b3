// Automatic differentiation of device functions, as an IR transform.
//
// reverseDerivative adds, for a device function
//   device @f(%x0: T0, ..., %xn: Tn) -> (R0, ..., Rm)
// the function
//   device @f.vjp(%x0, ..., %xn, %seed_j: R_j for each float result j)
//       -> struct<R0, ..., Rm, T_i for each i with wrt[i]>
// returning f's results and the vector-Jacobian product: sum_j seed_j * dR_j/dx_i.
// forwardDerivative adds
//   device @f.jvp(%x0, ..., %xn, %dx_i: T_i for each i with wrt[i])
//       -> struct<R0, ..., Rm, dR_j for each float result j>
// returning f's results and their tangents (the Jacobian-vector product).
//
// Float scalars and float vectors are differentiated; other values (integers,
// bools, buffers) carry no derivative. Each op's rules come from its OpInfo's
// `derivative` slot (ir/ops/Derivatives.cpp for the built-ins; plugins give
// their own). Structured control flow (if, match, for) and calls to other
// device functions (differentiated in turn, by a worklist) are supported;
// the transform is iterative, so its depth does not grow with the function's
// length. See docs/autodiff.md.
#pragma once

#include <vector>

#include "passes/PassManager.h"

namespace eph::passes {

// `wrt[i]`: differentiate with respect to parameter i (which must be a float
// scalar or float vector). Shorter than the parameter list: the rest are false.
// Reuses @f.vjp / @f.jvp when one of the right type exists already.
Expected<ir::Function*> reverseDerivative(ir::Module& m, ir::Function& f, const std::vector<bool>& wrt);
Expected<ir::Function*> forwardDerivative(ir::Module& m, ir::Function& f, const std::vector<bool>& wrt);

// The module pass "autodiff": every device function with the attribute
// `autodiff = "reverse"`, `"forward"` or `"both"` gets its .vjp and/or .jvp
// with respect to all of its float parameters.
Pass autodiffPass();

}  // namespace eph::passes
