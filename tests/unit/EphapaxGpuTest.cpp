// The lowering of the Ephapax GPU extension (docs/ephapax-gpu.md): the shape
// of the IR (kernel parameters read or write, hidden grid parameters and the
// bounds guard, inline kernels, the region's wait, the free affine mode
// inserts) and differential runs of larger programs on interp, cpu and vulkan
// (where this machine has a device) against results computed here.
#include <gtest/gtest.h>

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "tests/unit/EphapaxTestUtil.h"

using namespace eph;
using namespace eph::ephapax;
using namespace eph::ephapax::test;

namespace {

struct Lowered {
  ir::Context ctx;
  std::unique_ptr<ir::Module> m;
  std::string errors;
};

std::unique_ptr<Lowered> lower(const std::string& src, bool affine = false) {
  auto out = std::make_unique<Lowered>();
  CompileOptions opts;
  opts.check.affineMode = affine;
  DiagSink diags;
  out->m = compile(out->ctx, src, "t.eph", diags, opts);
  out->errors = renderAll(diags, "t.eph", src);
  return out;
}

std::string text(const ir::Function& f) {
  std::string all = ir::print(*f.module());
  size_t at = all.find("@" + f.name() + "(");
  size_t start = all.rfind('\n', at);
  size_t end = all.find("\n}\n", at);
  return all.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

// The ops of a function, by name, in order (nested regions included).
std::vector<std::string> opNames(ir::Function& f) {
  std::vector<std::string> out;
  f.walk([&](ir::Op* op) { out.push_back(std::string(op->name())); });
  return out;
}

TEST(EphapaxGpu, KernelParametersAreReadOrWriteWithHiddenGrid) {
  auto l = lower(R"(
@gpu
fn scale(x: GPUBuffer<F32>, y: GPUBuffer<F32>, a: F32) {
    y[gid] = a * x[gid];
}
fn main() -> I32 {
    let! x = h2d([1.0, 2.0, 3.0]);
    let! y = allocate_gpu<F32>(3);
    dispatch scale(&x, &mut y, 2.0) over 3;
    free_gpu(x);
    let ys = d2h(y);
    i32(ys[2])
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  ir::Function* k = l->m->lookup("scale");
  ASSERT_TRUE(k && k->isKernel());
  ASSERT_EQ(k->paramTypes().size(), 6u);  // x, y, a, grid.x, grid.y, grid.z
  EXPECT_EQ(k->paramTypes()[0]->str(), "buffer<f32, device, read>");
  EXPECT_EQ(k->paramTypes()[1]->str(), "buffer<f32, device, write>");
  EXPECT_EQ(k->paramTypes()[2]->str(), "f32");
  EXPECT_EQ(k->paramTypes()[3]->str(), "u32");
  ASSERT_TRUE(k->attrs.count("hidden_params"));
  EXPECT_EQ(k->attrs.at("hidden_params").i, 3);
  EXPECT_EQ(k->param(3)->name(), "grid.x");
  EXPECT_EQ((std::array<unsigned, 3>{64, 1, 1}), k->workgroupSize);
  // The guard: the body's store is inside an `if` on global_id < grid.
  std::string body = text(*k);
  EXPECT_NE(body.find("lt %0, %grid.x"), std::string::npos) << body;
  // The dispatch: ceil(3 / 64) workgroups, the grid appended.
  ir::Function* main = l->m->lookup("main");
  auto names = opNames(*main);
  EXPECT_EQ(std::count(names.begin(), names.end(), "dispatch"), 1);
  EXPECT_NE(text(*main).find("{kernel = @scale}"), std::string::npos);
}

TEST(EphapaxGpu, BarrierKernelsAreNotGuardedAndInlineKernelsAreNamed) {
  auto l = lower(R"(
@gpu
@workgroup_size(32, 1, 1)
fn sums(b: GPUBuffer<I32>, out: GPUBuffer<I32>) {
    workgroup t: [I32; 32];
    t[lid] = b[gid];
    barrier();
    if lid == 0 { out[group] = t[0] + t[31]; }
}
fn main() -> I32 {
    let! b = allocate_gpu<I32>(64);
    dispatch over 64 { b[gid] = gid; }
    let! out = allocate_gpu<I32>(2);
    dispatch sums(&b, &mut out) over 64;
    free_gpu(b);
    let xs = d2h(out);
    xs[0] + xs[1]
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  ir::Function* k = l->m->lookup("sums");
  ASSERT_TRUE(k);
  EXPECT_FALSE(k->attrs.count("hidden_params"));
  EXPECT_EQ(k->paramTypes().size(), 2u);
  EXPECT_EQ(k->workgroupSize[0], 32u);
  auto names = opNames(*k);
  EXPECT_EQ(names.front(), "workgroup.alloc");
  EXPECT_EQ(std::count(names.begin(), names.end(), "barrier"), 1);
  ir::Function* inl = l->m->lookup("main.kernel0");
  ASSERT_TRUE(inl && inl->isKernel()) << ir::print(*l->m);
  EXPECT_EQ(inl->paramTypes()[0]->str(), "buffer<i32, device, write>");
  EXPECT_EQ(inl->param(0)->name(), "b");
}

TEST(EphapaxGpu, RegionEndWaitsAndAffineModeFreesDroppedBuffers) {
  const std::string src = R"(
fn main() -> I32 {
    region r {
        let! unused = allocate_gpu<I32>(16);
        let! b = allocate_gpu<I32>(4);
        dispatch over 4 { b[gid] = 1; }
        let xs = d2h(b);
        xs[3]
    }
}
)";
  // Linear mode: `unused` is a leak (E001).
  auto linear = lower(src);
  EXPECT_FALSE(linear->m);
  EXPECT_NE(linear->errors.find("E001"), std::string::npos) << linear->errors;
  // Affine mode: freed at the end of its scope, before the region's wait.
  auto affine = lower(src, true);
  ASSERT_TRUE(affine->m) << affine->errors;
  ir::Function* main = affine->m->lookup("main");
  std::string t = text(*main);
  size_t alloc16 = t.find("alloc %");
  size_t freeUnused = t.find("free %unused");
  size_t wait = t.find("wait");
  ASSERT_NE(alloc16, std::string::npos) << t;
  ASSERT_NE(freeUnused, std::string::npos) << t;
  ASSERT_NE(wait, std::string::npos) << t;
  EXPECT_LT(freeUnused, wait) << t;
  auto names = opNames(*main);
  EXPECT_EQ(std::count(names.begin(), names.end(), "wait"), 1);
}

TEST(EphapaxGpu, StatementsAreSsaWithCarriedVars) {
  auto l = lower(R"(
fn main() -> I32 {
    var x = 1;
    var y = 0;
    for i in 0..10 { x = x * 2; }
    while y < 5 { y += 1; }
    if x > 5 { y = y + 100; }
    x + y
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  std::string t = text(*l->m->lookup("main"));
  EXPECT_NE(t.find("= for "), std::string::npos) << t;
  EXPECT_NE(t.find("= while "), std::string::npos) << t;
  EXPECT_NE(t.find("= if "), std::string::npos) << t;
  auto dev = runtime::openDevice("interp");
  ASSERT_TRUE(dev);
  interp::Interpreter in(*l->m);
  auto r = runtime::runHost(**dev, in, *l->m->lookup("main"), {});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(interp::format((*r)[0], &in.memory()), "1129");  // 1024 + 5 + 100
}

// ---- differential runs ----------------------------------------------------------

void runEverywhere(const std::string& src, const std::string& want, bool affine = false) {
  Expectation e;
  e.kind = "result";
  e.value = want;
  e.affineMode = affine;
  EXPECT_EQ(checkProgram("t.eph", src, e, runTargets()), "") << src;
}

TEST(EphapaxGpu, AddOneOverManyElementsAgreesOnEveryTarget) {
  for (int64_t n : {1, 63, 65, 4099}) {
    SCOPED_TRACE(n);
    std::string src = R"(
@gpu
fn add_one(buffer: GPUBuffer<I32>) {
    buffer[gid] = buffer[gid] + 1;
}
fn main() -> I32 {
    let n = )" + std::to_string(n) + R"(;
    let! b = allocate_gpu<I32>(n);
    dispatch over n { b[gid] = gid * 3; }
    dispatch add_one(&mut b) over n;
    let xs = d2h(b);
    var sum = 0;
    for i in 0..len(xs) { sum += xs[i]; }
    sum
}
)";
    runEverywhere(src, std::to_string(3 * n * (n - 1) / 2 + n));
  }
}

TEST(EphapaxGpu, TwoDimensionalGridAgreesOnEveryTarget) {
  // out[y * w + x] = x + 1000 * y over a 37 x 19 grid with 8 x 8 workgroups.
  const int w = 37, h = 19;
  int64_t want = 0;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) want += (x + 1000 * y) % 7;
  std::string src = R"(
@gpu
@workgroup_size(8, 8, 1)
fn fill(out: GPUBuffer<I32>, w: I32) {
    let x = global_id(0);
    let y = global_id(1);
    out[y * w + x] = (x + 1000 * y) % 7;
}
fn main() -> I32 {
    let w = )" + std::to_string(w) + R"(;
    let h = )" + std::to_string(h) + R"(;
    let! out = allocate_gpu<I32>(w * h);
    dispatch fill(&mut out, w) over (w, h);
    let xs = d2h(out);
    var sum = 0;
    for i in 0..w * h { sum += xs[i]; }
    sum
}
)";
  runEverywhere(src, std::to_string(want));
}

TEST(EphapaxGpu, ReductionAndHistogramAgreeOnEveryTarget) {
  const int n = 3001;
  std::string reduce = R"(
@gpu
fn partial_sums(input: GPUBuffer<I32>, partial: GPUBuffer<I32>) {
    workgroup tile: [I32; 64];
    var x = 0;
    if gid < len(input) { x = input[gid]; }
    tile[lid] = x;
    barrier();
    var stride = 32;
    while stride > 0 {
        if lid < stride { tile[lid] = tile[lid] + tile[lid + stride]; }
        barrier();
        stride = stride / 2;
    }
    if lid == 0 { partial[group] = tile[0]; }
}
fn main() -> I32 {
    let n = )" + std::to_string(n) + R"(;
    let groups = (n + 63) / 64;
    let! input = allocate_gpu<I32>(n);
    dispatch over n { input[gid] = gid % 100; }
    let! partial = allocate_gpu<I32>(groups);
    dispatch partial_sums(&input, &mut partial) over n;
    free_gpu(input);
    let ps = d2h(partial);
    var total = 0;
    for i in 0..len(ps) { total += ps[i]; }
    total
}
)";
  int64_t want = 0;
  for (int i = 0; i < n; ++i) want += i % 100;
  runEverywhere(reduce, std::to_string(want));

  std::string hist = R"(
@gpu
fn histogram(values: GPUBuffer<I32>, bins: GPUBuffer<I32>) {
    let old = atomic_add(bins, values[gid], 1);
}
fn main() -> I32 {
    let n = )" + std::to_string(n) + R"(;
    let! values = allocate_gpu<I32>(n);
    dispatch over n { values[gid] = (gid * 7) % 4; }
    let! bins = h2d([0, 0, 0, 0]);
    dispatch histogram(&values, &mut bins) over n;
    free_gpu(values);
    let hs = d2h(bins);
    hs[0] + 10 * hs[1] + 100 * hs[2] + 1000 * hs[3]
}
)";
  int64_t bins[4] = {0, 0, 0, 0};
  for (int i = 0; i < n; ++i) ++bins[(i * 7) % 4];
  runEverywhere(hist, std::to_string(bins[0] + 10 * bins[1] + 100 * bins[2] + 1000 * bins[3]));
}

TEST(EphapaxGpu, DeviceFunctionsAndVectorsAgreeOnEveryTarget) {
  // A device function called from a kernel and from host code (two copies).
  auto l = lower(R"(
fn sq(x: F32) -> F32 { x * x }
@gpu
fn k(out: GPUBuffer<F32>) {
    let v = vec2(sq(f32(gid)), 1.0);
    out[gid] = length(v * 2.0) + sq(0.5);
}
fn main() -> I32 {
    let! out = allocate_gpu<F32>(4);
    dispatch k(&mut out) over 4;
    let xs = d2h(out);
    i32(xs[0] + sq(2.0))
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  ir::Function* host = l->m->lookup("sq");
  ir::Function* dev = l->m->lookup("sq.device");
  ASSERT_TRUE(host && dev);
  EXPECT_TRUE(host->isHost());
  EXPECT_EQ(dev->kind(), ir::FunctionKind::Device);
  runEverywhere(R"(
fn sq(x: F32) -> F32 { x * x }
@gpu
fn k(out: GPUBuffer<F32>) {
    let v = vec2(sq(f32(gid)), 1.0);
    out[gid] = length(v * 2.0) + sq(0.5);
}
fn main() -> I32 {
    let! out = allocate_gpu<F32>(4);
    dispatch k(&mut out) over 4;
    let xs = d2h(out);
    i32(xs[0] * 4.0 + sq(2.0))
}
)",
                "13");  // xs[0] = length((0, 2)) + 0.25 = 2.25; 9 + 4
}


// ---- function values and generics ---------------------------------------------------

const char* kMapProgram = R"(
@gpu
fn map<T, U>(f: fn(T) -> U, input: GPUBuffer<T>!) -> GPUBuffer<U>! {
    let n = len(&input);
    let! out = allocate_gpu<U>(n);
    dispatch over n { out[gid] = f(input[gid]); }
    free_gpu(input);
    out
}
fn double(x: I32) -> F32 { f32(x) * 2.0 }
fn main() -> I32 {
    let! ys = map(double, h2d([1, 2, 3]));
    let! zs = map(fn(x: F32) -> x + 1.0, ys);
    let out = d2h(zs);
    i32(out[0] + out[1] * 10.0 + out[2] * 100.0)
}
)";

TEST(EphapaxGpu, GenericLauncherTakesFunctionValuesAsFuncRefs) {
  // Before the monomorphize pass: `map` once, generic, with a function
  // parameter; its inline kernel calls the function value.
  ir::Context ctx;
  DiagSink diags;
  CompileOptions opts;
  opts.monomorphize = false;
  auto m = compile(ctx, kMapProgram, "t.eph", diags, opts);
  ASSERT_TRUE(m) << renderAll(diags, "t.eph", kMapProgram);
  ir::Function* map = m->lookup("map");
  ASSERT_TRUE(map);
  EXPECT_EQ(map->paramTypes()[0]->str(), "fn(!T) -> (!U)");
  EXPECT_EQ(map->paramTypes()[1]->str(), "buffer<!T, device, linear>");
  ir::Function* k = m->lookup("map.kernel0");
  ASSERT_TRUE(k);
  EXPECT_NE(text(*k).find("call.indirect %f"), std::string::npos) << text(*k);
  std::string mainText = text(*m->lookup("main"));
  EXPECT_NE(mainText.find("func.ref {callee = @double} : fn(i32) -> (f32)"), std::string::npos) << mainText;
  EXPECT_NE(mainText.find("func.ref {callee = @main.lambda0} : fn(f32) -> (f32)"), std::string::npos) << mainText;
  EXPECT_NE(mainText.find("{callee = @map} : buffer<f32, device, linear>"), std::string::npos) << mainText;
  ASSERT_TRUE(m->lookup("double") && m->lookup("main.lambda0"));
  EXPECT_EQ(m->lookup("double")->kind(), ir::FunctionKind::Device);
  EXPECT_EQ(m->lookup("main.lambda0")->kind(), ir::FunctionKind::Device);
  for (auto& f : m->functions()) EXPECT_EQ(f->name().find("apply<"), std::string::npos) << f->name();

  // After it: one instance per function argument, no function values left.
  auto l = lower(kMapProgram);
  ASSERT_TRUE(l->m) << l->errors;
  EXPECT_TRUE(l->m->lookup("map<i32, f32, @double>"));
  EXPECT_TRUE(l->m->lookup("map<f32, f32, @main.lambda0>"));
  EXPECT_TRUE(l->m->lookup("map.kernel0<f32, i32, @double>"));
  EXPECT_FALSE(l->m->lookup("map"));
  runEverywhere(kMapProgram, "753");  // zs = [2 + 1, 4 + 1, 6 + 1]
}

TEST(EphapaxGpu, FunctionValuesReachKernelsAndDeviceFunctions) {
  // A named kernel and a device function with function parameters, and a
  // generic launcher whose result type comes from its function argument.
  runEverywhere(R"(
fn twice(x: I32) -> I32 { x * 2 }
fn inc(x: I32) -> I32 { x + 1 }
fn apply(f: fn(I32) -> I32, x: I32) -> I32 { f(x) }
@gpu
fn k(f: fn(I32) -> I32, out: GPUBuffer<I32>) {
    out[gid] = apply(f, gid) + f(1);
}
@gpu
fn run_inline<T>(f: fn(I32) -> T, n: I32) -> GPUBuffer<T>! {
    let! out = allocate_gpu<T>(n);
    dispatch over n { out[gid] = f(apply(twice, gid)); }
    out
}
fn main() -> I32 {
    let! a = run_inline(inc, 4);
    let! b = run_inline(fn(x: I32) -> x + 10, 4);
    let! c = allocate_gpu<I32>(4);
    dispatch k(inc, &mut c) over 4;
    let xs = d2h(a);
    let ys = d2h(b);
    let zs = d2h(c);
    xs[3] * 10000 + ys[3] * 100 + zs[3]
}
)",
                "71606");  // inc(twice(3)) = 7; twice(3) + 10 = 16; inc(3) + inc(1) = 6
}

const char* kHostGenerics = R"(
data Option(a) = None | Some(a)
fn id<T>(x: T): T = x
fn pair<A, B>(a: A, b: B): (A, B) = (a, b)
fn or_else<T>(o: Option(T), d: T): T = match o of | Some(v) => v | None => d end
fn both<T>(x: T, y: T): (T, T) = pair(id(x), y)
fn count<T>(xs: [T]): I32 = len(xs)
fn main(): I64 {
  let p = both(3, 4);
  let q = pair(2.5, true);
  let r = or_else(Some(40), 0) + or_else(None, 2);
  let s: I64 = id(7000000000);
  let n = count([1, 2, 3]);
  let w = if snd(q) { 100 } else { 0 };
  s + i64(r + fst(p) + snd(p) + n + w)
}
)";

