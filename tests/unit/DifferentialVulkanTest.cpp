// Differential tests: every kernel op runs on the interpreter (the semantics)
// and on Vulkan (SPIR-V from targets/spirv) and, when built, the cpu target
// (LLVM), on the same random inputs, and
// the outputs must agree: integers and bools exactly, floats within the
// tolerance of runtime/Compare.h (docs/runtime.md). Elementwise ops are
// generated from the op table (OpInfo::samples: TableOps); the rest are
// cases of op / types / input ranges written here, which OpInfo::diffTest
// names. Each case is one small kernel that loads its
// inputs at the invocation's index, computes, and stores the result (plus an
// `acc` buffer for atomics). The validation layer is on; any message fails.
// Every module the emitter made passes spirv-tools' validator (checked here
// too). The examples' host programs agree as well.
#ifdef EPH_HAVE_VULKAN

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ir/OpTable.h"
#include "ir/Parser.h"
#include "ir/Verifier.h"
#include "runtime/Compare.h"
#include "runtime/InterpDevice.h"
#include "runtime/vulkan/VulkanDevice.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif
#include "targets/spirv/Spirv.h"

namespace eph::test {
namespace {

constexpr uint32_t kCount = 200;  // elements per buffer: 4 workgroups of 64, the last partly masked

// An input buffer: element type and the range values are drawn from.
struct Input {
  std::string type;
  double lo = 0, hi = 100;
  bool nonzero = false;  // integers: never 0 (divisors)
};

struct Case {
  std::string name;         // for messages
  std::vector<Input> inputs;
  std::string result;       // type of %r, stored to %out
  std::string body;         // ops computing %r from %x0.., %i, %n, %acc
  std::string accType = "u32";
  Input accInit{"u32", 0, 0};
  std::string extra;        // device functions the body calls
  std::string needs;        // a DeviceCaps capability the case needs, if any
  runtime::Tolerance tol{};
};

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string kernelText(const Case& c) {
  std::string params;
  for (size_t k = 0; k < c.inputs.size(); ++k)
    params += "%a" + std::to_string(k) + ": buffer<" + c.inputs[k].type + ", device, read>, ";
  std::string loads;
  for (size_t k = 0; k < c.inputs.size(); ++k)
    loads += "    %x" + std::to_string(k) + " = load %a" + std::to_string(k) + ", %i : " + c.inputs[k].type + "\n";
  return c.extra + "kernel @k(" + params + "%out: buffer<" + c.result + ", device, write>, %acc: buffer<" +
         c.accType + ", device, write>) workgroup(64, 1, 1) {\n" +
         "  %i = global_id {dim = 0} : u32\n"
         "  %n = buffer.len %out : u32\n"
         "  %inside = lt %i, %n : bool\n"
         "  if %inside {\n" +
         loads + c.body + "    store %out, %i, %r\n"
         "    yield\n"
         "  } {\n"
         "    yield\n"
         "  }\n"
         "  return\n"
         "}\n";
}

interp::RtValue randomValue(const ir::Type* t, const Input& in, std::mt19937_64& rng) {
  if (t->isBool()) return interp::RtValue::ofBool(t, rng() & 1);
  if (t->isFloat()) {
    std::uniform_real_distribution<double> d(in.lo, in.hi);
    return interp::RtValue::ofFloat(t, d(rng));
  }
  if (t->isInt()) {
    std::uniform_int_distribution<int64_t> d(int64_t(in.lo), int64_t(in.hi));
    int64_t v = d(rng);
    while (in.nonzero && v == 0) v = d(rng);
    return interp::RtValue::ofInt(t, v);
  }
  // Vectors, structs, arrays: each element from the same range.
  interp::RtValue v;
  v.type = t;
  for (const ir::Type* e : t->members()) v.elems.push_back(randomValue(e, in, rng));
  if (v.elems.empty() && t->elem())
    for (unsigned k = 0; k < t->count(); ++k) v.elems.push_back(randomValue(t->elem(), in, rng));
  return v;
}

interp::BufferData bufferOf(const ir::Type* elem, std::vector<interp::RtValue> values) {
  interp::BufferData b;
  b.elemType = elem;
  b.space = ir::Space::Device;
  b.written.assign(values.size(), true);
  b.elems = std::move(values);
  return b;
}

// The validation layer is on unless EPH_TEST_NO_VALIDATION=1 (for machines
// without it, such as the GPU machine the benchmarks run on).
bool validationWanted() {
  const char* e = std::getenv("EPH_TEST_NO_VALIDATION");
  return !(e && std::string(e) == "1");
}

std::string sourceDir() {
  const char* e = std::getenv("EPH_SOURCE_DIR");
  return e && *e ? e : EPH_SOURCE_DIR;
}

bool hasCap(const DeviceCaps& c, const std::string& cap) {
  if (cap.empty()) return true;
  if (cap == "float64") return c.float64;
  if (cap == "int64") return c.int64;
  if (cap == "float16") return c.float16;
  if (cap == "int8") return c.int8;
  if (cap == "int16") return c.int16;
  if (cap == "atomicInt64") return c.atomicInt64;
  if (cap == "subgroup8") return c.subgroupSize == interp::Interpreter::kSubgroupSize;
  ADD_FAILURE() << "unknown capability " << cap;
  return false;
}

// Runs one case on a device: returns {out, acc} as interpreter buffers.
Expected<std::pair<interp::BufferData, interp::BufferData>> runCase(runtime::Device& dev, const ir::Module& m,
                                                                  const std::vector<interp::BufferData>& inputs,
                                                                  const interp::BufferData& accInit) {
  const ir::Function& k = *m.lookup("k");
  if (Status s = dev.prepare(m); !s) return s.error();
  std::vector<interp::RtValue> args;
  auto params = k.paramTypes();
  std::vector<uint64_t> handles;
  for (size_t p = 0; p < params.size(); ++p) {
    auto h = dev.alloc(params[p], kCount, {});
    if (!h) return h.error();
    interp::RtValue v;
    v.type = params[p];
    v.buffer = *h;
    args.push_back(v);
    handles.push_back(*h);
  }
  for (size_t p = 0; p < inputs.size(); ++p)
    if (Status s = dev.upload(handles[p], inputs[p], {}); !s) return s.error();
  if (Status s = dev.upload(handles.back(), accInit, {}); !s) return s.error();
  if (Status s = dev.dispatch(k, {(kCount + 63) / 64, 1, 1}, args, {}); !s) return s.error();
  interp::BufferData out, acc;
  out.elemType = params[params.size() - 2]->elem();
  acc.elemType = params.back()->elem();
  out.elems.resize(kCount);
  acc.elems.resize(kCount);
  out.written.assign(kCount, false);
  acc.written.assign(kCount, false);
  if (Status s = dev.download(out, handles[handles.size() - 2], {}); !s) return s.error();
  if (Status s = dev.download(acc, handles.back(), {}); !s) return s.error();
  for (uint64_t h : handles)
    if (Status s = dev.free(h, {}); !s) return s.error();
  if (Status s = dev.wait({}); !s) return s.error();
  return std::pair{std::move(out), std::move(acc)};
}

bool agree(const interp::RtValue& a, const interp::RtValue& b, const runtime::Tolerance& tol) {
  if (a.type != b.type) return false;
  if (a.type->isFloat()) return runtime::floatsAgree(a.f, b.f, a.type->bits(), tol);
  if (a.type->isScalar()) return a.i == b.i;
  if (a.elems.size() != b.elems.size()) return false;
  for (size_t k = 0; k < a.elems.size(); ++k)
    if (!agree(a.elems[k], b.elems[k], tol)) return false;
  return true;
}

class VulkanDifferential : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto list = runtime::listVulkanDevices();
    if (!list) {
      skipReason_ = list.error().message;
      return;
    }
    runtime::VulkanOptions o;
    o.validation = validationWanted();
    o.cacheDir = "off";
    auto dev = runtime::VulkanDevice::open(o);
    if (!dev) {
      openError_ = dev.error().message;
      return;
    }
    vk_ = std::move(*dev);
  }
  static void TearDownTestSuite() { vk_.reset(); }

