// The Ephapax standard library (frontends/ephapax/Stdlib.h, stdlib/*.eph):
// how `import` merges a module into a program (overrides, transitive
// imports, qualified names, parse errors in a module), and every function of
// `import gpu` run on random data big enough to need many workgroups, on
// interp, cpu and vulkan (when this machine has one; EPH_REQUIRE_VULKAN=1
// makes a missing device a failure), checked against results computed here
// in C++ from the same inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>

#include "frontends/ephapax/Lower.h"
#include "frontends/ephapax/Parser.h"
#include "frontends/ephapax/Stdlib.h"
#include "tests/support/InterpSample.h"
#include "tests/unit/EphapaxTestUtil.h"

using namespace eph::ephapax;
using namespace eph::ephapax::test;
using eph::Status;

namespace {

// Parses `src`, merges its imports from `modules`, checks and lowers it
// (what check() and compile() do with the built-in modules), and runs main
// on the interpreter: the printed result, or "error CODE ..." for the first
// diagnostic.
std::string runMerged(const std::string& src, const std::vector<StdlibModule>& modules) {
  DiagSink diags;
  auto c = std::make_unique<Checked>();
  c->prog = parseProgram(src, diags);
  if (!diags.empty()) return "error " + diags.all()[0].code;
  if (!mergeStdlibImports(c->prog, diags, modules)) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  bool typed = typeCheck(*c, diags);
  checkOwnership(*c, diags);
  if (!typed || !diags.empty()) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  eph::ir::Context ctx;
  auto m = lowerProgram(*c, ctx, "t.eph", diags);
  if (!m) return "error " + diags.all()[0].code + " " + diags.all()[0].message;
  auto dev = eph::runtime::openDevice("interp");
  eph::interp::Interpreter in(*m);
  auto r = eph::runtime::runHost(**dev, in, *m->lookup("main"), {});
  if (!r) return "trap " + r.error().message;
  return eph::interp::format((*r)[0], &in.memory());
}

const std::vector<StdlibModule> kSmallModules = {
    {"arith", "module arith\nimport shapes\nfn double(x: I32): I32 = x * 2\nfn triple(x: I32): I32 = x * 3\n"
              "let Answer = 42\n"},
    {"shapes", "module shapes\ndata Shape = Square(I32) | Rect(I32, I32)\n"
               "fn area(s: Shape): I32 = match s of | Square(a) => a * a | Rect(a, b) => a * b end\n"},
    {"broken", "module broken\nfn oops(: I32 = 1\n"},
};

TEST(EphapaxStdlib, ImportMergesTheModulesDeclarations) {
  EXPECT_EQ(runMerged("import arith\nfn main(): I32 = double(10) + triple(1) + Answer\n", kSmallModules), "65");
}

TEST(EphapaxStdlib, QualifiedNamesResolve) {
  EXPECT_EQ(runMerged("import arith\nfn main(): I32 = arith.double(4)\n", kSmallModules), "8");
}

TEST(EphapaxStdlib, AProgramOverridesAModuleFunction) {
  // The program's `double` wins; the module's `triple` is still merged.
  EXPECT_EQ(runMerged("import arith\nfn double(x: I32): I32 = x + 1000\nfn main(): I32 = double(1) + triple(2)\n",
                      kSmallModules),
            "1007");
}

TEST(EphapaxStdlib, ImportsOfAModuleAreMergedOnce) {
  // arith imports shapes: its data type and functions arrive too, and
  // importing shapes again (directly) adds nothing twice.
  EXPECT_EQ(runMerged("import arith\nimport shapes\nfn main(): I32 = area(Rect(3, 4)) + shapes.area(Square(2))\n",
                      kSmallModules),
            "16");
  DiagSink d;
  Program p = parseProgram("import arith\nimport shapes\nimport arith\n", d);
  ASSERT_TRUE(mergeStdlibImports(p, d, kSmallModules));
  EXPECT_EQ(p.fns.size(), 3u);    // double, triple, area
  EXPECT_EQ(p.types.size(), 1u);  // Shape
  EXPECT_EQ(p.consts.size(), 1u); // Answer
}

TEST(EphapaxStdlib, UnknownImportsAreLeftAlone) {
  DiagSink d;
  Program p = parseProgram("import nosuch\nfn main(): I32 = 1\n", d);
  ASSERT_TRUE(mergeStdlibImports(p, d, kSmallModules));
  EXPECT_TRUE(d.empty());
  EXPECT_EQ(p.fns.size(), 1u);
  EXPECT_EQ(p.imports, std::vector<std::string>{"nosuch"});
}

TEST(EphapaxStdlib, AParseErrorInAModuleNamesTheModule) {
  const std::string src = "import broken\nfn main(): I32 = 1\n";
  DiagSink d;
  Program p = parseProgram(src, d);
  EXPECT_FALSE(mergeStdlibImports(p, d, kSmallModules));
  ASSERT_FALSE(d.empty());
  EXPECT_EQ(d.all()[0].code, "E000");
  EXPECT_EQ(d.all()[0].loc.line, 2u);
  EXPECT_EQ(d.all()[0].loc.col, 9u);
  EXPECT_NE(d.all()[0].message.find("standard library module `broken`"), std::string::npos) << d.all()[0].message;
  // Rendered at the module's own line, not the program's.
  std::string shown = renderAll(d, "t.eph", src);
  EXPECT_EQ(shown.rfind("broken.eph:2:9: error[E000]", 0), 0u) << shown;
  EXPECT_NE(shown.find("fn oops(: I32 = 1"), std::string::npos) << shown;
}

TEST(EphapaxStdlib, TheGpuModuleIsCompiledIn) {
  const StdlibModule* gpu = findStdlibModule("gpu");
  ASSERT_NE(gpu, nullptr);
  for (const char* fn : {"fn map<T, U>", "fn reduce_sum<T>", "fn reduce_max<T>", "fn dot<T>", "fn scan<T>",
                         "fn transpose", "fn gemm", "fn sort<T>", "fn convolve3x3", "fn histogram", "fn fill_random"})
    EXPECT_NE(gpu->source.find(fn), std::string_view::npos) << fn;
  EXPECT_EQ(findStdlibModule("nosuch"), nullptr);
  DiagSink d;
  Program p = parseProgram(gpu->source, d);
  EXPECT_TRUE(d.empty()) << renderAll(d, "gpu.eph", gpu->source);
  EXPECT_EQ(p.moduleName, "gpu");
}

// ---- the gpu module on every target ---------------------------------------------------

// gpu.eph's random_bits(i, seed), computed here.
int64_t randomBits(int32_t i, int32_t seed) {
  const int64_t p = 2147483647;
  int64_t h = (int64_t{i} + int64_t{seed} * 1000003) % p;
  if (h < 0) h += p;
  h = (h * 48271 + 12345) % p;
  h = (h * h + 1013904223) % p;
  h = (h * h + 1664525) % p;
  h = (h * 16807 + h / 65536) % p;
  return h;
}
std::vector<double> randomInts(int n, int32_t seed, int32_t range) {
  std::vector<double> out(n);
  for (int i = 0; i < n; ++i) out[i] = static_cast<double>(randomBits(i, seed) % range);
  return out;
}

// What main returned, as lists of numbers: a tuple gives one part per
// element; an owned device buffer (GPUBuffer<T>!) its elements, downloaded
// from the device (lists cannot leave a function yet); a scalar one number.
using Parts = std::vector<std::vector<double>>;

double numberOf(const eph::interp::RtValue& v) {
  if (v.type && v.type->kind() == eph::ir::TypeKind::Float) return v.f;
  return static_cast<double>(v.i);
}

// `length`: the buffer's element count (the device does not say).
std::vector<double> partOf(const eph::interp::RtValue& v, size_t length, eph::runtime::Device& dev,
                           std::string& err) {
  if (!v.type || v.type->kind() != eph::ir::TypeKind::Buffer) return {numberOf(v)};
  eph::interp::BufferData data;
  data.elemType = v.type->elem();
  data.space = eph::ir::Space::Host;
  data.elems.resize(length);
  data.written.resize(length);
  if (Status st = dev.download(data, v.buffer, {}); !st) {
    err = "download: " + st.error().str();
    return {};
  }
  std::vector<double> out;
  for (const auto& e : data.elems) out.push_back(numberOf(e));
  return out;
}

// The targets the gpu module runs on here: interp, cpu when built, vulkan
// when this machine has a device (a missing one fails the test under
// EPH_REQUIRE_VULKAN=1).
std::vector<std::string> gpuTargets() {
  std::vector<std::string> out = runTargets();
  const char* req = std::getenv("EPH_REQUIRE_VULKAN");
  bool required = req && std::string(req) == "1";
  bool built = false;
  for (const std::string& t : eph::runtime::availableTargets()) built = built || t == "vulkan";
  if (!built) {
    if (required) ADD_FAILURE() << "EPH_REQUIRE_VULKAN=1 but this build has no Vulkan runtime";
    return out;
  }
  auto dev = eph::runtime::openDevice("vulkan");
  if (dev)
    out.push_back("vulkan");
  else if (required)
    ADD_FAILURE() << "EPH_REQUIRE_VULKAN=1 but no Vulkan device: " << dev.error().message;
  return out;
}

// Compiles `src` (which imports gpu) and runs main on `target`; the parts of
// its result (`lengths`: one per part, the element count of a buffer), or an
// error in `err`.
Parts runOn(const std::string& target, const std::string& src, const std::vector<size_t>& lengths,
            std::string& err) {
  eph::ir::Context ctx;
  DiagSink diags;
  auto m = compile(ctx, src, "t.eph", diags);
  if (!m) {
    err = "does not compile:\n" + renderAll(diags, "t.eph", src);
    return {};
  }
  auto dev = eph::runtime::openDevice(target);
  if (!dev) {
    err = "cannot open " + target + ": " + dev.error().message;
    return {};
  }
  eph::interp::Interpreter in(*m);
  auto r = eph::runtime::runHost(**dev, in, *m->lookup("main"), {});
  if (!r) {
    err = target + ": " + r.error().str();
    return {};
  }
  const eph::interp::RtValue& v = (*r)[0];
  std::vector<eph::interp::RtValue> values = {v};
  if (v.type && v.type->kind() == eph::ir::TypeKind::Struct) values = v.elems;
  if (values.size() != lengths.size()) {
    err = "main returned " + std::to_string(values.size()) + " values, expected " + std::to_string(lengths.size());
    return {};
  }
  Parts parts;
  for (size_t i = 0; i < values.size() && err.empty(); ++i) parts.push_back(partOf(values[i], lengths[i], **dev, err));
  return parts;
}

// Runs `src` on every target and calls check(parts) for each (inside a
// SCOPED_TRACE naming the target).
template <class Check>
void onEveryTarget(const std::string& src, const std::vector<size_t>& lengths, Check check) {
  for (const std::string& target : gpuTargets()) {
    if (target == "interp" && !eph::test::interpThisTime()) continue;  // EPH_INTERP_SAMPLE
    SCOPED_TRACE(target);
    std::string err;
    Parts parts = runOn(target, src, lengths, err);
    ASSERT_TRUE(err.empty()) << err;
    check(parts);
  }
}

// The index of the first difference, or -1.
long firstDifference(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return static_cast<long>(std::min(got.size(), want.size()));
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i]) return static_cast<long>(i);
  return -1;
}
#define EXPECT_SAME(got, want)                                                                         \
  do {                                                                                                 \
    long at = firstDifference(got, want);                                                              \
    EXPECT_EQ(at, -1) << "sizes " << (got).size() << " and " << (want).size()                          \
                      << (at >= 0 && static_cast<size_t>(at) < std::min((got).size(), (want).size())   \
                              ? ", element " + std::to_string(at) + ": " + std::to_string((got)[at]) + \
                                    " vs " + std::to_string((want)[at])                                \
                              : std::string());                                                        \
  } while (0)

