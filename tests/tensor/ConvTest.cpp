// Convolution, transposed convolution and pooling (frontends/tensor/ops/
// Conv.cpp) on every target against float64 references computed here, on
// several shapes (size 1, empty, odd) and non-contiguous views; errors name
// the op and the shapes.
#include <gtest/gtest.h>

#include <array>
#include <functional>
#include <map>

#include "frontends/tensor/Lower.h"
#include "ir/Printer.h"
#include "tests/tensor/LinalgTestUtil.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

// ---- conv -----------------------------------------------------------------------------------

struct ConvCase {
  Shape x, w;
  std::vector<int64_t> strides, padBegin, padEnd, dilations;
  int64_t group = 1;
  bool bias = false;
};

Shape convOut(const ConvCase& c) {
  Shape out = {c.x[0], c.w[0]};
  for (size_t d = 0; d + 2 < c.x.size(); ++d) {
    int64_t eff = (c.w[d + 2] - 1) * c.dilations[d] + 1;
    out.push_back((c.x[d + 2] + c.padBegin[d] + c.padEnd[d] - eff) / c.strides[d] + 1);
  }
  return out;
}

Vec refConv(const ConvCase& c, const Vec& x, const Vec& w, const Vec& b) {
  Shape out = convOut(c);
  size_t k = c.x.size() - 2;
  int64_t M = c.w[0], Cg = c.w[1], Mg = M / c.group;
  Shape kernel(c.w.begin() + 2, c.w.end());
  Vec y(size_t(numel(out)));
  for (int64_t i = 0; i < numel(out); ++i) {
    Idx o = unravel(i, out);
    int64_t g = o[1] / Mg;
    double sum = c.bias ? b[size_t(o[1])] : 0;
    for (int64_t ch = 0; ch < Cg; ++ch)
      for (int64_t t = 0; t < numel(kernel); ++t) {
        Idx j = unravel(t, kernel);
        Idx xi = {o[0], g * Cg + ch};
        bool inside = true;
        for (size_t d = 0; d < k; ++d) {
          int64_t pos = o[d + 2] * c.strides[d] - c.padBegin[d] + j[d] * c.dilations[d];
          inside = inside && pos >= 0 && pos < c.x[d + 2];
          xi.push_back(pos);
        }
        if (!inside) continue;
        Idx wi = {o[1], ch};
        wi.insert(wi.end(), j.begin(), j.end());
        sum += x[size_t(ravel(xi, c.x))] * w[size_t(ravel(wi, c.w))];
      }
    y[size_t(i)] = sum;
  }
  return y;
}

void runConvCases(const std::vector<ConvCase>& cases, const LowerOptions& opts = {}) {
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<Vec> want;
  uint64_t seed = 100;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvCase& c = cases[i];
    Vec xv = randomValues(size_t(numel(c.x)), seed++), wv = randomValues(size_t(numel(c.w)), seed++),
        bv = randomValues(size_t(c.w[0]), seed++);
    std::string n = std::to_string(i);
    Tensor x = p.input("x" + n, DType::F32, c.x);
    Tensor w = p.input("w" + n, DType::F32, c.w);
    Tensor b = c.bias ? p.input("b" + n, DType::F32, {c.w[0]}) : Tensor();
    std::vector<int64_t> pads = c.padBegin;
    pads.insert(pads.end(), c.padEnd.begin(), c.padEnd.end());
    Tensor y = conv(x, w, b, {.strides = c.strides, .pads = pads, .dilations = c.dilations, .group = c.group});
    EXPECT_EQ(y.shape(), convOut(c)) << "case " << i;
    p.output("y" + n, y);
    inputs.push_back(HostTensor::of(DType::F32, c.x, xv));
    inputs.push_back(HostTensor::of(DType::F32, c.w, wv));
    if (c.bias) inputs.push_back(HostTensor::of(DType::F32, {c.w[0]}, bv));
    want.push_back(refConv(c, xv, wv, bv));
  }
  expectOnAllTargets(p, inputs, want, 1e-5, opts);
}