  void SetUp() override {
    if (!skipReason_.empty()) {
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      if (req && std::string(req) == "1") FAIL() << skipReason_;
      GTEST_SKIP() << "no Vulkan device: " << skipReason_;
    }
    ASSERT_TRUE(vk_) << openError_;
  }

  // Runs every case on both devices and compares; returns how many ran.
  void check(const std::vector<Case>& cases) {
    unsigned seed = 1;
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name);
      ++seed;
      if (!hasCap(vk_->caps(), c.needs)) {
        // The capability is missing: the kernel must be refused with a clear error.
        ir::Context ctx;
        auto m = ir::parseModule(ctx, kernelText(c), c.name);
        ASSERT_TRUE(m) << m.error().str();
        Status s = vk_->prepare(**m);
        if (c.needs != "subgroup8") EXPECT_FALSE(s) << "prepared without " << c.needs;
        continue;
      }
      ir::Context ctx;
      std::string text = kernelText(c);
      auto m = ir::parseModule(ctx, text, c.name);
      ASSERT_TRUE(m) << m.error().str() << "\n" << text;
      Status v = ir::verify(**m);
      ASSERT_TRUE(v) << v.error().str() << "\n" << text;
      const ir::Function& k = *(*m)->lookup("k");
      std::mt19937_64 rng(seed);
      std::vector<interp::BufferData> inputs;
      for (size_t p = 0; p < c.inputs.size(); ++p) {
        const ir::Type* t = k.paramTypes()[p]->elem();
        std::vector<interp::RtValue> vals;
        for (uint32_t e = 0; e < kCount; ++e) vals.push_back(randomValue(t, c.inputs[p], rng));
        inputs.push_back(bufferOf(t, std::move(vals)));
      }
      const ir::Type* accT = k.paramTypes().back()->elem();
      std::vector<interp::RtValue> accVals;
      for (uint32_t e = 0; e < kCount; ++e) accVals.push_back(randomValue(accT, c.accInit, rng));
      interp::BufferData acc = bufferOf(accT, std::move(accVals));

