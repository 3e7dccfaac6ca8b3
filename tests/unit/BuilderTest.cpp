// ir::Builder (ir/Builder.h): each family of typed helpers builds IR that
// verifies and prints exactly as the same text parsed by ir/Parser; the
// structured ifOp/forOp/whileOp/matchOp build a kernel and a host program
// that run on interp, cpu and vulkan with the expected values; the
// InsertionGuard and the structured helpers leave the insertion point and
// location as they found them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"

namespace eph::ir {
namespace {

class BuilderTest : public ::testing::Test {
 protected:
  Context ctx;
  Module m{ctx};
  const Type* i32 = ctx.i32();
  const Type* u32 = ctx.u32();
  const Type* f32 = ctx.f32();
  const Type* boolT = ctx.boolType();

  const Type* buf(const Type* elem, Space s, Ownership o) { return ctx.bufferType(elem, s, o); }

  // A function with named parameters.
  Function* fn(const std::string& name, FunctionKind kind, std::vector<const Type*> params,
               std::vector<const Type*> results, std::vector<std::string> names) {
    Function* f = m.addFunction(name, kind, ctx.functionType(std::move(params), std::move(results)));
    for (unsigned i = 0; i < names.size(); ++i) f->param(i)->setName(names[i]);
    return f;
  }

