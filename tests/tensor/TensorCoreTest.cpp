// The tensor frontend's core: programs of elementwise and view ops on every
// target against float64 references, dtype/shape errors at the call site, and
// kernels shared by content.
#include <gtest/gtest.h>

#include "frontends/tensor/Lower.h"
#include "ir/Printer.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

TEST(TensorCore, BroadcastChainMatchesFloat64) {
  Program p;
  Tensor x = p.input("x", DType::F32, {2, 3, 4});
  Tensor y = p.input("y", DType::F32, {3, 1});
  p.output("z", relu(x * 2.0 + y) - tanh(y));
  auto xv = randomValues(24, 1), yv = randomValues(3, 2);
  std::vector<double> want(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        double v = xv[size_t(i * 12 + j * 4 + k)] * 2 + yv[size_t(j)];
        want[size_t(i * 12 + j * 4 + k)] = std::max(v, 0.0) - std::tanh(yv[size_t(j)]);
      }
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {2, 3, 4}, xv), HostTensor::of(DType::F32, {3, 1}, yv)}, {want});
}

TEST(TensorCore, ViewsReadThroughStridesWithoutCopies) {
  Program p;
  Tensor x = p.input("x", DType::F64, {4, 6});
  Tensor t = transpose(x);                    // [6, 4]
  Tensor s = slice(t, 0, 5, -100, -2);       // rows 5, 3, 1: [3, 4]
  Tensor u = unsqueeze(s, {0});               // [1, 3, 4]
  Tensor e = expand(u, {2, 3, 4});            // [2, 3, 4]
  p.output("e", e * 1.0);
  p.output("r", reshape(s, {4, 3}));          // non-contiguous: a copy
  std::vector<double> xv = randomValues(24, 3);
  std::vector<double> sv;
  for (int r : {5, 3, 1})
    for (int c = 0; c < 4; ++c) sv.push_back(xv[size_t(c * 6 + r)]);
  std::vector<double> ev = sv;
  ev.insert(ev.end(), sv.begin(), sv.end());
  expectOnAllTargets(p, {HostTensor::of(DType::F64, {4, 6}, xv)}, {ev, sv}, 0);
  // Views make no kernel: the only kernels are the multiply and the copy.
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_TRUE(c) << c.error().message;
  int kernels = 0;
  for (const auto& f : c->module->functions()) kernels += f->kind() == ir::FunctionKind::Kernel;
  EXPECT_EQ(kernels, 2);
}

TEST(TensorCore, PromotionCastsAndComparisons) {
  Program p;
  Tensor a = p.input("a", DType::I32, {5});
  Tensor b = p.input("b", DType::F32, {5});
  Tensor sum = a + b;  // i32 + f32 -> f64, as numpy
  EXPECT_EQ(sum.dtype(), DType::F64);
  Tensor m = gt(a, 2.0);
  EXPECT_EQ(m.dtype(), DType::Bool);
  p.output("w", where(m, sum, b));
  p.output("c", cast(b, DType::I32));
  p.output("mod", mod(a, p.constant(HostTensor::ofInts(DType::I32, {}, {-3}))));
  std::vector<double> av = {-4, 1, 2, 3, 7}, bv = {0.5, -1.5, 2.25, -3.75, 9.5};
  std::vector<double> w, c, md;
  for (size_t i = 0; i < 5; ++i) {
    w.push_back(av[i] > 2 ? av[i] + bv[i] : bv[i]);
    c.push_back(std::trunc(bv[i]));
    int64_t r = int64_t(av[i]) % -3;
    if (r != 0 && (r < 0) != (-3 < 0)) r += -3;
    md.push_back(double(r));
  }
  expectOnAllTargets(p, {HostTensor::of(DType::I32, {5}, av), HostTensor::of(DType::F32, {5}, bv)}, {w, c, md});
}

