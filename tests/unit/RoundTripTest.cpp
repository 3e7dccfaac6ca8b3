// print(parse(print(m))) == print(m): for every .eir file in the repository's
// test and example folders, for modules built in C++ with awkward literals,
// and with locations printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

namespace eph::ir {
namespace {

// Parses `text`, prints it, parses the print and prints again; returns the
// first print and checks the second equals it.
std::string roundTrip(std::string_view text, const PrintOptions& opts = {}) {
  Context ctx;
  auto m1 = parseModule(ctx, text, "rt.eir");
  EXPECT_TRUE(m1) << m1.error().str();
  if (!m1) return {};
  std::string p1 = print(**m1, opts);
  auto m2 = parseModule(ctx, p1, "rt2.eir");
  EXPECT_TRUE(m2) << m2.error().str() << "\n" << p1;
  if (!m2) return {};
  EXPECT_EQ(print(**m2, opts), p1);
  return p1;
}

TEST(RoundTrip, EveryEirFileInTheRepository) {
  namespace fs = std::filesystem;
  unsigned files = 0;
  for (const char* dir : {"tests/lit/roundtrip", "tests/lit/passes", "tests/lit/interp", "examples"}) {
    fs::path root = fs::path(EPH_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (auto& e : fs::recursive_directory_iterator(root)) {
      if (e.path().extension() != ".eir") continue;
      std::ifstream in(e.path());
      std::stringstream ss;
      ss << in.rdbuf();
      Context ctx;
      auto m = parseModule(ctx, ss.str(), e.path().string());
      if (!m) continue;  // files that test parse errors
      ++files;
      std::string p1 = print(**m);
      auto m2 = parseModule(ctx, p1, "again.eir");
      ASSERT_TRUE(m2) << e.path() << ": " << m2.error().str();
      EXPECT_EQ(print(**m2), p1) << e.path();
      std::string withLocs = print(**m, PrintOptions{.locations = true});
      auto m3 = parseModule(ctx, withLocs, "locs.eir");
      ASSERT_TRUE(m3) << e.path() << ": " << m3.error().str();
      EXPECT_EQ(print(**m3, PrintOptions{.locations = true}), withLocs) << e.path();
    }
  }
  EXPECT_GE(files, 4u);  // at least the round-trip tests themselves
}

TEST(RoundTrip, TextIsStableAndCanonical) {
  // Spelling differences (spaces, comments, attribute order, literal forms)
  // disappear after one print; the second print matches the first.
  std::string q = roundTrip(R"(
host @f(%x : i32)->i32 attributes{b=+1.50,a=[ 1,2 ]}{
  %y=add %x,%x:i32   // a comment
  return %y
})");
  EXPECT_EQ(q,
            "host @f(%x: i32) -> i32 attributes {a = [1, 2], b = 1.5} {\n"
            "  %y = add %x, %x : i32\n"
            "  return %y\n"
            "}\n");
}

TEST(RoundTrip, LocationsSurvive) {
  std::string text = R"(host @f(%x: i32) -> i32 loc("a.eph":1:2) {
  %y = add %x, %x : i32 loc("a.eph":2:4)
  %c = const {value = true} : bool
  %r = if %c : i32 {
    yield %y loc("b.eph":9:9)
  } {
    yield %x
  } loc("a.eph":3:4)
  return %r
}
)";
  std::string p = roundTrip(text, PrintOptions{.locations = true});
  // Ops without an explicit loc get their position in the parsed text.
  EXPECT_NE(p.find("%y = add %x, %x : i32 loc(\"a.eph\":2:4)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("  %c = const {value = true} : bool loc(\"rt.eir\":3:3)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("    yield %y loc(\"b.eph\":9:9)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("  } loc(\"a.eph\":3:4)\n"), std::string::npos) << p;
  EXPECT_NE(p.find("host @f(%x: i32) -> i32 loc(\"a.eph\":1:2) {"), std::string::npos) << p;
}

// Every value of `values` survives print -> parse as the same bits.
void expectFloatsSurvive(const std::vector<double>& values, const Type* (Context::*type)()) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("k", FunctionKind::Host, ctx.functionType({}, {}));
  Builder b(ctx, f->body());
  for (double v : values) b.constFloat((ctx.*type)(), v);
  b.create("return");
  ASSERT_TRUE(verify(m)) << verify(m).error().str();
  std::string text = print(m);
  auto back = parseModule(ctx, text);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(print(**back), text);
  auto it = (*back)->lookup("k")->body().ops().begin();
  for (double v : values) {
    double got = (*it++)->attr("value")->f;
    EXPECT_EQ(std::memcmp(&got, &v, sizeof v), 0) << v << " came back as " << got;
  }
}

TEST(RoundTrip, SpecialFloats) {
  double inf = std::numeric_limits<double>::infinity();
  expectFloatsSurvive({inf, -inf, std::numeric_limits<double>::quiet_NaN(),
                       -std::numeric_limits<double>::quiet_NaN(), -0.0, 0.0, 1e-300,
                       std::numeric_limits<double>::denorm_min(), std::numeric_limits<double>::max(),
                       std::numeric_limits<double>::lowest(), std::numeric_limits<double>::min(),
                       1.0 / 3.0, 2.5, -1e21, 123456789012345678.0},
                      &Context::f64);
  expectFloatsSurvive({double(0.1f), double(-3.4028235e38f), double(1e-45f), double(1.17549435e-38f),
                       double(16777217.0f), double(std::nextafter(1.0f, 2.0f))},
                      &Context::f32);
}

TEST(RoundTrip, RandomFloatBitPatterns) {
  std::mt19937_64 rng(12345);
  std::vector<double> values;
  while (values.size() < 500) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (!std::isnan(d)) values.push_back(d);  // nan payloads are not kept
  }
  expectFloatsSurvive(values, &Context::f64);
}

TEST(RoundTrip, IntegersAndStrings) {
  Context ctx;
  Module m(ctx);
  Function* f = m.addFunction("s", FunctionKind::Host, ctx.functionType({}, {}));
  std::string allBytes;
  for (int c = 1; c < 256; ++c) allBytes += static_cast<char>(c);
  f->attrs["bytes"] = Attr::string(allBytes);
  f->attrs["empty"] = Attr::string("");
  f->attrs["list"] = Attr::array({Attr::integer(std::numeric_limits<int64_t>::min()),
                                  Attr::integer(std::numeric_limits<int64_t>::max()),
                                  Attr::typeAttr(ctx.varType("T")), Attr::symbol("s")});
  Builder b(ctx, f->body());
  b.constInt(ctx.intType(64, false), -2);  // 2^64 - 2
  b.constInt(ctx.intType(8, true), -128);
  b.create("return");
  ASSERT_TRUE(verify(m));
  std::string text = print(m);
  auto back = parseModule(ctx, text);
  ASSERT_TRUE(back) << back.error().str();
  EXPECT_EQ(print(**back), text);
  const Function* g = (*back)->lookup("s");
  EXPECT_EQ(g->attrs.at("bytes").s, allBytes);
  EXPECT_EQ(g->attrs.at("empty"), Attr::string(""));
  EXPECT_EQ(g->attrs.at("list"), f->attrs.at("list"));
  EXPECT_EQ(g->body().front()->attr("value")->i, -2);
  EXPECT_NE(text.find("{value = 18446744073709551614} : u64"), std::string::npos) << text;
}

}  // namespace
}  // namespace eph::ir
