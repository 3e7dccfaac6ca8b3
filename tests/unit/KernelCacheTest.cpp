// KernelCache (runtime/cpu/KernelCache.h): kernels are compiled when first
// dispatched and keyed by their content, so a module where one kernel (or a
// device function it calls) changed compiles only that kernel; the on-disk
// entries are found by a fresh cache on the same directory (a second process)
// and give the same results as the interpreter; a truncated or garbled entry
// is ignored and rebuilt; concurrent requests compile once; host code is
// cached the same way.
#ifdef EPH_HAVE_LLVM

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/InterpDevice.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cpu/HostAbi.h"
#include "runtime/cpu/KernelCache.h"

namespace eph::test {
namespace {

namespace fs = std::filesystem;

// Three kernels; @main dispatches @a and @b (whose bodies are `aBody` and
// the call of @scale, whose body is `scaleBody`) and never @unused.
std::string program(const std::string& aBody = "%v = mul %i, %i : u32",
                    const std::string& scaleBody = "%r = mul %x, %three : u32", unsigned groups = 2) {
  return R"(
device @scale(%x: u32) -> u32 {
  %three = const {value = 3} : u32
  )" + scaleBody + R"(
  return %r
}
kernel @a(%out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %i = global_id {dim = 0} : u32
  )" + aBody + R"(
  store %out, %i, %v
  return
}
kernel @b(%out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %i = global_id {dim = 0} : u32
  %old = load %out, %i : u32
  %v = call %old {callee = @scale} : u32
  store %out, %i, %v
  return
}
kernel @unused(%out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %i = global_id {dim = 0} : u32
  store %out, %i, %i
  return
}
host @main() -> (buffer<u32, host, linear>) {
  %n = const {value = )" + std::to_string(groups * 8) + R"(} : u32
  %two = const {value = )" + std::to_string(groups) + R"(} : u32
  %one = const {value = 1} : u32
  %d = alloc %n : buffer<u32, device, linear>
  dispatch %two, %one, %one, %d {kernel = @a}
  dispatch %two, %one, %one, %d {kernel = @b}
  %h = alloc %n : buffer<u32, host, linear>
  d2h %h, %d
  free %d
  return %h
}
)";
}

// @main's result on a CpuDevice using `cache` (tiered or not), or on the
// interpreter when `cache` is null.
std::string run(const std::string& text, runtime::KernelCache* cache, bool tiered = false) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "cache.eir");
  if (!m) return "parse error: " + m.error().str();
  if (Status s = ir::verify(**m); !s) return "verify error: " + s.error().str();
  std::unique_ptr<runtime::Device> dev;
  if (cache) {
    runtime::CpuOptions o;
    o.threads = 1;
    o.cache = cache;
    o.tiered = tiered;
    dev = std::make_unique<runtime::CpuDevice>(o);
  } else {
    dev = std::make_unique<runtime::InterpDevice>();
  }
  interp::Interpreter in(**m);
  auto r = runtime::runHost(*dev, in, *(*m)->lookup("main"), {});
  if (!r) return "error: " + r.error().str();
  std::string s;
  for (auto& v : *r) s += interp::format(v, &in.memory()) + "\n";
  return s;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("eph-kernel-cache-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    if (fs::exists(path))
      for (auto& e : fs::directory_iterator(path)) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
};

TEST(KernelCache, OnlyDispatchedKernelsCompileAndOnlyChangedOnesAgain) {
  runtime::KernelCache cache("");
  std::string want = run(program(), nullptr);
  EXPECT_EQ(run(program(), &cache), want);
  EXPECT_EQ(cache.stats().compiled, 2u);  // @a and @b; never @unused
  EXPECT_EQ(run(program(), &cache), want);
  EXPECT_EQ(cache.stats().compiled, 2u);

  // A changed @a: only @a compiles again.
  std::string a2 = program("%v = add %i, %i : u32");
  EXPECT_EQ(run(a2, &cache), run(a2, nullptr));
  EXPECT_EQ(cache.stats().compiled, 3u);
  // A changed device function: only @b, which calls it.
  std::string s2 = program("%v = mul %i, %i : u32", "%r = add %x, %three : u32");
  EXPECT_EQ(run(s2, &cache), run(s2, nullptr));
  EXPECT_EQ(cache.stats().compiled, 4u);
  EXPECT_GE(cache.stats().fromMemory, 4u);
}