TEST(Linalg, Conv1dStridesPadsDilationsGroups) {
  runConvCases({{{2, 3, 11}, {4, 3, 3}, {1}, {0}, {0}, {1}, 1, true},
                {{1, 4, 9}, {6, 2, 3}, {2}, {1}, {2}, {2}, 2, true},
                {{1, 1, 1}, {1, 1, 1}, {1}, {0}, {0}, {1}, 1, false},
                {{0, 2, 5}, {3, 2, 2}, {1}, {0}, {0}, {1}, 1, true}});
}

TEST(Linalg, Conv2dStridesPadsDilationsGroups) {
  runConvCases({{{2, 3, 7, 6}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true},
                {{1, 4, 9, 8}, {4, 1, 3, 2}, {2, 3}, {0, 2}, {1, 0}, {2, 1}, 4, false},
                {{1, 6, 5, 5}, {4, 3, 2, 2}, {1, 2}, {1, 0}, {0, 1}, {1, 2}, 2, true},
                {{1, 2, 3, 3}, {1, 2, 1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, 1, false}});
}

TEST(Linalg, Conv2dAsTiledMatmul) {
  // Enough output channels, positions and taps for a matrix product (with
  // groups, dilations, odd sizes): an implicit GEMM (one dispatch gathering
  // from x, storing in place with the bias) in the 64-invocation kernel
  // (matmulBlock 0) and in the blocked one (4 and 8; and where M is at most
  // 64, 64 x 256 tiles in steps of 16 and 64 x 128 tiles of 8x8 blocks).
  for (unsigned block : {0u, 4u, 8u, 16u, 88u}) {
    SCOPED_TRACE("matmulBlock " + std::to_string(block));
    LowerOptions o;
    o.tune = false;
    o.matmulBlock = block > 8 ? 8 : block;
    if (block == 16) o.matmulWide = 16, o.matmulKStep = 16, o.maxWorkgroupMemory = 32768;
    if (block == 88) o.matmulWide = 8, o.matmulWideRows = 8, o.matmulWarpTiles = true;
    runConvCases({{{1, 2, 6, 6}, {32, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 1, true},
                  {{2, 4, 6, 7}, {64, 2, 3, 3}, {1, 1}, {1, 0}, {1, 1}, {2, 1}, 2, true},
                  {{2, 3, 12, 12}, {130, 3, 3, 3}, {2, 1}, {1, 1}, {1, 1}, {1, 1}, 1, false},
                  // Output rows a multiple of 4 wide (B's elements gathered
                  // four at a time): strides, dilations and padding along the
                  // row, and a 1-D conv.
                  {{2, 3, 9, 17}, {40, 3, 3, 3}, {1, 2}, {1, 2}, {1, 1}, {1, 2}, 1, true},
                  {{2, 8, 64}, {48, 8, 5}, {1}, {2}, {2}, {1}, 1, true}},
                 o);
  }
}

TEST(Linalg, Conv3dAndLargeKernelLoop) {
  runConvCases({{{1, 2, 4, 5, 3}, {3, 2, 2, 3, 2}, {1, 2, 1}, {1, 0, 1}, {0, 1, 1}, {1, 1, 2}, 1, true},
                // 9x9 = 81 taps: the looped (not unrolled) window.
                {{1, 2, 10, 11}, {2, 1, 9, 9}, {1, 1}, {2, 1}, {1, 2}, {1, 1}, 2, true}});
}

TEST(Linalg, ConvAutoPadAndNonContiguousInput) {
  Program p;
  // x is a [1, 2, 5, 6] view: the transpose of a [1, 2, 6, 5] input's last two axes.
  Vec xt = randomValues(60, 200), wv = randomValues(3 * 2 * 3 * 2, 201);
  Tensor x = transpose(p.input("xt", DType::F32, {1, 2, 6, 5}), {0, 1, 3, 2});
  Tensor w = p.input("w", DType::F32, {3, 2, 3, 2});
  Tensor up = conv(x, w, {}, {.strides = {2, 1}, .autoPad = "SAME_UPPER"});
  Tensor lo = conv(x, w, {}, {.strides = {2, 1}, .autoPad = "SAME_LOWER"});
  Tensor va = conv(x, w, {}, {.strides = {2, 1}, .autoPad = "VALID"});
  Vec w3v = randomValues(32 * 2 * 9, 202);
  Tensor w3 = p.input("w3", DType::F32, {32, 2, 3, 3});
  Tensor big = conv(x, w3, {}, {.pads = {1, 2, 1, 2}});  // the implicit GEMM, gathering from a view
  EXPECT_EQ(up.shape(), (Shape{1, 3, 3, 6}));
  EXPECT_EQ(va.shape(), (Shape{1, 3, 2, 5}));
  p.output("up", up);
  p.output("lo", lo);
  p.output("va", va);
  p.output("big", big);
  Vec xv(60);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) xv[size_t(c * 30 + i * 6 + j)] = xt[size_t(c * 30 + j * 5 + i)];
  // SAME with stride 2 over 5 rows: out 3, total pad (3-1)*2+3-5 = 2 -> 1, 1; over 6 columns, kernel 2: total 1.
  ConvCase cu{{1, 2, 5, 6}, {3, 2, 3, 2}, {2, 1}, {1, 0}, {1, 1}, {1, 1}};
  ConvCase cl{{1, 2, 5, 6}, {3, 2, 3, 2}, {2, 1}, {1, 1}, {1, 0}, {1, 1}};
  ConvCase cv{{1, 2, 5, 6}, {3, 2, 3, 2}, {2, 1}, {0, 0}, {0, 0}, {1, 1}};
  ConvCase cb{{1, 2, 5, 6}, {32, 2, 3, 3}, {1, 1}, {1, 2}, {1, 2}, {1, 1}};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {1, 2, 6, 5}, xt), HostTensor::of(DType::F32, {3, 2, 3, 2}, wv),
                         HostTensor::of(DType::F32, {32, 2, 3, 3}, w3v)},
                     {refConv(cu, xv, wv, {}), refConv(cl, xv, wv, {}), refConv(cv, xv, wv, {}), refConv(cb, xv, w3v, {})},
                     1e-5);
}

