// The .eir parser: what it builds, where ops are located, and the exact text
// of its errors (file:line:col and what was expected).
#include <gtest/gtest.h>

#include "ir/OpTable.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

namespace eph::ir {
namespace {

std::string parseError(std::string_view text) {
  Context ctx;
  auto m = parseModule(ctx, text, "t.eir");
  return m ? std::string("parsed") : m.error().str();
}

const char* kSaxpy = R"(// saxpy
kernel @saxpy(%a: f32, %x: buffer<f32, device, read>, %y: buffer<f32, device, write>) workgroup(64, 2, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %x : u32
  %in = lt %i, %n : bool
  if %in {
    %xv = load %x, %i : f32
    %yv = load %y, %i : f32
    %p = mul %a, %xv : f32
    %s = add %p, %yv : f32
    store %y, %i, %s
    yield
  } {
    yield
  }
  return
}

host @main(%n: u32) -> (f32, u32) attributes {entry = true} loc("main.eph":7:3) {
  %0 = const {value = 2.5} : f32 loc("main.eph":8:5)
  return %0, %n
}
)";

TEST(Parser, BuildsFunctionsOpsAndRegions) {
  Context ctx;
  auto m = parseModule(ctx, kSaxpy, "saxpy.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_EQ((*m)->functions().size(), 2u);
  EXPECT_EQ((*m)->sourceName, "saxpy.eir");

  Function* k = (*m)->lookup("saxpy");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->isKernel());
  EXPECT_EQ(k->workgroupSize, (std::array<unsigned, 3>{64, 2, 1}));
  ASSERT_EQ(k->paramTypes().size(), 3u);
  EXPECT_EQ(k->paramTypes()[1]->str(), "buffer<f32, device, read>");
  EXPECT_EQ(k->param(0)->name(), "a");
  EXPECT_EQ(k->bindingOf(0), -1);
  EXPECT_EQ(k->bindingOf(1), 0);
  EXPECT_EQ(k->bindingOf(2), 1);

  std::vector<std::string> names;
  for (auto& op : k->body().ops()) names.emplace_back(op->name());
  EXPECT_EQ(names, (std::vector<std::string>{"global_id", "buffer.len", "lt", "if", "return"}));

  Op* gid = k->body().front();
  EXPECT_EQ(gid->intAttr("dim"), 0);
  EXPECT_EQ(gid->result(0)->type(), ctx.u32());
  EXPECT_EQ(gid->loc().line, 3u);
  EXPECT_EQ(gid->loc().col, 3u);
  EXPECT_EQ(*gid->loc().file, "saxpy.eir");

  Op* ifOp = gid->nextOp()->nextOp()->nextOp();
  ASSERT_EQ(ifOp->numRegions(), 2u);
  EXPECT_EQ(ifOp->operand(0), gid->nextOp()->nextOp()->result(0));
  Region& then = ifOp->region(0);
  ASSERT_EQ(then.ops().size(), 6u);
  Op* store = then.back()->prevOp();
  EXPECT_EQ(store->name(), "store");
  EXPECT_EQ(store->operand(0), k->param(2));
  EXPECT_EQ(store->loc().line, 11u);
  EXPECT_EQ(store->loc().col, 5u);
  EXPECT_EQ(store->parentOp(), ifOp);
  EXPECT_EQ(store->parentFunction(), k);
  EXPECT_EQ(k->param(2)->uses().size(), 2u);  // the load and the store

  Function* h = (*m)->lookup("main");
  EXPECT_TRUE(h->isHost());
  ASSERT_EQ(h->resultTypes().size(), 2u);
  EXPECT_EQ(h->resultTypes()[1], ctx.u32());
  ASSERT_EQ(h->attrs.count("entry"), 1u);
  EXPECT_EQ(h->attrs.at("entry"), Attr::boolean(true));
  EXPECT_EQ(*h->loc().file, "main.eph");
  EXPECT_EQ(h->loc().line, 7u);
  Op* c = h->body().front();
  EXPECT_EQ(c->loc().str(), "main.eph:8:5");
  EXPECT_EQ(c->attr("value")->f, 2.5);
  EXPECT_EQ(c->result(0)->name(), "");  // numeric names are not kept as hints
}

TEST(Parser, RegionArgumentsAndSiblingScopes) {
  Context ctx;
  auto m = parseModule(ctx, R"(
host @f(%n: u32, %c: bool) -> u32 {
  %z = const {value = 0} : u32
  %r = for %z, %n, %n, %z : u32 { |%i: u32, %acc: u32|
    %t = add %i, %acc : u32
    yield %t
  }
  %s = if %c : u32 {
    %t = add %r, %r : u32
    yield %t
  } {
    %t = mul %r, %r : u32
    yield %t
  }
  return %s
})");
  ASSERT_TRUE(m) << m.error().str();
  Function* f = (*m)->lookup("f");
  Op* loop = f->body().front()->nextOp();
  ASSERT_EQ(loop->region(0).numArgs(), 2u);
  EXPECT_EQ(loop->region(0).arg(1)->name(), "acc");
  EXPECT_EQ(loop->region(0).front()->operand(1), loop->region(0).arg(1));
  EXPECT_EQ(loop->region(0).arg(0)->parentRegion(), &loop->region(0));
}

TEST(Parser, ZeroOperandOpBeforeResults) {
  // `barrier` and `wait` take no operands: the next line's results are not theirs.
  Context ctx;
  auto m = parseModule(ctx, R"(
kernel @k() workgroup(1, 1, 1) {
  barrier
  %a = const {value = 1} : i32
  barrier
  %b, %c = call %a {callee = @two} : i32, i32
  return
}
device @two(%x: i32) -> (i32, i32) {
  return %x, %x
})");
  ASSERT_TRUE(m) << m.error().str();
  Function* k = (*m)->lookup("k");
  EXPECT_EQ(k->body().front()->numOperands(), 0u);
  EXPECT_EQ(k->body().front()->nextOp()->nextOp()->numOperands(), 0u);
  EXPECT_EQ(k->body().back()->prevOp()->numResults(), 2u);
}

TEST(Parser, Errors) {
  std::vector<std::pair<std::string, std::string>> cases = {
      {"func @f() {}", "t.eir:1:1: error[I001]: expected a function ('kernel', 'device' or 'host'), got 'func'"},
      {"host f() {}", "t.eir:1:6: error[I001]: expected a function name like '@main', got 'f'"},
      {"host @f(%x i32) {}", "t.eir:1:12: error[I001]: expected ':', got 'i32'"},
      {"host @f(x: i32) {}", "t.eir:1:9: error[I001]: expected a parameter like '%x: i32', got 'x'"},
      {"host @f() -> {}", "t.eir:1:14: error[I001]: expected a type, got '{'"},
      {"host @f() return", "t.eir:1:11: error[I001]: expected '{' to start the function body, got 'return'"},
      {"host @f() {\n  %x = frob : i32\n}", "t.eir:2:8: error[I003]: unknown op 'frob'"},
      {"host @f() {\n  %x =\n}", "t.eir:3:1: error[I001]: expected an op name, got '}'"},
      {"host @f() {\n  %x, 3 = add\n}", "t.eir:2:7: error[I001]: expected a result name, got '3'"},
      {"host @f(%a: i32) {\n  %x = add %a, %b : i32\n}", "t.eir:2:16: error[I004]: use of undefined value '%b'"},
      {"host @f(%a: i32, %a: i32) {}", "t.eir:1:18: error[I005]: value '%a' is defined twice"},
      {"host @f(%a: i32) {\n  %a = add %a, %a : i32\n}", "t.eir:2:3: error[I005]: value '%a' is defined twice"},
      {"host @f(%a: i32) {\n  %x = add %a : i32\n}", "t.eir:2:8: error[I006]: 'add' takes 2 operands, got 1"},
      {"host @f(%a: i32) {\n  add %a, %a\n}", "t.eir:2:3: error[I006]: 'add' has 1 result, got 0"},
      {"host @f(%a: i32) {\n  %x = add %a, %a\n}", "t.eir:2:3: error[I006]: 'add' names 1 result but gives 0 types"},
      {"host @f(%c: bool) {\n  if %c {\n    yield\n  }\n}", "t.eir:2:3: error[I006]: 'if' has 2 regions, got 1"},
      {"host @f() {\n  %x = const {value = 1, value = 2} : i32\n}", "t.eir:2:26: error[I005]: attribute 'value' given twice"},
      {"host @f() {\n  %x = const {value = } : i32\n}", "t.eir:2:23: error[I001]: expected an attribute value, got '}'"},
      {"host @f() {\n  %x = const {value 1} : i32\n}", "t.eir:2:21: error[I001]: expected '=', got '1'"},
      {"host @f() {\n  %x = const {value = 1.5e} : f32\n}", "t.eir:2:23: error[I002]: invalid float '1.5e'"},
      {"host @f() {\n  %x = const {value = 2e400} : f64\n}", "t.eir:2:23: error[I002]: float '2e400' is out of range"},
      {"host @f() {\n  %x = const {value = -9223372036854775809} : i64\n}",
       "t.eir:2:23: error[I002]: integer '-9223372036854775809' is out of range"},
      {"host @f() {\n  %x = const {value = [1, 2} : i64\n}", "t.eir:2:28: error[I001]: expected ']', got '}'"},
      {"host @f() attributes {s = \"abc\n\"} {}", "t.eir:1:27: error[I001]: unterminated string"},
      {"host @f() attributes {s = \"a\\qb\"} {}", "t.eir:1:27: error[I001]: unknown escape '\\q' in a string"},
      {"host @f() attributes {s = \"a\\x4\"} {}",
       "t.eir:1:27: error[I001]: expected two hex digits after '\\x' in a string"},
      {"host @f() {\n  %x = add # %y\n}", "t.eir:2:12: error[I001]: unexpected character '#'"},
      {"host @f() {\n  %x = add %\n}", "t.eir:2:12: error[I001]: expected a name after '%'"},
      {"host @\"\"() {}", "t.eir:1:6: error[I001]: empty name after '@'"},
      {"host @f() {\n  return\n}\nhost @f() {\n  return\n}", "t.eir:4:6: error[I005]: function '@f' is defined twice"},
      {"kernel @k() workgroup(64, 1) {}", "t.eir:1:28: error[I001]: expected ',', got ')'"},
      {"kernel @k() workgroup(64, 1, x) {}", "t.eir:1:30: error[I001]: expected a workgroup size, got 'x'"},
      {"kernel @k() workgroup(4294967296, 1, 1) {}",
       "t.eir:1:23: error[I002]: expected a workgroup size (a non-negative 32-bit integer), got '4294967296'"},
      {"device @d() workgroup(1, 1, 1) {}", "t.eir:1:13: error[I008]: only kernels have a workgroup size"},
      {"host @f() {\n  wait loc(\"a\":1)\n}", "t.eir:2:17: error[I001]: expected ':', got ')'"},
      {"host @f() {\n  return\n", "t.eir:3:1: error[I001]: expected '}', got end of input"},
      {"host @f() {\n  %y = const {value = 1} : i32\n  %z = add %y, %y : i32 {\n    yield\n  }\n}",
       "t.eir:3:8: error[I006]: 'add' has 0 regions, got 1"},
  };
  for (auto& [text, err] : cases) EXPECT_EQ(parseError(text), err) << text;
}

TEST(Parser, ValuesAreScopedToTheirRegion) {
  EXPECT_EQ(parseError(R"(host @f(%c: bool) -> i32 {
  if %c {
    %v = const {value = 1} : i32
    yield
  } {
    yield
  }
  return %v
})"),
            "t.eir:8:10: error[I004]: use of undefined value '%v'");
  // An op's results are not visible inside its own regions.
  EXPECT_EQ(parseError(R"(host @f(%c: bool) -> i32 {
  %r = if %c : i32 {
    yield %r
  } {
    yield %r
  }
  return %r
})"),
            "t.eir:3:11: error[I004]: use of undefined value '%r'");
}