TEST(KernelCache, KeysCoverTheKernelItsCalleesAndTheOptions) {
  ir::Context ctx;
  auto m1 = ir::parseModule(ctx, program(), "1.eir");
  auto m2 = ir::parseModule(ctx, program("%v = mul %i, %i : u32", "%r = add %x, %three : u32"), "2.eir");
  ASSERT_TRUE(m1 && m2);
  llvmtarget::LowerOptions o;
  using runtime::KernelCache;
  EXPECT_EQ(KernelCache::kernelKey(*(*m1)->lookup("a"), o), KernelCache::kernelKey(*(*m2)->lookup("a"), o));
  EXPECT_NE(KernelCache::kernelKey(*(*m1)->lookup("b"), o), KernelCache::kernelKey(*(*m2)->lookup("b"), o));
  llvmtarget::LowerOptions o1 = o;
  o1.optLevel = 1;
  EXPECT_NE(KernelCache::kernelKey(*(*m1)->lookup("a"), o), KernelCache::kernelKey(*(*m1)->lookup("a"), o1));
  EXPECT_NE(KernelCache::kernelKey(*(*m1)->lookup("a"), o).find(llvmtarget::hostTargetKey()), std::string::npos);
}

TEST(KernelCache, ASecondCacheOnTheSameDirectoryLoadsFromDisk) {
  TempDir dir;
  std::string want = run(program(), nullptr);
  {
    runtime::KernelCache first(dir.path.string());
    EXPECT_EQ(run(program(), &first), want);
    EXPECT_EQ(first.stats().compiled, 2u);
    EXPECT_EQ(first.stats().fromDisk, 0u);
  }
  EXPECT_EQ(dir.files().size(), 2u);
  runtime::KernelCache second(dir.path.string());  // as another process would
  EXPECT_EQ(run(program(), &second), want);
  EXPECT_EQ(second.stats().compiled, 0u);
  EXPECT_EQ(second.stats().fromDisk, 2u);
}

TEST(KernelCache, CorruptEntriesAreIgnoredAndRebuilt) {
  TempDir dir;
  std::string want = run(program(), nullptr);
  {
    runtime::KernelCache first(dir.path.string());
    EXPECT_EQ(run(program(), &first), want);
  }
  std::vector<fs::path> files = dir.files();
  ASSERT_EQ(files.size(), 2u);
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);  // truncated
  {
    std::fstream f(files[1], std::ios::in | std::ios::out | std::ios::binary);  // one byte garbled
    f.seekp(std::streamoff(fs::file_size(files[1]) / 2));
    f.put('\x5a');
  }
  runtime::KernelCache second(dir.path.string());
  EXPECT_EQ(run(program(), &second), want);
  EXPECT_EQ(second.stats().rejected, 2u);
  EXPECT_EQ(second.stats().compiled, 2u);
  runtime::KernelCache third(dir.path.string());  // the rebuilt files load
  EXPECT_EQ(run(program(), &third), want);
  EXPECT_EQ(third.stats().fromDisk, 2u);
  EXPECT_EQ(third.stats().compiled, 0u);
}

TEST(KernelCache, EagerDevicesCompileEveryKernelInParallel) {
  runtime::KernelCache cache("");
  ir::Context ctx;
  auto m = ir::parseModule(ctx, program(), "eager.eir");
  ASSERT_TRUE(m);
  runtime::CpuOptions o;
  o.threads = 2;
  o.cache = &cache;
  o.eager = true;
  runtime::CpuDevice dev(o);
  ASSERT_TRUE(dev.prepare(**m));
  EXPECT_EQ(cache.stats().compiled, 3u);
  ASSERT_TRUE(dev.prepare(**m));
  EXPECT_EQ(cache.stats().compiled, 3u);
}