TEST(EphapaxStdlibGpu, RandomFillsMatchTheHash) {
  const int n = 20000;
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<I32>!, GPUBuffer<F32>!, GPUBuffer<F32>!) {
    (fill_random(20000, 9, 1000), fill_random_f32(20000, -4, 50), fill_random_unit(20000, 3))
})",
                {20000, 20000, 20000}, [&](const Parts& p) {
                  EXPECT_SAME(p[0], randomInts(n, 9, 1000));
                  EXPECT_SAME(p[1], randomInts(n, -4, 50));
                  std::vector<double> unit(n);
                  for (int i = 0; i < n; ++i) unit[i] = static_cast<double>(randomBits(i, 3) % 16777216) / 16777216.0;
                  EXPECT_SAME(p[2], unit);
                  // Roughly uniform: every value of [0, 1000) about 20 times.
                  std::vector<int> seen(1000);
                  for (double v : p[0]) seen[static_cast<int>(v)]++;
                  EXPECT_LT(*std::max_element(seen.begin(), seen.end()), 50);
                });
}

TEST(EphapaxStdlibGpu, FillIotaAndMap) {
  onEveryTarget(R"(import gpu
fn square(x: I32) -> I32 { x * x - 3 }
fn main() -> (GPUBuffer<I32>!, GPUBuffer<F32>!, GPUBuffer<I32>!) {
    let! squares = map(square, iota(30000));
    let! halves = gpu.map(fn(x: I32) -> f32(x) / f32(2), fill_random(30000, 5, 1000));
    (squares, halves, fill(1000, 7))
})",
                {30000, 30000, 1000}, [&](const Parts& p) {
                  std::vector<double> squares(30000), halves = randomInts(30000, 5, 1000);
                  for (int i = 0; i < 30000; ++i) squares[i] = static_cast<double>(i) * i - 3;
                  for (double& h : halves) h /= 2;
                  EXPECT_SAME(p[0], squares);
                  EXPECT_SAME(p[1], halves);
                  EXPECT_SAME(p[2], std::vector<double>(1000, 7));
                });
}