TEST(Linalg, ConvAttributesAsTheModelsPassThem) {
  // examples/tensor/Models.cpp and bench/tensor apply "conv" with ONNX attribute names.
  Program p;
  Vec xv = randomValues(2 * 3 * 4 * 4, 300), wv = randomValues(2 * 3 * 9, 301);
  Tensor y = p.apply("conv", {p.input("x", DType::F32, {2, 3, 4, 4}), p.input("w", DType::F32, {2, 3, 3, 3})},
                     {{"strides", std::vector<int64_t>{1, 1}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                      {"dilations", std::vector<int64_t>{1, 1}}, {"group", int64_t(1)},
                      {"kernel_shape", std::vector<int64_t>{3, 3}}});
  p.output("y", y);
  ConvCase c{{2, 3, 4, 4}, {2, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {2, 3, 4, 4}, xv), HostTensor::of(DType::F32, {2, 3, 3, 3}, wv)},
                     {refConv(c, xv, wv, {})}, 1e-5);
}

TEST(Linalg, ConvErrors) {
  auto err = [](Shape x, Shape w, Attrs a, int bias = -1) {
    Program p;
    std::vector<Tensor> in = {p.input("x", DType::F32, x), p.input("w", DType::F32, w)};
    if (bias >= 0) in.push_back(p.input("b", DType::F32, {bias}));
    p.apply("conv", in, a);
    return errorOf(p);
  };
  EXPECT_NE(err({2, 3}, {4, 3}, {}).find("conv wants x of rank 3 or more ([N, C, spatial..]), got [2, 3]"), std::string::npos);
  EXPECT_NE(err({1, 3, 5}, {4, 2, 3}, {}).find("conv: x [1, 3, 5] has 3 channels but w [4, 2, 3] with group 1 wants 2"),
            std::string::npos);
  EXPECT_NE(err({1, 4, 5}, {3, 2, 3}, {{"group", int64_t(2)}}).find("are not a multiple of group 2"), std::string::npos);
  EXPECT_NE(err({1, 3, 5, 5}, {4, 3, 3, 3}, {{"pads", std::vector<int64_t>{1, 1}}})
                .find("conv: pads [1, 1] has 2 entries; want 4"), std::string::npos);
  EXPECT_NE(err({1, 3, 5}, {4, 3, 3}, {{"strides", std::vector<int64_t>{0}}}).find("conv: strides [0] has an entry below 1"),
            std::string::npos);
  EXPECT_NE(err({1, 3, 2}, {4, 3, 5}, {}).find("is larger than the padded input (2 + 0 + 0)"), std::string::npos);
  EXPECT_NE(err({1, 3, 5}, {4, 3, 3}, {{"auto_pad", std::string("SAME")}}).find("conv: auto_pad 'SAME' is not NOTSET"),
            std::string::npos);
  EXPECT_NE(err({1, 3, 5}, {4, 3, 3}, {}, 3).find("conv: the bias [3] must be [4] for w [4, 3, 3]"), std::string::npos);
  EXPECT_NE(err({1, 3, 5}, {4, 3, 3}, {{"kernel_shape", std::vector<int64_t>{2}}}).find("kernel_shape [2] does not match"),
            std::string::npos);
  Program q;
  conv(q.input("x", DType::I32, {1, 1, 3}), q.input("w", DType::I32, {1, 1, 1}));
  EXPECT_ERROR(q, "conv wants float tensors, not i32 and i32");
}

