// cse, dce and inline on small modules, and the whole optimisation pipeline
// against the interpreter: optimised and original modules must compute the
// same results, and every example must stay valid and linear.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"

using namespace eph;

namespace {

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const std::string& text,
                                  const std::string& name = "t.eir") {
  auto m = ir::parseModule(ctx, text, name);
  EXPECT_TRUE(m) << (m ? "" : m.error().str());
  return m ? std::move(*m) : nullptr;
}

bool runPasses(ir::Module& m, const char* pipeline) {
  auto pm = passes::PassManager::parse(pipeline);
  EXPECT_TRUE(pm);
  std::vector<Error> errors;
  bool ok = pm->run(m, {}, errors);
  for (auto& e : errors) ADD_FAILURE() << e.str();
  return ok;
}

size_t countOps(ir::Function& f, std::string_view name) {
  size_t n = 0;
  f.walk([&](ir::Op* op) { n += op->name() == name; });
  return n;
}

std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST(PassCSE, BuiltInCppMergesAcrossNestingButNotSideways) {
  ir::Context ctx;
  ir::Module m(ctx);
  ir::Function* f = m.addFunction("f", ir::FunctionKind::Device,
                                  ctx.functionType({ctx.i32(), ctx.boolType()}, {ctx.i32()}));
  ir::Builder b(ctx, f->body());
  ir::Value* outer = b.op("mul", {f->param(0), f->param(0)}, ctx.i32());
  ir::Op* ifOp = b.create("if", {f->param(1)}, {ctx.i32()}, {}, 2);
  ir::Builder t(ctx, ifOp->region(0));
  ir::Value* inner = t.op("mul", {f->param(0), f->param(0)}, ctx.i32());  // reuses outer
  ir::Value* onlyThen = t.op("add", {inner, f->param(0)}, ctx.i32());
  t.create("yield", {onlyThen});
  ir::Builder e(ctx, ifOp->region(1));
  ir::Value* sibling = e.op("add", {outer, f->param(0)}, ctx.i32());  // not the then-branch's
  e.create("yield", {sibling});
  ir::Value* after = b.op("add", {outer, f->param(0)}, ctx.i32());  // not the branches'
  ir::Value* sum = b.op("add", {ifOp->result(0), after}, ctx.i32());
  b.create("return", {sum});
  ASSERT_TRUE(runPasses(m, "cse"));
  EXPECT_EQ(countOps(*f, "mul"), 1u) << ir::print(m);
  EXPECT_EQ(countOps(*f, "add"), 4u) << ir::print(m);
  EXPECT_EQ(ifOp->region(0).front()->name(), "add") << ir::print(m);
  EXPECT_EQ(ifOp->region(0).front()->operand(0), outer);
}

TEST(PassDCE, KeepsStoresAndCallsDropsDeadLoads) {
  ir::Context ctx;
  auto m = parse(ctx, R"(device @g(%b: buffer<u32, device, write>) {
  %z = const {value = 0} : u32
  store %b, %z, %z
  return
}

kernel @k(%b: buffer<u32, device, write>) workgroup(1, 1, 1) {
  %i = global_id {dim = 0} : u32
  %dead = load %b, %i : u32
  call %b {callee = @g}
  barrier
  return
}
)");
  ASSERT_TRUE(runPasses(*m, "dce"));
  ir::Function* k = m->lookup("k");
  EXPECT_EQ(countOps(*k, "load"), 0u);
  EXPECT_EQ(countOps(*k, "global_id"), 0u);
  EXPECT_EQ(countOps(*k, "call"), 1u);
  EXPECT_EQ(countOps(*k, "barrier"), 1u);
  EXPECT_EQ(countOps(*m->lookup("g"), "store"), 1u);
}

TEST(PassInline, DirectSelfRecursionStays) {
  ir::Context ctx;
  auto m = parse(ctx, R"(host @down(%n: u32) -> u32 {
  %z = const {value = 0} : u32
  %done = eq %n, %z : bool
  %r = if %done : u32 {
    yield %z
  } {
    %one = const {value = 1} : u32
    %m = sub %n, %one : u32
    %s = call %m {callee = @down} : u32
    yield %s
  }
  return %r
}

host @main(%n: u32) -> u32 {
  %r = call %n {callee = @down} : u32
  return %r
}
)");
  ASSERT_TRUE(runPasses(*m, "inline"));
  EXPECT_EQ(countOps(*m->lookup("down"), "call"), 1u);
  EXPECT_EQ(countOps(*m->lookup("main"), "call"), 1u);
  EXPECT_EQ(m->functions().size(), 2u);
}

// The pipeline must not change what a program computes.
TEST(PassPipeline, CollatzComputesTheSameAfterOptimisation) {
  std::string text = readFile(std::filesystem::path(EPH_SOURCE_DIR) / "examples/ir/collatz.eir");
  ASSERT_FALSE(text.empty());
  ir::Context ctx;
  auto original = parse(ctx, text, "collatz.eir");
  auto optimised = parse(ctx, text, "collatz.eir");
  ASSERT_TRUE(runPasses(*optimised, "inline,canonicalize,cse,dce,linearity"));
  EXPECT_EQ(countOps(*optimised->lookup("main"), "while"), 1u);  // @steps was inlined
  // Small n: main runs a naive recursive fib.
  for (int64_t n : {1, 2, 3, 6, 7, 9}) {
    SCOPED_TRACE(n);
    interp::Interpreter a(*original), b(*optimised);
    const ir::Type* u64 = ctx.intType(64, false);
    auto ra = a.call(*original->lookup("main"), {interp::RtValue::ofInt(u64, n)});
    auto rb = b.call(*optimised->lookup("main"), {interp::RtValue::ofInt(u64, n)});
    ASSERT_TRUE(ra) << ra.error().str();
    ASSERT_TRUE(rb) << rb.error().str();
    ASSERT_EQ(ra->size(), rb->size());
    for (size_t i = 0; i < ra->size(); ++i) EXPECT_TRUE((*ra)[i] == (*rb)[i]);
  }
}

// Every example stays valid and linear through every built-in pass.
TEST(PassPipeline, ExamplesStayValidThroughEveryPass) {
  size_t seen = 0;
  for (auto& entry : std::filesystem::directory_iterator(std::filesystem::path(EPH_SOURCE_DIR) / "examples/ir")) {
    if (entry.path().extension() != ".eir") continue;
    ++seen;
    SCOPED_TRACE(entry.path().string());
    ir::Context ctx;
    auto m = parse(ctx, readFile(entry.path()), entry.path().filename().string());
    ASSERT_TRUE(m);
    ASSERT_TRUE(runPasses(*m, "linearity,inline,canonicalize,cse,dce,linearity"));
    // Printing and parsing the result gives the same module back.
    std::string printed = ir::print(*m);
    ir::Context ctx2;
    auto again = parse(ctx2, printed);
    ASSERT_TRUE(again);
    EXPECT_EQ(ir::print(*again), printed);
  }
  EXPECT_GE(seen, 3u);
}
