// The tuning table (frontends/tensor/Tuning.h): a device's row sets the
// lowering's sizes, an unknown device keeps the defaults, and a program
// lowered with every row's sizes gives the same values on every target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string_view>

#include "frontends/tensor/Tuning.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

TEST(TensorTuning, ADevicesRowSetsTheSizes) {
  LowerOptions h200 = tunedFor("NVIDIA H200");
  EXPECT_EQ(h200.workgroupSize, 256u);
  EXPECT_EQ(h200.rowElements, 16u);
  EXPECT_EQ(h200.matmulBlock, 8u);
  EXPECT_EQ(h200.elementsPerInvocation, 8u);
  EXPECT_EQ(tunedFor("cpu: AMD EPYC").elementsPerInvocation, 1u);  // the cpu target vectorises across invocations
  // The cpu target's strip matmul: 6 rows of 128 lanes on AMD Zen, 6 of 64
  // on other x86 processors; row kernels combine through workgroup memory.
  LowerOptions zen = tunedFor("cpu: x86_64-pc-linux-gnu znver5, 2 threads");
  EXPECT_EQ(zen.matmulBlock, 0u);
  EXPECT_EQ(zen.matmulLanes, 128u);
  EXPECT_EQ(zen.matmulRows, 6u);
  EXPECT_FALSE(zen.rowShuffles);
  LowerOptions xeon = tunedFor("cpu: x86_64-pc-linux-gnu emeraldrapids, 16 threads");
  EXPECT_EQ(xeon.matmulLanes, 64u);
  EXPECT_EQ(xeon.matmulRows, 6u);
  EXPECT_FALSE(xeon.rowShuffles);
  EXPECT_EQ(tunedFor("NVIDIA H200").matmulLanes, 0u);
  EXPECT_TRUE(tunedFor("NVIDIA H200").rowShuffles);
  // The H100 has a row of its own (split K for the encoders' 512-row products).
  EXPECT_EQ(tunedFor("NVIDIA H100 80GB HBM3").matmulSplitGroups, 400u);
  EXPECT_EQ(tunedFor("NVIDIA H200").matmulSplitGroups, 400u);
  LowerOptions base;
  base.fuse = false;
  base.workgroupSize = 32;
  LowerOptions lavapipe = tunedFor("llvmpipe (LLVM 15.0.6, 256 bits)", base);
  auto row = std::find_if(tuningTable().begin(), tuningTable().end(),
                          [](const TuningRow& r) { return std::string_view(r.device) == "llvmpipe"; });
  ASSERT_NE(row, tuningTable().end());
  EXPECT_EQ(lavapipe.workgroupSize, row->workgroupSize);
  EXPECT_EQ(lavapipe.matmulLanes, 0u);
  EXPECT_FALSE(lavapipe.fuse);  // the rest of `base` stays
  LowerOptions unknown = tunedFor("some other GPU", base);
  EXPECT_EQ(unknown.workgroupSize, 32u);
  EXPECT_EQ(unknown.rowElements, LowerOptions{}.rowElements);
}

// The tiled attention combines rows by shuffles only on subgroups of 8 or
// more lanes that shuffle.
TEST(TensorTuning, AttentionShufflesNeedSubgroupsOfEight) {
  DeviceCaps caps;
  caps.name = "some GPU";
  caps.subgroupSize = 32;
  caps.subgroupShuffle = true;
  EXPECT_TRUE(tunedFor(caps).attentionShuffles);
  caps.subgroupSize = 8;
  EXPECT_TRUE(tunedFor(caps).attentionShuffles);
  LowerOptions off;
  off.attentionShuffles = false;
  EXPECT_FALSE(tunedFor(caps, off).attentionShuffles);
  caps.subgroupSize = 4;
  EXPECT_FALSE(tunedFor(caps).attentionShuffles);
  caps.subgroupSize = 32;
  caps.subgroupShuffle = false;
  EXPECT_FALSE(tunedFor(caps).attentionShuffles);
}

// Elementwise kernels computing E elements per invocation (a workgroup
// apart), over a size that fills no whole number of workgroups, with a
// broadcast operand and a fused chain.
TEST(TensorTuning, ElementsPerInvocationComputeTheSameValues) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 1001});
  Tensor y = p.input("y", DType::F32, {1001});
  p.output("c", relu(x * 2.0 + y));
  auto xv = randomValues(3003, 60), yv = randomValues(1001, 61);
  std::vector<double> want(3003);
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::max(0.0, double(float(xv[i] * 2)) + double(float(yv[i % 1001])));
  for (unsigned e : {1u, 2u, 4u, 8u}) {
    SCOPED_TRACE("elements " + std::to_string(e));
    LowerOptions o;
    o.tune = false;
    o.elementsPerInvocation = e;
    expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, 1001}, xv), HostTensor::of(DType::F32, {1001}, yv)}, {want},
                       1e-6, o);
  }
}

// softmax and layer norm of long rows, and a chain, with each row's sizes
// (tune off, so that the row is used on every target) against float64.
TEST(TensorTuning, EveryRowsSizesComputeTheSameValues) {
  const int64_t rows = 2, cols = 700;
  Program p;
  Tensor x = p.input("x", DType::F32, {rows, cols});
  p.output("s", softmax(x));
  p.output("c", relu(x * 2.0 + 1.0));
  auto xv = randomValues(size_t(rows * cols), 50, -3, 3);
  std::vector<double> sv(xv.size()), cv(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(float(xv[size_t(r * cols + c)])));
    for (int64_t c = 0; c < cols; ++c) sum += std::exp(double(float(xv[size_t(r * cols + c)])) - m);
    for (int64_t c = 0; c < cols; ++c) {
      double xi = double(float(xv[size_t(r * cols + c)]));
      sv[size_t(r * cols + c)] = std::exp(xi - m) / sum;
      cv[size_t(r * cols + c)] = std::max(0.0, double(float(xi * 2)) + 1);
    }
  }
  for (const TuningRow& row : tuningTable()) {
    SCOPED_TRACE(row.device);
    LowerOptions o = tunedFor(row.device);
    o.tune = false;
    for (const std::string& t : targets()) {
      SCOPED_TRACE("target " + t);
      auto got = run(p, t, {HostTensor::of(DType::F32, {rows, cols}, xv)}, o);
      ASSERT_TRUE(got) << got.error().message;
      for (size_t i = 0; i < xv.size(); ++i) {
        EXPECT_NEAR((*got)[0].get(int64_t(i)), sv[i], 1e-6) << i;
        EXPECT_NEAR((*got)[1].get(int64_t(i)), cv[i], 1e-6) << i;
      }
    }
  }
}

}  // namespace
}  // namespace eph::tensor::test