// ---- conv_transpose -------------------------------------------------------------------------

struct ConvTCase {
  Shape x, w;
  std::vector<int64_t> strides, padBegin, padEnd, dilations, outPad;
  int64_t group = 1;
};

Shape convTOut(const ConvTCase& c) {
  Shape out = {c.x[0], c.w[1] * c.group};
  for (size_t d = 0; d + 2 < c.x.size(); ++d)
    out.push_back(c.strides[d] * (c.x[d + 2] - 1) + c.outPad[d] + (c.w[d + 2] - 1) * c.dilations[d] + 1 - c.padBegin[d] -
                  c.padEnd[d]);
  return out;
}

// Scatter form: every x element adds x·w to the outputs its taps reach.
Vec refConvT(const ConvTCase& c, const Vec& x, const Vec& w, const Vec* b) {
  Shape out = convTOut(c);
  size_t k = c.x.size() - 2;
  int64_t Cg = c.x[1] / c.group, Mg = c.w[1];
  Shape kernel(c.w.begin() + 2, c.w.end());
  Vec y(size_t(numel(out)), 0);
  for (int64_t i = 0; i < numel(c.x); ++i) {
    Idx xi = unravel(i, c.x);
    int64_t g = xi[1] / Cg;
    for (int64_t ml = 0; ml < Mg; ++ml)
      for (int64_t t = 0; t < numel(kernel); ++t) {
        Idx j = unravel(t, kernel);
        Idx oi = {xi[0], g * Mg + ml};
        bool inside = true;
        for (size_t d = 0; d < k; ++d) {
          int64_t o = xi[d + 2] * c.strides[d] - c.padBegin[d] + j[d] * c.dilations[d];
          inside = inside && o >= 0 && o < out[d + 2];
          oi.push_back(o);
        }
        if (!inside) continue;
        Idx wi = {xi[1], ml};
        wi.insert(wi.end(), j.begin(), j.end());
        y[size_t(ravel(oi, out))] += x[size_t(i)] * w[size_t(ravel(wi, c.w))];
      }
  }
  if (b)
    for (int64_t i = 0; i < numel(out); ++i) y[size_t(i)] += (*b)[size_t(unravel(i, out)[1])];
  return y;
}

