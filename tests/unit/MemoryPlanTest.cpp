// The memplan pass (passes/MemoryPlan.cpp) on IR text: what shares an arena
// (a chain of temporaries, buffers used only before or after a loop, one
// arena per element type, offsets aligned to 256 bytes) and what is left as
// it is (overlapping lifetimes, a buffer allocated in a loop or freed in a
// branch, a size known only at run time, a buffer returned or passed to a
// call). Every rewrite goes through linearity, memplan, linearity (O2 less
// its fuse pass, which would merge these pointwise chains first; the
// verifier after each), and every program runs before and
// after the pass on each target (interp, cpu, vulkan): the results must be
// the interpreter's, and the peak device bytes (RunStats) must go down.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/OpFacts.h"
#include "passes/PassManager.h"
#include "runtime/Compare.h"
#include "runtime/Device.h"
#include "runtime/RunStats.h"
#include "tests/support/DeviceRun.h"

namespace eph::test {
namespace {

// Kernels over f32 buffers: @step writes out = 2 in + 1; @add writes
// out = a + b; @stepi is @step over i32. Each guards its index by the length
// of its output. @main fills a host buffer %h of 256 with h[i] = i; `body`
// uses the constants below and must leave its results in %h.
std::string program(const std::string& body, const std::string& extra = "") {
  std::string guardedStep = R"(
  %i = global_id {dim = 0} : u32
  %len = buffer.len %out : u32
  %inside = lt %i, %len : bool
  if %inside {
    %v = load %in, %i : T
    %two = const {value = TWO} : T
    %c1 = const {value = ONE} : T
    %d = mul %v, %two : T
    %w = add %d, %c1 : T
    store %out, %i, %w
    yield
  } {
    yield
  }
  return
}
)";
  auto instantiate = [&](const std::string& t, const std::string& two, const std::string& one) {
    std::string s = guardedStep;
    for (auto [from, to] : {std::pair<std::string, std::string>{"TWO", two}, {"ONE", one}, {": T", ": " + t}}) {
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    }
    return s;
  };
  return "kernel @step(%in: buffer<f32, device, read>, %out: buffer<f32, device, write>) workgroup(64, 1, 1) {" +
         instantiate("f32", "2.0", "1.0") +
         "kernel @stepi(%in: buffer<i32, device, read>, %out: buffer<i32, device, write>) workgroup(64, 1, 1) {" +
         instantiate("i32", "2", "1") + R"(
kernel @add(%a: buffer<f32, device, read>, %b: buffer<f32, device, read>, %out: buffer<f32, device, write>) workgroup(64, 1, 1) {
  %i = global_id {dim = 0} : u32
  %len = buffer.len %out : u32
  %inside = lt %i, %len : bool
  if %inside {
    %x = load %a, %i : f32
    %y = load %b, %i : f32
    %s = add %x, %y : f32
    store %out, %i, %s
    yield
  } {
    yield
  }
  return
}
)" + extra + R"(
host @main() -> buffer<f32, host, linear> {
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %two = const {value = 2} : u32
  %three = const {value = 3} : u32
  %g = const {value = 4} : u32
  %ten = const {value = 10} : u32
  %n = const {value = 256} : u32
  %h = alloc %n : buffer<f32, host, linear>
  for %zero, %n, %one { |%i: u32|
    %f = cast %i : f32
    store %h, %i, %f
    yield
  }
)" + body + R"(
  return %h
}
)";
}

// x -> t1 -> t2 -> t3 (each a fresh buffer of 256 f32), all freed at the end.
const char* kChain = R"(
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  %t3 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t2, %t3 {kernel = @step}
  wait
  d2h %h, %t3
  free %x
  free %t1
  free %t2
  free %t3
)";

std::unique_ptr<ir::Module> parse(ir::Context& ctx, const std::string& text) {
  auto m = ir::parseModule(ctx, text, "memplan.eir");
  EXPECT_TRUE(m) << m.error().str() << "\n" << text;
  if (!m) return nullptr;
  Status valid = ir::verify(**m);
  EXPECT_TRUE(valid) << valid.error().str();
  return valid ? std::move(*m) : nullptr;
}

// Runs `pipeline` (the verifier after each pass); false with a failure on error.
bool runPipeline(ir::Module& m, const char* pipeline) {
  auto pm = passes::PassManager::parse(pipeline);
  EXPECT_TRUE(pm) << pm.error().str();
  if (!pm) return false;
  std::vector<Error> errors;
  bool ok = pm->run(m, {}, errors);
  for (const Error& e : errors) ADD_FAILURE() << e.str() << "\n" << ir::print(m);
  return ok;
}