      runtime::InterpDevice ref;
      auto want = runCase(ref, **m, inputs, acc);
      ASSERT_TRUE(want) << "interpreter: " << want.error().str() << "\n" << text;
      auto got = runCase(*vk_, **m, inputs, acc);
      ASSERT_TRUE(got) << "vulkan: " << got.error().str() << "\n" << text;
      for (const char* which : {"out", "acc"}) {
        const interp::BufferData& w = which[0] == 'o' ? want->first : want->second;
        const interp::BufferData& g = which[0] == 'o' ? got->first : got->second;
        for (uint32_t e = 0; e < kCount; ++e)
          if (!agree(w.elems[e], g.elems[e], c.tol)) {
            std::string ins;
            for (auto& in : inputs) ins += " " + interp::format(in.elems[e]);
            ADD_FAILURE() << which << "[" << e << "]: interp " << interp::format(w.elems[e]) << ", vulkan "
                          << interp::format(g.elems[e]) << " (inputs" << ins << ")\n" << text;
            break;
          }
      }
#ifdef EPH_HAVE_LLVM
      // The cpu target runs every case too, compared by the same rules.
      auto onCpu = runCase(cpu_, **m, inputs, acc);
      ASSERT_TRUE(onCpu) << "cpu: " << onCpu.error().str() << "\n" << text;
      for (const char* which : {"out", "acc"}) {
        const interp::BufferData& w = which[0] == 'o' ? want->first : want->second;
        const interp::BufferData& g = which[0] == 'o' ? onCpu->first : onCpu->second;
        for (uint32_t e = 0; e < kCount; ++e)
          if (!agree(w.elems[e], g.elems[e], c.tol)) {
            ADD_FAILURE() << which << "[" << e << "]: interp " << interp::format(w.elems[e]) << ", cpu "
                          << interp::format(g.elems[e]) << "\n" << text;
            break;
          }
      }
#endif
      std::vector<uint32_t> words = vk_->spirvOf(k);
      EXPECT_FALSE(words.empty());
      Status valid = spirv::validate(words, vk_->caps().vulkanApiVersion, c.name);
      EXPECT_TRUE(valid) << valid.error().message;
      for (const std::string& msg : vk_->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
    }
  }

  static std::unique_ptr<runtime::VulkanDevice> vk_;
  static std::string skipReason_, openError_;
#ifdef EPH_HAVE_LLVM
  runtime::CpuDevice cpu_;
#endif
};

std::unique_ptr<runtime::VulkanDevice> VulkanDifferential::vk_;
std::string VulkanDifferential::skipReason_, VulkanDifferential::openError_;

// Integer types with the capability they need and a range that keeps
// arithmetic interesting (wrapping included).
struct IntType {
  std::string name, needs;
  double lo, hi;
  unsigned bits;
};
const std::vector<IntType> kInts = {
    {"i32", "", -2e9, 2e9, 32}, {"u32", "", 0, 4e9, 32},     {"i64", "int64", -9e15, 9e15, 64},
    {"u64", "int64", 0, 9e15, 64}, {"i16", "int16", -30000, 30000, 16}, {"u16", "int16", 0, 65000, 16},
    {"i8", "int8", -120, 120, 8}, {"u8", "int8", 0, 250, 8},
};
struct FloatType {
  std::string name, needs;
};
const std::vector<FloatType> kFloats = {{"f32", ""}, {"f64", "float64"}, {"f16", "float16"}};

Case binary(const std::string& op, const std::string& t, const std::string& needs, Input a, Input b,
            std::string result = "") {
  if (result.empty()) result = t;
  a.type = t;
  b.type = t;
  return Case{op + " " + t, {a, b}, result, "    %r = " + op + " %x0, %x1 : " + result + "\n", "u32", {"u32", 0, 0},
              "", needs};
}

Case unary(const std::string& op, const std::string& t, const std::string& needs, Input a, std::string result = "") {
  if (result.empty()) result = t;
  a.type = t;
  return Case{op + " " + t, {a}, result, "    %r = " + op + " %x0 : " + result + "\n", "u32", {"u32", 0, 0}, "",
              needs};
}

// ---- cases generated from the op table ------------------------------------------
// Every op with OpInfo::samples (ir/OpTable.h) runs on each type of each row,
// with the row's input domains and tolerance: a new op with samples is tested
// here without a line of this file changing.

// "vec<f32, 3>" -> "f32"; a scalar type stays itself.
std::string elementOf(std::string_view type) {
  if (type.rfind("vec<", 0) != 0) return std::string(type);
  return std::string(type.substr(4, type.find(',') - 4));
}

std::string capabilityOf(std::string_view type) {
  std::string e = elementOf(type);
  if (e == "f64") return "float64";
  if (e == "f16") return "float16";
  if (e == "i64" || e == "u64") return "int64";
  if (e == "i16" || e == "u16") return "int16";
  if (e == "i8" || e == "u8") return "int8";
  return "";
}

// The inputs of one operand: floats take the domain ([-1000, 1000] for the
// full range), integers the domain clamped to kInts' range for the type.
Input inputOf(std::string_view type, const ir::SampleDomain& d) {
  Input in{std::string(type), d.lo, d.hi, d.nonzero};
  std::string e = elementOf(type);
  for (const IntType& t : kInts)
    if (t.name == e) {
      in.lo = std::max(d.lo, t.lo);
      in.hi = std::min(d.hi, t.hi);
      return in;
    }
  if (d.lo < -1e299) in.lo = -1000, in.hi = 1000;
  return in;
}

std::vector<Case> tableCases() {
  std::vector<Case> cases;
  for (const ir::OpInfo* info : ir::OpTable::get().all())
    for (size_t r = 0; r < info->samples.size(); ++r) {
      const ir::SampleRow& row = info->samples[r];
      for (std::string_view type : row.types) {
        Case c;
        c.name = std::string(info->name) + " " + std::string(type) + " (row " + std::to_string(r) + ")";
        std::string operands;
        for (int k = 0; k < info->numOperands; ++k) {
          ir::SampleDomain d = row.domains.empty() ? ir::kFullRange : row.domains[std::min<size_t>(k, row.domains.size() - 1)];
          c.inputs.push_back(inputOf(type, d));
          operands += (k ? ", %x" : " %x") + std::to_string(k);
        }
        c.result = row.result.empty() ? std::string(type) : std::string(row.result);
        c.body = "    %r = " + std::string(info->name) + operands + " : " + c.result + "\n";
        c.needs = capabilityOf(type);
        c.tol = {row.ulps, row.relative, row.absolute};
        cases.push_back(c);
      }
    }
  return cases;
}