TEST(Linalg, ConvTransposeStridesPadsOutputPaddingGroups) {
  std::vector<ConvTCase> cases = {{{2, 3, 5}, {3, 2, 3}, {2}, {1}, {0}, {1}, {1}, 1},
                                  {{1, 4, 3, 4}, {4, 3, 3, 2}, {2, 3}, {1, 0}, {0, 1}, {1, 2}, {0, 1}, 2},
                                  {{1, 2, 1, 1}, {2, 1, 1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {0, 0}, 1},
                                  {{1, 1, 2, 3, 2}, {1, 2, 2, 2, 3}, {1, 2, 1}, {0, 1, 1}, {0, 0, 1}, {1, 1, 1}, {0, 1, 0}, 1},
                                  // 9x9 = 81 taps: the looped (not unrolled) window.
                                  {{1, 2, 3, 4}, {2, 1, 9, 9}, {1, 2}, {1, 2}, {0, 1}, {1, 1}, {0, 1}, 1}};
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<Vec> want;
  uint64_t seed = 400;
  for (size_t i = 0; i < cases.size(); ++i) {
    const ConvTCase& c = cases[i];
    Vec xv = randomValues(size_t(numel(c.x)), seed++), wv = randomValues(size_t(numel(c.w)), seed++);
    Vec bv = randomValues(size_t(c.w[1] * c.group), seed++);
    std::string n = std::to_string(i);
    std::vector<int64_t> pads = c.padBegin;
    pads.insert(pads.end(), c.padEnd.begin(), c.padEnd.end());
    Tensor x = p.input("x" + n, DType::F32, c.x);
    Tensor w = p.input("w" + n, DType::F32, c.w);
    Tensor b = p.input("b" + n, DType::F32, {c.w[1] * c.group});
    Tensor y = conv_transpose(x, w, b,
                              {.strides = c.strides, .pads = pads, .dilations = c.dilations, .outputPadding = c.outPad,
                               .group = c.group});
    EXPECT_EQ(y.shape(), convTOut(c)) << i;
    p.output("y" + n, y);
    inputs.push_back(HostTensor::of(DType::F32, c.x, xv));
    inputs.push_back(HostTensor::of(DType::F32, c.w, wv));
    inputs.push_back(HostTensor::of(DType::F32, {c.w[1] * c.group}, bv));
    want.push_back(refConvT(c, xv, wv, &bv));
  }
  expectOnAllTargets(p, inputs, want, 1e-5);
}

TEST(Linalg, ConvTransposeOutputShapeAndAutoPad) {
  Program p;
  Vec xv = randomValues(2 * 4, 500), wv = randomValues(2 * 3 * 3, 501);
  Tensor x = p.input("x", DType::F32, {1, 2, 4});
  Tensor w = p.input("w", DType::F32, {2, 3, 3});
  // Full extent 2·3 + 3 = 9; output_shape 8 removes 1: NOTSET puts it at the beginning, SAME_UPPER at the end.
  Tensor a = conv_transpose(x, w, {}, {.strides = {2}, .outputShape = {8}});
  Tensor b = conv_transpose(x, w, {}, {.strides = {2}, .autoPad = "SAME_UPPER"});
  Tensor c = conv_transpose(x, w, {}, {.strides = {2}, .autoPad = "SAME_LOWER"});
  EXPECT_EQ(a.shape(), (Shape{1, 3, 8}));
  EXPECT_EQ(b.shape(), (Shape{1, 3, 8}));
  p.output("a", a);
  p.output("b", b);
  p.output("c", c);
  ConvTCase ca{{1, 2, 4}, {2, 3, 3}, {2}, {1}, {0}, {1}, {0}};
  ConvTCase cb{{1, 2, 4}, {2, 3, 3}, {2}, {0}, {1}, {1}, {0}};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {1, 2, 4}, xv), HostTensor::of(DType::F32, {2, 3, 3}, wv)},
                     {refConvT(ca, xv, wv, nullptr), refConvT(cb, xv, wv, nullptr), refConvT(ca, xv, wv, nullptr)}, 1e-5);

  Program q;
  conv_transpose(q.input("x", DType::F32, {1, 2, 4}), q.input("w", DType::F32, {3, 3, 3}));
  EXPECT_ERROR(q, "conv_transpose: x [1, 2, 4] has 2 channels but w [3, 3, 3] has 3");
  // output_shape past the full extent (ONNX allows it): negative padding,
  // halves rounded down. 11 of 9: -1 at each end; SAME_UPPER 10 of 9: -1 at the beginning.
  Program r;
  Tensor rx = r.input("x", DType::F32, {1, 2, 4});
  Tensor rw = r.input("w", DType::F32, {2, 3, 3});
  Tensor d = conv_transpose(rx, rw, {}, {.strides = {2}, .outputShape = {11}});
  Tensor e = conv_transpose(rx, rw, {}, {.strides = {2}, .outputShape = {10}, .autoPad = "SAME_UPPER"});
  EXPECT_EQ(d.shape(), (Shape{1, 3, 11}));
  EXPECT_EQ(e.shape(), (Shape{1, 3, 10}));
  r.output("d", d);
  r.output("e", e);
  ConvTCase cd{{1, 2, 4}, {2, 3, 3}, {2}, {-1}, {-1}, {1}, {0}};
  ConvTCase ce{{1, 2, 4}, {2, 3, 3}, {2}, {-1}, {0}, {1}, {0}};
  expectOnAllTargets(r, {HostTensor::of(DType::F32, {1, 2, 4}, xv), HostTensor::of(DType::F32, {2, 3, 3}, wv)},
                     {refConvT(cd, xv, wv, nullptr), refConvT(ce, xv, wv, nullptr)}, 1e-5);
}