TEST(EphapaxGpu, PlainGenericHostFunctionsAreInstantiatedByTheIrPass) {
  // Before the pass: id, pair, or_else and both once each, with IR type
  // variables; `count` takes a list (lowering frees lists per type), so the
  // frontend makes its instance.
  ir::Context ctx;
  DiagSink diags;
  CompileOptions opts;
  opts.monomorphize = false;
  auto m = compile(ctx, kHostGenerics, "t.eph", diags, opts);
  ASSERT_TRUE(m) << renderAll(diags, "t.eph", kHostGenerics);
  ASSERT_TRUE(m->lookup("or_else") && m->lookup("both") && m->lookup("id") && m->lookup("pair"));
  EXPECT_EQ(m->lookup("or_else")->paramTypes()[0]->str(), "sum<struct<>, struct<!T>>");
  EXPECT_EQ(m->lookup("pair")->resultTypes()[0]->str(), "struct<!A, !B>");
  EXPECT_TRUE(m->lookup("count<I32>"));
  EXPECT_FALSE(m->lookup("count"));
  // After it: instances named by IR types, deduplicated, no generic left.
  auto l = lower(kHostGenerics);
  ASSERT_TRUE(l->m) << l->errors;
  for (const char* name : {"id<i32>", "id<i64>", "pair<i32, i32>", "pair<f64, bool>", "or_else<i32>", "both<i32>"})
    EXPECT_TRUE(l->m->lookup(name)) << name;
  for (const char* name : {"id", "pair", "or_else", "both"}) EXPECT_FALSE(l->m->lookup(name)) << name;
  runEverywhere(kHostGenerics, "7000000152");
}

