// The linearity checker on modules built in C++ (as a frontend would build
// them), with source locations set on each op: leak, use after consume,
// double consume, disagreeing branches and loop bodies, each reported at the
// right location and naming where the value was defined.
#include <gtest/gtest.h>

#include "ir/Builder.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

struct Fixture {
  ir::Context ctx;
  ir::Module m{ctx};
  const std::string* file = ctx.intern("k.eph");
  const ir::Type* buf = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Linear);
  const ir::Type* affine = ctx.bufferType(ctx.f32(), ir::Space::Device, ir::Ownership::Affine);

  Loc at(unsigned line, unsigned col = 5) { return Loc{file, line, col}; }

  // host @name(%n: u32, %c: bool)
  ir::Function* hostFn(const std::string& name) {
    return m.addFunction(name, ir::FunctionKind::Host, ctx.functionType({ctx.u32(), ctx.boolType()}, {}),
                         at(1, 1));
  }

  std::vector<Error> check() {
    EXPECT_TRUE(ir::verify(m)) << ir::verify(m).error().str();
    passes::Diagnostics diag;
    passes::linearityPass().run(m, diag);
    return diag.errors;
  }
};

ir::Value* alloc(ir::Builder& b, ir::Function* f, const ir::Type* t, const char* name) {
  ir::Value* v = b.op("alloc", {f->param(0)}, t);
  if (name) v->setName(name);
  return v;
}

}  // namespace

TEST(Linearity, AllocFreeIsClean) {
  Fixture x;
  ir::Function* f = x.hostFn("ok");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(3));
  b.create("free", {d});
  b.create("return");
  EXPECT_TRUE(x.check().empty());
}

TEST(Linearity, LeakIsReportedAtTheDefinition) {
  Fixture x;
  ir::Function* f = x.hostFn("leak");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(7, 9));
  alloc(b, f, x.buf, "d");
  b.setLoc(x.at(8));
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc, x.at(7, 9));
  EXPECT_EQ(errors[0].message, "linear value %d defined at k.eph:7:9 is never consumed");
}

TEST(Linearity, UnnamedValuesAreDescribedByTheirOp) {
  Fixture x;
  ir::Function* f = x.hostFn("unnamed");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  alloc(b, f, x.buf, nullptr);
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "linear value result 0 of 'alloc' defined at k.eph:2:5 is never consumed");
}

TEST(Linearity, UseAfterConsume) {
  Fixture x;
  ir::Function* f = x.hostFn("uac");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(3));
  b.create("free", {d});
  b.setLoc(x.at(4));
  b.op("buffer.len", {d}, x.ctx.u32());
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc, x.at(4));
  EXPECT_EQ(errors[0].message,
            "use of linear value %d (defined at k.eph:2:5) after it was consumed at k.eph:3:5");
}

TEST(Linearity, DoubleConsumeNamesTheFirst) {
  Fixture x;
  ir::Function* f = x.hostFn("twice");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(3));
  b.op("struct.make", {d}, x.ctx.structType({x.buf}))->setName("s");
  b.setLoc(x.at(4));
  b.create("free", {d});
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 2u);  // the second consume, and the struct that leaks
  EXPECT_EQ(errors[0].loc, x.at(4));
  EXPECT_EQ(errors[0].message, "linear value %d (defined at k.eph:2:5) consumed twice: first at k.eph:3:5");
  EXPECT_EQ(errors[1].message, "linear value %s defined at k.eph:3:5 is never consumed");
}

TEST(Linearity, AffineMayBeDroppedButNotConsumedTwice) {
  Fixture x;
  ir::Function* f = x.hostFn("affine");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  alloc(b, f, x.affine, "dropped");
  ir::Value* a = alloc(b, f, x.affine, "a");
  b.setLoc(x.at(3));
  b.create("free", {a});
  b.setLoc(x.at(4));
  b.create("free", {a});
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "affine value %a (defined at k.eph:2:5) consumed twice: first at k.eph:3:5");
}

