// GPU buffers through __ffi (docs/ephapax-gpu.md, "Runtime buffer checks"):
// an owned buffer passed to C is C's, and C uses it through the runtime's C
// API (runtime/eph_buffer.h). The C side is tests/ffi/buffer_client.c, built
// by CMake and loaded as `ephc run --link` would. Each entry of kProgram runs
// on every target (compiled host code on cpu), with buffer checks off and on,
// and under the plain interpreter (buffers in its Memory): C code that frees
// what it was given agrees everywhere; a leak, a double free and a use after
// free are located errors naming the allocation site with checks on, and a
// stale or made-up handle is a clear error (never a crash) with them off.
#include <gtest/gtest.h>

#include "ir/OpTable.h"
#include "ir/interp/ForeignCall.h"
#include "tests/unit/EphapaxTestUtil.h"

using namespace eph;
using namespace eph::ephapax;
using namespace eph::ephapax::test;

namespace {

const char* kProgram = R"(fn frees() -> I64 {
    let! b = allocate_gpu<I32>(5);
    dispatch over 5 { b[gid] = gid; }
    __ffi("client_free", b)
}
fn keeps_then_frees() -> I64 {
    let! b = h2d([1, 2, 3]);
    let n: I64 = __ffi("client_keep", b);
    n * 10 + __ffi("client_free_kept")
}
fn leaks() -> I64 {
    let! b = allocate_gpu<F32>(4);
    __ffi("client_keep", b)
}
fn double_free() -> I64 {
    let! b = allocate_gpu<I32>(2);
    __ffi("client_free_twice", b)
}
fn use_after_free() -> I64 {
    let! b = allocate_gpu<I32>(2);
    let n: I64 = __ffi("client_keep", b);
    let r: I64 = __ffi("client_free_kept");
    n + r + __ffi("client_len_kept")
}
fn made_up_handle() -> I64 {
    let! b = allocate_gpu<I32>(2);
    __ffi("client_free_made_up", b)
}
)";

struct Compiled {
  ir::Context ctx;
  std::unique_ptr<ir::Module> m;
};

std::unique_ptr<Compiled> compileProgram() {
  auto c = std::make_unique<Compiled>();
  DiagSink diags;
  c->m = compile(c->ctx, kProgram, "t.eph", diags, {});
  EXPECT_TRUE(c->m) << renderAll(diags, "t.eph", kProgram);
  return c;
}

class FfiBuffers : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Status s = interp::loadForeignLibrary(EPH_FFI_BUFFER_CLIENT);
    ASSERT_TRUE(s) << s.error().str();
  }
};

// Entry `entry` on `target` (compiled host code on cpu): its result, or the error.
std::string run(const ir::Module& m, const std::string& target, const std::string& entry, bool checks) {
  auto dev = runtime::openDevice(target);
  if (!dev) return "skip: " + dev.error().message;
  interp::Interpreter in(m);
  runtime::RunOptions opts;
  opts.checkBuffers = checks;
  opts.host = target == "cpu" ? runtime::RunOptions::Host::Jit : runtime::RunOptions::Host::Interp;
  auto r = runtime::runHost(**dev, in, *m.lookup(entry), {}, opts);
  if (!r) return "error: " + r.error().str();
  return interp::format((*r)[0], &in.memory());
}

// The same under the plain interpreter, without device hooks.
std::string runPlain(const ir::Module& m, const std::string& entry) {
  interp::Interpreter in(m);
  auto r = in.call(*m.lookup(entry), {});
  if (!r) return "error: " + r.error().str();
  return interp::format((*r)[0], &in.memory());
}

// `entry` gives `want` on every target, checks off and on, and without hooks.
void expectEverywhere(const ir::Module& m, const std::string& entry, const std::string& want,
                      const std::string& wantChecked, const std::string& wantPlain) {
  for (const std::string& target : runTargets()) {
    SCOPED_TRACE(target + " " + entry);
    EXPECT_EQ(run(m, target, entry, false), want);
    EXPECT_EQ(run(m, target, entry, true), wantChecked);
  }
  EXPECT_EQ(runPlain(m, entry), wantPlain) << entry;
}

TEST_F(FfiBuffers, CFreesWhatItIsGiven) {
  auto c = compileProgram();
  ASSERT_TRUE(c->m);
  // client_free returns the length it read before freeing: 5 elements.
  expectEverywhere(*c->m, "frees", "5", "5", "5");
  // client_keep: the length, 3; client_free_kept: 0 (freed in a later call).
  expectEverywhere(*c->m, "keeps_then_frees", std::to_string(3 * 10 + 0), "30", "30");
}

