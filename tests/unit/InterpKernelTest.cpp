// Interpreter kernels: dispatch grids, builtins, workgroup memory, barriers
// (fibers), barrier divergence and atomics across invocations.
#include <numeric>

#include "ir/interp/Exec.h"
#include "tests/unit/InterpTestUtil.h"

namespace eph::test {
namespace {

class InterpKernel : public InterpTest {
 protected:
  // A device buffer of `n` unwritten elements of type `elem`.
  interp::RtValue deviceBuffer(const char* elem, size_t n) {
    auto t = ir::parseType(ctx_, elem);
    interp::RtValue b;
    b.type = ctx_.bufferType(*t, ir::Space::Device, ir::Ownership::Write);
    b.buffer = interp().memory().allocate(*t, ir::Space::Device, n);
    return b;
  }
  std::string contents(const interp::RtValue& b) { return interp::format(b, &interp().memory()); }
  Status dispatch(const char* kernel, std::array<uint32_t, 3> groups,
                  std::vector<interp::RtValue> args) {
    return interp().dispatch(*module()->lookup(kernel), groups, std::move(args));
  }
  ir::Module* module() { return module_; }
  ir::Module* loadKernel(std::string_view text) { return module_ = load(text); }

 private:
  ir::Module* module_ = nullptr;
};

const char* kReduce = R"(kernel @reduce(%in: buffer<i32, device, read>, %out: buffer<i32, device, write>) workgroup(64, 1, 1) {
  %tmp = workgroup.alloc {size = 64} : buffer<i32, workgroup, write>
  %gid = global_id {dim = 0} : u32
  %lid = local_id {dim = 0} : u32
  %v = load %in, %gid : i32
  store %tmp, %lid, %v
  barrier
  %start = const {value = 32} : u32
  %end = while %start : u32 { |%s: u32|
    %z = const {value = 0} : u32
    %go = gt %s, %z : bool
    condition %go, %s
  } { |%s2: u32|
    %act = lt %lid, %s2 : bool
    if %act {
      %j = add %lid, %s2 : u32
      %a = load %tmp, %lid : i32
      %b = load %tmp, %j : i32
      %c = add %a, %b : i32
      store %tmp, %lid, %c
      yield
    } {
      yield
    }
    barrier
    %one = const {value = 1} : u32
    %h = shr %s2, %one : u32
    yield %h
  }
  %z0 = const {value = 0} : u32
  %first = eq %lid, %z0 : bool
  if %first {
    %r = load %tmp, %z0 : i32
    %wg = workgroup_id {dim = 0} : u32
    store %out, %wg, %r
    yield
  } {
    yield
  }
  return
}
host @main(%data: buffer<i32, host, read>, %n: u32, %groups: u32) -> buffer<i32, host, linear> {
  %d = alloc %n : buffer<i32, device, linear>
  h2d %d, %data
  %o = alloc %groups : buffer<i32, device, linear>
  %one = const {value = 1} : u32
  dispatch %groups, %one, %one, %d, %o {kernel = @reduce}
  wait
  %h = alloc %groups : buffer<i32, host, linear>
  d2h %h, %o
  free %d
  free %o
  return %h
}
)";

TEST_F(InterpKernel, WorkgroupReductionWithBarriersMatchesCxxSum) {
  loadKernel(kReduce);
  const int groups = 5, n = groups * 64;
  std::vector<int32_t> data(n);
  for (int i = 0; i < n; ++i) data[i] = (i * 7919) % 1001 - 500;
  std::string arg = "[", want = "[";
  for (int i = 0; i < n; ++i) arg += (i ? ", " : "") + std::to_string(data[i]);
  int64_t total = 0;
  for (int g = 0; g < groups; ++g) {
    int32_t s = std::accumulate(data.begin() + g * 64, data.begin() + (g + 1) * 64, 0);
    total += s;
    want += (g ? ", " : "") + std::to_string(s);
  }
  arg += "]";
  want += "]";
  EXPECT_EQ(run("main", {arg, std::to_string(n), std::to_string(groups)}), want);
  EXPECT_EQ(total, std::accumulate(data.begin(), data.end(), int64_t(0)));
  EXPECT_NE(want, "[0, 0, 0, 0, 0]");
}