TEST(EphapaxStdlibGpu, ReduceSum) {
  // 100000 elements: 391 workgroups of 256, each adding its partial sum atomically.
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<I32>!, I32) {
    let! xs = fill_random(100000, 1, 20000);
    let s = reduce_sum(&xs);
    (xs, s)
})",
                {100000, 1}, [&](const Parts& p) {
                  EXPECT_SAME(p[0], randomInts(100000, 1, 20000));
                  EXPECT_EQ(p[1][0], std::accumulate(p[0].begin(), p[0].end(), 0.0));
                });
}

TEST(EphapaxStdlibGpu, ScanAcrossThreeLevels) {
  // 70000 elements: 274 blocks, whose sums take 2 blocks, whose sums take 1.
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<I32>!, GPUBuffer<I32>!) {
    (fill_random(70000, 2, 100), scan(fill_random(70000, 2, 100)))
})",
                {70000, 70000}, [&](const Parts& p) {
                  EXPECT_SAME(p[0], randomInts(70000, 2, 100));
                  std::vector<double> want(p[0].size());
                  std::partial_sum(p[0].begin(), p[0].end(), want.begin());
                  EXPECT_SAME(p[1], want);
                });
}

TEST(EphapaxStdlibGpu, TransposeOfARaggedMatrix) {
  // 70 x 100: neither is a multiple of the 16 x 16 tile.
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<F32>!, GPUBuffer<F32>!) {
    let! a = fill_random_f32(7000, 3, 1000);
    let! t = transpose(&a, 70, 100);
    (a, t)
})",
                {7000, 7000}, [&](const Parts& p) {
                  const int rows = 70, cols = 100;
                  std::vector<double> want(rows * cols);
                  for (int r = 0; r < rows; ++r)
                    for (int c = 0; c < cols; ++c) want[c * rows + r] = p[0][r * cols + c];
                  EXPECT_SAME(p[1], want);
                });
}

