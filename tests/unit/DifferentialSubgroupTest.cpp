// Subgroup collectives (ir/ops/Subgroup.cpp) on every target: each kernel
// runs on the interpreter, the cpu target and Vulkan (when this build and
// machine have them) on the same inputs, and every target's output must be
// the values computed here on the host for that device's subgroup size
// (subgroups are runs of subgroup_size consecutive invocations; the
// workgroups of 20 make the last subgroup partial for sizes 8 and 16).
// Then the run-time errors: a shuffle from a lane outside the subgroup, a
// broadcast lane that differs within the subgroup, and a collective under
// divergent control flow, on the interpreter and the cpu target.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <memory>

#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Device.h"
#include "tests/support/DeviceRun.h"

namespace eph::test {
namespace {

constexpr uint32_t kWorkgroup = 20, kGroups = 3, kN = kWorkgroup * kGroups;

std::vector<std::unique_ptr<runtime::Device>> allDevices() {
  std::vector<std::unique_ptr<runtime::Device>> devices;
  for (const std::string& t : runtime::availableTargets())
    if (auto dev = runtime::openDevice(t)) devices.push_back(std::move(*dev));
  return devices;
}

// Input element i: signed values include negatives; all are small integers,
// so float sums are exact and every target must agree exactly.
double input(uint32_t i, bool isSigned) { return isSigned ? double(int(i * 37 + 11) % 101 - 50) : double((i * 37 + 11) % 1001); }

struct Scalar {
  std::string name;  // IR type
  bool isFloat, isSigned;
  unsigned bits;
};
const Scalar kTypes[] = {
    {"i32", false, true, 32}, {"u32", false, false, 32}, {"i64", false, true, 64},
    {"f32", true, true, 32},  {"f64", true, true, 64},   {"u64", false, false, 64},
};

// The identity of min/max/add for the type, as a double (integers here are
// at most 32 bits of magnitude in tests, but the identities are full width).
interp::RtValue value(const ir::Type* t, double v) {
  return t->isFloat() ? interp::RtValue::ofFloat(t, v) : interp::RtValue::ofInt(t, int64_t(v));
}

interp::RtValue identityOf(const ir::Type* t, char kind) {
  if (kind == '+') return value(t, 0);
  bool min = kind == '<';
  if (t->isFloat()) return interp::RtValue::ofFloat(t, min ? INFINITY : -INFINITY);
  if (!t->isSigned()) return interp::RtValue::ofInt(t, min ? -1 : 0);
  int64_t hi = t->bits() == 64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  int64_t lo = t->bits() == 64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  return interp::RtValue::ofInt(t, min ? hi : lo);
}

double combine(char kind, double a, double b) {
  return kind == '+' ? a + b : kind == '<' ? std::min(a, b) : std::max(a, b);
}

struct Arith {
  std::string op;
  char kind;  // '+', '<' (min), '>' (max)
  enum { Reduce, Inclusive, Exclusive } mode;
};
const Arith kArith[] = {
    {"subgroup.reduce_add", '+', Arith::Reduce},     {"subgroup.reduce_min", '<', Arith::Reduce},
    {"subgroup.reduce_max", '>', Arith::Reduce},     {"subgroup.scan_add", '+', Arith::Inclusive},
    {"subgroup.scan_min", '<', Arith::Inclusive},    {"subgroup.scan_max", '>', Arith::Inclusive},
    {"subgroup.exscan_add", '+', Arith::Exclusive},  {"subgroup.exscan_min", '<', Arith::Exclusive},
    {"subgroup.exscan_max", '>', Arith::Exclusive},
};

std::string kernelText(const std::string& t, const std::string& body) {
  return "kernel @k(%in: buffer<" + t + ", device, read>, %out: buffer<" + t +
         ", device, write>) workgroup(" + std::to_string(kWorkgroup) +
         ", 1, 1) {\n"
         "  %gid = global_id {dim = 0} : u32\n"
         "  %lid = local_id {dim = 0} : u32\n"
         "  %sl = subgroup_local_id : u32\n"
         "  %x = load %in, %gid : " + t + "\n" + body +
         "  store %out, %gid, %y\n"
         "  return\n"
         "}\n";
}

// Runs `text`'s @k on every device with in[i] = input(i) and checks out
// against expected(device subgroup size, in) element by element.
void checkOnEveryDevice(const std::string& text, const ir::Type* (*typeOf)(ir::Context&), bool isSigned,
                        const std::function<std::vector<interp::RtValue>(uint32_t, const std::vector<interp::RtValue>&)>& expected) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "subgroup.eir");
  ASSERT_TRUE(m) << m.error().str() << "\n" << text;
  Status valid = ir::verify(**m);
  ASSERT_TRUE(valid) << valid.error().str() << "\n" << text;
  const ir::Type* t = typeOf(ctx);
  std::vector<interp::RtValue> in;
  for (uint32_t i = 0; i < kN; ++i) in.push_back(value(t, input(i, isSigned)));
  auto devices = allDevices();
  ASSERT_GE(devices.size(), 1u);
  for (auto& dev : devices) {
    SCOPED_TRACE(std::string(dev->target()));
    uint32_t sg = dev->caps().subgroupSize;
    std::vector<interp::RtValue> want = expected(sg, in);
    auto got = runKernelOn(*dev, **m, "k", {kGroups, 1, 1},
                           {KernelArg::ofBuffer(t, in), KernelArg::ofBuffer(t, std::vector<interp::RtValue>(kN, value(t, 0)))});
    ASSERT_TRUE(got) << got.error().str() << "\n" << text;
    const interp::BufferData& out = (*got)[1];
    ASSERT_EQ(out.elems.size(), size_t(kN));
    for (uint32_t i = 0; i < kN; ++i)
      ASSERT_TRUE(out.elems[i] == want[i]) << "element " << i << " (subgroup size " << sg << "): got "
                                           << formatBuffer(out) << "\n" << text;
  }
}