  // The module built verifies, and prints as `text` parsed and printed.
  void expectSameAs(const std::string& text) {
    Status built = verify(m);
    ASSERT_TRUE(built) << built.error().str() << "\n" << print(m);
    Context pctx;
    auto parsed = parseModule(pctx, text, "expected.eir");
    ASSERT_TRUE(parsed) << parsed.error().str();
    Status valid = verify(**parsed);
    ASSERT_TRUE(valid) << valid.error().str();
    EXPECT_EQ(print(m), print(**parsed));
  }
};

TEST_F(BuilderTest, ConstantsAndArithmetic) {
  Function* f = fn("f", FunctionKind::Device, {i32, i32}, {i32}, {"a", "b"});
  Builder b(ctx, f->body());
  Value* a = f->param(0);
  Value* c = f->param(1);
  Value* acc = b.constInt(i32, -3);
  for (auto op : {&Builder::add, &Builder::sub, &Builder::mul, &Builder::div, &Builder::rem, &Builder::min,
                  &Builder::max, &Builder::and_, &Builder::or_, &Builder::xor_, &Builder::shl, &Builder::shr})
    acc = (b.*op)(acc, (b.*op)(a, c));
  acc = b.not_(b.abs(b.neg(acc)));
  b.ret({acc});
  expectSameAs(R"(
device @f(%a: i32, %b: i32) -> i32 {
  %0 = const {value = -3} : i32
  %1 = add %a, %b : i32
  %2 = add %0, %1 : i32
  %3 = sub %a, %b : i32
  %4 = sub %2, %3 : i32
  %5 = mul %a, %b : i32
  %6 = mul %4, %5 : i32
  %7 = div %a, %b : i32
  %8 = div %6, %7 : i32
  %9 = rem %a, %b : i32
  %10 = rem %8, %9 : i32
  %11 = min %a, %b : i32
  %12 = min %10, %11 : i32
  %13 = max %a, %b : i32
  %14 = max %12, %13 : i32
  %15 = and %a, %b : i32
  %16 = and %14, %15 : i32
  %17 = or %a, %b : i32
  %18 = or %16, %17 : i32
  %19 = xor %a, %b : i32
  %20 = xor %18, %19 : i32
  %21 = shl %a, %b : i32
  %22 = shl %20, %21 : i32
  %23 = shr %a, %b : i32
  %24 = shr %22, %23 : i32
  %25 = neg %24 : i32
  %26 = abs %25 : i32
  %27 = not %26 : i32
  return %27
}
)");
}

TEST_F(BuilderTest, FloatMath) {
  const Type* v4 = ctx.vectorType(f32, 4);
  Function* f = fn("g", FunctionKind::Device, {f32, f32, v4}, {f32, v4}, {"x", "y", "v"});
  Builder b(ctx, f->body());
  Value* x = f->param(0);
  Value* y = f->param(1);
  std::string text = "device @g(%x: f32, %y: f32, %v: vec<f32, 4>) -> (f32, vec<f32, 4>) {\n";
  Value* acc = b.constFloat(f32, 0.5);
  text += "  %0 = const {value = 0.5} : f32\n";
  unsigned n = 1;
  auto line = [&](const std::string& op, const std::string& operands) {
    text += "  %" + std::to_string(n) + " = " + op + " " + operands + " : f32\n";
    return "%" + std::to_string(n++);
  };
  std::string prev = "%0";
  using Unary = Value* (Builder::*)(Value*);
  const std::pair<Unary, const char*> unary[] = {
      {&Builder::sqrt, "sqrt"},   {&Builder::rsqrt, "rsqrt"}, {&Builder::exp, "exp"},     {&Builder::exp2, "exp2"},
      {&Builder::expm1, "expm1"}, {&Builder::log, "log"},     {&Builder::log2, "log2"},   {&Builder::log1p, "log1p"},
      {&Builder::sin, "sin"},     {&Builder::cos, "cos"},     {&Builder::tan, "tan"},     {&Builder::asin, "asin"},
      {&Builder::acos, "acos"},   {&Builder::atan, "atan"},   {&Builder::sinh, "sinh"},   {&Builder::cosh, "cosh"},
      {&Builder::tanh, "tanh"},   {&Builder::asinh, "asinh"}, {&Builder::acosh, "acosh"}, {&Builder::atanh, "atanh"},
      {&Builder::erf, "erf"},     {&Builder::floor, "floor"}, {&Builder::ceil, "ceil"},   {&Builder::round, "round"},
      {&Builder::trunc, "trunc"}, {&Builder::sign, "sign"},
  };
  for (auto [op, name] : unary) {
    acc = (b.*op)(acc);
    prev = line(name, prev);
  }
  using Binary = Value* (Builder::*)(Value*, Value*);
  const std::pair<Binary, const char*> binary[] = {
      {&Builder::pow, "pow"}, {&Builder::atan2, "atan2"}, {&Builder::copysign, "copysign"}};
  for (auto [op, name] : binary) {
    acc = (b.*op)(acc, y);
    prev = line(name, prev + ", %y");
  }
  acc = b.fma(acc, x, y);
  prev = line("fma", prev + ", %x, %y");
  Value* v = b.add(f->param(2), f->param(2));
  text += "  %" + std::to_string(n++) + " = add %v, %v : vec<f32, 4>\n";
  b.ret({acc, v});
  text += "  return " + prev + ", %" + std::to_string(n - 1) + "\n}\n";
  expectSameAs(text);
}

TEST_F(BuilderTest, ComparesSelectAndCasts) {
  const Type* v3 = ctx.vectorType(f32, 3);
  Function* f = fn("c", FunctionKind::Device, {i32, i32, v3, v3}, {f32, u32, ctx.vectorType(boolT, 3)}, {"a", "b", "p", "q"});
  Builder b(ctx, f->body());
  Value* a = f->param(0);
  Value* c = f->param(1);
  Value* t = b.constBool(true);
  for (auto op : {&Builder::eq, &Builder::ne, &Builder::lt, &Builder::le, &Builder::gt, &Builder::ge})
    t = b.and_(t, (b.*op)(a, c));
  Value* s = b.select(t, a, c);
  Value* fl = b.cast(s, f32);
  Value* bits = b.bitcast(fl, u32);
  Value* vlt = b.lt(f->param(2), f->param(3));
  b.ret({fl, bits, vlt});
  expectSameAs(R"(
device @c(%a: i32, %b: i32, %p: vec<f32, 3>, %q: vec<f32, 3>) -> (f32, u32, vec<bool, 3>) {
  %0 = const {value = true} : bool
  %1 = eq %a, %b : bool
  %2 = and %0, %1 : bool
  %3 = ne %a, %b : bool
  %4 = and %2, %3 : bool
  %5 = lt %a, %b : bool
  %6 = and %4, %5 : bool
  %7 = le %a, %b : bool
  %8 = and %6, %7 : bool
  %9 = gt %a, %b : bool
  %10 = and %8, %9 : bool
  %11 = ge %a, %b : bool
  %12 = and %10, %11 : bool
  %13 = select %12, %a, %b : i32
  %14 = cast %13 : f32
  %15 = bitcast %14 : u32
  %16 = lt %p, %q : vec<bool, 3>
  return %14, %15, %16
}
)");
}

TEST_F(BuilderTest, Aggregates) {
  const Type* v3 = ctx.vectorType(f32, 3);
  const Type* pair = ctx.structType({i32, f32});
  const Type* option = ctx.sumType({ctx.unitType(), i32});
  Function* f = fn("agg", FunctionKind::Device, {f32, i32}, {f32, i32, i32, ctx.structType({pair, i32})}, {"x", "i"});
  Builder b(ctx, f->body());
  Value* x = f->param(0);
  Value* i = f->param(1);
  Value* v = b.vecMake({x, x, x});
  Value* w = b.splat(x, v3);
  Value* w2 = b.vecInsert(w, 1, b.vecExtract(v, 2));
  Value* d = b.dot(v, w2);
  Value* len = b.length(b.normalize(b.cross(v, w2)));
  Value* sum = b.add(d, len);
  Value* p = b.structMake({i, sum});
  Value* p2 = b.structInsert(p, 0, b.structExtract(p, 0));
  Values parts = b.structUnpack(p2);
  Value* some = b.sumMake(option, 1, parts[0]);
  Value* tag = b.sumTag(some, i32);
  Value* arr = b.arrayMake({i, tag});
  Value* arr2 = b.arraySet(arr, tag, i);
  Value* elem = b.arrayGet(arr2, i);
  Value* empty = b.arrayMake(ctx.arrayType(i32, 1), {elem});
  Value* one = b.arrayGet(empty, tag);
  Value* unit = b.unit();
  b.ret({parts[1], tag, one, b.structMake({p2, i})});
  (void)unit;
  expectSameAs(R"(
device @agg(%x: f32, %i: i32) -> (f32, i32, i32, struct<struct<i32, f32>, i32>) {
  %0 = vec.make %x, %x, %x : vec<f32, 3>
  %1 = vec.make %x, %x, %x : vec<f32, 3>
  %2 = vec.extract %0 {index = 2} : f32
  %3 = vec.insert %1, %2 {index = 1} : vec<f32, 3>
  %4 = dot %0, %3 : f32
  %5 = cross %0, %3 : vec<f32, 3>
  %6 = normalize %5 : vec<f32, 3>
  %7 = length %6 : f32
  %8 = add %4, %7 : f32
  %9 = struct.make %i, %8 : struct<i32, f32>
  %10 = struct.extract %9 {index = 0} : i32
  %11 = struct.insert %9, %10 {index = 0} : struct<i32, f32>
  %12, %13 = struct.unpack %11 : i32, f32
  %14 = sum.make %12 {tag = 1} : sum<struct<>, i32>
  %15 = sum.tag %14 : i32
  %16 = array.make %i, %15 : array<i32, 2>
  %17 = array.set %16, %15, %i : array<i32, 2>
  %18 = array.get %17, %i : i32
  %19 = array.make %18 : array<i32, 1>
  %20 = array.get %19, %15 : i32
  %21 = struct.make : struct<>
  %22 = struct.make %11, %i : struct<struct<i32, f32>, i32>
  return %13, %15, %20, %22
}
)");
}

TEST_F(BuilderTest, KernelMemoryAtomicsAndIds) {
  const Type* data = buf(u32, Space::Device, Ownership::Write);
  const Type* fdata = buf(f32, Space::Device, Ownership::Write);
  Function* k = fn("k", FunctionKind::Kernel, {data, fdata}, {}, {"d", "fd"});
  k->workgroupSize = {8, 1, 1};
  Builder b(ctx, k->body());
  Value* d = k->param(0);
  Value* s = b.workgroupAlloc(u32, 8);
  Value* gid = b.globalId(0);
  Value* ids[] = {b.localId(0),       b.workgroupId(1), b.numWorkgroups(2), b.workgroupSize(0, i32),
                  b.subgroupSize(),   b.subgroupId(),   b.subgroupLocalId()};
  (void)ids;
  Value* n = b.bufferLen(d);
  Value* x = b.load(d, gid);
  b.store(s, ids[0], x);
  b.barrier();
  Value* o1 = b.atomicAdd(d, gid, n);
  Value* o2 = b.atomicMin(d, gid, o1);
  Value* o3 = b.atomicMax(d, gid, o2);
  Value* o4 = b.atomicXchg(d, gid, o3);
  b.atomicCmpXchg(d, gid, o4, x);
  Value* f = b.load(k->param(1), gid);
  b.atomicAdd(k->param(1), gid, f);
  b.ret();
  expectSameAs(R"(
kernel @k(%d: buffer<u32, device, write>, %fd: buffer<f32, device, write>) workgroup(8, 1, 1) {
  %0 = workgroup.alloc {size = 8} : buffer<u32, workgroup, write>
  %1 = global_id {dim = 0} : u32
  %2 = local_id {dim = 0} : u32
  %3 = workgroup_id {dim = 1} : u32
  %4 = num_workgroups {dim = 2} : u32
  %5 = workgroup_size {dim = 0} : i32
  %6 = subgroup_size : u32
  %7 = subgroup_id : u32
  %8 = subgroup_local_id : u32
  %9 = buffer.len %d : u32
  %10 = load %d, %1 : u32
  store %0, %2, %10
  barrier
  %11 = atomic.add %d, %1, %9 : u32
  %12 = atomic.min %d, %1, %11 : u32
  %13 = atomic.max %d, %1, %12 : u32
  %14 = atomic.xchg %d, %1, %13 : u32
  %15 = atomic.cmpxchg %d, %1, %14, %10 : u32
  %16 = load %fd, %1 : f32
  %17 = atomic.add %fd, %1, %16 : f32
  return
}
)");
}

TEST_F(BuilderTest, HostOpsCallsAndFunctionValues) {
  Function* sq = fn("sq", FunctionKind::Device, {f32}, {f32}, {"x"});
  {
    Builder b(ctx, sq->body());
    b.ret({b.mul(sq->param(0), sq->param(0))});
  }
  Function* k = fn("k", FunctionKind::Kernel, {buf(f32, Space::Device, Ownership::Write)}, {}, {"d"});
  Builder(ctx, k->body()).ret();
  Function* main = fn("main", FunctionKind::Host, {}, {f32, i32}, {});
  Builder b(ctx, main->body());
  Value* n = b.constInt(u32, 4);
  Value* h = b.alloc(n, buf(f32, Space::Host, Ownership::Linear));
  Value* d = b.alloc(n, buf(f32, Space::Device, Ownership::Linear));
  Value* d1 = b.alloc(n, buf(f32, Space::Device, Ownership::Affine), 1);
  b.h2d(d, h);
  b.dispatch(*k, {n, n, n}, {d});
  b.wait();
  b.copy(d1, d);
  b.d2h(h, d1);
  Value* zero = b.constInt(u32, 0);
  Value* x = b.load(h, zero);
  Value* y = b.call(*sq, {x})[0];
  Value* ref = b.funcRef(*sq);
  Value* z = b.callIndirect(ref, {y})[0];
  Value* z2 = b.call("sq", {z}, {f32})[0];
  Value* box = b.boxNew(z2);
  Value* back = b.boxGet(box, f32);
  Value* count = b.deviceCount();
  b.free(h);
  b.free(d);
  b.free(d1);
  b.ret({back, count});
  expectSameAs(R"(
device @sq(%x: f32) -> f32 {
  %0 = mul %x, %x : f32
  return %0
}
kernel @k(%d: buffer<f32, device, write>) workgroup(1, 1, 1) {
  return
}
host @main() -> (f32, i32) {
  %0 = const {value = 4} : u32
  %1 = alloc %0 : buffer<f32, host, linear>
  %2 = alloc %0 : buffer<f32, device, linear>
  %3 = alloc %0 {device = 1} : buffer<f32, device, affine>
  h2d %2, %1
  dispatch %0, %0, %0, %2 {kernel = @k}
  wait
  copy %3, %2
  d2h %1, %3
  %4 = const {value = 0} : u32
  %5 = load %1, %4 : f32
  %6 = call %5 {callee = @sq} : f32
  %7 = func.ref {callee = @sq} : fn(f32) -> (f32)
  %8 = call.indirect %7, %6 : f32
  %9 = call %8 {callee = @sq} : f32
  %10 = box.new %9 : box
  %11 = box.get %10 : f32
  %12 = device.count : i32
  free %1
  free %2
  free %3
  return %11, %12
}
)");
}

TEST_F(BuilderTest, StructuredControlFlow) {
  const Type* option = ctx.sumType({ctx.unitType(), i32});
  Function* f = fn("cf", FunctionKind::Host, {i32, option}, {i32}, {"n", "o"});
  Builder b(ctx, f->body());
  Value* n = f->param(0);
  Value* zero = b.constInt(i32, 0);
  Value* one = b.constInt(i32, 1);
  // if with results; the else branch yields a value built outside.
  Value* pos = b.gt(n, zero);
  Value* m = b.ifOp(pos, {i32}, [&](Builder& b) { return b.mul(n, n); }, [&](Builder&) { return zero; })->result(0);
  // if without results and no else.
  b.ifOp(pos, {}, [&](Builder& b) { b.call("cf", {n, f->param(1)}, {i32}); });
  // for with a carried sum, and one without.
  Value* sum = b.forOp(zero, m, one, {zero}, [&](Builder& b, Value* i, const Values& acc) {
                  return b.add(acc[0], i);
                })->result(0);
  b.forOp(zero, n, one, [](Builder&, Value*, const Values&) {});
  // while: halve until below 2, counting the steps.
  Op* w = b.whileOp({sum, zero},
                    [&](Builder& b, const Values& a) -> Values {
                      Value* two = b.constInt(i32, 2);
                      return {b.ge(a[0], two), a[0], a[1]};
                    },
                    [&](Builder& b, const Values& v) -> Values {
                      Value* two = b.constInt(i32, 2);
                      Value* half = b.div(v[0], two);
                      return {half, b.add(v[1], one)};
                    });
  // while forwarding other types than it carries.
  Op* w2 = b.whileOp({n}, {boolT}, [&](Builder& b, const Values& a) -> Values {
    Value* go = b.lt(a[0], zero);
    return {go, go};
  }, [&](Builder&, const Values&) -> Values { return {n}; });
  (void)w2;
  // match over a sum.
  Value* got = b.matchOp(f->param(1), {i32}, [&](Builder& b, unsigned k, Value* payload) -> Value* {
                 if (k == 0) return w->result(1);
                 return b.add(payload, w->result(0));
               })->result(0);
  b.ret({got});
  expectSameAs(R"(
host @cf(%n: i32, %o: sum<struct<>, i32>) -> i32 {
  %0 = const {value = 0} : i32
  %1 = const {value = 1} : i32
  %2 = gt %n, %0 : bool
  %3 = if %2 : i32 {
    %4 = mul %n, %n : i32
    yield %4
  } {
    yield %0
  }
  if %2 {
    %5 = call %n, %o {callee = @cf} : i32
    yield
  } {
    yield
  }
  %6 = for %0, %3, %1, %0 : i32 { |%7: i32, %8: i32|
    %9 = add %8, %7 : i32
    yield %9
  }
  for %0, %n, %1 { |%10: i32|
    yield
  }
  %11, %12 = while %6, %0 : i32, i32 { |%13: i32, %14: i32|
    %15 = const {value = 2} : i32
    %16 = ge %13, %15 : bool
    condition %16, %13, %14
  } { |%17: i32, %18: i32|
    %19 = const {value = 2} : i32
    %20 = div %17, %19 : i32
    %21 = add %18, %1 : i32
    yield %20, %21
  }
  %22 = while %n : bool { |%23: i32|
    %24 = lt %23, %0 : bool
    condition %24, %24
  } { |%25: bool|
    yield %n
  }
  %26 = match %o : i32 { |%27: struct<>|
    yield %12
  } { |%28: i32|
    %29 = add %28, %11 : i32
    yield %29
  }
  return %26
}
)");
}

// The builder checks nothing itself: a mistake is the verifier's error.
TEST_F(BuilderTest, MistakesAreVerifierErrors) {
  Function* f = fn("bad", FunctionKind::Device, {i32, f32}, {i32}, {"a", "x"});
  Builder b(ctx, f->body());
  b.ret({b.add(f->param(0), f->param(1))});
  Status s = verify(m);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().str().find("'add': operand 1 has type 'f32' but the result has type 'i32'"), std::string::npos)
      << s.error().str();
}

TEST_F(BuilderTest, InsertionGuardRestoresThePoint) {
  Function* f = fn("g", FunctionKind::Device, {i32}, {i32}, {"a"});
  Builder b(ctx, f->body());
  const std::string* file = ctx.intern("g.src");
  b.setLoc(Loc{file, 3, 4});
  Value* one = b.constInt(i32, 1);
  Op* ret = b.ret({one});
  b.setInsertionPointBefore(*ret);
  {
    Builder::InsertionGuard g(b);
    Op* ifOp = b.create("if", {b.constBool(true)}, {}, {}, 2);
    b.setInsertionPoint(ifOp->region(0));
    b.setLoc(Loc{file, 9, 9});
    b.yield();
    b.setInsertionPoint(ifOp->region(1));
    b.yield();
  }
  EXPECT_EQ(&b.region(), &f->body());
  EXPECT_EQ(b.insertionOp(), ret);
  EXPECT_EQ(b.loc().line, 3u);
  // Back before the return: this add lands between the if and the return.
  Value* two = b.add(one, one);
  EXPECT_EQ(two->definingOp()->nextOp(), ret);
  // The structured helpers leave the point and location as they were, even
  // when a body moves them.
  b.ifOp(b.constBool(false), {}, [&](Builder& b) {
    b.setLoc(Loc{file, 7, 7});
    b.setInsertionPoint(f->body());
  });
  EXPECT_EQ(b.insertionOp(), ret);
  EXPECT_EQ(b.loc().line, 3u);
  // Each region starts at the op's location.
  b.setInsertionPointAfter(*two->definingOp());
  Op* loop = b.forOp(one, two, one, [&](Builder& b, Value*, const Values&) {
    EXPECT_EQ(b.loc().line, 3u);
    b.setLoc(Loc{file, 5, 1});
  });
  EXPECT_EQ(loop->prevOp(), two->definingOp());
  EXPECT_EQ(loop->region(0).back()->loc().line, 5u);  // the yield: where the body left the location
  ret->setOperand(0, two);
  ASSERT_TRUE(verify(m)) << print(m);
}

// Every value's uses are exactly the operand slots that hold it, through
// random setOperand, replaceAllUsesWith and erasures (uses are kept in no
// particular order, each op knowing where its uses sit); and a value used
// 200000 times by one op and by 200000 others has them replaced and dropped
// (this was quadratic: a Value graph's sum of 200000 terms took 34 s to check).
TEST_F(BuilderTest, UseListsStayExactUnderEdits) {
  Function* f = fn("uses", FunctionKind::Host, {i32, i32, i32}, {}, {"a", "b", "c"});
  Builder b(ctx, f->body());
  std::vector<Value*> values = {f->param(0), f->param(1), f->param(2)};
  std::vector<Op*> ops;
  uint64_t seed = 12345;
  auto rnd = [&](size_t n) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return size_t(seed >> 33) % n;
  };
  for (int i = 0; i < 60; ++i) {
    Value* x = b.add(values[rnd(values.size())], values[rnd(values.size())]);
    values.push_back(x);
    ops.push_back(x->definingOp());
  }
  auto check = [&] {
    std::map<const Value*, std::multiset<std::pair<const Op*, unsigned>>> want;
    f->body().walk([&](Op* op) {
      for (unsigned i = 0; i < op->numOperands(); ++i) want[op->operand(i)].insert({op, i});
    });
    for (const Value* v : values) {
      std::multiset<std::pair<const Op*, unsigned>> got;
      for (const Use& u : v->uses()) got.insert({u.user, u.index});
      EXPECT_EQ(got, want[v]);
    }
  };
  for (int step = 0; step < 300; ++step) {
    const size_t k = rnd(ops.size());
    Op* op = ops[k];
    if (step % 7 == 6 && !op->result(0)->hasUses()) {  // erase an op nothing uses
      std::erase(values, op->result(0));
      ops.erase(ops.begin() + long(k));
      op->erase();
    } else if (step % 5 == 4) {  // an earlier value for all of this one's uses
      const size_t pos = size_t(std::find(values.begin(), values.end(), op->result(0)) - values.begin());
      op->result(0)->replaceAllUsesWith(values[rnd(pos)]);
    } else {  // an operand for an earlier value
      const size_t pos = size_t(std::find(values.begin(), values.end(), op->result(0)) - values.begin());
      op->setOperand(unsigned(rnd(2)), values[rnd(pos)]);
    }
    check();
  }
  b.ret({});
  ASSERT_TRUE(verify(m)) << print(m);

