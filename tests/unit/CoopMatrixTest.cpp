// Cooperative matrices (ir/ops/CoopMatrix.cpp) on every target: a 16 x 64
// times 64 x 64 product in f16 with f32 sums, one 16 x 16 tile of C per
// workgroup (four workgroups), the accumulator carried through a loop over
// four k-steps. The inputs are small integers, so every sum is exact and
// each target must give the host's double-precision result exactly. The
// interpreter always runs it; a Vulkan device with the 16x16x16 f16 f32
// shape (the H100/H200) runs it too, and one without (lavapipe) reports the
// shape it lacks; the cpu target names the op it does not support.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#ifdef EPH_HAVE_VULKAN
#include "targets/spirv/CapsProfiles.h"
#include "targets/spirv/Spirv.h"
#endif
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

// Workgroup-scope matrices (VK_NV_cooperative_matrix2): 64 invocations hold
// a 32 x 32 accumulator together; three k-steps of 16 multiply A (row-major,
// 32 x 48) by B (column-major: stored as B^T, 32 x 48); the f32 sums are
// stored and, converted to f16, stored again. Small integers: every target
// that runs it gives the host's sums exactly (the H200 does; lavapipe lacks
// the extension and says so; the cpu target names the op).
const char* kWorkgroupKernel = R"(
kernel @k(%a: buffer<f16, device, read>, %b: buffer<f16, device, read>, %c: buffer<f32, device, write>, %h: buffer<f16, device, write>) workgroup(64, 1, 1) {
  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %sixteen = const {value = 16} : u32
  %ld = const {value = 48} : u32
  %n = const {value = 32} : u32
  %steps = const {value = 3} : u32
  %z = const {value = 0.0} : f32
  %init = coop.fill %z : coopmat<f32, 32, 32, workgroup, acc>
  %sum = for %zero, %steps, %one, %init : coopmat<f32, 32, 32, workgroup, acc> { |%s: u32, %acc: coopmat<f32, 32, 32, workgroup, acc>|
    %k0 = mul %s, %sixteen : u32
    %ta = coop.load %a, %k0, %ld : coopmat<f16, 32, 16, workgroup, a>
    %tb = coop.load %b, %k0, %ld {col_major = 1} : coopmat<f16, 16, 32, workgroup, b>
    %next = coop.muladd %ta, %tb, %acc : coopmat<f32, 32, 32, workgroup, acc>
    yield %next
  }
  coop.store %c, %zero, %n, %sum
  %half = coop.convert %sum : coopmat<f16, 32, 32, workgroup, acc>
  coop.store %h, %zero, %n, %half
  return
}
)";

TEST(CoopMatrix, WorkgroupMatricesAgreeWithTheInterpreter) {
  constexpr uint32_t M = 32, N = 32, K = 48;
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kWorkgroupKernel, "workgroup.eir");
  ASSERT_TRUE(m) << m.error().str();
  Status valid = ir::verify(**m);
  ASSERT_TRUE(valid) << valid.error().str();
  const ir::Type *f16 = ctx.floatType(16), *f32 = ctx.f32();
  std::vector<interp::RtValue> a, bt, c(M * N, interp::RtValue::ofFloat(f32, -1)), h(M * N, interp::RtValue::ofFloat(f16, -1));
  for (uint32_t i = 0; i < M * K; ++i) a.push_back(interp::RtValue::ofFloat(f16, double(int(i * 7 % 9) - 4)));
  for (uint32_t i = 0; i < N * K; ++i) bt.push_back(interp::RtValue::ofFloat(f16, double(int(i * 5 % 7) - 3)));
  std::vector<double> want(M * N, 0);
  for (uint32_t i = 0; i < M; ++i)
    for (uint32_t j = 0; j < N; ++j)
      for (uint32_t k = 0; k < K; ++k) want[i * N + j] += a[i * K + k].f * bt[j * K + k].f;

  int ran = 0;
  for (const std::string& t : runtime::availableTargets()) {
    SCOPED_TRACE(t);
    auto dev = runtime::openDevice(t);
    ASSERT_TRUE(dev) << dev.error().str();
    auto got = runKernelOn(**dev, **m, "k", {1, 1, 1},
                           {KernelArg::ofBuffer(f16, a), KernelArg::ofBuffer(f16, bt), KernelArg::ofBuffer(f32, c),
                            KernelArg::ofBuffer(f16, h)});
    if (t == "cpu") {
      ASSERT_FALSE(got);
      EXPECT_NE(got.error().message.find("is not supported on target cpu"), std::string::npos) << got.error().str();
      continue;
    }
    if (t == "vulkan" && (*dev)->caps().workgroupMatrixShapeFor(M, N, 16, "f16", "f32", 64).empty()) {
      ASSERT_FALSE(got);
      EXPECT_NE(got.error().message.find("workgroup cooperative matrices (VK_NV_cooperative_matrix2)"),
                std::string::npos)
          << got.error().str();
      continue;
    }
    ASSERT_TRUE(got) << got.error().str();
    for (uint32_t e = 0; e < M * N; ++e) {
      ASSERT_EQ((*got)[2].elems[e].f, want[e]) << "f32 element (" << e / N << ", " << e % N << ")";
      ASSERT_EQ((*got)[3].elems[e].f, want[e]) << "f16 element (" << e / N << ", " << e % N << ")";
    }
    ++ran;
  }
  EXPECT_GE(ran, 1);  // the interpreter at least
}

