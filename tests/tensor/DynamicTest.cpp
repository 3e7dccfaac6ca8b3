// The dynamic first dimension (docs/tensor.md, "Dynamic dimensions"): a
// program whose inputs have first extent N (tensor::kDynamic) is lowered once
// and runs with any N on every target; each run must give what the program
// built with that N as a fixed extent gives. Ops that would reduce, merge or
// move N, or mix its indices, are errors when they are applied.
#include <gtest/gtest.h>

#include "frontends/tensor/Tensor.h"
#include "frontends/tensor/Tuning.h"
#include "ir/Printer.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor {
namespace {

using test::randomValues;
using test::targets;

HostTensor f32(Shape s, uint64_t seed) {
  return HostTensor::of(DType::F32, s, randomValues(size_t(numel(s)), seed));
}

// A small network over a batch: x [n, 6] and ids [n, 2]: matmul with a bias
// and relu, softmax and layer norm over the features, a reshape to [n, 2, 4]
// and a transpose of its inner axes, a sum over one of them, an embedding of
// the ids, a concat along the features, a 1-D conv over [n, 2, 4], and a
// view (a slice of the features) as an output. `n` is kDynamic or a fixed
// extent; the weights are constants.
void buildNet(Program& p, int64_t n) {
  Tensor x = p.input("x", DType::F32, {n, 6});
  Tensor ids = p.input("ids", DType::I64, {n, 2});
  Tensor w = p.constant(f32({6, 8}, 1)), b = p.constant(f32({8}, 2));
  Tensor h = relu(matmul(x, w) + b);                              // [n, 8]
  Tensor s = softmax(h * 3.0);                                   // [n, 8]
  Tensor ln = layer_norm(h, p.constant(f32({8}, 3)), p.constant(f32({8}, 4)));
  Tensor r = transpose(reshape(s, {-1, 2, 4}), {0, 2, 1});        // [n, 4, 2]
  Tensor red = sum(r, {2});                                      // [n, 4]
  Tensor e = embedding(p.constant(f32({5, 3}, 5)), ids);         // [n, 2, 3]
  Tensor cat = concat({red, reshape(e, {-1, 6})}, 1);            // [n, 10]
  ConvOptions co;
  co.pads = {1, 1};
  Tensor cv = conv(reshape(h, {-1, 2, 4}), p.constant(f32({3, 2, 3}, 6)), p.constant(f32({3}, 7)), co);  // [n, 3, 4]
  p.output("ln", ln);
  p.output("cat", cat);
  p.output("conv", cv);
  p.output("slice", slice(s, 1, 2, 7, 2));                       // a view: copied out
  p.output("rowmax", max(ln, {1}, true));                        // [n, 1]
}

std::vector<HostTensor> netInputs(int64_t n, uint64_t seed) {
  HostTensor ids(DType::I64, {n, 2});
  for (int64_t i = 0; i < ids.size(); ++i) ids.setInt(i, int64_t((seed + 7 * uint64_t(i)) % 5));
  return {f32({n, 6}, seed), ids};
}

// Runs `build` with kDynamic, lowered once per target, for each N against
// the program `build` makes with that N on the interpreter. `inputs(n)`
// gives the inputs for N = n.
void expectSameAsFixed(const std::function<void(Program&, int64_t)>& build,
                       const std::function<std::vector<HostTensor>(int64_t)>& inputs, std::vector<int64_t> ns) {
  Program dyn;
  build(dyn, kDynamic);
  ASSERT_FALSE(dyn.error()) << dyn.error()->message;
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev) << dev.error().message;
    ir::Context ctx;
    LowerOptions o = tunedFor((*dev)->caps(), {});
    o.deviceIO = true;
    auto c = lower(ctx, dyn, o);  // once, for every N below
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_TRUE(c->dynamic);
    for (int64_t n : ns) {
      SCOPED_TRACE("N = " + std::to_string(n));
      auto in = inputs(n);
      auto got = run(**dev, dyn, *c, in);
      ASSERT_TRUE(got) << got.error().message;
      Program fixed;
      build(fixed, n);
      auto want = run(fixed, "interp", in);
      ASSERT_TRUE(want) << want.error().message;
      ASSERT_EQ(got->size(), want->size());
      for (size_t k = 0; k < got->size(); ++k) {
        const HostTensor &g = (*got)[k], &w = (*want)[k];
        ASSERT_EQ(g.shape, w.shape) << "output " << k;
        EXPECT_EQ(g.shape[0], n);
        for (int64_t i = 0; i < w.size(); ++i)
          ASSERT_NEAR(g.get(i), w.get(i), 1e-5 * (1 + std::abs(w.get(i)))) << "output " << k << " element " << i;
      }
    }
  }
}

