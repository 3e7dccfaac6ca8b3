// The C++ tensor API: numpy/PyTorch-style operations on Tensor handles of a
// Program (Program.h). Every call checks dtypes and shapes when it is made
// and, on an error, records it with the caller's file and line (the program
// then refuses to lower, Program::error()); nothing runs until the program
// runs (Run.h).
//
//   Program p;
//   Tensor x = p.input("x", DType::F32, {4, 8});
//   Tensor w = p.input("w", DType::F32, {8, 2});
//   p.output("y", relu(matmul(x, w) + 1.0));
#pragma once

#include <source_location>
#include <string>
#include <vector>

#include "frontends/tensor/Program.h"

namespace eph::tensor {

using CallSite = std::source_location;
#define EPH_TENSOR_LOC CallSite loc = CallSite::current()

// A scalar constant of `like`'s dtype in `like`'s program.
Tensor scalarLike(const Tensor& like, double v, EPH_TENSOR_LOC);
// Constants.
Tensor full(Program& p, DType t, Shape s, double v, EPH_TENSOR_LOC);
Tensor zeros(Program& p, DType t, Shape s, EPH_TENSOR_LOC);
Tensor ones(Program& p, DType t, Shape s, EPH_TENSOR_LOC);
// [start, stop) by step, as numpy.arange.
Tensor arange(Program& p, DType t, double start, double stop, double step = 1, EPH_TENSOR_LOC);
Tensor eye(Program& p, DType t, int64_t n, EPH_TENSOR_LOC);

// Elementwise, unary.
#define EPH_TENSOR_UNARY(name) Tensor name(const Tensor& x, EPH_TENSOR_LOC);
EPH_TENSOR_UNARY(neg) EPH_TENSOR_UNARY(abs) EPH_TENSOR_UNARY(sign) EPH_TENSOR_UNARY(exp) EPH_TENSOR_UNARY(log)
EPH_TENSOR_UNARY(sqrt) EPH_TENSOR_UNARY(rsqrt) EPH_TENSOR_UNARY(sin) EPH_TENSOR_UNARY(cos) EPH_TENSOR_UNARY(tan)
EPH_TENSOR_UNARY(tanh) EPH_TENSOR_UNARY(erf) EPH_TENSOR_UNARY(floor) EPH_TENSOR_UNARY(ceil) EPH_TENSOR_UNARY(round)
EPH_TENSOR_UNARY(reciprocal) EPH_TENSOR_UNARY(sigmoid) EPH_TENSOR_UNARY(relu) EPH_TENSOR_UNARY(gelu)
EPH_TENSOR_UNARY(softplus) EPH_TENSOR_UNARY(logical_not) EPH_TENSOR_UNARY(isnan)
#undef EPH_TENSOR_UNARY

// Elementwise, binary (numpy broadcasting and promotion; a double is a scalar of the tensor's dtype).
#define EPH_TENSOR_BINARY(name)                                     \
  Tensor name(const Tensor& a, const Tensor& b, EPH_TENSOR_LOC);    \
  Tensor name(const Tensor& a, double b, EPH_TENSOR_LOC);
EPH_TENSOR_BINARY(add) EPH_TENSOR_BINARY(sub) EPH_TENSOR_BINARY(mul) EPH_TENSOR_BINARY(div) EPH_TENSOR_BINARY(pow)
EPH_TENSOR_BINARY(minimum) EPH_TENSOR_BINARY(maximum) EPH_TENSOR_BINARY(mod) EPH_TENSOR_BINARY(eq)
EPH_TENSOR_BINARY(ne) EPH_TENSOR_BINARY(lt) EPH_TENSOR_BINARY(le) EPH_TENSOR_BINARY(gt) EPH_TENSOR_BINARY(ge)
#undef EPH_TENSOR_BINARY
Tensor logical_and(const Tensor& a, const Tensor& b, EPH_TENSOR_LOC);
Tensor logical_or(const Tensor& a, const Tensor& b, EPH_TENSOR_LOC);
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, EPH_TENSOR_LOC);
Tensor cast(const Tensor& x, DType to, EPH_TENSOR_LOC);
Tensor clip(const Tensor& x, double lo, double hi, EPH_TENSOR_LOC);

// Views (no copy).
Tensor reshape(const Tensor& x, Shape shape, EPH_TENSOR_LOC);
Tensor transpose(const Tensor& x, std::vector<int64_t> perm = {}, EPH_TENSOR_LOC);
// x[start:stop:step] along `axis`.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step = 1, EPH_TENSOR_LOC);
Tensor expand(const Tensor& x, Shape shape, EPH_TENSOR_LOC);
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes = {}, EPH_TENSOR_LOC);
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes, EPH_TENSOR_LOC);
Tensor contiguous(const Tensor& x, EPH_TENSOR_LOC);

// The operators report errors at the line that uses them: the left operand
// converts to Here, whose default argument captures the call site.
struct Here {
  const Tensor& t;
  CallSite loc;
  Here(const Tensor& t, CallSite loc = CallSite::current()) : t(t), loc(loc) {}  // NOLINT: implicit on purpose
};
inline Tensor operator+(Here a, const Tensor& b) { return add(a.t, b, a.loc); }
inline Tensor operator-(Here a, const Tensor& b) { return sub(a.t, b, a.loc); }
inline Tensor operator*(Here a, const Tensor& b) { return mul(a.t, b, a.loc); }
inline Tensor operator/(Here a, const Tensor& b) { return div(a.t, b, a.loc); }
inline Tensor operator+(Here a, double b) { return add(a.t, b, a.loc); }
inline Tensor operator-(Here a, double b) { return sub(a.t, b, a.loc); }
inline Tensor operator*(Here a, double b) { return mul(a.t, b, a.loc); }
inline Tensor operator/(Here a, double b) { return div(a.t, b, a.loc); }
inline Tensor operator-(Here a) { return neg(a.t, a.loc); }

}  // namespace eph::tensor

#include "frontends/tensor/TensorIndex.h"
#include "frontends/tensor/TensorLinalg.h"
#include "frontends/tensor/TensorReduce.h"