  Function* g = fn("many", FunctionKind::Host, {i32, i32}, {}, {"a", "b"});
  Builder gb(ctx, g->body());
  Value* a = g->param(0);
  std::vector<Value*> copies(200000, a);
  Op* sum = gb.create("array.make", copies, {i32});  // (not verified: one op with 200000 operands of a)
  std::vector<Op*> adds;
  for (int i = 0; i < 200000; ++i) adds.push_back(gb.add(a, a)->definingOp());
  EXPECT_EQ(a->uses().size(), 600000u);
  a->replaceAllUsesWith(g->param(1));
  EXPECT_EQ(a->uses().size(), 0u);
  EXPECT_EQ(g->param(1)->uses().size(), 600000u);
  for (auto it = adds.begin(); it != adds.end(); ++it) (*it)->erase();  // (in order: each use in the middle)
  sum->erase();
  EXPECT_EQ(g->param(1)->uses().size(), 0u);
}

TEST_F(BuilderTest, VectorAccessAndSubgroupCollectives) {
  const Type* data = buf(f32, Space::Device, Ownership::Write);
  Function* k = fn("sg", FunctionKind::Kernel, {data}, {}, {"d"});
  k->workgroupSize = {32, 1, 1};
  Builder b(ctx, k->body());
  Value* d = k->param(0);
  Value* gid = b.globalId(0);
  Value* lane = b.subgroupLocalId();
  Value* v = b.vecLoad(d, gid, 4);
  Value* x = b.vecExtract(v, 0);
  Value* acc = x;
  using Collective = Value* (Builder::*)(Value*);
  for (Collective op : {&Builder::subgroupReduceAdd, &Builder::subgroupReduceMin, &Builder::subgroupReduceMax,
                        &Builder::subgroupScanAdd, &Builder::subgroupScanMin, &Builder::subgroupScanMax,
                        &Builder::subgroupExscanAdd, &Builder::subgroupExscanMin, &Builder::subgroupExscanMax})
    acc = (b.*op)(acc);
  Value* any = b.subgroup("reduce_add", acc);
  Value* first = b.subgroupBroadcast(any, b.constInt(u32, 0));
  Value* other = b.subgroupShuffle(first, lane);
  Value* w = b.vecLoad(d, gid, 2);
  b.vecStore(d, gid, b.vecInsert(v, 1, other));
  b.vecStore(d, gid, w);
  b.ret();
  expectSameAs(R"(
kernel @sg(%d: buffer<f32, device, write>) workgroup(32, 1, 1) {
  %0 = global_id {dim = 0} : u32
  %1 = subgroup_local_id : u32
  %2 = vec.load %d, %0 : vec<f32, 4>
  %3 = vec.extract %2 {index = 0} : f32
  %4 = subgroup.reduce_add %3 : f32
  %5 = subgroup.reduce_min %4 : f32
  %6 = subgroup.reduce_max %5 : f32
  %7 = subgroup.scan_add %6 : f32
  %8 = subgroup.scan_min %7 : f32
  %9 = subgroup.scan_max %8 : f32
  %10 = subgroup.exscan_add %9 : f32
  %11 = subgroup.exscan_min %10 : f32
  %12 = subgroup.exscan_max %11 : f32
  %13 = subgroup.reduce_add %12 : f32
  %14 = const {value = 0} : u32
  %15 = subgroup.broadcast %13, %14 : f32
  %16 = subgroup.shuffle %15, %1 : f32
  %17 = vec.load %d, %0 : vec<f32, 2>
  %18 = vec.insert %2, %16 {index = 1} : vec<f32, 4>
  vec.store %d, %0, %18
  vec.store %d, %0, %17
  return
}
)");
}