TEST_F(InterpKernel, BuiltinsGiveIdsAndSizesInEveryDimension) {
  loadKernel(R"(kernel @ids(%out: buffer<vec<u32, 4>, device, write>) workgroup(2, 3, 2) {
  %g0 = global_id {dim = 0} : u32
  %g1 = global_id {dim = 1} : u32
  %g2 = global_id {dim = 2} : u32
  %l0 = local_id {dim = 0} : u32
  %l1 = local_id {dim = 1} : u32
  %l2 = local_id {dim = 2} : u32
  %w0 = workgroup_id {dim = 0} : u32
  %w1 = workgroup_id {dim = 1} : u32
  %w2 = workgroup_id {dim = 2} : u32
  %n0 = num_workgroups {dim = 0} : u32
  %n1 = num_workgroups {dim = 1} : u32
  %s0 = workgroup_size {dim = 0} : u32
  %s1 = workgroup_size {dim = 1} : u32
  %hundred = const {value = 100} : u32
  %tenk = const {value = 10000} : u32
  %gy = mul %g1, %hundred : u32
  %gz = mul %g2, %tenk : u32
  %ga = add %g0, %gy : u32
  %gpack = add %ga, %gz : u32
  %ly = mul %l1, %hundred : u32
  %lz = mul %l2, %tenk : u32
  %la = add %l0, %ly : u32
  %lpack = add %la, %lz : u32
  %wy = mul %w1, %hundred : u32
  %wz = mul %w2, %tenk : u32
  %wa = add %w0, %wy : u32
  %wpack = add %wa, %wz : u32
  %nx = mul %n0, %s0 : u32
  %ny = mul %n1, %s1 : u32
  %row = mul %g1, %nx : u32
  %plane = mul %nx, %ny : u32
  %slab = mul %g2, %plane : u32
  %lin0 = add %g0, %row : u32
  %lin = add %lin0, %slab : u32
  %v = vec.make %gpack, %lpack, %wpack, %lin : vec<u32, 4>
  store %out, %lin, %v
  return
}
)");
  std::array<uint32_t, 3> groups = {3, 2, 2}, size = {2, 3, 2};
  uint32_t nx = groups[0] * size[0], ny = groups[1] * size[1], nz = groups[2] * size[2];
  interp::RtValue out = deviceBuffer("vec<u32, 4>", nx * ny * nz);
  ASSERT_TRUE(dispatch("ids", groups, {out}));
  interp::BufferData* b = interp().memory().get(out.buffer);
  for (uint32_t z = 0; z < nz; ++z)
    for (uint32_t y = 0; y < ny; ++y)
      for (uint32_t x = 0; x < nx; ++x) {
        uint32_t lin = x + y * nx + z * nx * ny;
        ASSERT_TRUE(b->written[lin]) << lin;
        const auto& e = b->elems[lin].elems;
        EXPECT_EQ(e[0].i, x + 100 * y + 10000 * z);
        EXPECT_EQ(e[1].i, x % 2 + 100 * (y % 3) + 10000 * (z % 2));
        EXPECT_EQ(e[2].i, x / 2 + 100 * (y / 3) + 10000 * (z / 2));
        EXPECT_EQ(e[3].i, lin);
      }
}

TEST_F(InterpKernel, SubgroupBuiltins) {
  loadKernel(R"(kernel @sg(%out: buffer<vec<u32, 3>, device, write>) workgroup(20, 1, 1) {
  %lid = local_id {dim = 0} : u32
  %a = subgroup_size : u32
  %b = subgroup_id : u32
  %c = subgroup_local_id : u32
  %v = vec.make %a, %b, %c : vec<u32, 3>
  store %out, %lid, %v
  return
}
)");
  interp::RtValue out = deviceBuffer("vec<u32, 3>", 20);
  ASSERT_TRUE(dispatch("sg", {1, 1, 1}, {out}));
  std::string want = "[";
  for (int i = 0; i < 20; ++i)
    want += std::string(i ? ", " : "") + "<8, " + std::to_string(i / 8) + ", " + std::to_string(i % 8) + ">";
  EXPECT_EQ(contents(out), want + "]");
}