// ---- pooling --------------------------------------------------------------------------------

enum class PoolKind { Max, Avg, Lp };

struct PoolCase {
  PoolKind kind;
  Shape x;
  std::vector<int64_t> kernel, strides, padBegin, padEnd, dilations;
  bool ceil = false, includePad = false;
  Shape out;  // expected spatial extents
};

Vec refPool(const PoolCase& c, const Vec& x, int64_t pw = 2) {
  Shape out = {c.x[0], c.x[1]};
  out.insert(out.end(), c.out.begin(), c.out.end());
  size_t k = c.x.size() - 2;
  Shape kernel = c.kernel;
  Vec y(size_t(numel(out)));
  for (int64_t i = 0; i < numel(out); ++i) {
    Idx o = unravel(i, out);
    double mx = -INFINITY, sum = 0, count = 0;
    for (int64_t t = 0; t < numel(kernel); ++t) {
      Idx j = unravel(t, kernel);
      Idx xi = {o[0], o[1]};
      bool inside = true, inPad = true;
      for (size_t d = 0; d < k; ++d) {
        int64_t pos = o[d + 2] * c.strides[d] - c.padBegin[d] + j[d] * c.dilations[d];
        inside = inside && pos >= 0 && pos < c.x[d + 2];
        inPad = inPad && pos >= -c.padBegin[d] && pos < c.x[d + 2] + c.padEnd[d];
        xi.push_back(pos);
      }
      if (c.includePad ? inPad : inside) ++count;
      if (!inside) continue;
      double v = x[size_t(ravel(xi, c.x))];
      mx = std::max(mx, v);
      sum += c.kind == PoolKind::Lp ? std::pow(std::abs(v), double(pw)) : v;
    }
    y[size_t(i)] = c.kind == PoolKind::Max ? mx : c.kind == PoolKind::Avg ? sum / count : std::pow(sum, 1.0 / double(pw));
  }
  return y;
}

void runPoolCases(const std::vector<PoolCase>& cases, int64_t pw = 2) {
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<Vec> want;
  uint64_t seed = 600;
  for (size_t i = 0; i < cases.size(); ++i) {
    const PoolCase& c = cases[i];
    Vec xv = randomValues(size_t(numel(c.x)), seed++);
    std::vector<int64_t> pads = c.padBegin;
    pads.insert(pads.end(), c.padEnd.begin(), c.padEnd.end());
    PoolOptions o{.kernel = c.kernel, .strides = c.strides, .pads = pads, .dilations = c.dilations, .ceilMode = c.ceil,
                  .countIncludePad = c.includePad};
    Tensor x = p.input("x" + std::to_string(i), DType::F32, c.x);
    Tensor y = c.kind == PoolKind::Max ? max_pool(x, o) : c.kind == PoolKind::Avg ? avg_pool(x, o) : lp_pool(x, o, pw);
    Shape out = {c.x[0], c.x[1]};
    out.insert(out.end(), c.out.begin(), c.out.end());
    EXPECT_EQ(y.shape(), out) << "case " << i;
    p.output("y" + std::to_string(i), y);
    inputs.push_back(HostTensor::of(DType::F32, c.x, xv));
    want.push_back(refPool(c, xv, pw));
  }
  expectOnAllTargets(p, inputs, want, 1e-5);
}