TEST_F(VulkanDifferential, TableOps) {
  std::vector<Case> cases = tableCases();
  EXPECT_GT(cases.size(), 300u);
  check(cases);
}

// round on exact halves goes away from zero (the samples of round draw
// random values, which are almost never halves).
TEST_F(VulkanDifferential, RoundHalves) {
  std::vector<Case> cases;
  runtime::Tolerance exact{0, 0, 0};
  for (const FloatType& t : kFloats)
    cases.push_back({"round halves " + t.name, {{t.name, -100, 100}}, t.name,
                     "    %f = floor %x0 : " + t.name + "\n    %h = const {value = 0.5} : " + t.name +
                         "\n    %y = add %f, %h : " + t.name + "\n    %r = round %y : " + t.name + "\n",
                     "u32", {"u32", 0, 0}, "", t.needs, exact});
  check(cases);
}

TEST_F(VulkanDifferential, SelectCastBitcastConst) {
  std::vector<Case> cases;
  cases.push_back({"select i32", {{"bool"}, {"i32", -100, 100}, {"i32", -100, 100}}, "i32",
                   "    %r = select %x0, %x1, %x2 : i32\n"});
  cases.push_back({"select f32", {{"bool"}, {"f32", -100, 100}, {"f32", -100, 100}}, "f32",
                   "    %r = select %x0, %x1, %x2 : f32\n"});
  cases.push_back({"select bool", {{"bool"}, {"bool"}, {"bool"}}, "bool", "    %r = select %x0, %x1, %x2 : bool\n"});
  struct Conv {
    std::string from, to, needs;
    double lo, hi;
  };
  for (const Conv& c : std::vector<Conv>{
           {"i32", "f32", "", -1e9, 1e9},     {"u32", "f32", "", 0, 4e9},       {"f32", "i32", "", -2e9, 2e9},
           {"f32", "u32", "", 0, 4e9},        {"i32", "u32", "", -1e9, 1e9},    {"u32", "i32", "", 0, 4e9},
           {"i32", "i64", "int64", -2e9, 2e9}, {"i64", "i32", "int64", -9e15, 9e15}, {"u32", "u64", "int64", 0, 4e9},
           {"f32", "f64", "float64", -1e6, 1e6}, {"f64", "f32", "float64", -1e6, 1e6},
           {"i32", "f64", "float64", -2e9, 2e9}, {"f64", "i32", "float64", -2e9, 2e9},
           {"i32", "i8", "int8", -1000, 1000},   {"u8", "u32", "int8", 0, 255},
           {"i32", "i16", "int16", -1e6, 1e6},   {"f32", "f16", "float16", -1000, 1000},
           {"f16", "f32", "float16", -1000, 1000},
           // Out of range floats saturate (the IR's rule, not the GPU's default).
           {"f32", "i32", "", -1e10, 1e10},     {"f32", "u32", "", -1e10, 1e10},
       }) {
    Case k = unary("cast", c.from, c.needs, {"", c.lo, c.hi}, c.to);
    k.name = "cast " + c.from + " to " + c.to + " [" + std::to_string(c.lo) + ", " + std::to_string(c.hi) + "]";
    k.tol = {0.5, 0, 0};
    cases.push_back(k);
  }
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"f32", "u32"}, {"u32", "f32"}, {"i32", "u32"}, {"f32", "i32"}}) {
    Case k = unary("bitcast", from, "", {"", -1000, 1000}, to);
    if (from == "u32") k.inputs[0] = {"u32", 1065353216, 1200000000};  // ordinary float bit patterns
    k.tol = {0, 0, 0};
    cases.push_back(k);
  }
  cases.push_back({"const", {{"i32", 0, 5}}, "f32",
                   "    %c = const {value = -2.5} : f32\n"
                   "    %d = const {value = 7} : i32\n"
                   "    %s = add %x0, %d : i32\n"
                   "    %f = cast %s : f32\n"
                   "    %r = mul %f, %c : f32\n"});
  cases.push_back({"const u64", {{"u64", 0, 5}}, "u64",
                   "    %c = const {value = 18446744073709551615} : u64\n"
                   "    %r = xor %x0, %c : u64\n",
                   "u32", {"u32", 0, 0}, "", "int64"});
  check(cases);
}