size_t countOps(const ir::Module& m, std::string_view name) {
  size_t n = 0;
  for (auto& fn : m.functions()) fn->walk([&](ir::Op* op) { n += op->name() == name; });
  return n;
}

// Each view of an arena: the view's name -> its offset (elements).
std::map<std::string, int64_t> arenaOffsets(const ir::Module& m) {
  std::map<std::string, int64_t> out;
  for (auto& fn : m.functions())
    fn->walk([&](ir::Op* op) {
      if (!op->is(ir::OpId::BufferView) || op->operand(0)->name().rfind("arena", 0) != 0) return;
      const ir::Attr* off = passes::constantAttr(op->operand(1));
      out[op->result(0)->name()] = off ? off->i : -1;
    });
  return out;
}

// The element count of each arena, in order.
std::vector<int64_t> arenaSizes(const ir::Module& m) {
  std::vector<int64_t> out;
  for (auto& fn : m.functions())
    fn->walk([&](ir::Op* op) {
      if (op->is(ir::OpId::Alloc) && op->result(0)->name().rfind("arena", 0) == 0)
        out.push_back(passes::constantAttr(op->operand(0))->i);
    });
  return out;
}

struct Run {
  HostRun run;
  uint64_t peakBytes = 0;
};

Run runOn(const std::string& target, const ir::Module& m) {
  Run r;
  auto dev = runtime::openDevice(target);
  EXPECT_TRUE(dev) << target << ": " << dev.error().str();
  if (!dev) return r;
  runtime::RunStats stats;
  runtime::RunOptions opts;
  opts.stats = &stats;
  r.run.interp = std::make_unique<interp::Interpreter>(m);
  r.run.results = runtime::runHost(**dev, *r.run.interp, *m.lookup("main"), {}, opts);
  r.peakBytes = stats.peakBytes;
  return r;
}

// Runs `original` and `planned` on every target: each result must be the
// interpreter's run of the original; returns the peak device bytes of the
// original and the planned module (the same on every target).
std::pair<uint64_t, uint64_t> expectSameResults(const ir::Module& original, const ir::Module& planned) {
  Run ref = runOn("interp", original);
  EXPECT_TRUE(ref.run.results) << "interp: " << ref.run.results.error().str();
  if (!ref.run.results) return {0, 0};
  uint64_t before = ref.peakBytes, after = 0;
  for (const std::string& t : runtime::availableTargets()) {
    for (const ir::Module* m : {&original, &planned}) {
      const char* which = m == &original ? "original" : "planned";
      Run got = runOn(t, *m);
      EXPECT_TRUE(got.run.results) << t << " (" << which << "): " << got.run.results.error().str();
      if (!got.run.results) continue;
      auto diff = runtime::compareResults(*ref.run.results, ref.run.interp->memory(), *got.run.results,
                                          got.run.interp->memory(), {});
      EXPECT_FALSE(diff) << t << " (" << which << "): element " << diff->element << ": interp " << diff->a << ", "
                         << t << " " << diff->b;
      if (m == &original) EXPECT_EQ(got.peakBytes, before) << t;
      else if (t == "interp") after = got.peakBytes;
      else EXPECT_EQ(got.peakBytes, after) << t;
    }
  }
  return {before, after};
}

// Plans `body` (linearity, memplan, linearity); returns the planned module (and the original in `original`).
std::unique_ptr<ir::Module> plan(ir::Context& ctx, const std::string& text, std::unique_ptr<ir::Module>& original) {
  original = parse(ctx, text);
  auto planned = parse(ctx, text);
  if (!original || !planned) return nullptr;
  if (!runPipeline(*planned, "linearity,memplan,linearity")) return nullptr;
  return planned;
}

// The pass leaves the program as it is.
void expectUnchanged(const std::string& body, const std::string& extra = "") {
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(body, extra), original);
  ASSERT_TRUE(planned);
  EXPECT_EQ(ir::print(*planned), ir::print(*original));
  EXPECT_EQ(countOps(*planned, "buffer.view"), countOps(*original, "buffer.view"));
}

// ---- what packs --------------------------------------------------------------