TEST(DynamicTest, OneModuleRunsEveryBatchSizeAsTheFixedProgramDoes) {
  Program dyn;
  buildNet(dyn, kDynamic);
  ASSERT_FALSE(dyn.error()) << dyn.error()->message;
  EXPECT_EQ(shapeText(dyn.node(dyn.outputs()[1].second).shape), "[N, 10]");
  expectSameAsFixed(buildNet, [](int64_t n) { return netInputs(n, uint64_t(n) + 11); }, {1, 5, 3, 64, 0});
}

TEST(DynamicTest, TheHostFunctionTakesNAndKernelsRunOverItAlongZ) {
  Program p;
  Tensor x = p.input("x", DType::F32, {kDynamic, 5});
  p.output("y", softmax(x * 2.0));
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_TRUE(c) << c.error().message;
  std::string text = ir::print(*c->module);
  EXPECT_NE(text.find("%N: u32"), std::string::npos) << text;
  EXPECT_NE(text.find("workgroup_id {dim = 2}"), std::string::npos) << text;
  // No extent stands in for N anywhere in the module.
  EXPECT_EQ(text.find(std::to_string(kDynamicExtent)), std::string::npos) << text;
}

// Matmuls whose kernels batch along z themselves (a [N, S, K] input is N
// problems of S rows): their own z is one workgroup per row's problem.
TEST(DynamicTest, BatchedMatmulsAndConvs) {
  expectSameAsFixed(
      [](Program& p, int64_t n) {
        Tensor a = p.input("a", DType::F32, {n, 8, 16});
        Tensor b = p.input("b", DType::F32, {n, 16, 8});
        Tensor w = p.constant(f32({16, 32}, 3));
        p.output("aw", matmul(a, w));                                  // [N, 8, 32]
        p.output("ab", matmul(a, b));                                  // [N, 8, 8], both with N
        p.output("cb", matmul(p.constant(f32({4, 16}, 4)), b));        // [N, 4, 8]
        p.output("pool", max_pool(reshape(a, {-1, 2, 4, 16}), {.kernel = {2, 2}, .strides = {2, 2}}));
      },
      [](int64_t n) { return std::vector{f32({n, 8, 16}, uint64_t(n) + 1), f32({n, 16, 8}, uint64_t(n) + 2)}; },
      {1, 4, 0, 7});
}

// Elementwise chains over N rows are one kernel over all N·row elements (its
// grid computed on the host, no z), fused as without N: many short rows run
// as fast as one long one, and N is not bound by the device's grid along z.
TEST(DynamicTest, ElementwiseChainsAreOneKernelOverAllRows) {
  Program p;
  Tensor x = p.input("x", DType::F32, {kDynamic, 3});
  Tensor y = p.input("y", DType::F32, {kDynamic, 3});
  p.output("z", relu(x * 2.0 + y));
  ir::Context ctx;
  auto c = lower(ctx, p);
  ASSERT_TRUE(c) << c.error().message;
  int dispatches = 0;
  c->module->lookup("main")->walk([&](ir::Op* op) { dispatches += op->is(ir::OpId::Dispatch); });
  EXPECT_EQ(dispatches, 1) << ir::print(*c->module);
  const int64_t n = 100003;  // more than the 65535 workgroups most devices take along z
  auto xs = randomValues(size_t(n * 3), 1), ys = randomValues(size_t(n * 3), 2);
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = std::max(0.0, double(float(xs[i]) * 2.0f + float(ys[i])));
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto got = run(p, t, {HostTensor::of(DType::F32, {n, 3}, xs), HostTensor::of(DType::F32, {n, 3}, ys)});
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ((*got)[0].shape, (Shape{n, 3}));
    for (int64_t i = 0; i < n * 3; ++i) ASSERT_FLOAT_EQ(float((*got)[0].get(i)), float(want[size_t(i)])) << i;
  }
}

// Kernels built for one row run N times along z: on a device with fewer
// workgroups along z than N that is an error naming the limit, not a wrong answer.
TEST(DynamicTest, RowKernelsBeyondTheDevicesGridAlongZAreAnError) {
  Program p;
  Tensor x = p.input("x", DType::F32, {kDynamic, 4});
  p.output("y", softmax(x));
  for (const std::string& t : targets()) {
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev) << dev.error().message;
    const int64_t maxZ = (*dev)->caps().maxWorkgroupCount[2];
    if (maxZ >= int64_t(1) << 20) continue;  // interp, cpu: no such limit
    SCOPED_TRACE("target " + t);
    auto got = run(p, t, {HostTensor::of(DType::F32, {maxZ + 1, 4}, randomValues(size_t(maxZ + 1) * 4, 1))});
    ASSERT_FALSE(got);
    EXPECT_NE(got.error().message.find("maxComputeWorkGroupCount"), std::string::npos) << got.error().message;
  }
}