TEST_F(VulkanDifferential, Vectors) {
  std::vector<Case> cases;
  for (std::string t : {"vec<f32, 2>", "vec<f32, 3>", "vec<f32, 4>", "vec<i32, 4>", "vec<u32, 2>"}) {
    bool isF = t.find("f32") != std::string::npos;
    Input in{t, -100, 100};
    for (const char* op : {"add", "sub", "mul", "min", "max"}) cases.push_back(binary(op, t, "", in, in));
    if (!isF) cases.push_back(binary("xor", t, "", in, in));
    cases.push_back(unary("neg", t, "", in));
    std::string s = isF ? "f32" : t.find("i32") != std::string::npos ? "i32" : "u32";
    cases.push_back({"vec.extract/insert " + t, {in, {s, -100, 100}}, t,
                     "    %e = vec.extract %x0 {index = 1} : " + s + "\n"
                     "    %w = vec.insert %x0, %x1 {index = 0} : " + t + "\n"
                     "    %r = vec.insert %w, %e {index = 1} : " + t + "\n"});
  }
  cases.push_back({"vec.make", {{"f32", -10, 10}, {"f32", -10, 10}}, "vec<f32, 4>",
                   "    %r = vec.make %x0, %x1, %x1, %x0 : vec<f32, 4>\n"});
  cases.push_back({"dot", {{"vec<f32, 4>", -10, 10}, {"vec<f32, 4>", -10, 10}}, "f32",
                   "    %r = dot %x0, %x1 : f32\n"});
  cases.push_back({"cross", {{"vec<f32, 3>", -10, 10}, {"vec<f32, 3>", -10, 10}}, "vec<f32, 3>",
                   "    %r = cross %x0, %x1 : vec<f32, 3>\n"});
  // dot and cross cancel: their error is an ulp of the products (up to 100),
  // and a GPU may fuse a multiply and an add.
  cases[cases.size() - 2].tol = cases.back().tol = {4, 1e-5, 1e-4};
  cases.push_back({"length", {{"vec<f32, 3>", -10, 10}}, "f32", "    %r = length %x0 : f32\n"});
  cases.push_back({"normalize", {{"vec<f32, 4>", 0.5, 10}}, "vec<f32, 4>", "    %r = normalize %x0 : vec<f32, 4>\n"});
  cases.push_back({"vector compare", {{"vec<f32, 2>", 0, 3}, {"vec<f32, 2>", 0, 3}}, "vec<bool, 2>",
                   "    %r = lt %x0, %x1 : vec<bool, 2>\n"});
  check(cases);
}

TEST_F(VulkanDifferential, StructsArraysAndSums) {
  std::vector<Case> cases;
  cases.push_back({"struct.make/extract/insert", {{"f32", -10, 10}, {"i32", -10, 10}}, "f32",
                   "    %s = struct.make %x0, %x1 : struct<f32, i32>\n"
                   "    %two = const {value = 2.0} : f32\n"
                   "    %s2 = struct.insert %s, %two {index = 0} : struct<f32, i32>\n"
                   "    %a = struct.extract %s {index = 0} : f32\n"
                   "    %b = struct.extract %s2 {index = 0} : f32\n"
                   "    %c = struct.extract %s2 {index = 1} : i32\n"
                   "    %cf = cast %c : f32\n"
                   "    %ab = mul %a, %b : f32\n"
                   "    %r = add %ab, %cf : f32\n"});
  cases.push_back({"struct.unpack", {{"u32", 0, 100}, {"u32", 0, 100}}, "u32",
                   "    %s = struct.make %x0, %x1 : struct<u32, u32>\n"
                   "    %p, %q = struct.unpack %s : u32, u32\n"
                   "    %r = sub %p, %q : u32\n"});
  cases.push_back({"struct in memory", {{"struct<f32, u32>", 0, 100}}, "struct<u32, f32>",
                   "    %a = struct.extract %x0 {index = 0} : f32\n"
                   "    %b = struct.extract %x0 {index = 1} : u32\n"
                   "    %r = struct.make %b, %a : struct<u32, f32>\n"});
  cases.push_back({"array.make/get/set (dynamic index)", {{"i32", -50, 50}, {"u32", 0, 3}}, "i32",
                   "    %z = const {value = 0} : i32\n"
                   "    %arr = array.make %x0, %z, %x0, %z : array<i32, 4>\n"
                   "    %seven = const {value = 7} : i32\n"
                   "    %arr2 = array.set %arr, %x1, %seven : array<i32, 4>\n"
                   "    %one = const {value = 1} : u32\n"
                   "    %j = xor %x1, %one : u32\n"
                   "    %a = array.get %arr2, %x1 : i32\n"
                   "    %b = array.get %arr2, %j : i32\n"
                   "    %r = sub %a, %b : i32\n"});
  cases.push_back({"array in memory", {{"array<u32, 3>", 0, 1000}}, "array<u32, 3>",
                   "    %zero = const {value = 0} : u32\n"
                   "    %two = const {value = 2} : u32\n"
                   "    %a = array.get %x0, %zero : u32\n"
                   "    %b = array.get %x0, %two : u32\n"
                   "    %t = array.set %x0, %zero, %b : array<u32, 3>\n"
                   "    %r = array.set %t, %two, %a : array<u32, 3>\n"});
  cases.push_back({"sum.make/tag/match", {{"i32", -100, 100}, {"f32", -100, 100}}, "f32",
                   "    %zero = const {value = 0} : i32\n"
                   "    %neg = lt %x0, %zero : bool\n"
                   "    %s = if %neg : sum<i32, f32> {\n"
                   "      %a = sum.make %x0 {tag = 0} : sum<i32, f32>\n"
                   "      yield %a\n"
                   "    } {\n"
                   "      %b = sum.make %x1 {tag = 1} : sum<i32, f32>\n"
                   "      yield %b\n"
                   "    }\n"
                   "    %tag = sum.tag %s : u32\n"
                   "    %m = match %s : f32 { |%p: i32|\n"
                   "      %pf = cast %p : f32\n"
                   "      yield %pf\n"
                   "    } { |%q: f32|\n"
                   "      %q2 = add %q, %q : f32\n"
                   "      yield %q2\n"
                   "    }\n"
                   "    %tf = cast %tag : f32\n"
                   "    %r = add %m, %tf : f32\n"});
  check(cases);
}