TEST(Linearity, BranchesMustAgree) {
  Fixture x;
  ir::Function* f = x.hostFn("branches");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(3));
  ir::Op* ifOp = b.create("if", {f->param(1)}, {}, {}, 2);
  ir::Builder then(x.ctx, ifOp->region(0));
  then.setLoc(x.at(4, 7));
  then.create("yield");
  ir::Builder otherwise(x.ctx, ifOp->region(1));
  otherwise.setLoc(x.at(5, 7));
  otherwise.create("free", {d});
  otherwise.create("yield");
  b.setLoc(x.at(6));
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc, x.at(3));
  EXPECT_EQ(errors[0].message,
            "linear value %d (defined at k.eph:2:5) is consumed in the else-branch but not in the "
            "then-branch");
}

TEST(Linearity, LoopBodyMayNotConsumeOuterValues) {
  Fixture x;
  ir::Function* f = x.hostFn("loop");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  ir::Value* zero = b.constInt(x.ctx.u32(), 0);
  ir::Value* one = b.constInt(x.ctx.u32(), 1);
  b.setLoc(x.at(3));
  ir::Op* loop = b.create("for", {zero, f->param(0), one}, {}, {}, 1);
  loop->region(0).addArg(x.ctx.u32(), "i");
  ir::Builder body(x.ctx, loop->region(0));
  body.setLoc(x.at(4, 7));
  body.create("free", {d});
  body.create("yield");
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);  // and no leak on top of it
  EXPECT_EQ(errors[0].loc, x.at(4, 7));
  EXPECT_NE(errors[0].message.find("linear value %d (defined at k.eph:2:5) is defined outside the "
                                   "loop but consumed inside its body"),
            std::string::npos)
      << errors[0].message;
}

TEST(Linearity, CallsConsumeLinearParametersAndBorrowOthers) {
  Fixture x;
  const ir::Type* borrowed = x.ctx.bufferType(x.ctx.f32(), ir::Space::Device, ir::Ownership::Read);
  ir::Function* take = x.m.addFunction("take", ir::FunctionKind::Host, x.ctx.functionType({x.buf}, {}), x.at(1, 1));
  {
    ir::Builder b(x.ctx, take->body());
    b.create("free", {take->param(0)});
    b.create("return");
  }
  ir::Function* look = x.m.addFunction("look", ir::FunctionKind::Host, x.ctx.functionType({borrowed}, {}), x.at(1, 1));
  ir::Builder(x.ctx, look->body()).create("return");

  ir::Function* f = x.hostFn("caller");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(3));
  b.create("call", {d}, {}, {{"callee", ir::Attr::symbol("look")}});  // borrow
  b.setLoc(x.at(4));
  b.create("call", {d}, {}, {{"callee", ir::Attr::symbol("take")}});  // consume
  b.setLoc(x.at(5));
  b.create("call", {d}, {}, {{"callee", ir::Attr::symbol("look")}});  // too late
  b.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc, x.at(5));
  EXPECT_EQ(errors[0].message,
            "use of linear value %d (defined at k.eph:2:5) after it was consumed at k.eph:4:5");
}

TEST(Linearity, AllIndependentErrorsAreReported) {
  Fixture x;
  ir::Function* f = x.hostFn("many");
  ir::Builder b(x.ctx, f->body());
  b.setLoc(x.at(2));
  alloc(b, f, x.buf, "leaked");
  b.setLoc(x.at(3));
  ir::Value* d = alloc(b, f, x.buf, "d");
  b.setLoc(x.at(4));
  b.create("free", {d});
  b.setLoc(x.at(5));
  b.create("free", {d});
  b.create("return");
  ir::Function* g = x.hostFn("other");
  ir::Builder gb(x.ctx, g->body());
  gb.setLoc(x.at(9));
  alloc(gb, g, x.buf, "e");
  gb.create("return");
  auto errors = x.check();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_EQ(errors[0].loc, x.at(5));  // double consume, in program order
  EXPECT_EQ(errors[1].loc, x.at(2));  // leaks when the function ends
  EXPECT_EQ(errors[2].loc, x.at(9));  // and the next function
}