// Subgroup j of invocation i: the lanes [first, end) of its workgroup.
void subgroupOf(uint32_t i, uint32_t sg, uint32_t& first, uint32_t& end) {
  uint32_t wg = i / kWorkgroup * kWorkgroup, local = i % kWorkgroup;
  first = wg + local / sg * sg;
  end = std::min(first + sg, wg + kWorkgroup);
}

const ir::Type* (*const kTypeOf[])(ir::Context&) = {
    [](ir::Context& c) { return c.intType(32, true); }, [](ir::Context& c) { return c.intType(32, false); },
    [](ir::Context& c) { return c.intType(64, true); }, [](ir::Context& c) { return c.floatType(32); },
    [](ir::Context& c) { return c.floatType(64); },   [](ir::Context& c) { return c.intType(64, false); },
};

TEST(DifferentialSubgroup, ReductionsAndScansAgreeWithTheHost) {
  for (size_t ti = 0; ti < std::size(kTypes); ++ti) {
    const Scalar& s = kTypes[ti];
    for (const Arith& a : kArith) {
      SCOPED_TRACE(a.op + " on " + s.name);
      std::string text = kernelText(s.name, "  %y = " + a.op + " %x : " + s.name + "\n");
      checkOnEveryDevice(text, kTypeOf[ti], s.isSigned, [&](uint32_t sg, const std::vector<interp::RtValue>& in) {
        const ir::Type* t = in[0].type;
        std::vector<interp::RtValue> want;
        for (uint32_t i = 0; i < kN; ++i) {
          uint32_t first, end;
          subgroupOf(i, sg, first, end);
          uint32_t last = a.mode == Arith::Reduce ? end : a.mode == Arith::Inclusive ? i + 1 : i;
          if (last == first) {
            want.push_back(identityOf(t, a.kind));
            continue;
          }
          double acc = input(first, s.isSigned);
          for (uint32_t j = first + 1; j < last; ++j) acc = combine(a.kind, acc, input(j, s.isSigned));
          want.push_back(value(t, acc));
        }
        return want;
      });
    }
  }
}

TEST(DifferentialSubgroup, BroadcastAndShuffleAgreeWithTheHost) {
  struct Case {
    std::string name, body;
    std::function<uint32_t(uint32_t i, uint32_t first, uint32_t end)> from;  // the invocation read
  };
  const Case cases[] = {
      {"broadcast from a constant lane",
       "  %three = const {value = 3} : u32\n  %y = subgroup.broadcast %x, %three : T\n",
       [](uint32_t, uint32_t first, uint32_t) { return first + 3; }},
      {"broadcast from a computed uniform lane",
       "  %wg = workgroup_id {dim = 0} : u32\n  %y = subgroup.broadcast %x, %wg : T\n",
       [](uint32_t i, uint32_t first, uint32_t) { return first + i / kWorkgroup; }},
      {"shuffle with the neighbouring lane",
       "  %one = const {value = 1} : u32\n  %l = xor %sl, %one : u32\n  %y = subgroup.shuffle %x, %l : T\n",
       [](uint32_t i, uint32_t first, uint32_t) { return first + ((i - first) ^ 1); }},
      {"shuffle reversed",
       "  %n = subgroup_size : u32\n  %one = const {value = 1} : u32\n  %m = sub %n, %one : u32\n"
       "  %base = sub %lid, %sl : u32\n  %left = sub %workgroup_end, %base : u32\n"
       "  %size = min %n, %left : u32\n  %top = sub %size, %one : u32\n"
       "  %l = sub %top, %sl : u32\n  %y = subgroup.shuffle %x, %l : T\n",
       [](uint32_t i, uint32_t first, uint32_t end) { return first + (end - 1 - i); }},
  };
  for (size_t ti = 0; ti < std::size(kTypes); ++ti) {
    const Scalar& s = kTypes[ti];
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + " on " + s.name);
      std::string body = c.body;
      for (size_t p; (p = body.find(": T\n")) != std::string::npos;) body.replace(p, 4, ": " + s.name + "\n");
      body = "  %workgroup_end = const {value = " + std::to_string(kWorkgroup) + "} : u32\n" + body;
      checkOnEveryDevice(kernelText(s.name, body), kTypeOf[ti], s.isSigned,
                         [&](uint32_t sg, const std::vector<interp::RtValue>& in) {
                           std::vector<interp::RtValue> want;
                           for (uint32_t i = 0; i < kN; ++i) {
                             uint32_t first, end;
                             subgroupOf(i, sg, first, end);
                             want.push_back(in[c.from(i, first, end)]);
                           }
                           return want;
                         });
    }
  }
}