TEST(EphapaxGpu, GenericHostFunctionsAtOwningTypesAreFrontendInstances) {
  // A generic function called with a list, or one that takes a function
  // (closures are built per type), is instantiated by the frontend; the same
  // function at a plain type still goes through the IR pass.
  const char* program = R"(
fn keep<T>(x: T, y: T): T = x
fn size<T>(xs: [T]): I32 = len(xs) + 0
fn apply<T>(f: fn(T) -> T, x: T): T = f(x)
fn main(): I32 {
  let a = keep(1, 2);
  let n = size([1, 2, 3]) + size([true]);
  let b = apply(fn(v: I32) -> v + 1, 10);
  a + n * 100 + b
}
)";
  auto l = lower(program);
  ASSERT_TRUE(l->m) << l->errors;
  for (const char* name : {"keep<i32>", "size<I32>", "size<Bool>", "apply<I32>"})
    EXPECT_TRUE(l->m->lookup(name)) << name;
  runEverywhere(program, "412");
}

TEST(EphapaxGpu, GenericAndUntypedKernelsHaveOneInstancePerElementType) {
  const std::string src = R"(
@gpu
fn shift<T>(src: GPUBuffer<T>, dst: GPUBuffer<T>, n: I32) {
    dst[gid] = src[(gid + 1) % n];
}
@gpu
fn copy_into(src, dst) { dst[gid] = src[gid]; }
fn main() -> I32 {
    let! a = h2d([1, 2, 3]);
    let! b = allocate_gpu<I32>(3);
    dispatch shift(&a, &mut b, 3) over 3;
    let! fa = h2d([0.5, 1.5, 2.5]);
    let! fb = allocate_gpu<F32>(3);
    dispatch copy_into(&fa, &mut fb) over 3;
    let! fc = allocate_gpu<F32>(3);
    dispatch shift(&fb, &mut fc, 3) over 3;
    free_gpu(a);
    free_gpu(fa);
    free_gpu(fb);
    let xs = d2h(b);
    let fs = d2h(fc);
    xs[0] * 100 + i32(fs[2] * 10.0)
}
)";
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  ASSERT_TRUE(l->m->lookup("shift<i32>") && l->m->lookup("shift<f32>") && l->m->lookup("copy_into<f32>"));
  EXPECT_EQ(l->m->lookup("shift<f32>")->paramTypes()[0]->str(), "buffer<f32, device, read>");
  EXPECT_EQ(l->m->lookup("shift<f32>")->paramTypes()[1]->str(), "buffer<f32, device, write>");
  EXPECT_FALSE(l->m->lookup("shift"));
  runEverywhere(src, "205");  // b = [2, 3, 1]; fc[2] = fb[0] = 0.5
}