TEST(Parser, DeepRegionNestingIsAnErrorNotACrash) {
  auto nested = [](int depth) {
    std::string s = "host @f(%c: bool) {\n";
    for (int i = 0; i < depth; ++i) s += "if %c {\n";
    for (int i = 0; i < depth; ++i) s += "yield\n} {\nyield\n}\n";
    return s + "return\n}\n";
  };
  EXPECT_EQ(parseError(nested(200)), "parsed");
  EXPECT_EQ(parseError(nested(201)),
            "t.eir:202:7: error[I007]: nesting is too deep (more than 200 levels of regions, types or "
            "attribute arrays)");
  EXPECT_EQ(parseError(nested(50000)).rfind("t.eir:202:7: error[I007]: nesting is too deep", 0), 0u);
  std::string arrays = "host @f() attributes {a = " + std::string(100000, '[') + "} {}";
  EXPECT_EQ(parseError(arrays),
            "t.eir:1:227: error[I007]: nesting is too deep (more than 200 levels of regions, types or "
            "attribute arrays)");
}

TEST(Parser, EveryTableOpParsesByName) {
  // The parser is generic over the op table: any op name is accepted where an
  // op may appear, and its counts are checked against its entry.
  for (const OpInfo* info : OpTable::get().all()) {
    std::string text = "host @f() {\n  " + std::string(info->name) + " loc(\"x\":1:1)\n}";
    std::string err = parseError(text);
    bool countsFit = (info->numOperands == 0 || info->numOperands == kVariadic) &&
                     (info->numResults == 0 || info->numResults == kVariadic) &&
                     (info->numRegions == 0 || info->numRegions == kVariadic);
    if (countsFit)
      EXPECT_EQ(err, "parsed") << info->name;
    else
      EXPECT_NE(err.find("error[I006]: '" + std::string(info->name) + "' "), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace eph::ir
