// resize (docs/tensor.md) on every target against ONNX's Resize in float64
// (the reference below, after onnx/reference/ops/op_resize.py): every mode,
// rounding and coordinate transformation, scales and sizes, axes, and the
// ONNX backend tests' outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "tests/tensor/IndexTestUtil.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

// ---- resize ---------------------------------------------------------------------------
void resizeCase(const Ref& x, DType t, const std::vector<std::pair<Shape, ResizeOptions>>& cases, bool view = false,
                double tol = 1e-5) {
  Program p;
  std::vector<HostTensor> in;
  Tensor tx = view ? viewOf(p, "x", t, x, in) : inputOf(p, "x", t, x, in);
  std::vector<std::vector<double>> want;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& [sizes, o] = cases[i];
    Tensor y = resize(tx, sizes, o);
    EXPECT_EQ(y.shape(), sizes);
    p.output("y" + std::to_string(i), y);
    Ref w = resizeRef(x, sizes, o);
    if (isInt(t))
      for (double& v : w.v) v = std::round(v);
    want.push_back(w.v);
  }
  expectOnAllTargets(p, in, want, tol);
}

TEST(IndexResize, NearestEveryRoundingAndCoordinateMode) {
  Ref x = rnd({1, 1, 3, 4}, 81);
  Shape up = {1, 1, 5, 7}, down = {1, 1, 2, 3};
  resizeCase(x, DType::F32,
             {{up, opts("nearest", "half_pixel")},
              {up, opts("nearest", "half_pixel", "round_prefer_ceil")},
              {up, opts("nearest", "asymmetric", "floor")},
              {up, opts("nearest", "align_corners", "ceil")},
              {up, opts("nearest", "pytorch_half_pixel")},
              {down, opts("nearest", "half_pixel")},
              {down, opts("nearest", "asymmetric", "round_prefer_ceil")},
              {{1, 1, 6, 8}, opts("nearest", "half_pixel", "round_prefer_ceil")},  // exact halves
              {{1, 1, 6, 8}, opts("nearest", "half_pixel_symmetric")}},
             true, 0);
}

TEST(IndexResize, LinearEveryCoordinateMode) {
  Ref x = rnd({1, 1, 3, 4}, 82);
  Shape up = {1, 1, 5, 7}, down = {1, 1, 2, 3};
  resizeCase(x, DType::F32,
             {{up, opts("linear", "half_pixel")},
              {up, opts("linear", "asymmetric")},
              {up, opts("linear", "align_corners")},
              {up, opts("linear", "pytorch_half_pixel")},
              {up, opts("linear", "half_pixel_symmetric")}});
}

TEST(IndexResize, LinearDownsamplingAndSizeOne) {
  Ref x = rnd({1, 1, 3, 4}, 88);
  Shape down = {1, 1, 2, 3};
  resizeCase(x, DType::F32,
             {{down, opts("linear", "half_pixel")},
              {down, opts("linear", "align_corners")},
              {{1, 1, 1, 1}, opts("linear", "pytorch_half_pixel")},
              {{1, 1, 3, 1}, opts("linear", "align_corners")}},
             true);
}

TEST(IndexResize, CubicWithCoefficientAndExcludeOutside) {
  Ref x = rnd({1, 1, 4, 5}, 83);
  ResizeOptions half = opts("cubic", "half_pixel"), a5 = opts("cubic", "align_corners"), ex = opts("cubic", "half_pixel");
  a5.cubic_coeff_a = -0.5;
  ex.exclude_outside = true;
  ex.cubic_coeff_a = -0.5;
  resizeCase(x, DType::F32,
             {{{1, 1, 7, 9}, half}, {{1, 1, 7, 9}, a5}, {{1, 1, 7, 9}, ex}}, true);
}

TEST(IndexResize, CubicDownsamplingAndSizeOne) {
  Ref x = rnd({1, 1, 4, 5}, 89);
  ResizeOptions ex = opts("cubic", "half_pixel");
  ex.exclude_outside = true;
  resizeCase(x, DType::F32,
             {{{1, 1, 3, 2}, ex}, {{1, 1, 8, 3}, opts("cubic", "asymmetric")}, {{1, 1, 5, 1}, opts("cubic", "pytorch_half_pixel")}});
}

TEST(IndexResize, ScalesAndEveryAxis) {
  Ref x = rnd({3, 2, 5}, 84);
  ResizeOptions sc = opts("linear", "half_pixel");
  sc.scales = {1.5, 2.5, 0.7};  // sizes floor(in * scale): [4, 5, 3]
  resizeCase(x, DType::F64,
             {{{4, 5, 3}, sc}, {{4, 1, 3}, opts("linear", "align_corners")}, {{5, 3, 2}, opts("cubic", "half_pixel")}}, false,
             1e-12);
}

