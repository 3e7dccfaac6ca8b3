// Type promotion and broadcasting against numpy's own answers
// (tests/tensor/fixtures, made by gen_fixtures.py with Debian's python3-numpy),
// and a program per dtype pair that runs the promoted add on every target.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

std::vector<std::string> fixtureLines(const std::string& name) {
  std::ifstream in(std::string(EPH_TENSOR_FIXTURES) + "/" + name);
  EXPECT_TRUE(in) << "cannot read fixture " << name;
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  return lines;
}

Shape parseShape(const std::string& text) {
  Shape s;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');)
    if (part.find_first_not_of(' ') != std::string::npos) s.push_back(std::stoll(part));
  return s;
}

TEST(NumpyRules, PromotionIsNumpysResultType) {
  auto lines = fixtureLines("promotion.txt");
  ASSERT_EQ(lines.size(), 144u);
  for (const std::string& line : lines) {
    std::stringstream ss(line);
    std::string a, b, want;
    ss >> a >> b >> want;
    EXPECT_EQ(dtypeName(promote(*dtypeFromName(a), *dtypeFromName(b))), want) << a << " + " << b;
  }
}

TEST(NumpyRules, BroadcastingIsNumpys) {
  auto lines = fixtureLines("broadcast.txt");
  ASSERT_EQ(lines.size(), 300u);
  for (const std::string& line : lines) {
    size_t bar1 = line.find('|'), bar2 = line.find('|', bar1 + 1);
    Shape a = parseShape(line.substr(0, bar1)), b = parseShape(line.substr(bar1 + 1, bar2 - bar1 - 1));
    std::string want = line.substr(bar2 + 2);
    auto got = broadcastShapes(a, b);
    if (want == "error") {
      EXPECT_FALSE(got) << line;
      // ...and the op says so, naming both shapes.
      Program p;
      add(p.input("a", DType::F32, a), p.input("b", DType::F32, b));
      ASSERT_TRUE(p.error()) << line;
      EXPECT_NE(p.error()->message.find("add: shapes " + shapeText(a) + " and " + shapeText(b) + " cannot be broadcast"),
                std::string::npos)
          << p.error()->message;
    } else {
      ASSERT_TRUE(got) << line;
      EXPECT_EQ(*got, parseShape(want)) << line;
    }
  }
}

// The promoted add of every pair of numeric dtypes (small values every type holds) on every target.
TEST(NumpyRules, PromotedAddRunsOnEveryTarget) {
  const DType all[] = {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I32,
                       DType::U64, DType::I64, DType::F16, DType::F32, DType::F64, DType::Bool};
  Program p;
  std::vector<HostTensor> inputs;
  std::vector<std::vector<double>> want;
  for (DType a : all)
    for (DType b : all) {
      if (a == DType::Bool && b == DType::Bool) continue;  // add wants numbers
      std::string n = std::string(dtypeName(a)) + "_" + std::string(dtypeName(b));
      Tensor x = p.input("x" + n, a, {3});
      Tensor y = p.input("y" + n, b, {2, 1});
      Tensor s = x + y;
      ASSERT_EQ(s.dtype(), promote(a, b)) << n;
      p.output(n, s);
      std::vector<double> xv = a == DType::Bool ? std::vector<double>{1, 0, 1} : std::vector<double>{1, 2, 3};
      std::vector<double> yv = b == DType::Bool ? std::vector<double>{0, 1} : std::vector<double>{10, 20};
      inputs.push_back(HostTensor::of(a, {3}, xv));
      inputs.push_back(HostTensor::of(b, {2, 1}, yv));
      std::vector<double> w;
      for (double yy : yv)
        for (double xx : xv) w.push_back(xx + yy);
      want.push_back(w);
    }
  expectOnAllTargets(p, inputs, want, 0);
}

}  // namespace
}  // namespace eph::tensor::test
