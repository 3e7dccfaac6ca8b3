// The monomorphize pass and function values: a generic host launcher and a
// generic kernel taking a function (map<T, U>) run after the pass on interp,
// cpu and vulkan (when this machine has one; EPH_REQUIRE_VULKAN=1 makes a
// missing device a failure) and give the same results as a hand-specialised
// module; before the pass the interpreter refuses the generic functions with
// a clear error. Host code with dynamic function values runs the same before
// and after. Instances are deduplicated, their names print and parse back,
// and the pass's errors carry locations.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"
#include "runtime/Device.h"

namespace eph::test {
namespace {

// map<T, U> with a function argument: @launch (generic host) dispatches @map
// (generic kernel) and passes its function parameter along.
const char* kGeneric = R"(
device @double(%x: f32) -> f32 {
  %y = add %x, %x : f32
  return %y
}
device @round(%x: f32) -> i32 {
  %h = const {value = 0.5} : f32
  %y = add %x, %h : f32
  %r = cast %y : i32
  return %r
}
kernel @map(%f: fn(!T) -> (!U), %in: buffer<!T, device, read>, %out: buffer<!U, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %in : u32
  %ok = lt %i, %n : bool
  if %ok {
    %v = load %in, %i : !T
    %w = call.indirect %f, %v : !U
    store %out, %i, %w
    yield
  } {
    yield
  }
  return
}
host @launch(%f: fn(!T) -> (!U), %n: u32, %in: buffer<!T, device, read>, %out: buffer<!U, device, write>) {
  %four = const {value = 4} : u32
  %one = const {value = 1} : u32
  %g = div %n, %four : u32
  %groups = add %g, %one : u32
  dispatch %groups, %one, %one, %f, %in, %out {kernel = @map}
  return
}
)";

// The same program written by hand without generics.
const char* kSpecialised = R"(
device @double(%x: f32) -> f32 {
  %y = add %x, %x : f32
  return %y
}
device @round(%x: f32) -> i32 {
  %h = const {value = 0.5} : f32
  %y = add %x, %h : f32
  %r = cast %y : i32
  return %r
}
kernel @map_double(%in: buffer<f32, device, read>, %out: buffer<f32, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %in : u32
  %ok = lt %i, %n : bool
  if %ok {
    %v = load %in, %i : f32
    %w = call %v {callee = @double} : f32
    store %out, %i, %w
    yield
  } {
    yield
  }
  return
}
kernel @map_round(%in: buffer<f32, device, read>, %out: buffer<i32, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %n = buffer.len %in : u32
  %ok = lt %i, %n : bool
  if %ok {
    %v = load %in, %i : f32
    %w = call %v {callee = @round} : i32
    store %out, %i, %w
    yield
  } {
    yield
  }
  return
}
)";

// @main: fills 10 floats 0.75 * i, maps them with @double (twice through the
// launcher, to share one instance) and with @round (dispatching the kernel
// directly), and returns both host buffers.
std::string mainFn(bool generic) {
  std::string dbl = generic ? R"(
  %f = func.ref {callee = @double} : fn(f32) -> (f32)
  call %f, %n, %din, %dd {callee = @launch}
  call %f, %n, %dd, %dd2 {callee = @launch})"
                            : R"(
  dispatch %three, %one, %one, %din, %dd {kernel = @map_double}
  dispatch %three, %one, %one, %dd, %dd2 {kernel = @map_double})";
  std::string rnd = generic ? R"(
  %g = func.ref {callee = @round} : fn(f32) -> (i32)
  dispatch %three, %one, %one, %g, %din, %di {kernel = @map})"
                            : R"(
  dispatch %three, %one, %one, %din, %di {kernel = @map_round})";
  return R"(