TEST(Linalg, MaxPoolCeilModePadsDilations) {
  runPoolCases({{PoolKind::Max, {2, 3, 7, 7}, {3, 3}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, false, false, {3, 3}},
                // ceil_mode: ceil((7 + 2 - 3) / 2) + 1 = 4; the last window starts at 6 - 1 = 5 < 7: kept.
                {PoolKind::Max, {1, 2, 7, 6}, {3, 2}, {2, 2}, {1, 0}, {1, 0}, {1, 1}, true, false, {4, 3}},
                // ceil_mode: ceil((5 + 1 - 2) / 2) + 1 = 3, the last window [4, 6) half inside: kept.
                {PoolKind::Max, {1, 1, 5}, {2}, {2}, {0}, {1}, {1}, true, false, {3}},
                // ceil((5 + 2 - 3) / 3) + 1 = 3, but the last window would start at 6, in the end padding: dropped.
                {PoolKind::Max, {1, 1, 5}, {3}, {3}, {0}, {2}, {1}, true, false, {2}},
                {PoolKind::Max, {1, 2, 9, 8}, {2, 3}, {1, 2}, {1, 1}, {0, 1}, {2, 2}, false, false, {8, 3}},
                {PoolKind::Max, {1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, false, false, {1, 1}},
                {PoolKind::Max, {0, 2, 4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, false, false, {2, 2}},
                {PoolKind::Max, {1, 2, 3, 4, 5}, {2, 2, 3}, {1, 2, 2}, {0, 1, 1}, {1, 0, 1}, {1, 1, 1}, true, false, {3, 3, 3}}});
}

TEST(Linalg, AvgAndLpPoolCountIncludePadAndCeilMode) {
  runPoolCases({{PoolKind::Avg, {2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false, false, {4, 4}},
                {PoolKind::Avg, {2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, false, true, {4, 4}},
                // ceil_mode with count_include_pad: the window past the padding counts only up to it.
                {PoolKind::Avg, {1, 2, 6, 5}, {3, 3}, {2, 2}, {1, 0}, {1, 0}, {1, 1}, true, true, {4, 2}},
                {PoolKind::Avg, {1, 1, 9}, {4}, {3}, {2}, {1}, {1}, true, false, {4}},
                {PoolKind::Lp, {1, 2, 5, 6}, {2, 3}, {1, 2}, {1, 0}, {0, 1}, {1, 1}, false, false, {5, 3}}});
  runPoolCases({{PoolKind::Lp, {1, 2, 5}, {3}, {1}, {1}, {1}, {1}, false, false, {5}}}, 3);
}

TEST(Linalg, PoolAutoPadIntegersAndNonContiguous) {
  Program p;
  Vec xt = randomValues(2 * 5 * 6, 700, -10, 10);
  for (double& v : xt) v = std::round(v);
  // x [1, 2, 5, 6]: transposed storage.
  Tensor x = transpose(p.input("xt", DType::F32, {1, 2, 6, 5}), {0, 1, 3, 2});
  Tensor xi = transpose(p.input("it", DType::I32, {1, 2, 6, 5}), {0, 1, 3, 2});
  Tensor up = max_pool(x, {.kernel = {3, 2}, .strides = {2, 2}, .autoPad = "SAME_UPPER"});
  Tensor lo = avg_pool(x, {.kernel = {3, 2}, .strides = {2, 2}, .autoPad = "SAME_LOWER"});
  Tensor mi = max_pool(xi, {.kernel = {2, 2}, .strides = {1, 1}});
  EXPECT_EQ(up.shape(), (Shape{1, 2, 3, 3}));
  EXPECT_EQ(mi.dtype(), DType::I32);
  p.output("up", up);
  p.output("lo", lo);
  p.output("mi", mi);
  Vec xv(60);
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 6; ++j) xv[size_t(c * 30 + i * 6 + j)] = xt[size_t(c * 30 + j * 5 + i)];
  // SAME over 5 rows, kernel 3, stride 2: out 3, total pad 2 (1, 1); over 6 columns, kernel 2, stride 2: out 3, total 0.
  PoolCase cu{PoolKind::Max, {1, 2, 5, 6}, {3, 2}, {2, 2}, {1, 0}, {1, 0}, {1, 1}, false, false, {3, 3}};
  PoolCase cl{PoolKind::Avg, {1, 2, 5, 6}, {3, 2}, {2, 2}, {1, 0}, {1, 0}, {1, 1}, false, false, {3, 3}};
  PoolCase ci{PoolKind::Max, {1, 2, 5, 6}, {2, 2}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, false, false, {4, 5}};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {1, 2, 6, 5}, xt), HostTensor::of(DType::I32, {1, 2, 6, 5}, xt)},
                     {refPool(cu, xv), refPool(cl, xv), refPool(ci, xv)}, 1e-5);
}