TEST_F(FfiBuffers, LeakDoubleFreeAndUseAfterFreeAreLocated) {
  auto c = compileProgram();
  ASSERT_TRUE(c->m);
  // Kept by C and never freed: a leak at exit with checks on (its last use
  // is the eph_buffer_len in client_keep, at the call).
  expectEverywhere(*c->m, "leaks", "4",
                   "error: t.eph:12:14: error: leak: buffer allocated at t.eph:12:14 (4 x f32) was never freed "
                   "(last used at t.eph:13:5) when @leaks returned",
                   "4");
  const std::string stale = ", which is not a live buffer (freed already, or never allocated); run with "
                            "--check-buffers (EPH_CHECK_BUFFERS=1) to see where it was allocated and freed";
  expectEverywhere(*c->m, "double_free", "error: t.eph:17:5: error: eph_buffer_free of device buffer handle 1" + stale,
                   "error: t.eph:17:5: error: double free: buffer allocated at t.eph:16:14 was freed at t.eph:17:5 "
                   "and freed again at t.eph:17:5",
                   "error: t.eph:17:5: error: eph_buffer_free of device buffer handle 1, which was freed already "
                   "(buffer allocated at t.eph:16:14)");
  expectEverywhere(*c->m, "use_after_free", "error: t.eph:23:13: error: eph_buffer_len of device buffer handle 1" + stale,
                   "error: t.eph:23:13: error: use after free: buffer allocated at t.eph:20:14 was freed at "
                   "t.eph:22:18 and used again at t.eph:23:13 (by eph_buffer_len)",
                   "error: t.eph:23:13: error: eph_buffer_len of device buffer handle 1, which was freed already "
                   "(buffer allocated at t.eph:20:14)");
}

TEST_F(FfiBuffers, MadeUpHandleIsAnErrorNotACrash) {
  auto c = compileProgram();
  ASSERT_TRUE(c->m);
  std::string h = std::to_string(1 + 1000000);
  expectEverywhere(*c->m, "made_up_handle",
                   "error: t.eph:27:5: error: eph_buffer_free of device buffer handle " + h +
                       ", which is not a live buffer (freed already, or never allocated); run with --check-buffers "
                       "(EPH_CHECK_BUFFERS=1) to see where it was allocated and freed",
                   "error: t.eph:27:5: error: free of device buffer handle " + h + ", which this device never allocated",
                   "error: t.eph:27:5: error: eph_buffer_free of device buffer handle " + h +
                       ", which was never allocated");
}

TEST_F(FfiBuffers, ExternFunctionsTakeOwnedBuffersToo) {
  // An `extern` declaration with a GPUBuffer<T>! parameter is the same call.
  const char* src = "extern \"C\" { fn client_free(b: GPUBuffer<I32>!): I64 }\n"
                    "fn main() -> I64 {\n    let! b = h2d([4, 5, 6, 7]);\n    client_free(b)\n}\n";
  ir::Context ctx;
  DiagSink diags;
  auto m = compile(ctx, src, "t.eph", diags, {});
  ASSERT_TRUE(m) << renderAll(diags, "t.eph", src);
  expectEverywhere(*m, "main", "4", "4", "4");  // the length C read before freeing
}

TEST_F(FfiBuffers, TheCallConsumesTheBuffer) {
  // The checker counts the buffer as consumed by the call (E002 after it)
  // and the IR's call.c consumes its operand (the linearity pass agrees).
  const char* twice = "fn main() -> I64 {\n    let! b = allocate_gpu<I32>(2);\n    let n: I64 = __ffi(\"client_keep\", b);\n"
                      "    free_gpu(b);\n    n\n}\n";
  ir::Context ctx;
  DiagSink diags;
  EXPECT_FALSE(compile(ctx, twice, "t.eph", diags, {}));
  std::string errors = renderAll(diags, "t.eph", twice);
  EXPECT_NE(errors.find("t.eph:4:14: error[E002]: `b` is used after it was consumed"), std::string::npos) << errors;
  auto c = compileProgram();
  ASSERT_TRUE(c->m);
  bool consumes = false;
  c->m->lookup("frees")->walk([&](ir::Op* op) {
    if (op->name() == "call.c") consumes = op->info().effect(*op, 0) == ir::Effect::Consume;
  });
  EXPECT_TRUE(consumes);
}

}  // namespace
