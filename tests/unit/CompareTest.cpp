// runtime/Compare.h: the float tolerance and the first difference between two
// result lists, as `ephc diff` and the differential tests use them.
#include "runtime/Compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace eph::test {
namespace {

// compareResults: what ephc diff reports.
TEST(Compare, FirstDifferenceAndTolerance) {
  ir::Context ctx;
  interp::Memory ma, mb;
  using V = interp::RtValue;
  runtime::Tolerance tol;
  EXPECT_TRUE(runtime::floatsAgree(1.0, 1.0 + 4 * 0x1p-23, 32, tol));
  EXPECT_TRUE(runtime::floatsAgree(1000.0, 1000.0 * (1 + 0.9e-5), 32, tol));
  EXPECT_FALSE(runtime::floatsAgree(1.0, 1.0001, 32, tol));
  EXPECT_TRUE(runtime::floatsAgree(1e-7, -1e-7, 32, tol));  // near zero: absolute
  EXPECT_TRUE(runtime::floatsAgree(NAN, NAN, 32, tol));
  EXPECT_FALSE(runtime::floatsAgree(NAN, 1, 32, tol));
  EXPECT_FALSE(runtime::floatsAgree(INFINITY, -INFINITY, 32, tol));
  EXPECT_FALSE(runtime::floatsAgree(1.0, 1.0 + 1e-9, 64, {0, 0, 0}));

  const ir::Type* f32 = ctx.f32();
  uint64_t ba = ma.adopt(f32, ir::Space::Host, {V::ofFloat(f32, 1), V::ofFloat(f32, 2), V::ofFloat(f32, 3)});
  uint64_t bb = mb.adopt(f32, ir::Space::Host, {V::ofFloat(f32, 1), V::ofFloat(f32, 2.5), V::ofFloat(f32, 3)});
  V bufA, bufB;
  bufA.type = bufB.type = ctx.bufferType(f32, ir::Space::Host, ir::Ownership::Linear);
  bufA.buffer = ba;
  bufB.buffer = bb;
  std::vector<V> a = {V::ofInt(ctx.u32(), 7), bufA}, b = {V::ofInt(ctx.u32(), 7), bufB};
  auto d = runtime::compareResults(a, ma, b, mb, tol);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->result, 1u);
  EXPECT_EQ(d->element, 1u);
  EXPECT_EQ(d->a, "2.0");
  EXPECT_EQ(d->b, "2.5");
  b[0] = V::ofInt(ctx.u32(), 8);
  d = runtime::compareResults(a, ma, b, mb, tol);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->result, 0u);
  EXPECT_FALSE(runtime::compareResults(a, ma, a, ma, tol));

  // An element the run never wrote (interp knows) differs from any value,
  // even the 0 another target happened to read; never written on both sides
  // is nothing to compare.
  uint64_t fresh = ma.allocate(f32, ir::Space::Host, 3);
  ma.get(fresh)->elems[0] = V::ofFloat(f32, 1), ma.get(fresh)->written[0] = true;
  uint64_t zeros = mb.adopt(f32, ir::Space::Host, {V::ofFloat(f32, 1), V::ofFloat(f32, 0), V::ofFloat(f32, 0)});
  bufA.buffer = fresh;
  bufB.buffer = zeros;
  d = runtime::compareResults({bufA}, ma, {bufB}, mb, tol);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->element, 1u);
  EXPECT_EQ(d->a, "? (never written)");
  EXPECT_EQ(d->b, "0.0");
  EXPECT_FALSE(runtime::compareResults({bufA}, ma, {bufA}, ma, tol));
}

}  // namespace
}  // namespace eph::test