TEST(EphapaxGpu, LauncherWithoutTypeParametersIsMadePerFunctionArgument) {
  const std::string src = R"(
fn inc(x: I32) -> I32 { x + 1 }
fn neg(x: I32) -> I32 { 0 - x }
@gpu
fn apply_all(f: fn(I32) -> I32, n: I32) -> GPUBuffer<I32>! {
    let! out = allocate_gpu<I32>(n);
    dispatch over n { out[gid] = f(gid); }
    out
}
fn main() -> I32 {
    let xs = d2h(apply_all(inc, 4));
    let ys = d2h(apply_all(neg, 4));
    let zs = d2h(apply_all(inc, 2));
    xs[3] * 100 + ys[3] + zs[1]
}
)";
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  ir::Function* a = l->m->lookup("apply_all<@inc>");
  ASSERT_TRUE(a && l->m->lookup("apply_all<@neg>"));
  EXPECT_FALSE(l->m->lookup("apply_all"));
  EXPECT_EQ(a->paramTypes().size(), 1u);  // n only
  runEverywhere(src, "399");  // 4 * 100 - 3 + 2
}

TEST(EphapaxGpu, LaunchersPassTheirFunctionParameterOn) {
  // tests/ephapax/run/gpu_launcher_passes_function.eph: launchers give their
  // function parameter to a kernel dispatch and to other launchers.
  std::string path = std::string(EPH_SOURCE_DIR) + "/tests/ephapax/run/gpu_launcher_passes_function.eph";
  std::string src = readFile(path);
  ASSERT_FALSE(src.empty()) << path;
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  for (const char* name : {"fill2<@inc>", "fill<@inc>", "fill<@neg>", "gfill<f32, @main.lambda0>",
                           "gfill2<f64, @inc>", "k<@inc>", "k<@neg>", "kg<f32, @main.lambda0>"})
    EXPECT_TRUE(l->m->lookup(name)) << name;
  for (const char* name : {"fill", "fill2", "gfill", "gfill2", "k", "kg"}) EXPECT_FALSE(l->m->lookup(name)) << name;
  // Calls of the function are direct in the kernel instance.
  std::string all = ir::print(*l->m);
  size_t at = all.find("kernel @\"k<@inc>\"(");
  ASSERT_NE(at, std::string::npos) << all;
  std::string k = all.substr(at, all.find("\n}\n", at) - at);
  EXPECT_NE(k.find("{callee = @inc}"), std::string::npos) << k;
  EXPECT_EQ(k.find("call.indirect"), std::string::npos) << k;
  // xs = inc(i), ys = -i, zs = i * 0.5, ws = inc(i), at i = 3, 3, 3, 2.
  int want = (3 + 1) * 100 + (0 - 3) + static_cast<int>(3 * 0.5f * 10.0f) + (2 + 1) * 1000;
  runEverywhere(src, std::to_string(want));
}

