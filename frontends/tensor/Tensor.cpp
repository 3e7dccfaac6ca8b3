#include "frontends/tensor/Tensor.h"

#include <cmath>

namespace eph::tensor {

namespace {
Program& prog(const Tensor& t) { return *t.program(); }
}  // namespace

Tensor full(Program& p, DType t, Shape s, double v, CallSite loc) {
  HostTensor h(t, s);
  for (int64_t i = 0; i < h.size(); ++i) h.set(i, v);
  return p.constant(std::move(h), siteOf(loc));
}
Tensor zeros(Program& p, DType t, Shape s, CallSite loc) { return full(p, t, std::move(s), 0, loc); }
Tensor ones(Program& p, DType t, Shape s, CallSite loc) { return full(p, t, std::move(s), 1, loc); }
Tensor scalarLike(const Tensor& like, double v, CallSite loc) { return full(prog(like), like.dtype(), {}, v, loc); }

Tensor arange(Program& p, DType t, double start, double stop, double step, CallSite loc) {
  if (step == 0) {
    p.fail(siteOf(loc), "arange: a step of 0");
    return full(p, t, {0}, 0, loc);
  }
  int64_t n = std::max<int64_t>(0, int64_t(std::ceil((stop - start) / step)));
  HostTensor h(t, {n});
  for (int64_t i = 0; i < n; ++i) h.set(i, start + double(i) * step);
  return p.constant(std::move(h), siteOf(loc));
}

Tensor eye(Program& p, DType t, int64_t n, CallSite loc) {
  HostTensor h(t, {n, n});
  for (int64_t i = 0; i < n; ++i) h.set(i * n + i, 1);
  return p.constant(std::move(h), siteOf(loc));
}

#define EPH_TENSOR_UNARY(name, op) \
  Tensor name(const Tensor& x, CallSite loc) { return prog(x).apply(op, {x}, {}, siteOf(loc)); }
EPH_TENSOR_UNARY(neg, "neg") EPH_TENSOR_UNARY(abs, "abs") EPH_TENSOR_UNARY(sign, "sign") EPH_TENSOR_UNARY(exp, "exp")
EPH_TENSOR_UNARY(log, "log") EPH_TENSOR_UNARY(sqrt, "sqrt") EPH_TENSOR_UNARY(rsqrt, "rsqrt") EPH_TENSOR_UNARY(sin, "sin")
EPH_TENSOR_UNARY(cos, "cos") EPH_TENSOR_UNARY(tan, "tan") EPH_TENSOR_UNARY(tanh, "tanh") EPH_TENSOR_UNARY(erf, "erf")
EPH_TENSOR_UNARY(floor, "floor") EPH_TENSOR_UNARY(ceil, "ceil") EPH_TENSOR_UNARY(round, "round")
EPH_TENSOR_UNARY(reciprocal, "reciprocal") EPH_TENSOR_UNARY(sigmoid, "sigmoid") EPH_TENSOR_UNARY(relu, "relu")
EPH_TENSOR_UNARY(gelu, "gelu") EPH_TENSOR_UNARY(softplus, "softplus") EPH_TENSOR_UNARY(logical_not, "not")
EPH_TENSOR_UNARY(isnan, "isnan") EPH_TENSOR_UNARY(contiguous, "contiguous")
#undef EPH_TENSOR_UNARY

#define EPH_TENSOR_BINARY(name, op)                                                                              \
  Tensor name(const Tensor& a, const Tensor& b, CallSite loc) { return prog(a).apply(op, {a, b}, {}, siteOf(loc)); } \
  Tensor name(const Tensor& a, double b, CallSite loc) {                                                              \
    return prog(a).apply(op, {a, scalarLike(a, b, loc)}, {}, siteOf(loc));                                     \
  }
EPH_TENSOR_BINARY(add, "add") EPH_TENSOR_BINARY(sub, "sub") EPH_TENSOR_BINARY(mul, "mul") EPH_TENSOR_BINARY(div, "div")
EPH_TENSOR_BINARY(pow, "pow") EPH_TENSOR_BINARY(minimum, "min") EPH_TENSOR_BINARY(maximum, "max")
EPH_TENSOR_BINARY(mod, "mod") EPH_TENSOR_BINARY(eq, "eq") EPH_TENSOR_BINARY(ne, "ne") EPH_TENSOR_BINARY(lt, "lt")
EPH_TENSOR_BINARY(le, "le") EPH_TENSOR_BINARY(gt, "gt") EPH_TENSOR_BINARY(ge, "ge")
#undef EPH_TENSOR_BINARY

Tensor logical_and(const Tensor& a, const Tensor& b, CallSite loc) { return prog(a).apply("and", {a, b}, {}, siteOf(loc)); }
Tensor logical_or(const Tensor& a, const Tensor& b, CallSite loc) { return prog(a).apply("or", {a, b}, {}, siteOf(loc)); }
Tensor where(const Tensor& c, const Tensor& a, const Tensor& b, CallSite loc) {
  return prog(c).apply("where", {c, a, b}, {}, siteOf(loc));
}
Tensor cast(const Tensor& x, DType to, CallSite loc) {
  return prog(x).apply("cast", {x}, {{"to", std::string(dtypeName(to))}}, siteOf(loc));
}
Tensor clip(const Tensor& x, double lo, double hi, CallSite loc) {
  return prog(x).apply("clip", {x, scalarLike(x, lo, loc), scalarLike(x, hi, loc)}, {}, siteOf(loc));
}

Tensor reshape(const Tensor& x, Shape shape, CallSite loc) {
  return prog(x).apply("reshape", {x}, {{"shape", shape}}, siteOf(loc));
}
Tensor transpose(const Tensor& x, std::vector<int64_t> perm, CallSite loc) {
  Attrs a;
  if (!perm.empty()) a.set("perm", perm);
  return prog(x).apply("transpose", {x}, a, siteOf(loc));
}
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t stop, int64_t step, CallSite loc) {
  return prog(x).apply("slice", {x},
                       {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{stop}},
                        {"axes", std::vector<int64_t>{axis}}, {"steps", std::vector<int64_t>{step}}},
                       siteOf(loc));
}
Tensor expand(const Tensor& x, Shape shape, CallSite loc) { return prog(x).apply("expand", {x}, {{"shape", shape}}, siteOf(loc)); }
Tensor squeeze(const Tensor& x, std::vector<int64_t> axes, CallSite loc) {
  Attrs a;
  if (!axes.empty()) a.set("axes", axes);
  return prog(x).apply("squeeze", {x}, a, siteOf(loc));
}
Tensor unsqueeze(const Tensor& x, std::vector<int64_t> axes, CallSite loc) {
  return prog(x).apply("unsqueeze", {x}, {{"axes", axes}}, siteOf(loc));
}

}  // namespace eph::tensor