TEST_F(BuilderTest, CooperativeMatrices) {
  const Type* f16 = ctx.floatType(16);
  const Type* half = ctx.coopMatrixType(f16, 16, 16);
  const Type* acc = ctx.coopMatrixType(f32, 16, 16);
  Function* k = fn("mm", FunctionKind::Kernel,
                   {buf(f16, Space::Device, Ownership::Read), buf(f32, Space::Device, Ownership::Write)}, {},
                   {"a", "c"});
  k->workgroupSize = {32, 1, 1};
  Builder b(ctx, k->body());
  Value* zero = b.constInt(i32, 0);
  Value* ld = b.constInt(i32, 16);
  Value* c = b.coopFill(b.constFloat(f32, 0), acc);
  Value* x = b.coopLoad(k->param(0), zero, ld, half);
  Value* y = b.coopLoad(k->param(0), zero, ld, half, true);
  Value* m = b.coopMulAdd(x, y, c);
  b.coopStore(k->param(1), zero, ld, m);
  b.coopStore(k->param(1), zero, ld, m, true);
  b.ret();
  expectSameAs(R"(
kernel @mm(%a: buffer<f16, device, read>, %c: buffer<f32, device, write>) workgroup(32, 1, 1) {
  %0 = const {value = 0} : i32
  %1 = const {value = 16} : i32
  %2 = const {value = 0.0} : f32
  %3 = coop.fill %2 : coopmat<f32, 16, 16>
  %4 = coop.load %a, %0, %1 : coopmat<f16, 16, 16>
  %5 = coop.load %a, %0, %1 {col_major = 1} : coopmat<f16, 16, 16>
  %6 = coop.muladd %4, %5, %3 : coopmat<f32, 16, 16>
  coop.store %c, %0, %1, %6
  coop.store %c, %0, %1, %6 {col_major = 1}
  return
}
)");
}