host @main() -> (buffer<f32, host, linear>, buffer<i32, host, linear>) {
  %n = const {value = 10} : u32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %three = const {value = 3} : u32
  %q = const {value = 0.75} : f32
  %h = alloc %n : buffer<f32, host, linear>
  for %zero, %n, %one { |%i: u32|
    %x = cast %i : f32
    %y = mul %x, %q : f32
    store %h, %i, %y
    yield
  }
  %din = alloc %n : buffer<f32, device, linear>
  %dd = alloc %n : buffer<f32, device, linear>
  %dd2 = alloc %n : buffer<f32, device, linear>
  %di = alloc %n : buffer<i32, device, linear>
  h2d %din, %h)" + dbl + rnd + R"(
  d2h %h, %dd2
  %hi = alloc %n : buffer<i32, host, linear>
  d2h %hi, %di
  free %din
  free %dd
  free %dd2
  free %di
  return %h, %hi
}
)";
}

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const std::string& text) {
  auto m = ir::parseModule(ctx, text, "test.eir");
  EXPECT_TRUE(m) << (m ? "" : m.error().str());
  if (!m) return nullptr;
  Status s = ir::verify(**m);
  EXPECT_TRUE(s) << (s ? "" : s.error().str());
  return s ? std::move(*m) : nullptr;
}

// Runs the pass; "" or the errors, one per line.
std::string monomorphize(ir::Module& m) {
  auto pm = passes::PassManager::parse("monomorphize");
  EXPECT_TRUE(pm);
  std::vector<Error> errors;
  if (pm->run(m, {}, errors)) return {};
  std::string s;
  for (auto& e : errors) s += e.str() + "\n";
  return s;
}