// ---- buffer.len of device buffers in host code ---------------------------------------

TEST(EphapaxGpu, HostLengthOfADeviceBufferAsksTheDevice) {
  // `len(&b)` in host code is a plain buffer.len (no helper kernel), even of
  // a buffer the function did not allocate.
  const std::string src = R"(
@gpu
fn count(b: &GPUBuffer<I32>!) -> I32 { len(b) }
fn main() -> I32 {
    let! b = allocate_gpu<I32>(37);
    let n = count(&b) + len(&b);
    free_gpu(b);
    n
}
)";
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  for (auto& f : l->m->functions()) EXPECT_TRUE(f->isHost()) << f->name();
  EXPECT_NE(text(*l->m->lookup("count")).find("buffer.len %b"), std::string::npos) << text(*l->m->lookup("count"));
  for (const std::string& target : runTargets()) {
    SCOPED_TRACE(target);
    for (bool checks : {false, true}) {
      auto dev = runtime::openDevice(target);
      ASSERT_TRUE(dev);
      interp::Interpreter in(*l->m);
      runtime::RunOptions o;
      o.checkBuffers = checks;
      auto r = runtime::runHost(**dev, in, *l->m->lookup("main"), {}, o);
      ASSERT_TRUE(r) << r.error().str();
      EXPECT_EQ(interp::format((*r)[0], &in.memory()), "74");
    }
  }
}