TEST(EphapaxStdlibGpu, GemmAgainstTheNaiveProduct) {
  // 72 x 40 times 40 x 88: sizes that are not multiples of the tile; whole
  // numbers below 16, so every product and sum is exact in F32.
  const int m = 72, k = 40, n = 88;
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<F32>!, GPUBuffer<F32>!, GPUBuffer<F32>!) {
    let! a = fill_random_f32(72 * 40, 4, 16);
    let! b = fill_random_f32(40 * 88, 5, 16);
    let! c = gemm(&a, &b, 72, 40, 88);
    (a, b, c)
})",
                {m * k, k * n, m * n}, [&](const Parts& p) {
                  std::vector<double> want(m * n);
                  for (int r = 0; r < m; ++r)
                    for (int c = 0; c < n; ++c)
                      for (int i = 0; i < k; ++i) want[r * n + c] += p[0][r * k + i] * p[1][i * n + c];
                  EXPECT_SAME(p[2], want);
                });
}

TEST(EphapaxStdlibGpu, BitonicSortAnyLength) {
  // 8192 is a power of two; 3000 is padded to 4096 (and has many duplicates).
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<I32>!, GPUBuffer<I32>!, GPUBuffer<I32>!, GPUBuffer<I32>!) {
    (fill_random(8192, 6, 100000), sort(fill_random(8192, 6, 100000)),
     fill_random(3000, 12, 50), sort(fill_random(3000, 12, 50)))
})",
                {8192, 8192, 3000, 3000}, [&](const Parts& p) {
                  for (size_t i : {0, 2}) {
                    std::vector<double> want = p[i];
                    std::sort(want.begin(), want.end());
                    EXPECT_SAME(p[i + 1], want);
                  }
                });
}

