// Signatures: which residuals share a kernel (Signature.h).
#include <gtest/gtest.h>

#include "frontends/value/Eval.h"
#include "frontends/value/Signature.h"
#include "frontends/value/Text.h"
#include "frontends/value/Vec.h"

namespace eph::value {
namespace {

size_t kernelsOf(const std::string& text) {
  Graph g;
  ParseError err;
  EXPECT_TRUE(parse(text, g, err)) << err.message;
  return groupResiduals(g).size();
}

TEST(ValueSignature, LeafOrderDoesNotMatter) {
  // The same shape over different leaves, listed in any order.
  EXPECT_EQ(kernelsOf("param p[4] = 1 2 3 4\nresidual p[0] * 2 - p[1]\nresidual p[3] * 2 - p[2]\nresidual p[2] * 2 - p[0]\n"), 1u);
  EXPECT_EQ(kernelsOf("param a = 1\nparam b = 2\nresidual (a - b)^2\nresidual (b - a)^2\n"), 1u);
  // Constant values do not count; which leaves are constants does.
  EXPECT_EQ(kernelsOf("param x = 1\nconst c[2] = 5 7\nresidual x * c[0]\nresidual x * c[1]\n"), 1u);
  EXPECT_EQ(kernelsOf("param x = 1\nparam y = 2\nconst c = 5\nresidual x * y\nresidual x * c\n"), 2u);
}

TEST(ValueSignature, StructureAttributesAndLiteralsCount) {
  // Clamp bounds are part of the signature.
  EXPECT_EQ(kernelsOf("param x[2] = 1 2\nresidual clamp(x[0], 0, 1)\nresidual clamp(x[1], 0, 1)\n"), 1u);
  EXPECT_EQ(kernelsOf("param x[2] = 1 2\nresidual clamp(x[0], 0, 1)\nresidual clamp(x[1], 0, 2)\n"), 2u);
  // So are numeric literals (compiled into the kernel): use a const leaf to share.
  EXPECT_EQ(kernelsOf("param x[2] = 1 2\nresidual x[0] * 2\nresidual x[1] * 3\n"), 2u);
  // Reading one leaf twice is not reading two.
  EXPECT_EQ(kernelsOf("param x = 1\nparam y = 2\nresidual x * x\nresidual x * y\n"), 2u);
  // A shared node is not a repeated subexpression.
  EXPECT_EQ(kernelsOf("param x = 1\nparam y = 2\nlet b = x * y\nresidual b + b\nresidual x * y + x * y\n"), 2u);
  // Different ops, and an operand order that changes the structure.
  EXPECT_EQ(kernelsOf("param x[2] = 1 2\nresidual x[0] - 1\nresidual 1 - x[1]\nresidual min(x[0], x[1])\n"), 3u);
  EXPECT_EQ(kernelsOf("param x = 1\nparam y = 2\nresidual x + sqrt(y)\nresidual sqrt(y) + x\n"), 2u);
}

TEST(ValueSignature, GroupsRecordEachInstancesLeaves) {
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param p[6] = 0 0 3 4 6 0\nconst t[3] = 5 6 6\n"
                    "residual (p[0]-p[2])^2 + (p[1]-p[3])^2 - t[0]^2\n"
                    "residual (p[2]-p[4])^2 + (p[3]-p[5])^2 - t[1]^2\n"
                    "residual (p[4]-p[0])^2 + (p[5]-p[1])^2 - t[2]^2\n",
                    g, err));
  auto groups = groupResiduals(g);
  ASSERT_EQ(groups.size(), 1u);
  const Group& grp = groups[0];
  EXPECT_EQ(grp.slots(), 5u);
  EXPECT_EQ(grp.trainable, (std::vector<char>{1, 1, 1, 1, 0}));
  EXPECT_EQ(grp.residuals, (std::vector<uint32_t>{0, 1, 2}));
  auto name = [&](NodeId n) { return g.leafName(n); };
  std::vector<std::string> leaves;
  for (NodeId n : grp.leaves) leaves.push_back(name(n));
  EXPECT_EQ(leaves, (std::vector<std::string>{"p[0]", "p[2]", "p[1]", "p[3]", "t[0]", "p[2]", "p[4]", "p[3]", "p[5]", "t[1]",
                                              "p[4]", "p[0]", "p[5]", "p[1]", "t[2]"}));
}

// Many residuals of one shape (edge lengths of a strip), grouped in one pass;
// the time for a million is in bench/value.
TEST(ValueSignature, ManyResidualsFormOneGroup) {
  Graph g;
  const int n = 50000;
  std::vector<double> xs(2 * (n + 1));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = double(i % 7);
  auto p = g.params("p", xs);
  auto len = g.constants("len", std::vector<double>(n, 1.0));
  for (int e = 0; e < n; ++e) {
    Value l[] = {p[2 * e], p[2 * e + 1], p[2 * e + 2], p[2 * e + 3], len[e]};
    // Alternate edges list their points the other way round.
    g.trace(l, [&](std::span<const Value> v) {
      Vec2 a = vec<2>(v, 0), b = vec<2>(v, 2);
      return e % 2 ? magnitude(b - a) - v[4] : magnitude(a - b) - v[4];
    });
  }
  auto groups = groupResiduals(g);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].residuals.size(), size_t(n));
  EXPECT_EQ(groups[0].leaves.size(), size_t(5 * n));
  EXPECT_EQ(groups[0].leaves[5], NodeId(p[4].id()));  // edge 1 lists b = (p[4], p[5]) first
}

}  // namespace
}  // namespace eph::value