TEST(EphapaxGpu, HostLengthOfAFreedDeviceBufferIsAnError) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, R"(
host @main() -> i32 {
  %n = const {value = 5} : i32
  %b = alloc %n : buffer<i32, device, linear>
  %m = buffer.len %b : i32
  free %b
  %l = buffer.len %b : i32
  %s = add %m, %l : i32
  return %s
}
)", "t.eir");
  ASSERT_TRUE(m) << m.error().str();
  auto run = [&](bool checks) {
    auto dev = runtime::openDevice("interp");
    interp::Interpreter in(**m);
    runtime::RunOptions o;
    o.checkBuffers = checks;
    auto r = runtime::runHost(**dev, in, *(*m)->lookup("main"), {}, o);
    return r ? std::string("ok") : r.error().str();
  };
  std::string plain = run(false), checked = run(true);
  EXPECT_NE(plain.find("t.eir:7:"), std::string::npos) << plain;
  EXPECT_NE(plain.find("do not know its length"), std::string::npos) << plain;
  EXPECT_NE(checked.find("t.eir:7:"), std::string::npos) << checked;
  EXPECT_NE(checked.find("use after free"), std::string::npos) << checked;
  EXPECT_NE(checked.find("buffer.len"), std::string::npos) << checked;
}


// ---- several devices: allocate_gpu_on, to_device ---------------------------------------

