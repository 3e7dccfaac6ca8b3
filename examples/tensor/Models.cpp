#include "examples/tensor/Models.h"

#include <cmath>

namespace eph::tensor::examples {

namespace {

// Seeded uniform values in [-scale, scale).
HostTensor randomTensor(DType dt, Shape s, uint64_t seed, double scale) {
  HostTensor h(dt, std::move(s));
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
  for (int64_t i = 0; i < h.size(); ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    h.set(i, scale * (2 * double(x >> 11) / double(1ull << 53) - 1));
  }
  return h;
}

Tensor weight(Program& p, DType dt, Shape s, uint64_t seed) {
  int64_t fanIn = 1;
  for (size_t d = 0; d + 1 < s.size(); ++d) fanIn *= s[d];
  if (s.size() == 4) fanIn = s[1] * s[2] * s[3];  // conv weights [K, C, kh, kw]
  return p.constant(randomTensor(dt, s, seed, 1 / std::sqrt(double(fanIn))));
}

// x[B, 784] -> 256 -> relu -> 10 -> log_softmax
void buildMlp(Program& p, DType dt) {
  Tensor x = p.input("x", dt, {8, 784});
  Tensor h = relu(matmul(x, weight(p, dt, {784, 256}, 1)) + weight(p, dt, {256}, 2));
  Tensor logits = matmul(h, weight(p, dt, {256, 10}, 3)) + weight(p, dt, {10}, 4);
  p.output("y", p.apply("log_softmax", {logits}, {{"axis", int64_t(-1)}}));
}

Tensor conv3x3(Program& p, DType dt, const Tensor& x, int64_t cin, int64_t cout, uint64_t seed) {
  Tensor w = weight(p, dt, {cout, cin, 3, 3}, seed);
  Tensor b = weight(p, dt, {cout}, seed + 1);
  return p.apply("conv", {x, w, b},
                 {{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}}, {"group", int64_t(1)}});
}

// x[B, 3, 32, 32] -> conv 16 -> relu -> maxpool 2 -> conv 32 -> relu -> global avg -> 10
void buildCnn(Program& p, DType dt) {
  Tensor x = p.input("x", dt, {2, 3, 32, 32});
  Tensor h = relu(conv3x3(p, dt, x, 3, 16, 10));
  h = p.apply("max_pool", {h},
              {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}},
               {"pads", std::vector<int64_t>{0, 0, 0, 0}}, {"dilations", std::vector<int64_t>{1, 1}}});
  h = relu(conv3x3(p, dt, h, 16, 32, 20));
  h = reshape(p.apply("global_avg_pool", {h}), {2, 32});
  p.output("y", matmul(h, weight(p, dt, {32, 10}, 30)) + weight(p, dt, {10}, 31));
}

Tensor layerNorm(Program& p, DType dt, const Tensor& x, int64_t d, uint64_t seed) {
  Tensor scale = p.constant(randomTensor(dt, {d}, seed, 0.1)) + 1.0;
  Tensor bias = weight(p, dt, {d}, seed + 1);
  return p.apply("layer_norm", {x, scale, bias}, {{"axis", int64_t(-1)}, {"epsilon", 1e-5}});
}

// One post-norm transformer encoder block: x[S, D], H heads.
void buildEncoder(Program& p, DType dt) {
  const int64_t S = 64, D = 128, H = 4, dh = D / H, F = 256;
  Tensor x = p.input("x", dt, {S, D});
  auto heads = [&](const Tensor& t) { return transpose(reshape(t, {S, H, dh}), {1, 0, 2}); };  // [H, S, dh]
  Tensor q = heads(matmul(x, weight(p, dt, {D, D}, 40)));
  Tensor k = heads(matmul(x, weight(p, dt, {D, D}, 41)));
  Tensor v = heads(matmul(x, weight(p, dt, {D, D}, 42)));
  // softmax(q·kᵀ / sqrt(dh))·v per head: one flash-style kernel (docs/tensor.md).
  Tensor ctx = reshape(transpose(attention(q, k, v), {1, 0, 2}), {S, D});
  Tensor h = layerNorm(p, dt, x + matmul(ctx, weight(p, dt, {D, D}, 43)), D, 44);
  Tensor ff = matmul(gelu(matmul(h, weight(p, dt, {D, F}, 46)) + weight(p, dt, {F}, 47)), weight(p, dt, {F, D}, 48));
  p.output("y", layerNorm(p, dt, h + ff + weight(p, dt, {D}, 49), D, 50));
}

}  // namespace

const std::vector<Model>& models() {
  static const std::vector<Model> list = {
      {"mlp", buildMlp, {8, 784}},
      {"cnn", buildCnn, {2, 3, 32, 32}},
      {"encoder", buildEncoder, {64, 128}},
  };
  return list;
}

HostTensor exampleInput(const Model& m, DType dt) { return randomTensor(dt, m.inputShape, 99, 1); }

}  // namespace eph::tensor::examples
