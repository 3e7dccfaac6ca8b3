// The verifier on IR built in C++, where the parser's scoping cannot catch
// mistakes (dominance, op counts, terminators), and on text for the function
// rules. Each test checks the full message with its location.
#include <gtest/gtest.h>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"

namespace eph::ir {
namespace {

std::string verifyText(std::string_view text) {
  Context ctx;
  auto m = parseModule(ctx, text, "v.eir");
  if (!m) return "parse error: " + m.error().str();
  Status s = verify(**m);
  return s ? std::string("ok") : s.error().str();
}

std::string errorOf(const Module& m) {
  Status s = verify(m);
  return s ? std::string("ok") : s.error().str();
}

// A host function `name(i32) -> i32` with an empty body, built by the test.
struct Fixture {
  Context ctx;
  Module m{ctx};
  const std::string* file = ctx.intern("b.eir");
  Function* fn(const std::string& name, FunctionKind kind = FunctionKind::Host) {
    return m.addFunction(name, kind, ctx.functionType({ctx.i32()}, {ctx.i32()}), Loc{file, 1, 1});
  }
  Loc at(unsigned line, unsigned col = 3) { return Loc{file, line, col}; }
};

TEST(Verifier, AcceptsAWellFormedModule) {
  EXPECT_EQ(verifyText(R"(
kernel @k(%a: f32, %x: buffer<f32, device, read>, %y: buffer<f32, device, write>) workgroup(32, 32, 1) {
  %i = global_id {dim = 0} : u32
  %xv = load %x, %i : f32
  %p = call %a, %xv {callee = @mul} : f32
  store %y, %i, %p
  return
}
device @mul(%a: f32, %b: f32) -> f32 {
  %r = mul %a, %b : f32
  return %r
}
host @main(%n: u32, %a: f32) {
  %one = const {value = 1} : u32
  %x = alloc %n : buffer<f32, device, linear>
  %y = alloc %n : buffer<f32, device, linear>
  dispatch %n, %one, %one, %a, %x, %y {kernel = @k}
  free %x
  free %y
  return
}
)"),
            "ok");
}

TEST(Verifier, UseBeforeDefinition) {
  Fixture t;
  Function* f = t.fn("f");
  Builder b(t.ctx, f->body());
  b.setLoc(t.at(2));
  Value* x = b.op("add", {f->param(0), f->param(0)}, t.ctx.i32());
  x->setName("x");
  b.setLoc(t.at(3));
  Value* y = b.op("mul", {x, x}, t.ctx.i32());
  b.setLoc(t.at(4));
  b.create("return", {y});
  EXPECT_EQ(errorOf(t.m), "ok");
  // Make the add use the mul that follows it.
  Op* add = x->definingOp();
  add->setOperand(1, y);
  EXPECT_EQ(errorOf(t.m), "b.eir:2:3: error[V008]: 'add': operand 1 is used before its definition");
  add->setOperand(1, f->param(0));
  // An op that uses its own result.
  y->definingOp()->setOperand(0, y);
  EXPECT_EQ(errorOf(t.m), "b.eir:3:3: error[V008]: 'mul': operand 0 is used before its definition");
  y->definingOp()->setOperand(0, x);
  EXPECT_EQ(errorOf(t.m), "ok");
}

TEST(Verifier, UseOfAValueFromANonEnclosingRegion) {
  Fixture t;
  Function* f = t.fn("f");
  Builder b(t.ctx, f->body());
  Value* c = b.constBool(true);
  b.setLoc(t.at(5));
  Op* ifOp = b.create("if", {c}, {t.ctx.i32()}, {}, 2);
  Builder then(t.ctx, ifOp->region(0));
  then.setLoc(t.at(6, 5));
  Value* inner = then.op("add", {f->param(0), f->param(0)}, t.ctx.i32());
  inner->setName("inner");
  then.create("yield", {inner});
  Builder other(t.ctx, ifOp->region(1));
  other.setLoc(t.at(8, 5));
  Op* yield = other.create("yield", {f->param(0)});
  b.setLoc(t.at(9));
  Op* ret = b.create("return", {ifOp->result(0)});
  EXPECT_EQ(errorOf(t.m), "ok");

  // The else region uses a value of the then region.
  yield->setOperand(0, inner);
  EXPECT_EQ(errorOf(t.m),
            "b.eir:8:5: error[V008]: 'yield': operand 0 (%inner) is defined in a region that does not "
            "enclose this use");
  yield->setOperand(0, f->param(0));
  // The function body uses a value from inside the if.
  ret->setOperand(0, inner);
  EXPECT_EQ(errorOf(t.m),
            "b.eir:9:3: error[V008]: 'return': operand 0 (%inner) is defined in a region that does not "
            "enclose this use");
  ret->setOperand(0, ifOp->result(0));
  // The if uses a value defined inside its own region.
  then.setInsertionPoint(ifOp->region(0), ifOp->region(0).back());
  Value* cond = then.op("eq", {inner, inner}, t.ctx.boolType());
  cond->setName("cond");
  ifOp->setOperand(0, cond);
  EXPECT_EQ(errorOf(t.m),
            "b.eir:5:3: error[V008]: 'if': operand 0 (%cond) is defined in a region that does not "
            "enclose this use");
  ifOp->setOperand(0, c);
  EXPECT_EQ(errorOf(t.m), "ok");
}

TEST(Verifier, UseOfAValueFromAnotherFunction) {
  Fixture t;
  Function* f = t.fn("f");
  Function* g = t.fn("g");
  Builder bf(t.ctx, f->body());
  bf.setLoc(t.at(2));
  Op* ret = bf.create("return", {f->param(0)});
  Builder bg(t.ctx, g->body());
  bg.create("return", {g->param(0)});
  g->param(0)->setName("gp");
  ret->setOperand(0, g->param(0));
  EXPECT_EQ(errorOf(t.m),
            "b.eir:2:3: error[V008]: 'return': operand 0 (%gp) is defined in another function, @g");
  ret->setOperand(0, f->param(0));  // restore before the module is destroyed
  EXPECT_EQ(errorOf(t.m), "ok");
}

TEST(Verifier, OpCountsAgainstTheTable) {
  Fixture t;
  Function* f = t.fn("f");
  Builder b(t.ctx, f->body());
  b.setLoc(t.at(2));
  Op* add = b.create("add", {f->param(0)}, {t.ctx.i32()});
  b.create("return", {add->result(0)});
  EXPECT_EQ(errorOf(t.m), "b.eir:2:3: error[V006]: 'add': expects 2 operands, got 1");
  add->addOperand(f->param(0));
  EXPECT_EQ(errorOf(t.m), "ok");
  b.setLoc(t.at(3));
  auto extra = Op::create(OpTable::get()["wait"], {}, {}, {}, 1, t.at(3));
  f->body().insertBefore(f->body().back(), std::move(extra));
  EXPECT_EQ(errorOf(t.m), "b.eir:3:3: error[V006]: 'wait': expects 0 regions, got 1");
}

TEST(Verifier, TerminatorPlacement) {
  Fixture t;
  Function* f = t.fn("f");
  Builder b(t.ctx, f->body());
  b.setLoc(t.at(2));
  Value* x = b.op("add", {f->param(0), f->param(0)}, t.ctx.i32());
  EXPECT_EQ(errorOf(t.m), "b.eir:1:1: error[V005]: function '@f': body must end with 'return', but it ends with 'add'");
  b.setLoc(t.at(3));
  b.create("return", {x});
  EXPECT_EQ(errorOf(t.m), "ok");
  // A terminator in the middle.
  b.setInsertionPoint(f->body(), x->definingOp());
  b.setLoc(t.at(1, 20));
  b.create("return", {f->param(0)});
  EXPECT_EQ(errorOf(t.m), "b.eir:1:20: error[V005]: 'return': a terminator must be the last op in its region");
}

TEST(Verifier, EmptyBodyAndRegions) {
  Fixture t;
  Function* f = t.fn("f");
  EXPECT_EQ(errorOf(t.m), "b.eir:1:1: error[V005]: function '@f': body must end with 'return', but it is empty");
  Builder b(t.ctx, f->body());
  b.setLoc(t.at(2));
  Value* c = b.constBool(false);
  b.setLoc(t.at(3));
  Op* ifOp = b.create("if", {c}, {}, {}, 2);
  b.create("return", {f->param(0)});
  EXPECT_EQ(errorOf(t.m), "b.eir:3:3: error[V005]: 'if': region 0 must end with a terminator, but it is empty");
  Builder(t.ctx, ifOp->region(0)).create("yield");
  EXPECT_EQ(errorOf(t.m), "b.eir:3:3: error[V005]: 'if': region 1 must end with a terminator, but it is empty");
  Builder(t.ctx, ifOp->region(1)).create("yield");
  EXPECT_EQ(errorOf(t.m), "ok");
}

TEST(Verifier, LocationFallsBackToTheEnclosingOp) {
  Fixture t;
  Function* f = t.fn("f");
  Builder b(t.ctx, f->body());
  Value* c = b.constBool(false);
  b.setLoc(t.at(7, 9));
  Op* ifOp = b.create("if", {c}, {}, {}, 2);
  b.setLoc(Loc{});
  b.create("return", {f->param(0)});
  Builder th(t.ctx, ifOp->region(0));
  th.op("neg", {c}, t.ctx.boolType());  // no location of its own; bool is not numeric
  th.create("yield");
  Builder(t.ctx, ifOp->region(1)).create("yield");
  EXPECT_EQ(errorOf(t.m), "b.eir:7:9: error[V009]: 'neg': expects integers or floats, got 'bool'");
}

TEST(Verifier, FunctionRules) {
  Fixture t;
  Function* f = t.fn("f");
  Builder(t.ctx, f->body()).create("return", {f->param(0)});
  Function* dup = t.fn("f");
  Builder(t.ctx, dup->body()).create("return", {dup->param(0)});
  EXPECT_EQ(errorOf(t.m), "b.eir:1:1: error[V011]: function '@f': is defined twice");
  dup->setName("g");
  EXPECT_EQ(errorOf(t.m), "ok");
  f->body().addArg(t.ctx.f32());
  EXPECT_EQ(errorOf(t.m),
            "b.eir:1:1: error[V001]: function '@f': body arguments 'i32', 'f32' do not match its "
            "parameters 'i32'");

  Fixture k;
  Function* kern = k.m.addFunction("k", FunctionKind::Kernel, k.ctx.functionType({}, {}), k.at(4, 1));
  Builder(k.ctx, kern->body()).create("return");
  kern->workgroupSize = {1024, 1, 1};
  EXPECT_EQ(errorOf(k.m), "ok");
  kern->workgroupSize = {16, 16, 8};
  EXPECT_EQ(errorOf(k.m),
            "b.eir:4:1: error[V003]: function '@k': workgroup size (16, 16, 8) has 2048 invocations, "
            "more than 1024");
  kern->workgroupSize = {65536, 65536, 65536};  // the product must not wrap around
  EXPECT_EQ(errorOf(k.m),
            "b.eir:4:1: error[V003]: function '@k': workgroup size (65536, 65536, 65536) has "
            "281474976710656 invocations, more than 1024");
  kern->workgroupSize = {0, 1, 1};
  EXPECT_EQ(errorOf(k.m),
            "b.eir:4:1: error[V003]: function '@k': workgroup size (0, 1, 1) must be at least 1 in "
            "every dimension");
}

TEST(Verifier, PlacementOfHostAndKernelOps) {
  EXPECT_EQ(verifyText("device @d() {\n  barrier\n  %i = subgroup_id : u32\n  return\n}"), "ok");
  EXPECT_EQ(verifyText("device @d(%n: u32) {\n  %b = alloc %n : buffer<f32, host, linear>\n  free %b\n  return\n}"),
            "v.eir:2:3: error[V007]: 'alloc': is only allowed in host functions, but @d is a device function");
  EXPECT_EQ(verifyText("host @h() {\n  %w = workgroup.alloc {size = 4} : buffer<f32, workgroup, write>\n  return\n}"),
            "v.eir:2:3: error[V007]: 'workgroup.alloc': is only allowed in kernels and device functions, "
            "but @h is a host function");
  EXPECT_EQ(verifyText("kernel @k() workgroup(1, 1, 1) {\n  %one = const {value = 1} : u32\n"
                       "  dispatch %one, %one, %one {kernel = @k}\n  return\n}"),
            "v.eir:3:3: error[V007]: 'dispatch': is only allowed in host functions, but @k is a kernel function");
}

TEST(Verifier, RecursionInDeviceCodeOnly) {
  // A three-function cycle among device functions.
  EXPECT_EQ(verifyText(R"(device @a(%x: i32) -> i32 {
  %r = call %x {callee = @b} : i32
  return %r
}
device @b(%x: i32) -> i32 {
  %r = call %x {callee = @c} : i32
  return %r
}
device @c(%x: i32) -> i32 {
  %c = const {value = true} : bool
  %r = if %c : i32 {
    %s = call %x {callee = @a} : i32
    yield %s
  } {
    yield %x
  }
  return %r
})"),
            "v.eir:12:5: error[V010]: 'call': recursion is not allowed in kernels and device functions: "
            "@a calls @b calls @c calls @a");
  // Host functions may recurse, directly or mutually, and may call device functions.
  EXPECT_EQ(verifyText(R"(host @a(%x: i32) -> i32 {
  %r = call %x {callee = @b} : i32
  return %r
}
host @b(%x: i32) -> i32 {
  %r = call %x {callee = @a} : i32
  %s = call %r {callee = @d} : i32
  return %s
}
device @d(%x: i32) -> i32 {
  return %x
})"),
            "ok");
  // A diamond is not a cycle.
  EXPECT_EQ(verifyText(R"(kernel @k(%x: i32) workgroup(1, 1, 1) {
  %a = call %x {callee = @l} : i32
  %b = call %x {callee = @r} : i32
  return
}
device @l(%x: i32) -> i32 {
  %r = call %x {callee = @leaf} : i32
  return %r
}
device @r(%x: i32) -> i32 {
  %r = call %x {callee = @leaf} : i32
  return %r
}
device @leaf(%x: i32) -> i32 {
  return %x
})"),
            "ok");
}

TEST(Verifier, WhileRegionsAndTerminators) {
  const char* good = R"(device @w(%n: u32) -> u32 {
  %z = const {value = 0} : u32
  %r = while %z : u32 { |%i: u32|
    %go = lt %i, %n : bool
    condition %go, %i
  } { |%j: u32|
    %one = const {value = 1} : u32
    %k = add %j, %one : u32
    yield %k
  }
  return %r
})";
  EXPECT_EQ(verifyText(good), "ok");
  std::string yieldFirst = good;
  yieldFirst.replace(yieldFirst.find("condition %go, %i"), 17, "yield %i");
  EXPECT_EQ(verifyText(yieldFirst),
            "v.eir:5:5: error[V009]: 'yield': the first region of 'while' ends with 'condition', not 'yield'");
  std::string badCond = good;
  badCond.replace(badCond.find("condition %go, %i"), 17, "condition %i, %i");
  EXPECT_EQ(verifyText(badCond), "v.eir:3:3: error[V009]: 'while': 'condition' needs a bool first operand");
}

}  // namespace
}  // namespace eph::ir