// The 3x3 convolution with clamped borders, computed here.
std::vector<double> convolve(const std::vector<double>& img, const std::vector<double>& w, int width, int height) {
  std::vector<double> out(img.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double acc = 0;
      for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) {
          int sx = std::clamp(x + dx - 1, 0, width - 1), sy = std::clamp(y + dy - 1, 0, height - 1);
          acc += w[dy * 3 + dx] * img[sy * width + sx];
        }
      out[y * width + x] = acc;
    }
  return out;
}

TEST(EphapaxStdlibGpu, ConvolutionAndBlurClampAtTheBorders) {
  // A 100 x 70 image of whole numbers times 16, so the blur's sixteenths are exact.
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<F32>!, GPUBuffer<F32>!, GPUBuffer<F32>!, GPUBuffer<F32>!) {
    let! img = map(fn(x: F32) -> x * f32(16), fill_random_f32(7000, 7, 256));
    let! weights = fill_random_f32(9, 8, 5);
    let! conv = convolve3x3(&img, &weights, 100, 70);
    let! blur = blur3x3(&img, 100, 70);
    (img, weights, conv, blur)
})",
                {7000, 9, 7000, 7000}, [&](const Parts& p) {
                  EXPECT_SAME(p[2], convolve(p[0], p[1], 100, 70));
                  std::vector<double> binomial = {1, 2, 1, 2, 4, 2, 1, 2, 1};
                  for (double& b : binomial) b /= 16;
                  EXPECT_SAME(p[3], convolve(p[0], binomial, 100, 70));
                });
}

TEST(EphapaxStdlibGpu, HistogramWithAtomics) {
  // Values in [0, 40) into 37 bins: the last bin also counts 37, 38 and 39.
  onEveryTarget(R"(import gpu
fn main() -> (GPUBuffer<I32>!, GPUBuffer<I32>!) {
    let! values = fill_random(60000, 10, 40);
    let! counts = histogram(&values, 37);
    (values, counts)
})",
                {60000, 37}, [&](const Parts& p) {
                  std::vector<double> want(37);
                  for (double v : p[0]) want[std::min(static_cast<int>(v), 36)]++;
                  EXPECT_SAME(p[1], want);
                });
}

}  // namespace