TEST_F(VulkanDifferential, ControlFlowAndCalls) {
  std::vector<Case> cases;
  cases.push_back({"if with results", {{"i32", -100, 100}}, "i32",
                   "    %zero = const {value = 0} : i32\n"
                   "    %c = lt %x0, %zero : bool\n"
                   "    %r = if %c : i32 {\n"
                   "      %a = neg %x0 : i32\n"
                   "      yield %a\n"
                   "    } {\n"
                   "      %b = add %x0, %x0 : i32\n"
                   "      yield %b\n"
                   "    }\n"});
  cases.push_back({"for with carried values", {{"u32", 0, 40}}, "u32",
                   "    %zero = const {value = 0} : u32\n"
                   "    %one = const {value = 1} : u32\n"
                   "    %s, %p = for %zero, %x0, %one, %zero, %one : u32, u32 { |%k: u32, %sum: u32, %prod: u32|\n"
                   "      %sum2 = add %sum, %k : u32\n"
                   "      %three = const {value = 3} : u32\n"
                   "      %prod2 = mul %prod, %three : u32\n"
                   "      yield %sum2, %prod2\n"
                   "    }\n"
                   "    %r = xor %s, %p : u32\n"});
  cases.push_back({"for with a negative step", {{"i32", -20, 20}}, "i32",
                   "    %lo = const {value = -10} : i32\n"
                   "    %step = const {value = -3} : i32\n"
                   "    %zero = const {value = 0} : i32\n"
                   "    %r = for %x0, %lo, %step, %zero : i32 { |%k: i32, %sum: i32|\n"
                   "      %sum2 = add %sum, %k : i32\n"
                   "      yield %sum2\n"
                   "    }\n"});
  cases.push_back({"while (collatz steps)", {{"u32", 1, 1000}}, "u32",
                   "    %zero = const {value = 0} : u32\n"
                   "    %one = const {value = 1} : u32\n"
                   "    %two = const {value = 2} : u32\n"
                   "    %three = const {value = 3} : u32\n"
                   "    %v, %r = while %x0, %zero : u32, u32 { |%a: u32, %c: u32|\n"
                   "      %more = gt %a, %one : bool\n"
                   "      condition %more, %a, %c\n"
                   "    } { |%b: u32, %d: u32|\n"
                   "      %m = rem %b, %two : u32\n"
                   "      %even = eq %m, %zero : bool\n"
                   "      %next = if %even : u32 {\n"
                   "        %h = div %b, %two : u32\n"
                   "        yield %h\n"
                   "      } {\n"
                   "        %t = mul %b, %three : u32\n"
                   "        %t1 = add %t, %one : u32\n"
                   "        yield %t1\n"
                   "      }\n"
                   "      %d1 = add %d, %one : u32\n"
                   "      yield %next, %d1\n"
                   "    }\n"});
  cases.push_back({"call a device function", {{"f32", -10, 10}, {"f32", -10, 10}}, "f32",
                   "    %r = call %x0, %x1 {callee = @fma3} : f32\n", "u32", {"u32", 0, 0},
                   "device @sq(%x: f32) -> f32 {\n"
                   "  %y = mul %x, %x : f32\n"
                   "  return %y\n"
                   "}\n"
                   "device @fma3(%a: f32, %b: f32) -> f32 {\n"
                   "  %s = call %a {callee = @sq} : f32\n"
                   "  %t = add %s, %b : f32\n"
                   "  return %t\n"
                   "}\n"});
  cases.push_back({"device function with two results", {{"i32", -100, 100}}, "i32",
                   "    %q, %m = call %x0 {callee = @divmod} : i32, i32\n"
                   "    %r = sub %q, %m : i32\n",
                   "u32", {"u32", 0, 0},
                   "device @divmod(%x: i32) -> (i32, i32) {\n"
                   "  %seven = const {value = 7} : i32\n"
                   "  %q = div %x, %seven : i32\n"
                   "  %m = rem %x, %seven : i32\n"
                   "  return %q, %m\n"
                   "}\n"});
  check(cases);
}

TEST_F(VulkanDifferential, MemoryAndAtomics) {
  std::vector<Case> cases;
  cases.push_back({"buffer.len and load at another index", {{"u32", 0, 1000}}, "u32",
                   "    %one = const {value = 1} : u32\n"
                   "    %j0 = add %i, %one : u32\n"
                   "    %j = rem %j0, %n : u32\n"
                   "    %y = load %a0, %j : u32\n"
                   "    %len = buffer.len %a0 : u32\n"
                   "    %r = add %y, %len : u32\n"});
  cases.push_back({"store to acc", {{"f32", -10, 10}}, "f32",
                   "    store %acc, %i, %x0\n"
                   "    %r = load %acc, %i : f32\n",
                   "f32", {"f32", 0, 0}});
  // Contended atomics: every invocation hits one of 4 slots; the final
  // values do not depend on the order (the old values do, so they are not stored).
  for (std::string t : {"u32", "i32"})
    for (std::string op : {"atomic.add", "atomic.min", "atomic.max"}) {
      cases.push_back({op + " " + t + " (contended)", {{t, -1000, 1000}}, t,
                       "    %four = const {value = 4} : u32\n"
                       "    %slot = rem %i, %four : u32\n"
                       "    %old = " + op + " %acc, %slot, %x0 : " + t + "\n"
                       "    %r = add %x0, %x0 : " + t + "\n",
                       t, {t, -100, 100}});
      if (t == "u32") cases.back().inputs[0].lo = cases.back().accInit.lo = 0;
    }
  // Uncontended: the old value is deterministic.
  for (std::string op : {"atomic.add", "atomic.min", "atomic.max", "atomic.xchg"})
    cases.push_back({op + " i32 (own slot)", {{"i32", -1000, 1000}}, "i32",
                     "    %r = " + op + " %acc, %i, %x0 : i32\n", "i32", {"i32", -1000, 1000}});
  cases.push_back({"atomic.cmpxchg (own slot)", {{"u32", 0, 3}, {"u32", 0, 1000}}, "u32",
                   "    %r = atomic.cmpxchg %acc, %i, %x0, %x1 : u32\n", "u32", {"u32", 0, 3}});
  cases.push_back({"atomic.add f32 (contended, exact values)", {{"i32", -64, 64}}, "f32",
                   "    %v = cast %x0 : f32\n"
                   "    %four = const {value = 4} : u32\n"
                   "    %slot = rem %i, %four : u32\n"
                   "    %old = atomic.add %acc, %slot, %v : f32\n"
                   "    %r = add %v, %v : f32\n",
                   "f32", {"f32", 0, 0}});
  cases.push_back({"atomic.add u64", {{"u64", 0, 1e12}}, "u64",
                   "    %four = const {value = 4} : u32\n"
                   "    %slot = rem %i, %four : u32\n"
                   "    %old = atomic.add %acc, %slot, %x0 : u64\n"
                   "    %r = add %x0, %x0 : u64\n",
                   "u64", {"u64", 0, 1e12}, "", "atomicInt64"});
  check(cases);
}