TEST(MemoryPlan, AChainOfTemporariesSharesTwoSlots) {
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(kChain), original);
  ASSERT_TRUE(planned);
  // One device alloc and one device free are left (plus the host buffer's alloc).
  EXPECT_EQ(countOps(*planned, "alloc"), 2u) << ir::print(*planned);
  EXPECT_EQ(countOps(*planned, "free"), 1u) << ir::print(*planned);
  EXPECT_EQ(arenaSizes(*planned), (std::vector<int64_t>{512}));
  EXPECT_EQ(arenaOffsets(*planned),
            (std::map<std::string, int64_t>{{"x", 0}, {"t1", 256}, {"t2", 0}, {"t3", 256}}));
  // The arena is freed right after the last use (the d2h), before the return.
  const ir::Function* main = planned->lookup("main");
  const ir::Op* ret = main->body().back();
  ASSERT_TRUE(ret->prevOp()->is(ir::OpId::Free));
  EXPECT_EQ(ret->prevOp()->operand(0)->name(), "arena");
  EXPECT_TRUE(ret->prevOp()->prevOp()->is(ir::OpId::D2H));
  auto [before, after] = expectSameResults(*original, *planned);
  EXPECT_EQ(before, 4u * 1024);
  EXPECT_EQ(after, 2u * 1024);
}

TEST(MemoryPlan, PlanningTwiceChangesNothingMore) {
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(kChain), original);
  ASSERT_TRUE(planned);
  std::string once = ir::print(*planned);
  ASSERT_TRUE(runPipeline(*planned, "memplan,linearity"));
  EXPECT_EQ(ir::print(*planned), once);
}

TEST(MemoryPlan, BuffersUsedBeforeAndAfterALoopShareWithThoseInIt) {
  // %a and %b are both used in the loop: live together for all of it. %c is
  // used only after the loop: it takes %a's place.
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(R"(
  %a = alloc %n : buffer<f32, device, linear>
  h2d %a, %h
  %b = alloc %n : buffer<f32, device, linear>
  for %zero, %three, %one { |%k: u32|
    dispatch %g, %one, %one, %a, %b {kernel = @step}
    dispatch %g, %one, %one, %b, %a {kernel = @step}
    yield
  }
  %c = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %b, %c {kernel = @step}
  wait
  d2h %h, %c
  free %c
  free %a
  free %b
)"),
                      original);
  ASSERT_TRUE(planned);
  EXPECT_EQ(arenaOffsets(*planned), (std::map<std::string, int64_t>{{"a", 0}, {"b", 256}, {"c", 0}}));
  auto [before, after] = expectSameResults(*original, *planned);
  EXPECT_EQ(before, 3u * 1024);
  EXPECT_EQ(after, 2u * 1024);
}

TEST(MemoryPlan, OffsetsAreAlignedTo256Bytes) {
  // Buffers of 100 f32 (400 bytes): the second slot starts at element 128
  // (512 bytes), not 100.
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(R"(
  %m = const {value = 100} : u32
  %hin = buffer.view %h, %zero, %m : buffer<f32, host, read>
  %x = alloc %m : buffer<f32, device, linear>
  h2d %x, %hin
  %t1 = alloc %m : buffer<f32, device, linear>
  dispatch %two, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %m : buffer<f32, device, linear>
  dispatch %two, %one, %one, %t1, %t2 {kernel = @step}
  wait
  %hout = buffer.view %h, %m, %m : buffer<f32, host, write>
  d2h %hout, %t2
  free %x
  free %t1
  free %t2
)"),
                      original);
  ASSERT_TRUE(planned);
  EXPECT_EQ(arenaOffsets(*planned), (std::map<std::string, int64_t>{{"x", 0}, {"t1", 128}, {"t2", 0}}));
  EXPECT_EQ(arenaSizes(*planned), (std::vector<int64_t>{228}));
  auto [before, after] = expectSameResults(*original, *planned);
  EXPECT_EQ(before, 3u * 400);
  EXPECT_EQ(after, 228u * 4);
}

TEST(MemoryPlan, PaddingThatWouldCostMoreThanItSavesIsNotPlanned) {
  // Buffers of 10 f32: two aligned slots (74 elements) hold more than the
  // three buffers (30), so they stay as they are.
  expectUnchanged(R"(
  %hin = buffer.view %h, %zero, %ten : buffer<f32, host, read>
  %x = alloc %ten : buffer<f32, device, linear>
  h2d %x, %hin
  %t1 = alloc %ten : buffer<f32, device, linear>
  dispatch %one, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %ten : buffer<f32, device, linear>
  dispatch %one, %one, %one, %t1, %t2 {kernel = @step}
  wait
  %hout = buffer.view %h, %ten, %ten : buffer<f32, host, write>
  d2h %hout, %t2
  free %x
  free %t1
  free %t2
)");
}

