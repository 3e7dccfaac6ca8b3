// The `.vg` text form: every parse error with its location and message,
// parse(print(g)) == g on the examples and on random graphs, and the
// printer's `let`s (shared nodes, bounded nesting).
#include <gtest/gtest.h>

#include <random>

#include "frontends/value/Eval.h"
#include "frontends/value/Text.h"
#include "tests/unit/ValueTestUtil.h"

namespace eph::value {
namespace {

std::string errorOf(const std::string& text) {
  Graph g;
  ParseError err;
  if (parse(text, g, err)) return "(parsed)";
  return err.render("t.vg", text);
}

TEST(ValueText, ErrorsHaveLocationsAndMessages) {
  struct Case {
    const char* text;
    const char* first;  // the first line of the rendered error
  };
  const Case cases[] = {
      // unknown name
      {"param a = 1\nresidual a + b\n", "t.vg:2:14: error[E300]: unknown name 'b'"},
      {"residual a\nparam a = 1\n", "t.vg:1:10: error[E300]: unknown name 'a'"},
      // redeclaration
      {"param a = 1\nconst a = 2\n", "t.vg:2:7: error[E300]: redeclaration of 'a' (declared on line 1)"},
      {"param a = 1\nlet a = a * 2\n", "t.vg:2:5: error[E300]: redeclaration of 'a' (declared on line 1)"},
      {"param sqrt = 1\n", "t.vg:1:7: error[E300]: 'sqrt' is the name of an op; pick another name"},
      // bad index
      {"param p[2] = 1 2\nresidual p[2]\n", "t.vg:2:12: error[E300]: index 2 is out of range for 'p' (2 elements)"},
      {"param a = 1\nresidual a[0]\n", "t.vg:2:10: error[E300]: 'a' is not an array"},
      {"param p[2] = 1 2\nresidual p\n", "t.vg:2:10: error[E300]: 'p' is an array of 2: use p[0] .. p[1]"},
      {"param p[2] = 1 2\nresidual p[x]\n", "t.vg:2:12: error[E300]: expected an index, found 'x'"},
      {"param p[2] = 1 2\nresidual p[1.5]\n", "t.vg:2:12: error[E300]: expected an index (a whole number), found '1.5'"},
      {"param p[0] =\n", "t.vg:1:9: error[E300]: an array needs at least one element"},
      {"param p[3] = 1 2\n", "t.vg:1:17: error[E300]: 'p' needs 3 values, got 2"},
      {"param a = 1 2\n", "t.vg:1:7: error[E300]: 'a' needs 1 value, got 2"},
      // unknown call, wrong arity
      {"param a = 1\nresidual foo(a)\n", "t.vg:2:10: error[E300]: unknown call 'foo'"},
      {"param a = 1\nresidual atan2(a)\n", "t.vg:2:10: error[E300]: 'atan2' takes 2 arguments, got 1"},
      {"param a = 1\nresidual sqrt(a, a)\n", "t.vg:2:10: error[E300]: 'sqrt' takes 1 argument, got 2"},
      {"param a = 1\nresidual eigmin3(a, a)\n", "t.vg:2:10: error[E300]: 'eigmin3' takes 6 arguments, got 2"},
      {"param a = 1\nresidual clamp(a)\n", "t.vg:2:10: error[E300]: 'clamp' takes 3 arguments (x, lo, hi), got 1"},
      {"param a = 1\nresidual clamp(a, 0)\n", "t.vg:2:10: error[E300]: 'clamp' takes 3 arguments (x, lo, hi), got 2"},
      {"param a = 1\nresidual sqrt + a\n", "t.vg:2:10: error[E300]: 'sqrt' is an op: call it with '('"},
      // unbalanced parentheses
      {"param a = 1\nresidual (a + 1\n", "t.vg:2:16: error[E300]: unbalanced parentheses: expected ')' to close the '(' at column 10, found the end of the line"},
      {"param a = 1\nresidual a + 1)\n", "t.vg:2:15: error[E300]: unbalanced parentheses: this ')' closes nothing"},
      {"param a = 1\nresidual sqrt(a\n", "t.vg:2:16: error[E300]: unbalanced parentheses: expected ')' to close the call of 'sqrt', found the end of the line"},
      {"param a = 1\nresidual )\n", "t.vg:2:10: error[E300]: unbalanced parentheses: this ')' closes nothing"},
      // non-numeric clamp bounds
      {"param a = 1\nresidual clamp(a, a, 1)\n", "t.vg:2:19: error[E300]: clamp bounds must be numbers, found 'a'"},
      {"param a = 1\nresidual clamp(a, 0, 1 + 1)\n", "t.vg:2:22: error[E300]: clamp bounds must be numbers, found '1'"},
      {"param a = 1\nresidual clamp(a, -a, 1)\n", "t.vg:2:19: error[E300]: clamp bounds must be numbers, found '-'"},
      // numbers out of range
      {"param a = 1e999\n", "t.vg:1:11: error[E300]: number '1e999' is out of range for a float64"},
      {"param a = -1e999\n", "t.vg:1:12: error[E300]: number '-1e999' is out of range for a float64"},
      {"param a = 1\nresidual a * 2e400\n", "t.vg:2:14: error[E300]: number '2e400' is out of range for a float64"},
      {"param a = 1\nresidual clamp(a, 0, 1e309)\n", "t.vg:2:22: error[E300]: number '1e309' is out of range for a float64"},
      {"param p[99999999999999999999] = 1\n", "t.vg:1:9: error[E300]: array size 99999999999999999999 is out of range (at most 67108863)"},
      {"param p[2] = 1 2\nresidual p[4294967296]\n", "t.vg:2:12: error[E300]: index 4294967296 is out of range (at most 67108863)"},
      // the rest of the grammar
      {"param a = x\n", "t.vg:1:11: error[E300]: a value must be a number, found 'x'"},
      {"param a 1\n", "t.vg:1:9: error[E300]: expected '=' before the values, found '1'"},
      {"residual 1 $ 2\n", "t.vg:1:12: error[E300]: unexpected character '$'"},
      {"residual 1 2\n", "t.vg:1:12: error[E300]: unexpected '2' after the expression"},
      {"residual 1 +\n", "t.vg:1:13: error[E300]: expected an expression, found the end of the line"},
      {"resid 1\n", "t.vg:1:1: error[E300]: expected 'param', 'const', 'let' or 'residual', found 'resid'"},
      {"let param = 1\n", "t.vg:1:5: error[E300]: 'param' is a keyword; pick another name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    std::string rendered = errorOf(c.text);
    EXPECT_EQ(rendered.substr(0, rendered.find('\n')), c.first);
  }
  // The source line and a caret under the column.
  EXPECT_EQ(errorOf("param a = 1\nresidual a + b\n"), "t.vg:2:14: error[E300]: unknown name 'b'\n  residual a + b\n               ^\n");
}

TEST(ValueText, DeepNestingIsAnErrorNotACrash) {
  std::string text = "param a = 1\nresidual " + std::string(5000, '(') + "a" + std::string(5000, ')') + "\n";
  std::string rendered = errorOf(text);
  EXPECT_EQ(rendered.substr(0, rendered.find('\n')),
            "t.vg:2:1010: error[E300]: expression nested more than 1000 levels deep; name a part with 'let'");
  text = "param a = 1\nresidual " + std::string(5000, '-') + "a\n";
  rendered = errorOf(text);
  EXPECT_EQ(rendered.substr(0, rendered.find('\n')),
            "t.vg:2:1010: error[E300]: expression nested more than 1000 levels deep; name a part with 'let'");
  // Long flat sums are loops, not nesting.
  text = "param a = 1\nresidual a";
  for (int i = 0; i < 20000; ++i) text += " + a";
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(text + "\n", g, err)) << err.message;
  EXPECT_EQ(evaluate(g).residuals[0], 20001);
}

TEST(ValueText, NumbersAndPrecedence) {
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse("param x = 3\nresidual -2^2\nresidual -x^2\nresidual 2^3^2\nresidual x - -2\nresidual 8 / 4 / 2\n"
                    "residual 1 - 2 - 3\nresidual .5e1 + 1E-1\nresidual (-2)^2 # comment\n",
                    g, err))
      << err.message;
  EXPECT_EQ(evaluate(g).residuals, (std::vector<double>{-4, -9, 512, 5, 1, -4, 5.1, 4}));
}

TEST(ValueText, ExamplesRoundTrip) {
  for (auto& e : std::filesystem::directory_iterator(test::examplesDir())) {
    if (e.path().extension() != ".vg") continue;
    SCOPED_TRACE(e.path().string());
    Graph g, back;
    ParseError err;
    ASSERT_TRUE(parse(test::readFile(e.path()), g, err)) << err.message;
    std::string text = print(g);
    ASSERT_TRUE(parse(text, back, err)) << err.message << "\n" << text;
    EXPECT_TRUE(g == back) << text;
    EXPECT_EQ(print(back), text);
  }
  Graph g;
  ParseError err;
  ASSERT_TRUE(parse(test::readFile(test::examplesDir() / "c08_shared_node.vg"), g, err));
  EXPECT_EQ(print(g), "param x = 2\nparam y = 3\nlet b = x * y\nresidual b + b\n");
}

// Random graphs over every op, with shared nodes, names, negative and odd
// numbers: the printed text parses back to the same graph.
Graph randomGraph(std::mt19937& rng) {
  Graph g;
  std::uniform_int_distribution<int> pick(0, 1 << 30);
  auto some = [&](int n) { return pick(rng) % n; };
  std::uniform_real_distribution<double> real(-3, 3);
  std::vector<Value> pool;
  for (int d = 0, n = 1 + some(3); d < n; ++d) {
    std::vector<double> vs(1 + some(4));
    for (double& v : vs) v = real(rng);
    std::string name = (some(2) ? "p" : "c_") + std::to_string(d);
    auto leaves = some(2) ? g.leaves(name, some(3) != 0, vs.size() > 1 || some(2), vs) : g.leaves(name, true, false, {vs.data(), 1});
    pool.insert(pool.end(), leaves.begin(), leaves.end());
  }
  const double numbers[] = {0, 1, 2, -2, 0.1, -0.0, 1e-300, 1.5e300, 3.141592653589793, -7};
  for (int i = 0, n = 5 + some(40); i < n; ++i) {
    auto any = [&] { return some(6) == 0 ? g.literal(numbers[some(10)]) : pool[pool.size() - 1 - some(int(std::min<size_t>(pool.size(), 6)))]; };
    OpKind k = OpKind(int(OpKind::Add) + some(int(OpKind::Custom) - int(OpKind::Add) + 1));
    Value v;
    if (k == OpKind::Custom) {
      Value args[6];
      for (Value& a : args) a = any();
      v = g.custom(eigmin3Id(), args);
    } else if (k == OpKind::Clamp) {
      Value arg[] = {any()};
      v = g.op(k, arg, numbers[some(10)], numbers[some(10)]);
    } else {
      int arity = opInfo(k).arity < 0 ? 1 + some(4) : opInfo(k).arity;
      std::vector<Value> args;
      for (int a = 0; a < arity; ++a) args.push_back(any());
      v = g.op(k, args);
    }
    if (some(8) == 0) g.name(v, "n" + std::to_string(i));
    pool.push_back(v);
    if (some(4) == 0) g.residual(v);
  }
  g.residual(pool.back());
  return g;
}

TEST(ValueText, RandomGraphsRoundTrip) {
  std::mt19937 rng(12);
  for (int i = 0; i < 300; ++i) {
    Graph g = randomGraph(rng);
    std::string text = print(g);
    Graph back;
    ParseError err;
    ASSERT_TRUE(parse(text, back, err)) << err.render("random.vg", text) << text;
    ASSERT_TRUE(g == back) << "graph " << i << ":\n" << text;
    EXPECT_EQ(print(back), text);
  }
}

}  // namespace
}  // namespace eph::value