TEST_F(BuilderTest, ViewsForeignCallsAndCallsByName) {
  const Type* i64 = ctx.intType(64, true);
  Function* sq = fn("sq", FunctionKind::Device, {f32}, {f32}, {"x"});
  {
    Builder b(ctx, sq->body());
    b.ret({b.mul(sq->param(0), sq->param(0))});
  }
  Function* k = fn("k", FunctionKind::Kernel, {buf(f32, Space::Device, Ownership::Read)}, {}, {"d"});
  Builder(ctx, k->body()).ret();
  Function* main = fn("main", FunctionKind::Host, {i64}, {i64, f32}, {"n"});
  Builder b(ctx, main->body());
  Value* n = b.constInt(u32, 8);
  Value* two = b.constInt(u32, 2);
  Value* h = b.alloc(n, buf(f32, Space::Host, Ownership::Linear));
  Value* d = b.alloc(n, buf(f32, Space::Device, Ownership::Linear));
  Value* hw = b.bufferView(h, two, two, Ownership::Write);
  Value* dr = b.bufferView(d, two, two);
  b.h2d(d, h);
  b.d2h(hw, dr);
  b.dispatch("k", {two, two, two}, {dr});
  b.wait();
  Value* r = b.callC("labs", {main->param(0)}, {i64})[0];
  b.callC("tick", {}, {});
  Value* ref = b.funcRef("sq", sq->type());
  Value* y = b.callIndirect(ref, {b.load(h, two)})[0];
  b.free(h);
  b.free(d);
  b.ret({r, y});
  expectSameAs(R"(
device @sq(%x: f32) -> f32 {
  %0 = mul %x, %x : f32
  return %0
}
kernel @k(%d: buffer<f32, device, read>) workgroup(1, 1, 1) {
  return
}
host @main(%n: i64) -> (i64, f32) {
  %0 = const {value = 8} : u32
  %1 = const {value = 2} : u32
  %2 = alloc %0 : buffer<f32, host, linear>
  %3 = alloc %0 : buffer<f32, device, linear>
  %4 = buffer.view %2, %1, %1 : buffer<f32, host, write>
  %5 = buffer.view %3, %1, %1 : buffer<f32, device, read>
  h2d %3, %2
  d2h %4, %5
  dispatch %1, %1, %1, %5 {kernel = @k}
  wait
  %6 = call.c %n {symbol = "labs"} : i64
  call.c {symbol = "tick"}
  %7 = func.ref {callee = @sq} : fn(f32) -> (f32)
  %8 = load %2, %1 : f32
  %9 = call.indirect %7, %8 : f32
  free %2
  free %3
  return %6, %9
}
)");
}