TEST_F(InterpKernel, AtomicCounterAcrossWorkgroups) {
  loadKernel(R"(kernel @count(%ctr: buffer<u32, device, write>, %out: buffer<u32, device, write>) workgroup(8, 1, 1) {
  %gid = global_id {dim = 0} : u32
  %z = const {value = 0} : u32
  %one = const {value = 1} : u32
  %old = atomic.add %ctr, %z, %one : u32
  store %out, %gid, %old
  return
}
)");
  interp::RtValue ctr = deviceBuffer("u32", 1), out = deviceBuffer("u32", 24);
  interp().memory().get(ctr.buffer)->elems[0] = interp::RtValue::ofInt(ctx_.u32(), 100);
  interp().memory().get(ctr.buffer)->written[0] = true;
  ASSERT_TRUE(dispatch("count", {3, 1, 1}, {ctr, out}));
  EXPECT_EQ(contents(ctr), "[124]");
  std::string want = "[";
  for (int i = 0; i < 24; ++i) want += (i ? ", " : "") + std::to_string(100 + i);
  EXPECT_EQ(contents(out), want + "]");
}

TEST_F(InterpKernel, BarrierInACalledDeviceFunctionSynchronises) {
  // Each invocation reads its neighbour's slot after the barrier in @sync;
  // without a real barrier invocation 0 would read an unwritten element.
  loadKernel(R"(device @sync() {
  barrier
  return
}
kernel @rotate(%out: buffer<u32, device, write>) workgroup(4, 1, 1) {
  %tmp = workgroup.alloc {size = 4} : buffer<u32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %ten = const {value = 10} : u32
  %v = mul %lid, %ten : u32
  store %tmp, %lid, %v
  call {callee = @sync}
  %one = const {value = 1} : u32
  %four = const {value = 4} : u32
  %n = add %lid, %one : u32
  %j = rem %n, %four : u32
  %x = load %tmp, %j : u32
  %g = global_id {dim = 0} : u32
  store %out, %g, %x
  return
}
)");
  interp::RtValue out = deviceBuffer("u32", 8);
  ASSERT_TRUE(dispatch("rotate", {2, 1, 1}, {out}));
  EXPECT_EQ(contents(out), "[10, 20, 30, 0, 10, 20, 30, 0]");
}

const char* kFreshShared = R"(kernel @k(%out: buffer<i32, device, write>) workgroup(2, 1, 1) {
  %tmp = workgroup.alloc {size = 2} : buffer<i32, workgroup, write>
  %lid = local_id {dim = 0} : u32
  %wg = workgroup_id {dim = 0} : u32
  %z = const {value = 0} : u32
  %first = eq %wg, %z : bool
  if %first {
    %v = const {value = 7} : i32
    store %tmp, %lid, %v
    yield
  } {
    yield
  }
  %x = load %tmp, %lid : i32
  %g = global_id {dim = 0} : u32
  store %out, %g, %x
  return
}
)";

TEST_F(InterpKernel, WorkgroupMemoryIsFreshForEachWorkgroup) {
  loadKernel(kFreshShared);
  interp::RtValue out = deviceBuffer("i32", 4);
  ASSERT_TRUE(dispatch("k", {1, 1, 1}, {out}));
  EXPECT_EQ(contents(out), "[7, 7, ?, ?]");
  Status s = dispatch("k", {2, 1, 1}, {out});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(),
            "test.eir:14:3: error: read of uninitialised element 0 of a buffer of 2 allocated at "
            "test.eir:2:3 (in the invocation with global id (2, 0, 0))");
}