// Collectives in a called device function and in a uniform loop: the cpu
// target inlines the call and splits the loop; the interpreter schedules
// them like barriers.
TEST(DifferentialSubgroup, InCalledFunctionsAndUniformLoops) {
  std::string text = R"(
device @twice(%v: u32) -> u32 {
  %s = subgroup.scan_add %v : u32
  %m = subgroup.reduce_max %s : u32
  return %m
}
)" + kernelText("u32", R"(  %zero = const {value = 0} : u32
  %one = const {value = 1} : u32
  %three = const {value = 3} : u32
  %y = for %zero, %three, %one, %x : u32 { |%k: u32, %acc: u32|
    %r = call %acc {callee = @twice} : u32
    %e = subgroup.exscan_min %r : u32
    %w = add %r, %e : u32
    yield %w
  }
)");
  checkOnEveryDevice(text, kTypeOf[1], false, [&](uint32_t sg, const std::vector<interp::RtValue>& in) {
    std::vector<uint64_t> acc;
    for (const auto& v : in) acc.push_back(uint64_t(v.i));
    for (int k = 0; k < 3; ++k) {
      std::vector<uint64_t> next(kN);
      for (uint32_t i = 0; i < kN; ++i) {
        uint32_t first, end;
        subgroupOf(i, sg, first, end);
        // @twice: the subgroup's total (the largest inclusive sum), the same for every lane.
        uint64_t total = 0;
        for (uint32_t j = first; j < end; ++j) total = (total + acc[j]) & 0xffffffffu;
        // exscan_min of a uniform value: lane 0 gets the identity (all ones).
        uint64_t e = i == first ? 0xffffffffu : total;
        next[i] = (total + e) & 0xffffffffu;
      }
      acc = next;
    }
    std::vector<interp::RtValue> want;
    for (uint64_t v : acc) want.push_back(interp::RtValue::ofInt(in[0].type, int64_t(v)));
    return want;
  });
}

// The error a kernel gives on the interpreter and the cpu target (Vulkan
// leaves these undefined).
void expectErrorEverywhere(const std::string& body, const std::string& interpText, const std::string& cpuText) {
  std::string text = kernelText("u32", body);
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "subgroup.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m));
  const ir::Type* t = ctx.intType(32, false);
  std::vector<interp::RtValue> in;
  for (uint32_t i = 0; i < kN; ++i) in.push_back(value(t, i));
  for (auto& dev : allDevices()) {
    if (dev->target() == "vulkan") continue;
    SCOPED_TRACE(std::string(dev->target()));
    auto got = runKernelOn(*dev, **m, "k", {kGroups, 1, 1},
                           {KernelArg::ofBuffer(t, in), KernelArg::ofBuffer(t, in)});
    ASSERT_FALSE(got);
    std::string msg = got.error().str();
    const std::string& want = dev->target() == "interp" ? interpText : cpuText;
    EXPECT_NE(msg.find(want), std::string::npos) << msg;
    EXPECT_NE(msg.find("subgroup.eir:"), std::string::npos) << msg;
  }
}

TEST(DifferentialSubgroup, ShuffleFromOutsideTheSubgroupIsAnError) {
  expectErrorEverywhere("  %nine = const {value = 9} : u32\n  %y = subgroup.shuffle %x, %nine : u32\n",
                        "'subgroup.shuffle': lane 9 is not in the subgroup",
                        "'subgroup.shuffle': the lane is not in the subgroup");
}

TEST(DifferentialSubgroup, NonUniformBroadcastLaneIsAnError) {
  expectErrorEverywhere("  %y = subgroup.broadcast %x, %sl : u32\n",
                        "'subgroup.broadcast': the lane must be the same for the whole subgroup",
                        "not the same for the whole subgroup");
}

TEST(DifferentialSubgroup, DivergentCollectiveIsAnError) {
  expectErrorEverywhere(
      "  %four = const {value = 4} : u32\n  %low = lt %lid, %four : bool\n"
      "  %y = if %low : u32 {\n    %r = subgroup.reduce_add %x : u32\n    yield %r\n  } {\n    yield %x\n  }\n",
      "barrier divergence", "barrier divergence");
}

}  // namespace
}  // namespace eph::test