// The SPIR-V of workgroup-scope matrices (SPV_KHR_cooperative_matrix, which
// Debian 12's validator and disassembler do not know, so the words are
// checked here): the capability and extension, the Vulkan memory model, the
// three uses at scope 2, the KHR load (layout 1 for B), multiply-add and
// store, and OpFConvert; a device without the extension gets an error.
#ifdef EPH_HAVE_VULKAN
TEST(CoopMatrix, WorkgroupMatricesEmitKhrInstructions) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, kWorkgroupKernel, "workgroup.eir");
  ASSERT_TRUE(m) << m.error().str();
  const ir::Function* k = (*m)->lookup("k");
  ASSERT_NE(k, nullptr);
  auto words = spirv::emitKernel(*k, *spirv::capsProfile("nvidia"));
  ASSERT_TRUE(words) << words.error().str();
  std::map<uint32_t, uint32_t> constants;  // id -> value of each 32-bit OpConstant
  std::vector<std::vector<uint32_t>> types, loads;
  int capability = 0, memoryModel = -1, mulAdds = 0, stores = 0, converts = 0;
  const std::vector<uint32_t>& w = *words;
  for (size_t i = 5; i < w.size(); i += w[i] >> 16) {
    const uint32_t op = w[i] & 0xffff, n = w[i] >> 16;
    ASSERT_GT(n, 0u);
    std::vector<uint32_t> ops(w.begin() + long(i) + 1, w.begin() + long(i + n));
    if (op == 17 && ops[0] == 6022) ++capability;          // OpCapability CooperativeMatrixKHR
    if (op == 14) memoryModel = int(ops[1]);               // OpMemoryModel
    if (op == 43 && ops.size() == 3) constants[ops[1]] = ops[2];
    if (op == 4456) types.push_back(ops);                  // result, component, scope, rows, cols, use
    if (op == 4457) loads.push_back(ops);                  // type, result, pointer, layout, stride
    mulAdds += op == 4459, stores += op == 4458, converts += op == 115;
  }
  EXPECT_EQ(capability, 1);
  EXPECT_EQ(memoryModel, 3);  // Vulkan
  std::set<std::vector<uint32_t>> shapes;  // rows, cols, use
  for (const auto& t : types) {
    ASSERT_EQ(t.size(), 6u);
    EXPECT_EQ(constants[t[2]], 2u);  // Workgroup
    shapes.insert({constants[t[3]], constants[t[4]], constants[t[5]]});
  }
  EXPECT_EQ(shapes, (std::set<std::vector<uint32_t>>{{32, 16, 0}, {16, 32, 1}, {32, 32, 2}}));
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(constants[loads[0][3]], 0u);  // RowMajorKHR
  EXPECT_EQ(constants[loads[1][3]], 1u);  // ColumnMajorKHR
  EXPECT_EQ(constants[loads[0][4]], 48u);
  EXPECT_EQ(mulAdds, 1);
  EXPECT_EQ(stores, 2);
  EXPECT_EQ(converts, 1);

  auto refused = spirv::emitKernel(*k, *spirv::capsProfile("lavapipe"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("workgroup cooperative matrices (VK_NV_cooperative_matrix2)"),
            std::string::npos)
      << refused.error().str();
  DeviceCaps small = *spirv::capsProfile("nvidia");  // no 64-invocation entry
  std::erase_if(small.workgroupMatrixShapes, [](const std::string& s) { return s.ends_with(" 64"); });
  auto noShape = spirv::emitKernel(*k, small);
  ASSERT_FALSE(noShape);
  EXPECT_NE(noShape.error().message.find("a 32x32x16 f16 f32 workgroup cooperative matrix multiply-add in "
                                         "workgroups of 64 invocations"),
            std::string::npos)
      << noShape.error().str();
  // 42000 bytes of workgroup memory fit 48 KiB but not with the 8 KiB the
  // driver keeps for workgroup matrices.
  std::string text = kWorkgroupKernel;
  text.replace(text.find("  %zero"), 0, "  %tile = workgroup.alloc {size = 10500} : buffer<f32, workgroup, write>\n");
  auto big = ir::parseModule(ctx, text, "big.eir");
  ASSERT_TRUE(big) << big.error().str();
  auto tooBig = spirv::emitKernel(*(*big)->lookup("k"), *spirv::capsProfile("nvidia"));
  ASSERT_FALSE(tooBig);
  EXPECT_NE(tooBig.error().message.find("less the 8192 the driver keeps for workgroup matrices"), std::string::npos)
      << tooBig.error().str();
}
#endif

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
      {"  %m = coop.fill %zf : coopmat<f32, 16, 16, workgroup, acc>\n  %d = coop.muladd %m, %m, %m : coopmat<f32, 16, 16, workgroup, acc>\n",
       "a workgroup's multiply-add takes an 'a', a 'b' and an 'acc' matrix"},
      {"  %m = coop.fill %zf : coopmat<f32, 16, 16, workgroup, acc>\n  %s = coop.fill %zf : coopmat<f32, 16, 16>\n  %d = coop.muladd %s, %s, %m : coopmat<f32, 16, 16, workgroup, acc>\n",
       "multiplies matrices of one scope"},
      {"  %m = coop.fill %zf : coopmat<f32, 16, 16, workgroup, acc>\n  %hh = coop.convert %m : coopmat<f16, 16, 16>\n",
       "converts 'coopmat<f32, 16, 16, workgroup, acc>' to a matrix of its shape, scope and use, not 'coopmat<f16, 16, 16>'"},
      {"  %m = coop.fill %z : coopmat<u32, 16, 16>\n  %hh = coop.convert %m : coopmat<f16, 16, 16>\n",
       "converts float matrices"},
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
