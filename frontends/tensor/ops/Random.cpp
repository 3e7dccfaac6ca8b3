// Random ops (docs/tensor.md, "Indexing, shaping and creation"):
// random_uniform, random_normal, bernoulli.
//
// A counter-based generator, so that every target gives the same bits: the
// element with linear index i draws the 32-bit words
//
//   h(i, s) = triple32(triple32(i ^ k1) + k2),   (k2 << 32 | k1) = splitmix64(splitmix64(seed) + s)
//
// for streams s = 0, 1 (triple32 is Wellons' 32-bit integer hash; all of it is
// u32 arithmetic that wraps). From them, in float64:
//   uniform   u = (h0 >> 8) / 2^24 for f16/f32 outputs, ((h0 >> 5) 2^26 + (h1 >> 6)) / 2^53 for f64;
//             low + (high - low) u by one fused multiply-add, rounded once to the dtype;
//   normal    Box-Muller: mean + scale sqrt(-2 log((h0 + 1) / 2^32)) cos(2 pi h1 / 2^32);
//   bernoulli u < p, u as for uniform (f32 for f16/f32 probabilities), so 1 with probability p.
// uniform and bernoulli are bit-exact on every target; normal uses log and cos,
// which Vulkan computes in float64 with its own functions (within a few ulp of
// glibc's): f32 and f16 outputs agree bit for bit, f64 outputs to ~1e-15.
#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;

std::string dt(DType t) { return std::string(dtypeName(t)); }

uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The 32-bit word of stream `s` for the element with linear index `i` (u32).
Value* draw(Kernel& k, Value* i, int64_t seed, uint64_t s) {
  Builder& b = k.b;
  const ir::Type* u32 = k.ctx.u32();
  auto c = [&](uint64_t v) { return b.constInt(u32, int64_t(v & 0xffffffffu)); };
  const uint64_t key = splitmix64(splitmix64(uint64_t(seed)) + s);
  auto triple32 = [&](Value* x) {
    x = b.xor_(x, b.shr(x, c(17)));
    x = b.mul(x, c(0xed5ad4bb));
    x = b.xor_(x, b.shr(x, c(11)));
    x = b.mul(x, c(0xac4c1b51));
    x = b.xor_(x, b.shr(x, c(15)));
    x = b.mul(x, c(0x31848bab));
    return b.xor_(x, b.shr(x, c(14)));
  };
  return triple32(b.add(triple32(b.xor_(i, c(key))), c(key >> 32)));
}

Value* counter(Kernel& k) { return k.b.cast(k.linear, k.ctx.u32()); }

// A uniform number in [0, 1) as f64: 24 random bits for f16/f32 outputs, 53 for f64.
Value* uniform01(Kernel& k, DType t, int64_t seed) {
  Builder& b = k.b;
  const ir::Type* f64 = k.ctx.f64();
  const ir::Type* u32 = k.ctx.u32();
  Value* i = counter(k);
  if (t != DType::F64)
    return b.mul(b.cast(b.shr(draw(k, i, seed, 0), b.constInt(u32, 8)), f64), b.constFloat(f64, 0x1p-24));
  Value* hi = b.cast(b.shr(draw(k, i, seed, 0), b.constInt(u32, 5)), f64);
  Value* lo = b.cast(b.shr(draw(k, i, seed, 1), b.constInt(u32, 6)), f64);
  return b.mul(b.add(b.mul(hi, b.constFloat(f64, 0x1p26)), lo), b.constFloat(f64, 0x1p-53));
}

std::string inferRandom(const Program&, Node& n) {
  auto t = dtypeFromName(n.attrs.s("dtype", "f32"));
  if (!t) return n.op + ": unknown dtype '" + n.attrs.s("dtype") + "'";
  if (!isFloat(*t)) return n.op + ": dtype must be a float type, not " + dt(*t);
  if (!n.attrs.has("shape")) return n.op + ": the shape attribute is required";
  n.dtype = *t;
  n.shape = n.attrs.ints("shape");
  for (int64_t d : n.shape)
    if (d < 0) return n.op + ": a negative extent in shape " + shapeText(n.shape);
  return "";
}

Expected<Value*> lowerUniform(Lowering& l, const Node& n, std::span<const Operand> in) {
  const double low = n.attrs.f("low", 0), high = n.attrs.f("high", 1);
  const int64_t seed = n.attrs.i("seed", 0);
  return l.map(n, in, [&](Kernel& k) {
    const ir::Type* f64 = k.ctx.f64();
    Value* u = uniform01(k, n.dtype, seed);
    Value* v = k.b.fma(k.b.constFloat(f64, high - low), u, k.b.constFloat(f64, low));
    return k.convert(v, DType::F64, n.dtype);
  });
}

Expected<Value*> lowerNormal(Lowering& l, const Node& n, std::span<const Operand> in) {
  const double mean = n.attrs.f("mean", 0), scale = n.attrs.f("scale", 1);
  const int64_t seed = n.attrs.i("seed", 0);
  return l.map(n, in, [&](Kernel& k) {
    Builder& b = k.b;
    const ir::Type* f64 = k.ctx.f64();
    auto c = [&](double v) { return b.constFloat(f64, v); };
    Value* i = counter(k);
    Value* u1 = b.mul(b.add(b.cast(draw(k, i, seed, 0), f64), c(1)), c(0x1p-32));  // (0, 1]
    Value* u2 = b.mul(b.cast(draw(k, i, seed, 1), f64), c(0x1p-32));               // [0, 1)
    Value* radius = b.sqrt(b.mul(c(-2), b.log(u1)));
    Value* z = b.mul(radius, b.cos(b.mul(c(6.283185307179586), u2)));
    return k.convert(b.fma(c(scale), z, c(mean)), DType::F64, n.dtype);
  });
}

std::string inferBernoulli(const Program& p, Node& n) {
  const Node& x = p.node(n.inputs[0]);
  if (!isFloat(x.dtype)) return "bernoulli: the probabilities must be a float tensor, not " + dt(x.dtype);
  n.dtype = x.dtype;
  if (n.attrs.has("dtype")) {
    auto t = dtypeFromName(n.attrs.s("dtype"));
    if (!t) return "bernoulli: unknown dtype '" + n.attrs.s("dtype") + "'";
    n.dtype = *t;
  }
  n.shape = x.shape;
  return "";
}

Expected<Value*> lowerBernoulli(Lowering& l, const Node& n, std::span<const Operand> in) {
  const int64_t seed = n.attrs.i("seed", 0);
  const DType pt = in[0].dtype;
  return l.map(n, in, [&](Kernel& k) {
    Builder& b = k.b;
    Value* u = uniform01(k, pt, seed);
    if (pt != DType::F64) u = b.cast(u, k.ctx.f32());  // exact: 24 bits
    Value* hit = b.lt(u, k.loadBroadcast(0));
    return k.convert(hit, DType::Bool, n.dtype);
  });
}

}  // namespace

void addRandomOps(std::vector<OpDef>& ops) {
  ops.push_back({.name = "random_uniform", .minInputs = 0, .maxInputs = 0, .infer = inferRandom, .lower = lowerUniform});
  ops.push_back({.name = "random_normal", .minInputs = 0, .maxInputs = 0, .infer = inferRandom, .lower = lowerNormal});
  ops.push_back({.name = "bernoulli", .infer = inferBernoulli, .lower = lowerBernoulli});
}

}  // namespace eph::tensor