TEST_F(InterpKernel, BarrierDivergenceWhenSomeInvocationsFinish) {
  loadKernel(R"(kernel @k(%out: buffer<u32, device, write>) workgroup(4, 1, 1) {
  %lid = local_id {dim = 0} : u32
  %two = const {value = 2} : u32
  %few = lt %lid, %two : bool
  if %few {
    barrier
    yield
  } {
    yield
  }
  store %out, %lid, %lid
  return
}
)");
  Status s = dispatch("k", {1, 1, 1}, {deviceBuffer("u32", 4)});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(),
            "test.eir:6:5: error: barrier divergence in workgroup (0, 0, 0): invocation (2, 0, 0) "
            "finished while invocation (0, 0, 0) waits at this barrier");
}

TEST_F(InterpKernel, BarrierDivergenceAtDifferentBarriers) {
  loadKernel(R"(kernel @k(%out: buffer<u32, device, write>) workgroup(4, 1, 1) {
  %lid = local_id {dim = 0} : u32
  %two = const {value = 2} : u32
  %few = lt %lid, %two : bool
  if %few {
    barrier
    yield
  } {
    barrier
    yield
  }
  store %out, %lid, %lid
  return
}
)");
  Status s = dispatch("k", {1, 1, 1}, {deviceBuffer("u32", 4)});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(),
            "test.eir:6:5: error: barrier divergence in workgroup (0, 0, 0): invocation (0, 0, 0) "
            "waits at this barrier while invocation (2, 0, 0) waits at the barrier at test.eir:9:5");
}

TEST_F(InterpKernel, BarrierDivergenceInLoopsWithDifferentTripCounts) {
  // Invocation i passes the barrier i times: invocation 0 finishes at once.
  loadKernel(R"(kernel @k(%out: buffer<u32, device, write>) workgroup(3, 1, 1) {
  %lid = local_id {dim = 0} : u32
  %z = const {value = 0} : u32
  %one = const {value = 1} : u32
  %n = for %z, %lid, %one, %z : u32 { |%i: u32, %acc: u32|
    barrier
    %a = add %acc, %one : u32
    yield %a
  }
  store %out, %lid, %n
  return
}
)");
  Status s = dispatch("k", {1, 1, 1}, {deviceBuffer("u32", 3)});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(),
            "test.eir:6:5: error: barrier divergence in workgroup (0, 0, 0): invocation (0, 0, 0) "
            "finished while invocation (1, 0, 0) waits at this barrier");
}

TEST_F(InterpKernel, ErrorWhileOthersWaitAtABarrierUnwindsThem) {
  // Invocation 2 stores out of bounds while 0 and 1 wait at the barrier; the
  // error is reported and the waiting invocations unwind (no hang, no leak).
  loadKernel(R"(kernel @k(%out: buffer<u32, device, write>) workgroup(4, 1, 1) {
  %lid = local_id {dim = 0} : u32
  %ten = const {value = 10} : u32
  %i = mul %lid, %ten : u32
  store %out, %i, %lid
  barrier
  return
}
)");
  interp::RtValue out = deviceBuffer("u32", 15);
  Status s = dispatch("k", {1, 1, 1}, {out});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(),
            "test.eir:5:3: error: index 20 is out of bounds for a buffer of 15 elements (in the "
            "invocation with global id (2, 0, 0))");
  // The same interpreter keeps working afterwards.
  interp::RtValue big = deviceBuffer("u32", 31);
  ASSERT_TRUE(dispatch("k", {1, 1, 1}, {big}));
  interp::BufferData* b = interp().memory().get(big.buffer);
  EXPECT_EQ(format(b->elems[30]), "3");
}

TEST_F(InterpKernel, DispatchChecksItsArguments) {
  loadKernel(kFreshShared);
  Status s = dispatch("k", {1, 1, 1}, {});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().str(), "test.eir:1:1: error: kernel @k takes 1 arguments, got 0");
  auto r = interp().call(*module()->lookup("k"), {deviceBuffer("i32", 2)});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "@k is a kernel; run it with dispatch");
}

TEST_F(InterpKernel, EmptyGridRunsNothing) {
  loadKernel(kFreshShared);
  interp::RtValue out = deviceBuffer("i32", 2);
  ASSERT_TRUE(dispatch("k", {0, 1, 1}, {out}));
  EXPECT_EQ(contents(out), "[?, ?]");
}

}  // namespace
}  // namespace eph::test