TEST(KernelCache, ConcurrentRequestsForOneKernelCompileItOnce) {
  runtime::KernelCache cache("");
  ir::Context ctx;
  auto m = ir::parseModule(ctx, program(), "threads.eir");
  ASSERT_TRUE(m);
  const ir::Function* a = (*m)->lookup("a");
  std::vector<runtime::KernelCache::Code> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      auto code = cache.kernel(*a, {});
      if (code) got[t] = *code;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(cache.stats().compiled, 1u);
  for (const auto& code : got) {
    ASSERT_TRUE(code);
    EXPECT_EQ(code, got[0]);
    EXPECT_NE(code->kernel("a"), nullptr);
  }
}

TEST(KernelCache, TieredDevicesStartSmallGridsAtO0AndOptimiseLargeOnes) {
  runtime::KernelCache cache("");
  ir::Context ctx;
  auto m = ir::parseModule(ctx, program(), "tiers.eir");
  ASSERT_TRUE(m);
  const ir::Function& a = *(*m)->lookup("a");
  llvmtarget::LowerOptions o2, o0;
  o0.optLevel = 0;
  auto cached = [&](const llvmtarget::LowerOptions& o) {
    auto code = cache.find(a, o);
    return code && *code;
  };
  // 16 invocations: -O0 code, the same results.
  EXPECT_EQ(run(program(), &cache, true), run(program(), nullptr));
  EXPECT_EQ(cache.stats().compiled, 2u);
  EXPECT_TRUE(cached(o0));
  EXPECT_FALSE(cached(o2));
  // 2^14 invocations: optimised.
  std::string big = program("%v = mul %i, %i : u32", "%r = mul %x, %three : u32", 2048);
  EXPECT_EQ(run(big, &cache, true), run(big, nullptr));
  EXPECT_TRUE(cached(o2));
  // Optimised code, once made, serves small grids too.
  size_t compiled = cache.stats().compiled;
  EXPECT_EQ(run(program(), &cache, true), run(program(), nullptr));
  EXPECT_EQ(cache.stats().compiled, compiled);
}

TEST(KernelCache, TrapsLoadedFromDiskPointAtTheOp) {
  // The trap site numbering is per kernel, so an entry written for one
  // module reports the op of another module with the same kernel.
  std::string text = R"(
device @get(%b: buffer<u32, device, write>, %i: u32) -> u32 {
  %v = load %b, %i : u32 loc("t.eir":3:3)
  return %v
}
kernel @k(%out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %i = global_id {dim = 0} : u32
  %big = const {value = 100} : u32
  %j = add %i, %big : u32
  %v = call %out, %j {callee = @get} : u32
  store %out, %i, %v
  return
}
host @main() -> (u32) {
  %n = const {value = 8} : u32
  %one = const {value = 1} : u32
  %d = alloc %n : buffer<u32, device, linear>
  dispatch %one, %one, %one, %d {kernel = @k}
  free %d
  return %n
}
)";
  TempDir dir;
  runtime::KernelCache first(dir.path.string());
  std::string got = run(text, &first);
  EXPECT_NE(got.find("t.eir:3:3: error: index 100 is out of bounds"), std::string::npos) << got;
  runtime::KernelCache second(dir.path.string());
  EXPECT_EQ(run("host @other() {\n  return\n}\n" + text, &second), got);
  EXPECT_EQ(second.stats().fromDisk, 1u);
}

TEST(KernelCache, HostCodeIsCachedOnDiskToo) {
  TempDir dir;
  ir::Context ctx;
  auto m = ir::parseModule(ctx, program(), "host.eir");
  ASSERT_TRUE(m);
  {
    runtime::KernelCache first(dir.path.string());
    auto code = first.host(**m, runtime::hostLowerOptions());
    ASSERT_TRUE(code) << code.error().str();
    EXPECT_NE((*code)->hostEntry("main"), nullptr);
    EXPECT_EQ((*code)->kernel("a"), nullptr);  // kernels are compiled on their own
  }
  runtime::KernelCache second(dir.path.string());
  auto code = second.host(**m, runtime::hostLowerOptions());
  ASSERT_TRUE(code) << code.error().str();
  EXPECT_EQ(second.stats().fromDisk, 1u);
  EXPECT_NE((*code)->hostEntry("main"), nullptr);
  EXPECT_FALSE((*code)->hostUnsupported(**m));
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_LLVM