// @main's results on `target` (one per line), "error: ..." or "skip: ...".
std::string runMain(const ir::Module& m, const std::string& target) {
  auto dev = runtime::openDevice(target);
  if (!dev) return "skip: " + dev.error().message;
  interp::Interpreter in(m);
  auto r = runtime::runHost(**dev, in, *m.lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

const char* kExpected =
    "[0.0, 3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0, 27.0]\n"
    "[0, 1, 2, 2, 3, 4, 5, 5, 6, 7]\n";

TEST(Monomorphize, GenericMapRunsLikeTheHandSpecialisedModule) {
  ir::Context ctx;
  auto generic = parse(ctx, std::string(kGeneric) + mainFn(true));
  auto handWritten = parse(ctx, std::string(kSpecialised) + mainFn(false));
  ASSERT_TRUE(generic && handWritten);

  // Before the pass, the interpreter refuses to run the generic launcher.
  std::string before = runMain(*generic, "interp");
  EXPECT_NE(before.find("error: test.eir:"), std::string::npos) << before;
  EXPECT_NE(before.find("@launch is generic (its signature mentions !T); run the monomorphize pass"),
            std::string::npos) << before;

  ASSERT_EQ(monomorphize(*generic), "");
  ASSERT_TRUE(ir::verify(*generic));
  for (const char* target : {"interp", "cpu", "vulkan"}) {
    SCOPED_TRACE(target);
    std::string want = runMain(*handWritten, target);
    if (want.rfind("skip: ", 0) == 0) {
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      if (std::string(target) == "vulkan" && req && std::string(req) == "1") ADD_FAILURE() << want;
      std::printf("(not run on %s: %s)\n", target, want.c_str());
      continue;
    }
    EXPECT_EQ(want, kExpected);
    EXPECT_EQ(runMain(*generic, target), want);
  }
}

TEST(Monomorphize, InstancesAreDeduplicatedAndNamedReadably) {
  ir::Context ctx;
  auto m = parse(ctx, std::string(kGeneric) + mainFn(true));
  ASSERT_TRUE(m);
  ASSERT_EQ(monomorphize(*m), "");
  std::vector<std::string> names;
  for (auto& f : m->functions()) names.push_back(f->name());
  // Two launches with @double share one launcher and one kernel instance;
  // the generic @map and @launch are gone, the plain functions stay.
  EXPECT_EQ(names, (std::vector<std::string>{"double", "round", "main", "launch<f32, f32, @double>",
                                             "map<f32, i32, @round>", "map<f32, f32, @double>"}));
  // Function parameters bound to a known function are dropped.
  EXPECT_EQ(m->lookup("map<f32, f32, @double>")->type()->str(),
            "fn(buffer<f32, device, read>, buffer<f32, device, write>) -> ()");
}

TEST(Monomorphize, MangledNamesRoundTrip) {
  ir::Context ctx;
  auto m = parse(ctx, std::string(kGeneric) + mainFn(true));
  ASSERT_TRUE(m);
  ASSERT_EQ(monomorphize(*m), "");
  std::string text = ir::print(*m);
  EXPECT_NE(text.find("kernel @\"map<f32, f32, @double>\"("), std::string::npos) << text;
  EXPECT_NE(text.find("{kernel = @\"map<f32, i32, @round>\"}"), std::string::npos) << text;
  auto again = ir::parseModule(ctx, text, "again.eir");
  ASSERT_TRUE(again) << again.error().str();
  EXPECT_TRUE(ir::verify(**again));
  EXPECT_EQ(ir::print(**again), text);
  EXPECT_NE((*again)->lookup("launch<f32, f32, @double>"), nullptr);
}

// Function values in host code run in the interpreter as they are: a host
// function with a function parameter called with a known function (which the
// pass specialises) and with one chosen at run time (which stays a value).
TEST(Monomorphize, HostFunctionValuesRunTheSameBeforeAndAfter) {
  const char* text = R"(
device @inc(%x: i32) -> i32 {
  %one = const {value = 1} : i32
  %y = add %x, %one : i32
  return %y
}
device @sq(%x: i32) -> i32 {
  %y = mul %x, %x : i32
  return %y
}
host @apply(%f: fn(i32) -> (i32), %x: i32) -> i32 {
  %y = call.indirect %f, %x : i32
  %z = call.indirect %f, %y : i32
  return %z
}
host @main(%pick: bool) -> (i32, i32) {
  %x = const {value = 3} : i32
  %inc = func.ref {callee = @inc} : fn(i32) -> (i32)
  %sq = func.ref {callee = @sq} : fn(i32) -> (i32)
  %a = call %inc, %x {callee = @apply} : i32
  %f = select %pick, %inc, %sq : fn(i32) -> (i32)
  %b = call %f, %x {callee = @apply} : i32
  return %a, %b
}
)";
  ir::Context ctx;
  auto m = parse(ctx, text);
  ASSERT_TRUE(m);
  auto run = [&](bool pick) {
    interp::Interpreter in(*m);
    auto r = in.call(*m->lookup("main"), {interp::RtValue::ofBool(ctx.boolType(), pick)});
    if (!r) return "error: " + r.error().str();
    return interp::format((*r)[0]) + ", " + interp::format((*r)[1]);
  };
  EXPECT_EQ(run(false), "5, 81");
  EXPECT_EQ(run(true), "5, 5");
  ASSERT_EQ(monomorphize(*m), "");
  std::string after = ir::print(*m);
  EXPECT_NE(after.find("call %x {callee = @\"apply<@inc>\"} : i32"), std::string::npos) << after;
  EXPECT_NE(after.find("call %f, %x {callee = @apply} : i32"), std::string::npos) << after;
  EXPECT_EQ(run(false), "5, 81");
  EXPECT_EQ(run(true), "5, 5");
}

// A non-generic host function that passes its function parameter on to a
// kernel (through another such host function) is a template once a `call`
// names it: @outer<@inc> calls @fill<@inc>, which dispatches map<i32, i32,
// @inc>; the templates are gone and the results are the hand-written ones.
// Without a call naming @outer, @outer is a root (it may be an entry), and
// its parameter, a value known only at run time, is an error at its call of
// @fill.
const char* kHostTemplate = R"(
device @inc(%x: i32) -> i32 {
  %one = const {value = 1} : i32
  %y = add %x, %one : i32
  return %y
}
kernel @map(%f: fn(i32) -> (i32), %out: buffer<i32, device, write>) workgroup(4, 1, 1) {
  %i = global_id {dim = 0} : u32
  %x = cast %i : i32
  %y = call.indirect %f, %x : i32
  store %out, %i, %y
  return
}
host @fill(%f: fn(i32) -> (i32), %out: buffer<i32, device, write>) {
  %one = const {value = 1} : u32
  dispatch %one, %one, %one, %f, %out {kernel = @map}
  return
}
host @outer(%g: fn(i32) -> (i32), %out: buffer<i32, device, write>) {
  call %g, %out {callee = @fill}
  return
}
)";