TEST(Linalg, GlobalPools) {
  Program p;
  Vec xv = randomValues(2 * 3 * 4 * 5, 800), yv = randomValues(2 * 3 * 7, 801);
  Tensor x = p.input("x", DType::F32, {2, 3, 4, 5});
  Tensor y = slice(p.input("y", DType::F32, {2, 3, 7}), 2, 1, 7, 2);  // [2, 3, 3], strided
  Tensor ga = global_avg_pool(x);
  EXPECT_EQ(ga.shape(), (Shape{2, 3, 1, 1}));
  p.output("avg", ga);
  p.output("max", global_max_pool(x));
  p.output("lp", global_lp_pool(y, 3));
  p.output("e", global_avg_pool(p.input("e", DType::F32, {0, 3, 2})));
  Vec avg, mx, lp;
  for (int nc = 0; nc < 6; ++nc) {
    double s = 0, m = -INFINITY, l = 0;
    for (int i = 0; i < 20; ++i) {
      s += xv[size_t(nc * 20 + i)];
      m = std::max(m, xv[size_t(nc * 20 + i)]);
    }
    for (int i = 1; i < 7; i += 2) l += std::pow(std::abs(yv[size_t(nc * 7 + i)]), 3);
    avg.push_back(s / 20);
    mx.push_back(m);
    lp.push_back(std::cbrt(l));
  }
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {2, 3, 4, 5}, xv), HostTensor::of(DType::F32, {2, 3, 7}, yv),
                         HostTensor(DType::F32, {0, 3, 2})},
                     {avg, mx, lp, {}}, 1e-5);
}

TEST(Linalg, PoolErrors) {
  Program p;
  max_pool(p.input("x", DType::F32, {1, 1, 4, 4}), {});
  EXPECT_ERROR(p, "max_pool: kernel_shape is required");
  Program q;
  avg_pool(q.input("x", DType::I32, {1, 1, 4}), {.kernel = {2}});
  EXPECT_ERROR(q, "avg_pool wants a float tensor, not i32");
  Program r;
  max_pool(r.input("x", DType::F32, {1, 1, 4, 4}), {.kernel = {2}});
  EXPECT_ERROR(r, "max_pool: kernel_shape [2] has 1 entries; want 2");
  Program s;
  max_pool(s.input("x", DType::F32, {1, 4}), {.kernel = {2}});
  EXPECT_ERROR(s, "max_pool wants x of rank 3 or more ([N, C, spatial..]), got [1, 4]");
  Program t;
  global_avg_pool(t.input("x", DType::F32, {4}));
  EXPECT_ERROR(t, "global_avg_pool wants x of rank 2 or more");
}


}  // namespace
}  // namespace eph::tensor::test