TEST(DynamicTest, InputsMustAgreeOnN) {
  Program p;
  Tensor a = p.input("a", DType::F32, {kDynamic, 3});
  Tensor b = p.input("b", DType::F32, {kDynamic, 3});
  p.output("y", a + b);
  auto got = run(p, "interp", {f32({4, 3}, 1), f32({2, 3}, 2)});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "input 'b' wants shape [N, 3] with N = 4 (from the first input with N), got [2, 3]");
  got = run(p, "interp", {f32({4, 2}, 1), f32({4, 3}, 2)});
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message, "input 'a' wants shape [N, 3] with N = 4 (from the first input with N), got [4, 2]");
}

// The first error of a program built by `build`, without the call site.
std::string errorOf(const std::function<void(Program&, Tensor)>& build, Shape shape = {kDynamic, 4, 6}) {
  Program p;
  build(p, p.input("x", DType::F32, shape));
  if (!p.error()) return "no error";
  const std::string& m = p.error()->message;
  return m.substr(m.find(": ") + 2);
}

TEST(DynamicTest, OpsThatWouldReduceMergeMoveOrMixNAreErrors) {
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", sum(x, {0})); }),
            "reduce_sum: input 0 has the dynamic first dimension N (shape [N, 4, 6]), which the result [4, 6] would "
            "reduce or drop: ops keep N as the first dimension of their results; give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", reshape(x, {-1})); }),
            "reshape: input 0 has the dynamic first dimension N (shape [N, 4, 6]), which the result [24N] would merge, "
            "move or repeat: ops keep N as the first dimension of their results; give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", transpose(x, {1, 0, 2})); }),
            "transpose: input 0 has the dynamic first dimension N (shape [N, 4, 6]), which the result [4, N, 6] would "
            "merge, move or repeat: ops keep N as the first dimension of their results; give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", concat({x, x}, 0)); }),
            "concat: input 0 has the dynamic first dimension N (shape [N, 4, 6]), which the result [2N, 4, 6] would "
            "merge, move or repeat: ops keep N as the first dimension of their results; give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", softmax(x, 0)); }),
            "softmax: input 0 has the dynamic first dimension N (shape [N, 4, 6]), and softmax does not run over it "
            "with these attributes (it would combine different indices of it); give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", cumsum(x, 0)); }),
            "cumsum: input 0 has the dynamic first dimension N (shape [N, 4, 6]), and cumsum does not run over it "
            "with these attributes (it would combine different indices of it); give the input a fixed shape");
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", tril(x)); }, {kDynamic, 4}),
            "trilu: input 0 has the dynamic first dimension N (shape [N, 4]), and trilu does not run over it with "
            "these attributes (it would combine different indices of it); give the input a fixed shape");
  // Slicing N itself gives an extent that is not N.
  EXPECT_NE(errorOf([](Program& p, Tensor x) { p.output("y", slice(x, 0, 1, 3)); }).find("would reduce or drop"),
            std::string::npos);
  // Slices, transposes and reductions along the other axes are fine.
  EXPECT_EQ(errorOf([](Program& p, Tensor x) { p.output("y", sum(transpose(slice(x, 2, 1, 5), {0, 2, 1}), {1})); }),
            "no error");
  EXPECT_EQ(errorOf([](Program& p, Tensor) { (void)p.input("z", DType::F32, {3, kDynamic}); }),
            "input 'z': only the first dimension may be dynamic, not dimension 1");
}

TEST(DynamicTest, ATensorWithoutNCanBeCombinedWithOneWithIt) {
  // A fixed [1, 3] row broadcast against [N, 3] rows; a fixed [4, 3] may not be.
  Program p;
  Tensor x = p.input("x", DType::F32, {kDynamic, 3});
  Tensor row = p.constant(f32({1, 3}, 9));
  p.output("y", x * row);
  ASSERT_FALSE(p.error());
  auto got = run(p, "interp", {f32({2, 3}, 1)});
  ASSERT_TRUE(got) << got.error().message;
  auto x0 = randomValues(6, 1), r0 = randomValues(3, 9);
  for (int64_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(float((*got)[0].get(i)), float(x0[size_t(i)]) * float(r0[size_t(i % 3)]));
  Program q;
  Tensor y = q.input("x", DType::F32, {kDynamic, 3});
  (void)(y + q.constant(f32({4, 3}, 9)));
  ASSERT_TRUE(q.error());
  EXPECT_NE(q.error()->message.find("[N, 3]"), std::string::npos) << q.error()->message;
}

}  // namespace
}  // namespace eph::tensor
