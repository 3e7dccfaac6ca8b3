// Cooperative matrices (ir/ops/CoopMatrix.cpp) on every target: a 16 x 64
// times 64 x 64 product in f16 with f32 sums, one 16 x 16 tile of C per
// workgroup (four workgroups), the accumulator carried through a loop over
// four k-steps. The inputs are small integers, so every sum is exact and
// each target must give the host's double-precision result exactly. The
// interpreter always runs it; a Vulkan device with the 16x16x16 f16 f32
// shape (the H100/H200) runs it too, and one without (lavapipe) reports the
// shape it lacks; the cpu target names the op it does not support.
#include <gtest/gtest.h>

#include <memory>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"

namespace eph::test {
namespace {

constexpr uint32_t kM = 16, kK = 64, kN = 64;

const char* kKernel = R"(
kernel @k(%a: buffer<f16, device, read>, %b: buffer<f16, device, read>, %c: buffer<f32, device, write>) workgroup(32, 1, 1) {
  %w = workgroup_id {dim = 0} : u32
  %sixteen = const {value = 16} : u32
  %stride = const {value = 64} : u32
  %col = mul %w, %sixteen : u32
  %z = const {value = 0.0} : f32
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %steps = const {value = 4} : u32
  %init = coop.fill %z : coopmat<f32, 16, 16>
  %sum = for %zero, %steps, %one, %init : coopmat<f32, 16, 16> { |%s: u32, %acc: coopmat<f32, 16, 16>|
    %k0 = mul %s, %sixteen : u32
    %ta = coop.load %a, %k0, %stride : coopmat<f16, 16, 16>
    %row = mul %k0, %stride : u32
    %bo = add %row, %col : u32
    %tb = coop.load %b, %bo, %stride : coopmat<f16, 16, 16>
    %next = coop.muladd %ta, %tb, %acc : coopmat<f32, 16, 16>
    yield %next
  }
  coop.store %c, %col, %stride, %sum
  return
}
)";

TEST(CoopMatrix, TileProductsAgreeWithTheInterpreter) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kKernel, "coopmat.eir");
  ASSERT_TRUE(m) << m.error().str();
  Status valid = ir::verify(**m);
  ASSERT_TRUE(valid) << valid.error().str();
  const ir::Type *f16 = ctx.floatType(16), *f32 = ctx.f32();
  std::vector<interp::RtValue> a, b, c(kM * kN, interp::RtValue::ofFloat(f32, -1));
  for (uint32_t i = 0; i < kM * kK; ++i) a.push_back(interp::RtValue::ofFloat(f16, double(int(i * 7 % 9) - 4)));
  for (uint32_t i = 0; i < kK * kN; ++i) b.push_back(interp::RtValue::ofFloat(f16, double(int(i * 5 % 7) - 3)));
  std::vector<double> want(kM * kN, 0);
  for (uint32_t i = 0; i < kM; ++i)
    for (uint32_t j = 0; j < kN; ++j)
      for (uint32_t k = 0; k < kK; ++k) want[i * kN + j] += a[i * kK + k].f * b[k * kN + j].f;

  int ran = 0;
  for (const std::string& t : runtime::availableTargets()) {
    SCOPED_TRACE(t);
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev) << dev.error().str();
    auto got = runKernelOn(**dev, **m, "k", {kN / 16, 1, 1},
                           {KernelArg::ofBuffer(f16, a), KernelArg::ofBuffer(f16, b), KernelArg::ofBuffer(f32, c)});
    if (t == "cpu") {
      ASSERT_FALSE(got);
      EXPECT_NE(got.error().message.find("op 'coop.fill' is not supported on target cpu"), std::string::npos)
          << got.error().str();
      continue;
    }
    if (t == "vulkan" && !(*dev)->caps().hasCoopShape("16x16x16 f16 f32")) {
      ASSERT_FALSE(got);
      EXPECT_NE(got.error().message.find("needs a 16x16x16 f16 f32 cooperative matrix multiply-add"),
                std::string::npos)
          << got.error().str();
      continue;
    }
    ASSERT_TRUE(got) << got.error().str();
    const interp::BufferData& out = (*got)[2];
    ASSERT_EQ(out.elems.size(), size_t(kM * kN));
    for (uint32_t e = 0; e < kM * kN; ++e)
      ASSERT_EQ(out.elems[e].f, want[e]) << "element (" << e / kN << ", " << e % kN << ")";
    ++ran;
  }
  EXPECT_GE(ran, 1);  // the interpreter at least
}

TEST(CoopMatrix, VerifierRejectsWhatDoesNotChain) {
  ir::Context ctx;
  auto parse = [&](const std::string& body) {
    return ir::parseModule(ctx,
                           "kernel @k(%a: buffer<f16, device, read>, %c: buffer<f32, device, write>, %h: buffer<i32, device, write>) "
                           "workgroup(32, 1, 1) {\n  %z = const {value = 0} : u32\n  %zf = const {value = 0.0} : f32\n" +
                               body + "  return\n}\n",
                           "bad.eir");
  };
  struct Case {
    std::string body, error;
  } cases[] = {
      {"  %m = coop.load %c, %z, %z : coopmat<f16, 16, 16>\n", "a buffer of 'f32' holds no 'coopmat<f16, 16, 16>'"},
      {"  %m = coop.fill %zf : coopmat<f16, 16, 16>\n", "fills 'coopmat<f16, 16, 16>' with 'f16', not 'f32'"},
      {"  %m = coop.fill %zf : coopmat<f32, 16, 16>\n  coop.store %a, %z, %z, %m\n",
       "a buffer of 'f16' holds no 'coopmat<f32, 16, 16>'"},
      {"  %m = coop.load %a, %zf, %z : coopmat<f16, 16, 16>\n", "the offset must be a 32-bit integer, got 'f32'"},
      {"  %m = coop.fill %zf : coopmat<f32, 16, 16>\n  %d = coop.muladd %m, %m, %m : coopmat<f32, 16, 16>\n  %e = coop.fill %z : coopmat<u32, 8, 8>\n  %x = coop.muladd %e, %e, %e : coopmat<u32, 8, 8>\n",
       "multiplies float matrices"},
  };
  for (const Case& c : cases) {
    auto m = parse(c.body);
    ASSERT_TRUE(m) << m.error().str();
    Status st = ir::verify(**m);
    ASSERT_FALSE(st) << c.body;
    EXPECT_NE(st.error().message.find(c.error), std::string::npos) << st.error().str();
  }
}

}  // namespace
}  // namespace eph::test