TEST(Monomorphize, HostFunctionPassingItsFunctionParameterOnIsATemplate) {
  ir::Context ctx;
  auto m = parse(ctx, std::string(kHostTemplate) + R"(
host @main() -> buffer<i32, host, linear> {
  %n = const {value = 4} : u32
  %d = alloc %n : buffer<i32, device, linear>
  %f = func.ref {callee = @inc} : fn(i32) -> (i32)
  call %f, %d {callee = @outer}
  %h = alloc %n : buffer<i32, host, linear>
  d2h %h, %d
  free %d
  return %h
}
)");
  ASSERT_TRUE(m);
  ASSERT_EQ(monomorphize(*m), "");
  ASSERT_TRUE(ir::verify(*m));
  std::vector<std::string> names;
  for (auto& f : m->functions()) names.push_back(f->name());
  EXPECT_EQ(names, (std::vector<std::string>{"inc", "main", "outer<@inc>", "fill<@inc>", "map<@inc>"}));
  EXPECT_EQ(m->lookup("fill<@inc>")->type()->str(), "fn(buffer<i32, device, write>) -> ()");
  for (const char* target : {"interp", "cpu"}) {
    std::string got = runMain(*m, target);
    if (got.rfind("skip: ", 0) == 0 && std::string(target) == "cpu") continue;  // a build without LLVM
    EXPECT_EQ(got, "[1, 2, 3, 4]\n") << target;
  }

  auto dynamic = parse(ctx, std::string(kHostTemplate) + R"(
host @main(%pick: bool, %d: buffer<i32, device, write>) {
  %f = func.ref {callee = @inc} : fn(i32) -> (i32)
  %g = select %pick, %f, %f : fn(i32) -> (i32)
  call %g, %d {callee = @fill}
  return
}
)");
  ASSERT_TRUE(dynamic);
  EXPECT_EQ(monomorphize(*dynamic),
            "test.eir:20:3: error[P001]: cannot specialise host function @fill: argument 0 is a function value known only "
            "at run time; pass a function by name (a 'func.ref')\n");
}

TEST(Monomorphize, InterpreterRefusesAGenericKernel) {
  ir::Context ctx;
  auto m = parse(ctx, kGeneric);
  ASSERT_TRUE(m);
  interp::Interpreter in(*m);
  Status s = in.dispatch(*m->lookup("map"), {1, 1, 1}, {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().message, "@map is generic (its signature mentions !T); run the monomorphize pass before running it");
}

TEST(Monomorphize, ErrorsCarryLocations) {
  ir::Context ctx;
  auto m = parse(ctx, std::string(kGeneric) + R"(
host @main(%f: fn(f32) -> (f32), %b: buffer<f32, device, write>) {
  %one = const {value = 1} : u32
  dispatch %one, %one, %one, %f, %b, %b {kernel = @map}
  return
}
)");
  ASSERT_TRUE(m);
  EXPECT_EQ(monomorphize(*m),
            "test.eir:37:3: error[P001]: cannot specialise kernel @map: argument 0 is a function value "
            "known only at run time; pass a function by name (a 'func.ref')\n");
}

}  // namespace
}  // namespace eph::test