TEST(MemoryPlan, AnArenaLargerThanWhatTheBuffersHeldAtOnceIsNotPlanned) {
  // The buffers of OffsetsAreAlignedTo256Bytes, each freed right after its
  // last use: never more than two live (200 elements), while the aligned
  // arena would take 228, so nothing changes.
  expectUnchanged(R"(
  %m = const {value = 100} : u32
  %hin = buffer.view %h, %zero, %m : buffer<f32, host, read>
  %x = alloc %m : buffer<f32, device, linear>
  h2d %x, %hin
  %t1 = alloc %m : buffer<f32, device, linear>
  dispatch %two, %one, %one, %x, %t1 {kernel = @step}
  free %x
  %t2 = alloc %m : buffer<f32, device, linear>
  dispatch %two, %one, %one, %t1, %t2 {kernel = @step}
  free %t1
  wait
  %hout = buffer.view %h, %m, %m : buffer<f32, host, write>
  d2h %hout, %t2
  free %t2
)");
}

TEST(MemoryPlan, EachElementTypeGetsItsOwnArena) {
  // An f32 chain and an i32 chain, interleaved: two arenas of two slots.
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(R"(
  %hi = alloc %n : buffer<i32, host, linear>
  for %zero, %n, %one { |%j: u32|
    %v = cast %j : i32
    store %hi, %j, %v
    yield
  }
  %x = alloc %n : buffer<f32, device, linear>
  %xi = alloc %n : buffer<i32, device, linear>
  h2d %x, %h
  h2d %xi, %hi
  %t1 = alloc %n : buffer<f32, device, linear>
  %u1 = alloc %n : buffer<i32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  dispatch %g, %one, %one, %xi, %u1 {kernel = @stepi}
  %t2 = alloc %n : buffer<f32, device, linear>
  %u2 = alloc %n : buffer<i32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  dispatch %g, %one, %one, %u1, %u2 {kernel = @stepi}
  wait
  d2h %hi, %u2
  d2h %h, %t2
  for %zero, %n, %one { |%j2: u32|
    %a = load %h, %j2 : f32
    %b = load %hi, %j2 : i32
    %bf = cast %b : f32
    %s = add %a, %bf : f32
    store %h, %j2, %s
    yield
  }
  free %hi
  free %x
  free %t1
  free %t2
  free %xi
  free %u1
  free %u2
)"),
                      original);
  ASSERT_TRUE(planned);
  EXPECT_EQ(arenaSizes(*planned), (std::vector<int64_t>{512, 512}));
  EXPECT_EQ(countOps(*planned, "buffer.view"), 6u);
  auto [before, after] = expectSameResults(*original, *planned);
  EXPECT_EQ(before, 6u * 1024);
  EXPECT_EQ(after, 4u * 1024);
}

TEST(MemoryPlan, ALargerBufferGoesFirst) {
  // %big (512) and %s1, %s2 (256 each, live one after the other, both while
  // %big is): %big at 0, the small ones share the slot after it.
  ir::Context ctx;
  std::unique_ptr<ir::Module> original;
  auto planned = plan(ctx, program(R"(
  %m512 = const {value = 512} : u32
  %big = alloc %m512 : buffer<f32, device, linear>
  %lo = buffer.view %big, %zero, %n : buffer<f32, device, write>
  %hi = buffer.view %big, %n, %n : buffer<f32, device, write>
  h2d %lo, %h
  h2d %hi, %h
  %s1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %lo, %s1 {kernel = @step}
  %s2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %s1, %s2 {kernel = @step}
  %s3 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %s2, %hi, %s3 {kernel = @add}
  wait
  d2h %h, %s3
  free %big
  free %s1
  free %s2
  free %s3
)"),
                      original);
  ASSERT_TRUE(planned);
  EXPECT_EQ(arenaOffsets(*planned),
            (std::map<std::string, int64_t>{{"big", 0}, {"s1", 512}, {"s2", 768}, {"s3", 512}}));
  auto [before, after] = expectSameResults(*original, *planned);
  EXPECT_EQ(before, 5u * 1024);
  EXPECT_EQ(after, 4u * 1024);
}