// vec.load and vec.store: invocation i reads vector i / N of its input
// (elements N(i/N) .. N(i/N)+N-1, 200 elements hold 50 vectors of 4) and the
// first invocation of every group of N writes vector i / N of %acc. On
// lavapipe the f32/i32/f64 accesses go through the aliased vector view of
// the binding (its bindings start at multiples of 16 bytes).
TEST_F(VulkanDifferential, VectorAccess) {
  std::vector<Case> cases;
  auto lanes = [](const std::string& t, int n, const std::string& f) {
    std::string s = "    %lanes = const {value = " + std::to_string(n) + "} : u32\n"
                    "    %q = div %i, %lanes : u32\n"
                    "    %v = vec.load %a0, %q : vec<" + t + ", " + std::to_string(n) + ">\n";
    s += "    %r0 = vec.extract %v {index = 0} : " + t + "\n";
    for (int k = 1; k < n; ++k) {
      std::string e = "%e" + std::to_string(k);
      s += "    " + e + " = vec.extract %v {index = " + std::to_string(k) + "} : " + t + "\n";
      s += "    %r" + std::to_string(k) + " = " + f + " %r" + std::to_string(k - 1) + ", " + e + " : " + t + "\n";
    }
    return s + "    %r = add %r" + std::to_string(n - 1) + ", %x0 : " + t + "\n";
  };
  auto store = [](const std::string& t, int n) {
    std::string s = "    %slot = rem %i, %lanes : u32\n"
                    "    %zero = const {value = 0} : u32\n"
                    "    %lead = eq %slot, %zero : bool\n"
                    "    if %lead {\n"
                    "      %w = vec.make";
    for (int k = 0; k < n; ++k) s += std::string(k ? "," : "") + " %r";
    return s + " : vec<" + t + ", " + std::to_string(n) + ">\n"
               "      vec.store %acc, %q, %w\n"
               "      yield\n"
               "    } {\n"
               "      yield\n"
               "    }\n";
  };
  cases.push_back({"vec.load f32 x4", {{"f32", -10, 10}}, "f32", lanes("f32", 4, "sub")});
  cases.push_back({"vec.load i32 x2, vec.store", {{"i32", -1000, 1000}}, "i32", lanes("i32", 2, "mul") + store("i32", 2),
                   "i32", {"i32", 0, 0}});
  cases.push_back({"vec.load u32 x4, vec.store", {{"u32", 0, 1000}}, "u32", lanes("u32", 4, "max") + store("u32", 4),
                   "u32", {"u32", 0, 0}});
  cases.push_back({"vec.load f32 x4, vec.store", {{"f32", -10, 10}}, "f32", lanes("f32", 4, "add") + store("f32", 4),
                   "f32", {"f32", 0, 0}});
  cases.push_back({"vec.load f64 x2, vec.store", {{"f64", -10, 10}}, "f64", lanes("f64", 2, "mul") + store("f64", 2),
                   "f64", {"f64", 0, 0}, "", "float64"});
  cases.push_back({"vec.load f16 x4, vec.store", {{"f16", -4, 4}}, "f16", lanes("f16", 4, "max") + store("f16", 4),
                   "f16", {"f16", 0, 0}, "", "float16"});
  check(cases);
}

// The float atomic add of a device without the native instruction (masked
// off here) is a compare-exchange loop; it must give the same sums.
TEST_F(VulkanDifferential, FloatAtomicAddWithoutNativeSupport) {
  runtime::VulkanOptions o;
  o.validation = validationWanted();
  o.cacheDir = "off";
  o.withoutCaps = {"atomicFloat32Add", "atomicFloat64Add"};
  auto dev = runtime::VulkanDevice::open(o);
  ASSERT_TRUE(dev) << dev.error().message;
  std::swap(vk_, *dev);
  check({{"atomic.add f32 via compare-exchange", {{"i32", -64, 64}}, "f32",
          "    %v = cast %x0 : f32\n"
          "    %four = const {value = 4} : u32\n"
          "    %slot = rem %i, %four : u32\n"
          "    %old = atomic.add %acc, %slot, %v : f32\n"
          "    %r = add %v, %v : f32\n",
          "f32", {"f32", 0, 0}}});
  std::swap(vk_, *dev);
}

