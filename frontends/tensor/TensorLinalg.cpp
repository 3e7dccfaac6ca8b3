#include "frontends/tensor/Tensor.h"

namespace eph::tensor {

namespace {

std::vector<Tensor> withOptional(std::vector<Tensor> in, const Tensor& extra) {
  if (extra) in.push_back(extra);
  return in;
}

void setInts(Attrs& a, const char* name, const std::vector<int64_t>& v) {
  if (!v.empty()) a.set(name, v);
}

Attrs poolAttrs(const PoolOptions& o) {
  Attrs a;
  setInts(a, "kernel_shape", o.kernel);
  setInts(a, "strides", o.strides);
  setInts(a, "pads", o.pads);
  setInts(a, "dilations", o.dilations);
  a.set("ceil_mode", int64_t(o.ceilMode));
  a.set("auto_pad", o.autoPad);
  return a;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, CallSite loc) {
  return a.program()->apply("matmul", {a, b}, {}, siteOf(loc));
}

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& c, GemmOptions o, CallSite loc) {
  Attrs at{{"alpha", o.alpha}, {"beta", o.beta}, {"transA", int64_t(o.transA)}, {"transB", int64_t(o.transB)}};
  return a.program()->apply("gemm", withOptional({a, b}, c), at, siteOf(loc));
}

Tensor conv(const Tensor& x, const Tensor& w, const Tensor& bias, ConvOptions o, CallSite loc) {
  Attrs a;
  setInts(a, "strides", o.strides);
  setInts(a, "pads", o.pads);
  setInts(a, "dilations", o.dilations);
  a.set("group", o.group);
  a.set("auto_pad", o.autoPad);
  return x.program()->apply("conv", withOptional({x, w}, bias), a, siteOf(loc));
}

Tensor conv_transpose(const Tensor& x, const Tensor& w, const Tensor& bias, ConvTransposeOptions o, CallSite loc) {
  Attrs a;
  setInts(a, "strides", o.strides);
  setInts(a, "pads", o.pads);
  setInts(a, "dilations", o.dilations);
  setInts(a, "output_padding", o.outputPadding);
  setInts(a, "output_shape", o.outputShape);
  a.set("group", o.group);
  a.set("auto_pad", o.autoPad);
  return x.program()->apply("conv_transpose", withOptional({x, w}, bias), a, siteOf(loc));
}

Tensor max_pool(const Tensor& x, PoolOptions o, CallSite loc) {
  return x.program()->apply("max_pool", {x}, poolAttrs(o), siteOf(loc));
}

Tensor avg_pool(const Tensor& x, PoolOptions o, CallSite loc) {
  Attrs a = poolAttrs(o);
  a.set("count_include_pad", int64_t(o.countIncludePad));
  return x.program()->apply("avg_pool", {x}, a, siteOf(loc));
}

Tensor lp_pool(const Tensor& x, PoolOptions o, int64_t p, CallSite loc) {
  Attrs a = poolAttrs(o);
  a.set("p", p);
  return x.program()->apply("lp_pool", {x}, a, siteOf(loc));
}

Tensor global_avg_pool(const Tensor& x, CallSite loc) { return x.program()->apply("global_avg_pool", {x}, {}, siteOf(loc)); }
Tensor global_max_pool(const Tensor& x, CallSite loc) { return x.program()->apply("global_max_pool", {x}, {}, siteOf(loc)); }
Tensor global_lp_pool(const Tensor& x, int64_t p, CallSite loc) {
  return x.program()->apply("global_lp_pool", {x}, {{"p", p}}, siteOf(loc));
}

Tensor einsum(const std::string& equation, std::vector<Tensor> inputs, CallSite loc) {
  if (inputs.empty()) return {};  // no program to record an error in
  return inputs[0].program()->apply("einsum", std::move(inputs), {{"equation", equation}}, siteOf(loc));
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, AttentionOptions o, CallSite loc) {
  Attrs a{{"causal", int64_t(o.causal)}};
  if (o.scale) a.set("scale", *o.scale);
  return q.program()->apply("attention", withOptional({q, k, v}, mask), a, siteOf(loc));
}

}  // namespace eph::tensor