TEST(TensorCore, RoundIsHalfToEvenAndMinMaxPropagateNaN) {
  Program p;
  Tensor x = p.input("x", DType::F32, {6});
  p.output("r", round(x));
  p.output("m", maximum(x, 0.0));
  std::vector<double> xv = {0.5, 1.5, 2.5, -0.5, -2.5, NAN};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {6}, xv)}, {{0, 2, 2, -0.0, -2, NAN}, {0.5, 1.5, 2.5, 0, 0, NAN}});
}

TEST(TensorCore, ShapeErrorsNameTheOpTheCallSiteAndBothShapes) {
  Program p;
  Tensor x = p.input("x", DType::F32, {2, 3});
  Tensor y = p.input("y", DType::F32, {4});
  Tensor z = x + y;  int line = __LINE__;
  Tensor w = exp(z);  // poisoned: no second error
  p.output("w", w);
  ASSERT_TRUE(p.error());
  EXPECT_EQ(p.error()->message, "TensorCoreTest.cpp:" + std::to_string(line) +
                                    ": add: shapes [2, 3] and [4] cannot be broadcast together");
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, p.error()->message);

  Program q;
  Tensor i = q.input("i", DType::I32, {3});
  exp(i);
  ASSERT_TRUE(q.error());
  EXPECT_NE(q.error()->message.find("exp wants a float tensor, not i32"), std::string::npos) << q.error()->message;

  Program r;
  reshape(r.input("v", DType::F32, {2, 3}), {4, -1});
  ASSERT_TRUE(r.error());
  EXPECT_NE(r.error()->message.find("reshape: cannot infer the -1 in [4, -1] for 6 elements [2, 3]"), std::string::npos)
      << r.error()->message;
}

TEST(TensorCore, WrongInputsAreErrorsNotCrashes) {
  Program p;
  p.output("y", exp(p.input("x", DType::F32, {2, 2})));
  auto wrongShape = run(p, "interp", {HostTensor(DType::F32, {4})});
  ASSERT_FALSE(wrongShape);
  EXPECT_EQ(wrongShape.error().message, "input 'x' wants shape [2, 2], got [4]");
  auto wrongType = run(p, "interp", {HostTensor(DType::F64, {2, 2})});
  ASSERT_FALSE(wrongType);
  EXPECT_EQ(wrongType.error().message, "input 'x' wants dtype f32, got f64");
  auto missing = run(p, "interp", {});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message, "the program has 1 inputs, but 0 were given");
}

TEST(TensorCore, TensorsBeyond32BitIndicesAreAnErrorBeforeAnythingRuns) {
  Program p;
  Tensor x = p.input("x", DType::F32, {1});
  p.output("y", expand(x, {65536, 32768}) + 1.0);  int line = __LINE__;
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message, "TensorCoreTest.cpp:" + std::to_string(line) +
                                   ": expand: a tensor of shape [65536, 32768] has 2147483648 elements; kernels index "
                                   "with 32 bits, so a tensor may have at most 2147483647");
}

TEST(TensorCore, KernelsAreSharedByContent) {
  Program p;
  Tensor x = p.input("x", DType::F32, {8});
  Tensor y = p.input("y", DType::F32, {8});
  p.output("a", exp(x));
  p.output("b", exp(y));      // same op, dtype and layout: the same kernel
  p.output("c", exp(x + y));  // same again after the add
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_TRUE(c) << c.error().message;
  int kernels = 0;
  for (const auto& f : c->module->functions()) kernels += f->kind() == ir::FunctionKind::Kernel;
  EXPECT_EQ(kernels, 2);  // exp and add
}

TEST(TensorCore, EmptyAndScalarTensors) {
  Program p;
  Tensor x = p.input("x", DType::F32, {0, 3});
  Tensor s = p.input("s", DType::F32, {});
  p.output("e", x + s);
  p.output("s2", s * s);
  expectOnAllTargets(p, {HostTensor(DType::F32, {0, 3}), HostTensor::of(DType::F32, {}, {3})}, {{}, {9}});
}

}  // namespace
}  // namespace eph::tensor::test