namespace devices {

// Runs @main of `m` on the devices `list` names (runtime::openDevices); its
// result as text, or "error: " and the error.
std::string runOn(const ir::Module& m, const std::string& list) {
  auto opened = runtime::openDevices(list);
  if (!opened) return "open error: " + opened.error().message;
  std::vector<runtime::Device*> set;
  for (auto& d : *opened) {
    if (Status st = d->prepare(m); !st) return "prepare error: " + st.error().str();
    set.push_back(d.get());
  }
  interp::Interpreter in(m);
  auto r = runtime::runHost(set, in, *m.lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  return r->size() == 1 ? interp::format((*r)[0], &in.memory()) : "results: " + std::to_string(r->size());
}

// Pairs of devices: interp twice, and interp or vulkan with cpu where this
// build has them.
std::vector<std::string> pairs() {
  std::vector<std::string> out = {"interp,interp"};
  auto targets = runTargets();
  bool cpu = std::find(targets.begin(), targets.end(), "cpu") != targets.end();
  bool vulkan = std::find(targets.begin(), targets.end(), "vulkan") != targets.end();
  if (cpu) out.push_back("interp,cpu");
  if (cpu) out.push_back("cpu,interp");
  if (vulkan) out.push_back("vulkan,interp");
  if (vulkan && cpu) out.push_back("vulkan,cpu");
  return out;
}

}  // namespace devices

TEST(EphapaxGpu, ToDeviceMovesABufferBetweenTwoDevices) {
  // tests/ephapax/run/gpu_devices.eph: made on device 0, moved to device 1
  // and back, a dispatch on each: sum of 2 * (3 * i + 1), i in 0..100.
  std::string path = std::string(EPH_SOURCE_DIR) + "/tests/ephapax/run/gpu_devices.eph";
  std::string src = readFile(path);
  ASSERT_FALSE(src.empty()) << path;
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  std::string main = text(*l->m->lookup("main"));
  EXPECT_NE(main.find("{device = 0} : buffer<i32, device, linear>"), std::string::npos) << main;
  EXPECT_NE(main.find("{device = 1} : buffer<i32, device, linear>"), std::string::npos) << main;
  auto names = opNames(*l->m->lookup("main"));
  EXPECT_EQ(std::count(names.begin(), names.end(), "copy"), 2);
  EXPECT_EQ(std::count(names.begin(), names.end(), "dispatch"), 3);
  for (const std::string& list : devices::pairs()) {
    SCOPED_TRACE(list);
    EXPECT_EQ(devices::runOn(*l->m, list), "29900");
  }
  // With one device, device 1 is an error at the first `to_device` (15:14).
  for (const std::string& target : runTargets()) {
    SCOPED_TRACE(target);
    EXPECT_EQ(devices::runOn(*l->m, target),
              "error: t.eph:15:14: error: the buffer is allocated on device 1 but the program runs on 1 device (device 0)");
  }
}

TEST(EphapaxGpu, RegionAllocationOnADevice) {
  // allocate_gpu_on@r(1, n): a buffer of region r on device 1, filled there
  // and moved to device 0 inside the region (to_device consumes it).
  const char* src = R"(
fn main() -> I32 {
    region r {
        let! b = allocate_gpu_on@r<I32>(1, 8);
        dispatch over 8 { b[gid] = gid * gid; }
        let xs = d2h(to_device(0, b));
        var s = 0;
        for i in 0..8 { s += xs[i]; }
        s
    }
}
)";
  auto l = lower(src);
  ASSERT_TRUE(l->m) << l->errors;
  std::string main = text(*l->m->lookup("main"));
  EXPECT_NE(main.find("alloc %0 {device = 1} : buffer<i32, device, linear>"), std::string::npos) << main;
  int want = 0;
  for (int i = 0; i < 8; ++i) want += i * i;
  for (const std::string& list : devices::pairs()) {
    SCOPED_TRACE(list);
    EXPECT_EQ(devices::runOn(*l->m, list), std::to_string(want));
  }
  // In affine mode a region buffer left unconsumed is freed at the region's
  // end, as for allocate_gpu@r: one `free` after the region's dispatch.
  const char* dropped = R"(
fn main() -> I32 {
    region r {
        let! b = allocate_gpu_on@r<I32>(0, 4);
        dispatch over 4 { b[gid] = gid; }
        7
    }
}
)";
  auto a = lower(dropped, /*affine=*/true);
  ASSERT_TRUE(a->m) << a->errors;
  auto names = opNames(*a->m->lookup("main"));
  EXPECT_EQ(std::count(names.begin(), names.end(), "free"), 1);
  runEverywhere(dropped, "7", /*affine=*/true);
}