TEST_F(VulkanDifferential, Builtins) {
  std::vector<Case> cases;
  for (std::string b : {"global_id", "local_id", "workgroup_id", "num_workgroups", "workgroup_size"})
    for (int dim = 0; dim < 3; ++dim)
      cases.push_back({b + " " + std::to_string(dim), {}, "u32",
                       "    %r = " + b + " {dim = " + std::to_string(dim) + "} : u32\n"});
  // Subgroup numbering depends on the subgroup size: compared with the
  // interpreter only where the device's size is the interpreter's.
  for (std::string b : {"subgroup_size", "subgroup_id", "subgroup_local_id"}) {
    cases.push_back({b, {}, "u32", "    %r = " + b + " : u32\n"});
    cases.back().needs = "subgroup8";
  }
  check(cases);
}

// Workgroup memory, barriers and a two-level tree: kernels written out in
// full (the table's kernels have no room for workgroup.alloc at the top).
TEST_F(VulkanDifferential, WorkgroupMemoryKernels) {
  const char* text =
      "kernel @k(%in: buffer<f32, device, read>, %out: buffer<f32, device, write>, %acc: buffer<u32, device, write>) "
      "workgroup(64, 1, 1) {\n"
      "  %s = workgroup.alloc {size = 64} : buffer<f32, workgroup, write>\n"
      "  %cnt = workgroup.alloc {size = 1} : buffer<u32, workgroup, write>\n"
      "  %lid = local_id {dim = 0} : u32\n"
      "  %gid = global_id {dim = 0} : u32\n"
      "  %zero = const {value = 0} : u32\n"
      "  %one = const {value = 1} : u32\n"
      "  %last = const {value = 63} : u32\n"
      "  %n = buffer.len %in : u32\n"
      "  %inside = lt %gid, %n : bool\n"
      "  %v = if %inside : f32 {\n"
      "    %x = load %in, %gid : f32\n"
      "    yield %x\n"
      "  } {\n"
      "    %z = const {value = 0.0} : f32\n"
      "    yield %z\n"
      "  }\n"
      "  store %s, %lid, %v\n"
      "  %first = eq %lid, %zero : bool\n"
      "  if %first {\n"
      "    store %cnt, %zero, %zero\n"
      "    yield\n"
      "  } {\n"
      "    yield\n"
      "  }\n"
      "  barrier\n"
      "  %old = atomic.add %cnt, %zero, %one : u32\n"
      "  %j = sub %last, %lid : u32\n"
      "  %w = load %s, %j : f32\n"
      "  barrier\n"
      "  if %inside {\n"
      "    store %out, %gid, %w\n"
      "    %c = load %cnt, %zero : u32\n"
      "    store %acc, %gid, %c\n"
      "    yield\n"
      "  } {\n"
      "    yield\n"
      "  }\n"
      "  return\n"
      "}\n";
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "wg.eir");
  ASSERT_TRUE(m) << m.error().str();
  ASSERT_TRUE(ir::verify(**m));
  std::mt19937_64 rng(7);
  std::vector<interp::RtValue> vals;
  for (uint32_t e = 0; e < kCount; ++e) vals.push_back(randomValue(ctx.f32(), {"f32", -100, 100}, rng));
  std::vector<interp::BufferData> inputs = {bufferOf(ctx.f32(), vals)};
  interp::BufferData acc = bufferOf(ctx.u32(), std::vector<interp::RtValue>(kCount, interp::RtValue::ofInt(ctx.u32(), 0)));
  runtime::InterpDevice ref;
  auto want = runCase(ref, **m, inputs, acc);
  ASSERT_TRUE(want) << want.error().str();
  auto got = runCase(*vk_, **m, inputs, acc);
  ASSERT_TRUE(got) << got.error().str();
  for (uint32_t e = 0; e < kCount; ++e) {
    EXPECT_EQ(want->first.elems[e], got->first.elems[e]) << e;
    EXPECT_EQ(want->second.elems[e], got->second.elems[e]) << e;  // 64: all of the workgroup counted
  }
  EXPECT_EQ(got->second.elems[0].i, 64);
  for (const std::string& msg : vk_->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
}

// The examples' host programs give the same results on both targets (compared
// by ephc diff's rules).
TEST_F(VulkanDifferential, Examples) {
  for (auto [file, args] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"saxpy.eir", {}}, {"reduce.eir", {}}, {"histogram.eir", {}}, {"collatz.eir", {"27"}}}) {
    SCOPED_TRACE(file);
    std::ifstream in(sourceDir() + "/examples/ir/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    ir::Context ctx;
    auto m = ir::parseModule(ctx, ss.str(), file);
    ASSERT_TRUE(m);
    const ir::Function& main = *(*m)->lookup("main");
    auto run = [&](runtime::Device& dev, interp::Interpreter& interp) {
      std::vector<interp::RtValue> vals;
      for (size_t i = 0; i < args.size(); ++i)
        vals.push_back(*interp::parseValue(args[i], main.paramTypes()[i], interp.memory()));
      return runtime::runHost(dev, interp, main, vals);
    };
    runtime::InterpDevice ref;
    interp::Interpreter a(**m), b(**m);
    auto ra = run(ref, a);
    auto rb = run(*vk_, b);
    ASSERT_TRUE(ra) << ra.error().str();
    ASSERT_TRUE(rb) << rb.error().str();
    auto d = runtime::compareResults(*ra, a.memory(), *rb, b.memory(), {});
    EXPECT_FALSE(d) << "result " << d->result << " element " << d->element << ": " << d->a << " vs " << d->b;
  }
  for (const std::string& msg : vk_->takeValidationMessages()) ADD_FAILURE() << "validation: " << msg;
}

}  // namespace
}  // namespace eph::test

#endif  // EPH_HAVE_VULKAN