// The structured helpers in a kernel and a host program, run on every
// target: a per-invocation while/if/for computation, and host loops that
// fill the input and sum the output.
TEST_F(BuilderTest, StructuredKernelRunsOnEveryTarget) {
  constexpr uint32_t kN = 200;
  Function* k = fn("collatz", FunctionKind::Kernel,
                   {buf(u32, Space::Device, Ownership::Read), buf(u32, Space::Device, Ownership::Write)}, {},
                   {"in", "out"});
  k->workgroupSize = {64, 1, 1};
  {
    Builder b(ctx, k->body());
    Value* i = b.globalId(0);
    b.ifOp(b.lt(i, b.bufferLen(k->param(1))), {}, [&](Builder& b) {
      Value* zero = b.constInt(u32, 0);
      Value* one = b.constInt(u32, 1);
      Value* x = b.load(k->param(0), i);
      // Collatz steps of x (x >= 1): while x != 1 { x = odd ? 3x + 1 : x / 2; steps += 1 }
      Op* w = b.whileOp({x, zero},
                        [&](Builder& b, const Values& a) -> Values { return {b.ne(a[0], one), a[0], a[1]}; },
                        [&](Builder& b, const Values& v) -> Values {
                          Value* two = b.constInt(u32, 2);
                          Value* odd = b.eq(b.rem(v[0], two), one);
                          Value* next = b.ifOp(odd, {u32}, [&](Builder& b) {
                                           Value* three = b.constInt(u32, 3);
                                           return b.add(b.mul(v[0], three), one);
                                         }, [&](Builder& b) { return b.div(v[0], two); })->result(0);
                          return {next, b.add(v[1], one)};
                        });
      // Plus the sum of 0..i-1 (a for with a carried value) modulo 1000.
      Value* tri = b.forOp(zero, i, one, {zero}, [&](Builder& b, Value* j, const Values& acc) {
                      return b.add(acc[0], j);
                    })->result(0);
      Value* thousand = b.constInt(u32, 1000);
      b.store(k->param(1), i, b.add(w->result(1), b.rem(tri, thousand)));
    });
    b.ret();
  }
  Function* main = fn("main", FunctionKind::Host, {}, {buf(u32, Space::Host, Ownership::Linear)}, {});
  {
    Builder b(ctx, main->body());
    Value* n = b.constInt(u32, kN);
    Value* zero = b.constInt(u32, 0);
    Value* one = b.constInt(u32, 1);
    Value* groups = b.constInt(u32, (kN + 63) / 64);
    Value* h = b.alloc(n, buf(u32, Space::Host, Ownership::Linear));
    b.forOp(zero, n, one, [&](Builder& b, Value* i, const Values&) { b.store(h, i, b.add(i, one)); });
    Value* din = b.alloc(n, buf(u32, Space::Device, Ownership::Linear));
    Value* dout = b.alloc(n, buf(u32, Space::Device, Ownership::Linear));
    b.h2d(din, h);
    b.dispatch(*k, {groups, one, one}, {din, dout});
    b.wait();
    b.d2h(h, dout);
    b.free(din);
    b.free(dout);
    b.ret({h});
  }
  Status s = verify(m);
  ASSERT_TRUE(s) << s.error().str() << "\n" << print(m);

  std::vector<uint64_t> want;
  for (uint32_t i = 0; i < kN; ++i) {
    uint32_t x = i + 1, steps = 0;
    while (x != 1) {
      x = x % 2 ? 3 * x + 1 : x / 2;
      ++steps;
    }
    want.push_back(steps + (i * (i - 1) / 2) % 1000);
  }
  std::vector<std::string> ran;
  for (const std::string& target : runtime::availableTargets()) {
    SCOPED_TRACE(target);
    auto dev = runtime::openDevice(target);
    if (!dev && target == "vulkan") {
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      ASSERT_FALSE(req && std::string(req) == "1") << dev.error().str();
      continue;
    }
    ASSERT_TRUE(dev) << dev.error().str();
    test::HostRun run = test::runMainOn(**dev, m);
    ASSERT_TRUE(run.results) << run.results.error().str();
    const interp::BufferData* out = run.interp->memory().get((*run.results)[0].buffer);
    ASSERT_TRUE(out);
    ASSERT_EQ(out->elems.size(), kN);
    for (uint32_t i = 0; i < kN; ++i) ASSERT_EQ(uint64_t(out->elems[i].i), want[i]) << "element " << i;
    ran.push_back(target);
  }
  EXPECT_EQ(ran.front(), "interp");
#ifdef EPH_HAVE_LLVM
  EXPECT_NE(std::find(ran.begin(), ran.end(), "cpu"), ran.end());
#endif
}