TEST(EphapaxGpu, DeviceZeroRunsOnOneDevice) {
  // allocate_gpu_on(0, n) and to_device(0, b) need only device 0.
  auto l = lower(R"(
fn main() -> I32 {
    let! b: GPUBuffer<I32>! = allocate_gpu_on(0, 10);
    dispatch over 10 { b[gid] = gid + 1; }
    let! c = to_device(0, b);
    let xs = d2h(c);
    var sum = 0;
    for i in 0..len(xs) { sum += xs[i]; }
    sum
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  for (const std::string& target : runTargets()) {
    SCOPED_TRACE(target);
    EXPECT_EQ(devices::runOn(*l->m, target), "55");
    EXPECT_EQ(devices::runOn(*l->m, target + "," + target), "55");
  }
  interp::Interpreter in(*l->m);  // the plain interpreter ignores `device`
  auto r = in.call(*l->m->lookup("main"), {});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(interp::format((*r)[0], &in.memory()), "55");
}

TEST(EphapaxGpu, DeviceCountSaysHowManyDevicesTheRunHas) {
  // device_count() lowers to `device.count`; the program uses the second
  // device only when there is one: 1000 * count + sum of (i + 1), i < 10.
  auto l = lower(R"(
fn main() -> I32 {
    let n = device_count();
    let! b: GPUBuffer<I32>! = allocate_gpu_on(0, 10);
    dispatch over 10 { b[gid] = gid + 1; }
    let! c = if n > 1 { to_device(1, b) } else { b };
    let xs = d2h(c);
    var sum = 1000 * n;
    for i in 0..len(xs) { sum += xs[i]; }
    sum
}
)");
  ASSERT_TRUE(l->m) << l->errors;
  EXPECT_NE(text(*l->m->lookup("main")).find("device.count : i32"), std::string::npos);
  for (const std::string& target : runTargets()) {
    SCOPED_TRACE(target);
    EXPECT_EQ(devices::runOn(*l->m, target), "1055");
    EXPECT_EQ(devices::runOn(*l->m, target + "," + target), "2055");
    EXPECT_EQ(devices::runOn(*l->m, target + ",interp," + target), "3055");
  }
  interp::Interpreter in(*l->m);  // no device hooks: one device
  auto r = in.call(*l->m->lookup("main"), {});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_EQ(interp::format((*r)[0], &in.memory()), "1055");
  // Host code only.
  auto k = lower(R"(
@gpu
fn k(b: GPUBuffer<I32>) { b[gid] = device_count(); }
fn main() -> I32 = 0
)");
  EXPECT_FALSE(k->m);
  EXPECT_NE(k->errors.find("`device_count`"), std::string::npos) << k->errors;
}

TEST(EphapaxGpu, DeviceIndexIsAnIntegerLiteral) {
  auto l = lower(R"(
fn main() -> I32 {
    let k = 1;
    let! b: GPUBuffer<I32>! = allocate_gpu_on(k, 10);
    let! c = to_device(256, b);
    let! d = to_device(0, &c);
    0
}
)");
  EXPECT_FALSE(l->m);
  EXPECT_NE(l->errors.find("t.eph:4:47: error[E101]: `allocate_gpu_on` takes a device index 0..255"), std::string::npos)
      << l->errors;
  EXPECT_NE(l->errors.find("t.eph:5:24: error[E101]: `to_device` takes a device index 0..255"), std::string::npos)
      << l->errors;
  EXPECT_NE(l->errors.find("t.eph:6:27: error[E101]: `to_device` takes an owned GPU buffer"), std::string::npos)
      << l->errors;
}

}  // namespace