TEST(IndexResize, TfCropAndResizeExtrapolates) {
  Ref x = rnd({3, 2, 5}, 84);
  ResizeOptions crop = opts("linear", "tf_crop_and_resize");
  crop.roi = {0, 0.2, -0.1, 1, 0.9, 1.3};  // beyond the input on the last axis: extrapolation_value
  crop.extrapolation_value = 10;
  ResizeOptions cropN = crop;
  cropN.mode = "nearest";
  ResizeOptions cropC = crop;
  cropC.mode = "cubic";
  resizeCase(x, DType::F64, {{{2, 3, 7}, crop}, {{2, 3, 7}, cropN}, {{2, 1, 4}, cropC}}, true, 1e-12);
}

// Expected outputs of ONNX's backend tests (onnx/backend/test/case/node/resize.py), which anchor the reference too.
TEST(IndexResize, MatchesOnnxBackendTestOutputs) {
  Ref x2{{1, 1, 2, 2}, {1, 2, 3, 4}};
  std::vector<double> x16;
  for (int i = 1; i <= 16; ++i) x16.push_back(i);
  Ref x4{{1, 1, 4, 4}, x16};
  ResizeOptions nearest = opts("nearest", "half_pixel"), linear = opts("linear", "half_pixel"), cubic = opts("cubic", "half_pixel");
  nearest.scales = {1, 1, 2, 3};
  linear.scales = {1, 1, 2, 2};
  cubic.scales = {1, 1, 2, 2};
  // test_resize_upsample_scales_nearest, _linear, and the first row of _cubic.
  std::vector<double> wantN = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  std::vector<double> wantL = {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4};
  std::vector<double> wantC = {0.47265625, 0.76953125, 1.24609375, 1.875, 2.28125, 2.91015625, 3.38671875, 3.68359375};
  EXPECT_EQ(resizeRef(x2, {1, 1, 4, 6}, nearest).v, wantN);
  EXPECT_EQ(resizeRef(x2, {1, 1, 4, 4}, linear).v, wantL);
  std::vector<double> refC = resizeRef(x4, {1, 1, 8, 8}, cubic).v;
  for (size_t i = 0; i < 8; ++i) EXPECT_NEAR(refC[i], wantC[i], 1e-12) << i;
  Program p;
  std::vector<HostTensor> in;
  Tensor t2 = inputOf(p, "x2", DType::F32, x2, in), t4 = inputOf(p, "x4", DType::F32, x4, in);
  p.output("n", resize(t2, {1, 1, 4, 6}, nearest));
  p.output("l", resize(t2, {1, 1, 4, 4}, linear));
  p.output("c", slice(resize(t4, {1, 1, 8, 8}, cubic), 2, 0, 1));
  expectOnAllTargets(p, in, {wantN, wantL, wantC}, 1e-6);
}

TEST(IndexResize, IntegerBoolAndEmptyTensors) {
  Ref x = rndInt({2, 3}, 85, 0, 255);
  resizeCase(x, DType::U8, {{{3, 5}, opts("linear", "half_pixel")}, {{4, 7}, opts("cubic", "align_corners")}}, false, 0);
  resizeCase(rndInt({2, 3}, 86, -1000, 1000), DType::I32, {{{4, 4}, opts("nearest", "asymmetric")}, {{3, 2}, opts("linear", "half_pixel")}},
             true, 0);
  Program p;
  std::vector<HostTensor> in;
  Ref m = rndInt({2, 2}, 87, 0, 1);
  Tensor tm = inputOf(p, "m", DType::Bool, m, in);
  p.output("m", resize(tm, {3, 4}));
  Tensor e = inputOf(p, "e", DType::F32, Ref{{0, 3}, {}}, in);
  p.output("e", resize(e, {0, 6}, opts("linear", "half_pixel")));
  p.output("z", resize(tm, {2, 0}));
  expectOnAllTargets(p, in, {resizeRef(m, {3, 4}, opts("nearest", "half_pixel")).v, {}, {}}, 0);
}

TEST(IndexResize, AxesAndSymmetricHalfPixelWithScales) {
  Ref x = rnd({2, 3, 5}, 114);
  ResizeOptions sym = opts("linear", "half_pixel_symmetric");
  sym.scales = {1.5, 2.5, 0.7};  // sizes [3, 7, 3]: the symmetric offset is not 0
  resizeCase(x, DType::F32, {{{3, 7, 3}, sym}, {{3, 7, 3}, opts("nearest", "half_pixel_symmetric", "round_prefer_ceil")}});
  Program p;
  std::vector<HostTensor> in;
  Tensor tx = inputOf(p, "x", DType::F32, x, in);
  Tensor y = p.apply("resize", {tx},
                     {{"sizes", std::vector<int64_t>{7}}, {"axes", std::vector<int64_t>{-1}}, {"mode", std::string("cubic")}});
  EXPECT_EQ(y.shape(), (Shape{2, 3, 7}));
  p.output("y", y);
  expectOnAllTargets(p, in, {resizeRef(x, {2, 3, 7}, opts("cubic", "half_pixel")).v});
}


}  // namespace
}  // namespace eph::tensor::test