// The vector-access, subgroup and buffer.view helpers in a kernel and its
// host program, run on every target against the values computed here for
// the device's subgroup size: invocation i loads vec<u32, 4> i of a view
// that skips the input's first four elements, sums its lanes to s, and
// stores two vectors of collectives of s (subgroups are runs of
// subgroup_size consecutive invocations of a workgroup).
TEST_F(BuilderTest, SubgroupVectorAndViewKernelRunsOnEveryTarget) {
  constexpr uint32_t kWorkgroup = 32, kGroups = 3, kN = kWorkgroup * kGroups, kSkip = 4;
  auto input = [](uint32_t e) { return (e * 37 + 11) % 1001; };  // host element e
  Function* k = fn("collect", FunctionKind::Kernel,
                   {buf(u32, Space::Device, Ownership::Read), buf(u32, Space::Device, Ownership::Write)}, {},
                   {"in", "out"});
  k->workgroupSize = {kWorkgroup, 1, 1};
  {
    Builder b(ctx, k->body());
    Value* i = b.globalId(0);
    Value* v = b.vecLoad(k->param(0), i, 4);
    Value* s = b.add(b.add(b.vecExtract(v, 0), b.vecExtract(v, 1)), b.add(b.vecExtract(v, 2), b.vecExtract(v, 3)));
    Value* one = b.constInt(u32, 1);
    Value* partner = b.xor_(b.subgroupLocalId(), one);
    Value* lo = b.vecMake({b.subgroupReduceAdd(s), b.subgroupReduceMin(s), b.subgroupReduceMax(s), b.subgroupScanAdd(s)});
    Value* hi = b.vecMake({b.subgroupExscanAdd(s), b.subgroupScanMax(s), b.subgroupBroadcast(s, one),
                           b.subgroupShuffle(s, partner)});
    Value* two = b.constInt(u32, 2);
    Value* at = b.mul(i, two);
    b.vecStore(k->param(1), at, lo);
    b.vecStore(k->param(1), b.add(at, one), hi);
    b.ret();
  }
  Function* main = fn("main", FunctionKind::Host, {}, {buf(u32, Space::Host, Ownership::Linear)}, {});
  {
    Builder b(ctx, main->body());
    Value* zero = b.constInt(u32, 0);
    Value* one = b.constInt(u32, 1);
    Value* total = b.constInt(u32, 4 * kN + kSkip);
    Value* h = b.alloc(total, buf(u32, Space::Host, Ownership::Linear));
    b.forOp(zero, total, one, [&](Builder& b, Value* e, const Values&) {
      Value* x = b.rem(b.add(b.mul(e, b.constInt(u32, 37)), b.constInt(u32, 11)), b.constInt(u32, 1001));
      b.store(h, e, x);
    });
    Value* din = b.alloc(total, buf(u32, Space::Device, Ownership::Linear));
    b.h2d(din, h);
    b.free(h);
    Value* view = b.bufferView(din, b.constInt(u32, kSkip), b.constInt(u32, 4 * kN));
    Value* outLen = b.constInt(u32, 8 * kN);
    Value* dout = b.alloc(outLen, buf(u32, Space::Device, Ownership::Linear));
    b.dispatch(*k, {b.constInt(u32, kGroups), one, one}, {view, dout});
    b.wait();
    Value* hout = b.alloc(outLen, buf(u32, Space::Host, Ownership::Linear));
    b.d2h(hout, dout);
    b.free(din);
    b.free(dout);
    b.ret({hout});
  }
  Status st = verify(m);
  ASSERT_TRUE(st) << st.error().str() << "\n" << print(m);

  std::vector<uint64_t> sums;
  for (uint32_t i = 0; i < kN; ++i) {
    uint64_t s = 0;
    for (uint32_t j = 0; j < 4; ++j) s += input(kSkip + 4 * i + j);
    sums.push_back(s);
  }
  // The eight outputs of invocation i for subgroup size sg.
  auto want = [&](uint32_t i, uint32_t sg) {
    uint32_t wg = i / kWorkgroup * kWorkgroup, first = wg + (i - wg) / sg * sg;
    uint32_t end = std::min(first + sg, wg + kWorkgroup);
    uint64_t sum = 0, mn = UINT64_MAX, mx = 0, scan = 0, exscan = 0, scanMax = 0;
    for (uint32_t j = first; j < end; ++j) {
      sum += sums[j];
      mn = std::min(mn, sums[j]);
      mx = std::max(mx, sums[j]);
      if (j < i) exscan += sums[j];
      if (j <= i) scan += sums[j], scanMax = std::max(scanMax, sums[j]);
    }
    uint32_t partner = first + ((i - first) ^ 1);
    return std::vector<uint64_t>{sum, mn, mx, scan, exscan, scanMax, sums[first + 1], sums[partner]};
  };
  std::vector<std::string> ran;
  for (const std::string& target : runtime::availableTargets()) {
    SCOPED_TRACE(target);
    auto dev = runtime::openDevice(target);
    if (!dev && target == "vulkan") {
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      ASSERT_FALSE(req && std::string(req) == "1") << dev.error().str();
      continue;
    }
    ASSERT_TRUE(dev) << dev.error().str();
    uint32_t sg = (*dev)->caps().subgroupSize;
    ASSERT_GE(sg, 2u);
    test::HostRun run = test::runMainOn(**dev, m);
    ASSERT_TRUE(run.results) << run.results.error().str();
    const interp::BufferData* out = run.interp->memory().get((*run.results)[0].buffer);
    ASSERT_TRUE(out);
    ASSERT_EQ(out->elems.size(), 8 * kN);
    for (uint32_t i = 0; i < kN; ++i) {
      std::vector<uint64_t> w = want(i, sg);
      for (uint32_t j = 0; j < 8; ++j)
        ASSERT_EQ(uint64_t(uint32_t(out->elems[8 * i + j].i)), w[j])
            << "invocation " << i << ", output " << j << ", subgroup size " << sg;
    }
    ran.push_back(target);
  }
  EXPECT_EQ(ran.front(), "interp");
#ifdef EPH_HAVE_LLVM
  EXPECT_NE(std::find(ran.begin(), ran.end(), "cpu"), ran.end());
#endif
}

}  // namespace
}  // namespace eph::ir