// ---- what is left as it is ---------------------------------------------------

TEST(MemoryPlan, OverlappingLifetimesDoNotPack) {
  // %a, %b and %c all meet at the dispatch.
  expectUnchanged(R"(
  %a = alloc %n : buffer<f32, device, linear>
  %b = alloc %n : buffer<f32, device, linear>
  h2d %a, %h
  h2d %b, %h
  %c = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %a, %b, %c {kernel = @add}
  wait
  d2h %h, %c
  free %a
  free %b
  free %c
)");
}

TEST(MemoryPlan, ABufferAllocatedInALoopIsLeftAlone) {
  // %t lives in the loop body; %x and %y, used in the loop, overlap.
  expectUnchanged(R"(
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %y = alloc %n : buffer<f32, device, linear>
  for %zero, %three, %one { |%k: u32|
    %t = alloc %n : buffer<f32, device, linear>
    dispatch %g, %one, %one, %x, %t {kernel = @step}
    dispatch %g, %one, %one, %t, %y {kernel = @step}
    copy %x, %y
    free %t
    yield
  }
  wait
  d2h %h, %x
  free %x
  free %y
)");
}

TEST(MemoryPlan, ABufferFreedInABranchIsLeftAlone) {
  // Without the branch %x and %t2 would share (see the chain).
  expectUnchanged(R"(
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  wait
  d2h %h, %t2
  %c = lt %zero, %one : bool
  if %c {
    free %x
    yield
  } {
    free %x
    yield
  }
  free %t1
  free %t2
)");
}

TEST(MemoryPlan, ASizeKnownOnlyAtRunTimeIsLeftAlone) {
  // %m is computed, not a constant: %x cannot be placed, and %t1, %t2 overlap.
  expectUnchanged(R"(
  %m = add %n, %zero : u32
  %x = alloc %m : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  wait
  d2h %h, %t2
  free %x
  free %t1
  free %t2
)");
}

TEST(MemoryPlan, ABufferReturnedIsLeftAlone) {
  // @chain returns %t2, which would otherwise share with %x.
  expectUnchanged(R"(
  %r = call %h {callee = @chain} : buffer<f32, device, linear>
  wait
  d2h %h, %r
  free %r
)",
                  R"(
host @chain(%h: buffer<f32, host, read>) -> buffer<f32, device, linear> {
  %one = const {value = 1} : u32
  %g = const {value = 4} : u32
  %n = const {value = 256} : u32
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  free %x
  free %t1
  return %t2
}
)");
}

TEST(MemoryPlan, ABufferPassedToACallIsLeftAlone) {
  // %t1 and %t2 are lent to @twice: what it does with them is not known
  // here, so neither is planned (and %x alone has nothing to share with).
  expectUnchanged(R"(
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  %t2 = alloc %n : buffer<f32, device, linear>
  call %t1, %t2 {callee = @twice}
  wait
  d2h %h, %t2
  free %x
  free %t1
  free %t2
)",
                  R"(
host @twice(%a: buffer<f32, device, read>, %b: buffer<f32, device, write>) {
  %one = const {value = 1} : u32
  %g = const {value = 4} : u32
  dispatch %g, %one, %one, %a, %b {kernel = @step}
  return
}
)");
}

TEST(MemoryPlan, AUseAfterTheFreeIsLeftAlone) {
  // Without the linearity pass first: %x is read after its free, so its
  // lifetime is unknown and it is not planned (linearity reports it).
  ir::Context ctx;
  auto m = parse(ctx, program(R"(
  %x = alloc %n : buffer<f32, device, linear>
  h2d %x, %h
  %t1 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %x, %t1 {kernel = @step}
  free %x
  %t2 = alloc %n : buffer<f32, device, linear>
  dispatch %g, %one, %one, %t1, %t2 {kernel = @step}
  d2h %h, %x
  free %t1
  free %t2
)"));
  ASSERT_TRUE(m);
  std::string before = ir::print(*m);
  ASSERT_TRUE(runPipeline(*m, "memplan"));
  EXPECT_EQ(ir::print(*m), before);
  passes::Diagnostics diag;
  passes::linearityPass().run(*m, diag);
  ASSERT_EQ(diag.errors.size(), 1u);
  EXPECT_EQ(diag.errors[0].code, "L002");
}

}  // namespace
}  // namespace eph::test
