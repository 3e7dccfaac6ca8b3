// The autodiff pass (passes/Autodiff.h): every op with derivative rules, the
// kink conventions, structured control flow, calls, custom ops, random
// expression graphs and a 20,000-op chain. Each generated @f.vjp / @f.jvp is
// verified, printed and parsed back, then called from small kernels that run
// on the interpreter, the cpu target and Vulkan; the results are compared with
// central finite differences of @f in f64 on the interpreter, and with each
// other (jvp . e_i == row i of the vjp).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>

#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/interp/Exec.h"
#include "passes/Autodiff.h"
#include "runtime/InterpDevice.h"
#include "tests/support/DeviceRun.h"
#include "tests/support/VulkanTest.h"
#ifdef EPH_HAVE_LLVM
#include "runtime/cpu/CpuDevice.h"
#endif

namespace eph::test {
namespace {

struct Target {
  std::string name;
  runtime::Device* dev;
};

// ---- a module with @f, its derivatives and kernels that call them ------------

struct Prepared {
  std::unique_ptr<ir::Context> ctx = std::make_unique<ir::Context>();
  std::unique_ptr<ir::Module> m;
  std::string text;
  unsigned n = 0;  // parameters of @f (all of type T)
  const ir::Type* t = nullptr;
};

std::string kernels(unsigned n, const std::string& t, const std::string& vjpType, const std::string& jvpType) {
  auto loads = [&](const std::string& buf, const std::string& prefix) {
    std::string s;
    for (unsigned k = 0; k < n; ++k) {
      std::string ks = std::to_string(k);
      s += "  %" + prefix + "o" + ks + " = const {value = " + ks + "} : u32\n";
      s += "  %" + prefix + "a" + ks + " = add %base, %" + prefix + "o" + ks + " : u32\n";
      s += "  %" + prefix + ks + " = load %" + buf + ", %" + prefix + "a" + ks + " : " + t + "\n";
    }
    return s;
  };
  auto args = [&](const std::string& prefix) {
    std::string s;
    for (unsigned k = 0; k < n; ++k) s += (k ? ", %" : "%") + prefix + std::to_string(k);
    return s;
  };
  std::string head = "  %p = workgroup_id {dim = 0} : u32\n  %n = const {value = " + std::to_string(n) +
                     "} : u32\n  %base = mul %p, %n : u32\n";
  std::string in = "%in: buffer<" + t + ", device, read>";
  std::string out = "%out: buffer<" + t + ", device, write>";
  std::string s;
  s += "kernel @kval(" + in + ", " + out + ") workgroup(1, 1, 1) {\n" + head + loads("in", "x") +
       "  %r = call " + args("x") + " {callee = @f} : " + t + "\n  store %out, %p, %r\n  return\n}\n";
  // vjp: value, then the gradient (seed 1), n + 1 values per point.
  s += "kernel @kvjp(" + in + ", " + out + ") workgroup(1, 1, 1) {\n" + head + loads("in", "x") +
       "  %one = const {value = 1.0} : " + t + "\n  %s = call " + args("x") + ", %one {callee = @f.vjp} : " +
       vjpType + "\n  %n1 = const {value = " + std::to_string(n + 1) + "} : u32\n  %ob = mul %p, %n1 : u32\n";
  for (unsigned k = 0; k <= n; ++k) {
    std::string ks = std::to_string(k);
    s += "  %g" + ks + " = struct.extract %s {index = " + ks + "} : " + t + "\n  %c" + ks + " = const {value = " +
         ks + "} : u32\n  %i" + ks + " = add %ob, %c" + ks + " : u32\n  store %out, %i" + ks + ", %g" + ks + "\n";
  }
  s += "  return\n}\n";
  // jvp: value and tangent in the direction read from %dir.
  s += "kernel @kjvp(" + in + ", %dir: buffer<" + t + ", device, read>, " + out + ") workgroup(1, 1, 1) {\n" +
       head + loads("in", "x") + loads("dir", "d") + "  %s = call " + args("x") + ", " + args("d") +
       " {callee = @f.jvp} : " + jvpType +
       "\n  %v = struct.extract %s {index = 0} : " + t + "\n  %dv = struct.extract %s {index = 1} : " + t +
       "\n  %two = const {value = 2} : u32\n  %ob = mul %p, %two : u32\n  store %out, %ob, %v\n"
       "  %c1 = const {value = 1} : u32\n  %ob1 = add %ob, %c1 : u32\n  store %out, %ob1, %dv\n  return\n}\n";
  return s;
}

// Parses `fn` (a device @f over n parameters of type t), adds @f.vjp and
// @f.jvp with respect to all of them, verifies, prints, adds the kernels and
// parses the whole module back.
std::unique_ptr<Prepared> prepare(const std::string& fn, const std::string& t) {
  auto p = std::make_unique<Prepared>();
  auto m = ir::parseModule(*p->ctx, fn, "f.eir");
  if (!m) {
    ADD_FAILURE() << m.error().str() << "\n" << fn;
    return nullptr;
  }
  ir::Function* f = (*m)->lookup("f");
  p->n = static_cast<unsigned>(f->paramTypes().size());
  auto vjp = passes::reverseDerivative(**m, *f, std::vector<bool>(p->n, true));
  if (!vjp) {
    ADD_FAILURE() << vjp.error().str() << "\n" << fn;
    return nullptr;
  }
  auto jvp = passes::forwardDerivative(**m, *f, std::vector<bool>(p->n, true));
  if (!jvp) {
    ADD_FAILURE() << jvp.error().str() << "\n" << fn;
    return nullptr;
  }
  std::string printed = ir::print(**m);
  if (Status s = ir::verify(**m); !s) {
    ADD_FAILURE() << s.error().str() << "\n" << printed;
    return nullptr;
  }
  p->text = printed + kernels(p->n, t, (*vjp)->resultTypes()[0]->str(), (*jvp)->resultTypes()[0]->str());
  auto again = ir::parseModule(*p->ctx, p->text, "prepared.eir");
  if (!again) {
    ADD_FAILURE() << again.error().str() << "\n" << p->text;
    return nullptr;
  }
  if (Status s = ir::verify(**again); !s) {
    ADD_FAILURE() << s.error().str() << "\n" << p->text;
    return nullptr;
  }
  p->m = std::move(*again);
  p->t = *ir::parseType(*p->ctx, t);
  return p;
}

// Runs a kernel over `points` workgroups; returns the last buffer's contents.
std::vector<double> runKernel(const Prepared& p, runtime::Device& dev, const std::string& kernel, unsigned points,
                              const std::vector<std::vector<double>>& inputs, size_t outSize) {
  std::vector<KernelArg> args;
  auto buf = [&](const std::vector<double>& xs) {
    std::vector<interp::RtValue> vs;
    for (double x : xs) vs.push_back(interp::RtValue::ofFloat(p.t, x));
    return KernelArg::ofBuffer(p.t, vs);
  };
  for (auto& in : inputs) args.push_back(buf(in));
  args.push_back(buf(std::vector<double>(outSize, 0.0)));
  auto out = runKernelOn(dev, *p.m, kernel, {points, 1, 1}, args);
  if (!out) {
    ADD_FAILURE() << kernel << ": " << out.error().str() << "\n" << p.text;
    return std::vector<double>(outSize, NAN);
  }
  std::vector<double> r;
  for (auto& e : out->back().elems) r.push_back(e.f);
  return r;
}

// The gradient (vjp) and every directional derivative (jvp . e_k) at each point.
struct Derivs {
  std::vector<double> vjp;  // points x (n + 1): value, gradient
  std::vector<double> jvp;  // points x n: d f / d x_k from the jvp
  std::vector<double> jvpValue;
};

Derivs derivatives(const Prepared& p, runtime::Device& dev, const std::vector<double>& xs) {
  unsigned n = p.n, points = static_cast<unsigned>(xs.size() / n);
  Derivs d;
  d.vjp = runKernel(p, dev, "kvjp", points, {xs}, points * (n + 1));
  d.jvp.assign(points * n, 0);
  for (unsigned k = 0; k < n; ++k) {
    std::vector<double> dir(xs.size(), 0.0);
    for (unsigned q = 0; q < points; ++q) dir[q * n + k] = 1;
    auto out = runKernel(p, dev, "kjvp", points, {xs, dir}, points * 2);
    d.jvpValue.resize(points);
    for (unsigned q = 0; q < points; ++q) {
      d.jvp[q * n + k] = out[q * 2 + 1];
      d.jvpValue[q] = out[q * 2];
    }
  }
  return d;
}

// Central differences of @f on the interpreter: points x n.
std::vector<double> finiteDifferences(const Prepared& p, const std::vector<double>& xs) {
  unsigned n = p.n, points = static_cast<unsigned>(xs.size() / n);
  std::vector<double> shifted, hs;
  for (unsigned q = 0; q < points; ++q)
    for (unsigned k = 0; k < n; ++k) {
      double h = 1e-6 * std::max(1.0, std::fabs(xs[q * n + k]));
      hs.push_back(h);
      for (double sgn : {1.0, -1.0})
        for (unsigned j = 0; j < n; ++j) shifted.push_back(xs[q * n + j] + (j == k ? sgn * h : 0));
    }
  runtime::InterpDevice interp;
  auto f = runKernel(p, interp, "kval", points * n * 2, {shifted}, points * n * 2);
  std::vector<double> fd;
  for (unsigned i = 0; i < points * n; ++i) fd.push_back((f[2 * i] - f[2 * i + 1]) / (2 * hs[i]));
  return fd;
}

bool close(double a, double b, double rel, double abs = 0) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= std::max(abs, rel * std::max({1.0, std::fabs(a), std::fabs(b)}));
}

class Autodiff : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
#ifdef EPH_HAVE_VULKAN
    if (runtime::listVulkanDevices()) vk_ = openValidated();
#endif
  }
  static void TearDownTestSuite() {
#ifdef EPH_HAVE_VULKAN
    vk_.reset();
#endif
  }

  // interp, cpu and Vulkan (when this build and machine have them; Vulkan only
  // for f64 where the device has float64).
  std::vector<Target> targets(bool f64) {
    std::vector<Target> ts = {{"interp", &interp_}};
#ifdef EPH_HAVE_LLVM
    ts.push_back({"cpu", &cpu_});
#endif
#ifdef EPH_HAVE_VULKAN
    if (!vk_) {
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      if (req && std::string(req) == "1") ADD_FAILURE() << "no Vulkan device";
    } else if (!f64 || vk_->caps().float64) {
      ts.push_back({"vulkan", vk_.get()});
    }
#endif
    return ts;
  }

  // Random points in the domain of each parameter.
  static std::vector<double> points(const std::vector<std::pair<double, double>>& domain, unsigned count,
                                    unsigned seed) {
    std::mt19937_64 rng(seed);
    std::vector<double> xs;
    for (unsigned q = 0; q < count; ++q)
      for (auto [lo, hi] : domain) xs.push_back(std::uniform_real_distribution<double>(lo, hi)(rng));
    return xs;
  }

  // Checks @f (f64) on every target against finite differences, and jvp
  // against vjp. Returns the interpreter's vjp output.
  std::vector<double> checkF64(const std::string& fn, const std::vector<std::pair<double, double>>& domain,
                               unsigned seed, unsigned count = 12, double rel = 1e-6) {
    SCOPED_TRACE(fn);
    auto p = prepare(fn, "f64");
    if (!p) return {};
    std::vector<double> xs = points(domain, count, seed);
    std::vector<double> fd = finiteDifferences(*p, xs);
    runtime::InterpDevice ref;
    std::vector<double> val = runKernel(*p, ref, "kval", count, {xs}, count);
    std::vector<double> first;
    unsigned n = p->n;
    for (const Target& t : targets(true)) {
      SCOPED_TRACE(t.name);
      Derivs d = derivatives(*p, *t.dev, xs);
      if (first.empty()) first = d.vjp;
      for (unsigned q = 0; q < count; ++q) {
        std::string at = "point " + std::to_string(q) + ":";
        for (unsigned k = 0; k < n; ++k) at += " " + std::to_string(xs[q * n + k]);
        EXPECT_TRUE(close(d.vjp[q * (n + 1)], val[q], 1e-9)) << at << " value " << d.vjp[q * (n + 1)] << " vs " << val[q];
        EXPECT_TRUE(close(d.jvpValue[q], val[q], 1e-9)) << at << " jvp value " << d.jvpValue[q] << " vs " << val[q];
        for (unsigned k = 0; k < n; ++k) {
          double g = d.vjp[q * (n + 1) + 1 + k], j = d.jvp[q * n + k], f = fd[q * n + k];
          EXPECT_TRUE(close(g, f, rel)) << at << " d/dx" << k << ": vjp " << g << ", finite differences " << f;
          EXPECT_TRUE(close(j, g, 1e-9)) << at << " d/dx" << k << ": jvp " << j << ", vjp " << g;
          EXPECT_TRUE(close(g, first[q * (n + 1) + 1 + k], 1e-6)) << at << " d/dx" << k << " vs the interpreter";
        }
      }
    }
    return first;
  }

  // The vjp and jvp at one point on every target: each must equal `want`
  // exactly (NaN only where want is NaN).
  void checkExact(const std::string& fn, const std::string& t, const std::vector<double>& x,
                  const std::vector<double>& want, bool vulkan = true) {
    SCOPED_TRACE(fn);
    auto p = prepare(fn, t);
    if (!p) return;
    for (const Target& tg : targets(t == "f64")) {
      if (!vulkan && tg.name == "vulkan") continue;
      SCOPED_TRACE(tg.name);
      Derivs d = derivatives(*p, *tg.dev, x);
      for (unsigned k = 0; k < p->n; ++k) {
        double g = d.vjp[1 + k], j = d.jvp[k];
        EXPECT_TRUE(close(g, want[k], 0)) << "d/dx" << k << ": vjp " << g << ", want " << want[k];
        EXPECT_TRUE(close(j, want[k], 0)) << "d/dx" << k << ": jvp " << j << ", want " << want[k];
      }
    }
  }

  runtime::InterpDevice interp_;
#ifdef EPH_HAVE_LLVM
  runtime::CpuDevice cpu_;
#endif
#ifdef EPH_HAVE_VULKAN
  static std::unique_ptr<runtime::VulkanDevice> vk_;
#endif
};

#ifdef EPH_HAVE_VULKAN
std::unique_ptr<runtime::VulkanDevice> Autodiff::vk_;
#endif

std::string unaryFn(const std::string& op, const std::string& t = "f64") {
  return "device @f(%x: " + t + ") -> " + t + " {\n  %r = " + op + " %x : " + t + "\n  return %r\n}\n";
}
std::string binaryFn(const std::string& op, const std::string& t = "f64") {
  return "device @f(%x: " + t + ", %y: " + t + ") -> " + t + " {\n  %r = " + op + " %x, %y : " + t +
         "\n  return %r\n}\n";
}

using Domain = std::vector<std::pair<double, double>>;

TEST_F(Autodiff, EveryUnaryOpAgreesWithFiniteDifferences) {
  const std::vector<std::pair<std::string, std::pair<double, double>>> ops = {
      {"neg", {-3, 3}},     {"abs", {-3, 3}},      {"sqrt", {0.1, 4}},   {"rsqrt", {0.1, 4}},  {"exp", {-3, 3}},
      {"log", {0.1, 5}},    {"sin", {-3, 3}},      {"cos", {-3, 3}},     {"tan", {-1.2, 1.2}}, {"tanh", {-3, 3}},
      {"floor", {-3, 3}},   {"ceil", {-3, 3}},     {"round", {-3, 3}},   {"trunc", {-3, 3}},   {"sign", {-3, 3}},
      {"asin", {-0.9, 0.9}}, {"acos", {-0.9, 0.9}}, {"atan", {-3, 3}},   {"sinh", {-3, 3}},    {"cosh", {-3, 3}},
      {"asinh", {-3, 3}},   {"acosh", {1.1, 4}},   {"atanh", {-0.9, 0.9}}, {"erf", {-2, 2}},   {"exp2", {-3, 3}},
      {"log2", {0.1, 5}},   {"log1p", {-0.9, 3}},  {"expm1", {-3, 3}},
  };
  unsigned seed = 100;
  for (auto& [op, dom] : ops) checkF64(unaryFn(op), {dom}, ++seed);
}

TEST_F(Autodiff, EveryBinaryOpAgreesWithFiniteDifferences) {
  const std::vector<std::pair<std::string, Domain>> ops = {
      {"add", {{-3, 3}, {-3, 3}}},   {"sub", {{-3, 3}, {-3, 3}}},      {"mul", {{-3, 3}, {-3, 3}}},
      {"div", {{-3, 3}, {0.5, 3}}},     {"min", {{-3, 3}, {-3, 3}}},
      {"max", {{-3, 3}, {-3, 3}}},   {"pow", {{0.2, 3}, {-2, 2}}},     {"atan2", {{0.2, 3}, {-3, 3}}},
      {"copysign", {{-3, 3}, {-3, 3}}},
  };
  unsigned seed = 200;
  for (auto& [op, dom] : ops) checkF64(binaryFn(op), dom, ++seed);
  // rem: 1 to a; d/db is 0 by convention (not -trunc(a/b)), so b is a constant here.
  checkF64("device @f(%x: f64) -> f64 {\n  %b = const {value = 2.5} : f64\n  %r = rem %x, %b : f64\n"
           "  return %r\n}\n",
           {{-10, 10}}, ++seed);
  checkF64("device @f(%x: f64, %y: f64, %z: f64) -> f64 {\n  %r = fma %x, %y, %z : f64\n  return %r\n}\n",
           {{-3, 3}, {-3, 3}, {-3, 3}}, ++seed);
  // select: the gradient goes to the chosen branch; compares have none.
  checkF64("device @f(%x: f64, %y: f64) -> f64 {\n  %c = lt %x, %y : bool\n  %t = mul %x, %y : f64\n"
           "  %e = sin %x : f64\n  %r = select %c, %t, %e : f64\n  return %r\n}\n",
           {{-3, 3}, {-3, 3}}, ++seed);
}

TEST_F(Autodiff, VectorOpsAgreeWithFiniteDifferences) {
  std::string fn =
      "device @f(%a0: f64, %a1: f64, %a2: f64, %b0: f64, %b1: f64, %b2: f64) -> f64 {\n"
      "  %a = vec.make %a0, %a1, %a2 : vec<f64, 3>\n"
      "  %b = vec.make %b0, %b1, %b2 : vec<f64, 3>\n"
      "  %c = cross %a, %b : vec<f64, 3>\n"
      "  %nc = normalize %c : vec<f64, 3>\n"
      "  %la = length %a : f64\n"
      "  %w = vec.insert %a, %la {index = 1} : vec<f64, 3>\n"
      "  %e = vec.extract %nc {index = 2} : f64\n"
      "  %d = dot %w, %b : f64\n"
      "  %lc = length %c : f64\n"
      "  %el = mul %e, %la : f64\n"
      "  %s1 = add %d, %el : f64\n"
      "  %s2 = add %s1, %lc : f64\n"
      // Elementwise on vectors (select and compares lane by lane).
      "  %ab = mul %a, %b : vec<f64, 3>\n"
      "  %sn = sin %ab : vec<f64, 3>\n"
      "  %ns = abs %sn : vec<f64, 3>\n"
      "  %mx = max %a, %b : vec<f64, 3>\n"
      "  %pw = pow %ns, %mx : vec<f64, 3>\n"
      "  %q = dot %pw, %nc : f64\n"
      "  %r = add %s2, %q : f64\n"
      "  return %r\n}\n";
  checkF64(fn, Domain(6, {0.2, 2}), 300);
}

// The conventions at the kinks (docs/autodiff.md), exactly.
TEST_F(Autodiff, KinkConventions) {
  double inf = INFINITY;
  checkExact(unaryFn("abs"), "f64", {0.0}, {1.0});
  checkExact(unaryFn("abs"), "f64", {-2.0}, {-1.0});
  // max(0, x) at 0: 0 (a tie gives 0 to both); min likewise.
  checkExact(binaryFn("max"), "f64", {0.0, 0.0}, {0.0, 0.0});
  checkExact(binaryFn("min"), "f64", {1.5, 1.5}, {0.0, 0.0});
  checkExact(binaryFn("max"), "f64", {2.0, 1.0}, {1.0, 0.0});
  for (const char* op : {"floor", "ceil", "round", "trunc", "sign"}) {
    checkExact(unaryFn(op), "f64", {2.0}, {0.0});
    checkExact(unaryFn(op), "f64", {0.0}, {0.0});
  }
  // rem: 1 to a, 0 to b.
  checkExact(binaryFn("rem"), "f64", {7.5, 2.0}, {1.0, 0.0});
  checkExact(binaryFn("rem"), "f64", {-7.5, 2.0}, {1.0, 0.0});
  // pow at x = 0: no NaN from log(0) in d/dy; x^0 has d/dx = 0.
  checkExact(binaryFn("pow"), "f64", {0.0, 2.0}, {0.0, 0.0});
  checkExact(binaryFn("pow"), "f64", {0.0, 0.0}, {0.0, 0.0});
  checkExact(binaryFn("pow"), "f64", {2.0, 3.0}, {12.0, 8.0 * std::log(2.0)});
  // A negative base (pow is undefined there on Vulkan): d/dy is 0.
  checkExact(binaryFn("pow"), "f64", {-2.0, 2.0}, {-4.0, 0.0}, false);
  // sqrt at 0: +inf, as the formula gives.
  checkExact(unaryFn("sqrt"), "f64", {0.0}, {inf});
  checkExact(binaryFn("copysign"), "f64", {2.0, -1.0}, {-1.0, 0.0});
  checkExact(binaryFn("copysign"), "f64", {0.0, 3.0}, {1.0, 0.0});
  // select: the chosen branch only, nothing to the condition.
  std::string sel = "device @f(%x: f64, %y: f64) -> f64 {\n  %c = lt %x, %y : bool\n  %two = const {value = 2.0} : f64\n"
                    "  %three = const {value = 3.0} : f64\n  %t = mul %x, %two : f64\n  %e = mul %y, %three : f64\n"
                    "  %r = select %c, %t, %e : f64\n  return %r\n}\n";
  checkExact(sel, "f64", {1.0, 2.0}, {2.0, 0.0});
  checkExact(sel, "f64", {2.0, 1.0}, {0.0, 3.0});
  // Casts: between floats the derivative passes through; to an integer it is 0.
  checkExact("device @f(%x: f32) -> f32 {\n  %w = cast %x : f64\n  %s = mul %w, %w : f64\n"
             "  %r = cast %s : f32\n  return %r\n}\n",
             "f32", {1.5}, {3.0});
  checkExact("device @f(%x: f64) -> f64 {\n  %i = cast %x : i32\n  %b = cast %i : f64\n"
             "  %r = mul %x, %b : f64\n  return %r\n}\n",
             "f64", {2.75}, {2.0});
}

TEST_F(Autodiff, BranchesLoopsAndCalls) {
  // if: adjoints flow into the taken branch, which uses outer values.
  checkF64("device @f(%x: f64, %y: f64) -> f64 {\n"
           "  %c = gt %x, %y : bool\n"
           "  %s = sin %x : f64\n"
           "  %a, %b = if %c : f64, f64 {\n    %m = mul %s, %y : f64\n    yield %m, %x\n"
           "  } {\n    %e = exp %y : f64\n    %d = div %e, %x : f64\n    yield %d, %y\n  }\n"
           "  %r0 = mul %a, %b : f64\n  %r = add %r0, %s : f64\n  return %r\n}\n",
           {{0.5, 3}, {0.5, 3}}, 400, 16);
  // for with a fixed trip count, two carried values, an outer value used in the body.
  std::string loop =
      "device @f(%x: f64, %y: f64) -> f64 {\n"
      "  %lo = const {value = 0} : i32\n  %hi = const {value = 7} : i32\n  %st = const {value = 1} : i32\n"
      "  %a, %b = for %lo, %hi, %st, %x, %y : f64, f64 { |%i: i32, %u: f64, %v: f64|\n"
      "    %fi = cast %i : f64\n    %k = const {value = 0.25} : f64\n    %w = mul %fi, %k : f64\n"
      "    %s = sin %u : f64\n    %t = mul %s, %v : f64\n    %u2 = add %t, %w : f64\n"
      "    %c = cos %v : f64\n    %v2 = mul %c, %x : f64\n    %v3 = add %v2, %u : f64\n"
      "    yield %u2, %v3\n  }\n"
      "  %r = mul %a, %b : f64\n  return %r\n}\n";
  checkF64(loop, {{-1, 1}, {-1, 1}}, 401, 16);
  // A trip count only known at run time, a negative step, a nested if and a call.
  std::string nested =
      "device @g(%u: f64, %v: f64) -> f64 {\n  %p = mul %u, %v : f64\n  %t = tanh %p : f64\n"
      "  %r = add %t, %u : f64\n  return %r\n}\n"
      "device @f(%x: f64, %y: f64, %z: f64) -> f64 {\n"
      "  %four = const {value = 4.0} : f64\n  %z0 = mul %z, %four : f64\n  %z1 = abs %z0 : f64\n"
      "  %hi = cast %z1 : i32\n  %lo = const {value = 9} : i32\n  %st = const {value = -2} : i32\n"
      "  %a = for %lo, %hi, %st, %x : f64 { |%i: i32, %u: f64|\n"
      "    %zero = const {value = 0.0} : f64\n    %pos = gt %u, %zero : bool\n"
      "    %n = if %pos : f64 {\n      %q = call %u, %y {callee = @g} : f64\n      yield %q\n"
      "    } {\n      %q2 = mul %u, %y : f64\n      %q3 = sin %q2 : f64\n      yield %q3\n    }\n"
      "    %half = const {value = 0.5} : f64\n    %n2 = mul %n, %half : f64\n    yield %n2\n  }\n"
      "  %r = mul %a, %z : f64\n  return %r\n}\n";
  checkF64(nested, {{-1, 1}, {-1, 1}, {0.1, 2}}, 402, 16);
  // A loop inside a branch, whose trip count is 0 in the other branch.
  std::string loopInIf =
      "device @f(%x: f64, %y: f64) -> f64 {\n  %c = lt %x, %y : bool\n"
      "  %r = if %c : f64 {\n    %lo = const {value = 0} : u32\n    %hi = const {value = 5} : u32\n"
      "    %st = const {value = 2} : u32\n"
      "    %a = for %lo, %hi, %st, %y : f64 { |%i: u32, %u: f64|\n      %m = mul %u, %x : f64\n"
      "      %s = sin %m : f64\n      yield %s\n    }\n    yield %a\n  } {\n    %e = mul %x, %y : f64\n    yield %e\n  }\n"
      "  return %r\n}\n";
  checkF64(loopInIf, {{-2, 2}, {-2, 2}}, 403, 16);
  // match: the adjoint flows into the variant's region (payloads are not differentiated).
  std::string match =
      "device @f(%x: f64, %y: f64) -> f64 {\n  %c = lt %x, %y : bool\n  %k = const {value = 3} : i32\n"
      "  %s = if %c : sum<i32, i32> {\n    %a = sum.make %k {tag = 0} : sum<i32, i32>\n    yield %a\n"
      "  } {\n    %b = sum.make %k {tag = 1} : sum<i32, i32>\n    yield %b\n  }\n"
      "  %r = match %s : f64 { |%p: i32|\n    %pf = cast %p : f64\n    %q = mul %x, %pf : f64\n"
      "    %q1 = mul %q, %y : f64\n    yield %q1\n  } { |%p2: i32|\n    %e = exp %y : f64\n    %q2 = sub %e, %x : f64\n"
      "    yield %q2\n  }\n  return %r\n}\n";
  checkF64(match, {{-2, 2}, {-2, 2}}, 404, 16);
  // Nested loops: the inner loop's carried value starts from the outer one's.
  std::string nestedLoops =
      "device @f(%x: f64, %y: f64) -> f64 {\n  %lo = const {value = 0} : i64\n  %three = const {value = 3} : i64\n"
      "  %four = const {value = 4} : i64\n  %st = const {value = 1} : i64\n"
      "  %a, %b = for %lo, %three, %st, %x, %y : f64, f64 { |%i: i64, %u: f64, %v: f64|\n"
      "    %w = for %lo, %four, %st, %u : f64 { |%j: i64, %t: f64|\n      %m = mul %t, %v : f64\n"
      "      %s = sin %m : f64\n      %t2 = add %s, %x : f64\n      yield %t2\n    }\n"
      "    %v2 = mul %v, %w : f64\n    %v3 = tanh %v2 : f64\n    yield %w, %v3\n  }\n"
      "  %r = add %a, %b : f64\n  return %r\n}\n";
  checkF64(nestedLoops, {{-1, 1}, {-1, 1}}, 405, 12);
}

// Parameters and results that are not differentiated pass through; vector
// parameters get vector gradients.
TEST_F(Autodiff, MixedParametersAndResults) {
  ir::Context ctx;
  auto m = ir::parseModule(ctx,
                           "device @f(%v: vec<f64, 3>, %k: i32, %w: f64) -> (f64, i32) {\n"
                           "  %d = dot %v, %v : f64\n  %kf = cast %k : f64\n  %a = mul %d, %kf : f64\n"
                           "  %r = mul %a, %w : f64\n  return %r, %k\n}\n",
                           "mixed.eir");
  ASSERT_TRUE(m) << m.error().str();
  ir::Function* f = (*m)->lookup("f");
  auto vjp = passes::reverseDerivative(**m, *f, {true, false, false});
  ASSERT_TRUE(vjp) << vjp.error().str();
  auto jvp = passes::forwardDerivative(**m, *f, {true, false, true});
  ASSERT_TRUE(jvp) << jvp.error().str();
  Status valid = ir::verify(**m);
  ASSERT_TRUE(valid) << valid.error().str();
  EXPECT_EQ((*vjp)->type()->str(), "fn(vec<f64, 3>, i32, f64, f64) -> (struct<f64, i32, vec<f64, 3>>)");
  EXPECT_EQ((*jvp)->type()->str(), "fn(vec<f64, 3>, i32, f64, vec<f64, 3>, f64) -> (struct<f64, i32, f64>)");
  const ir::Type* f64 = ctx.f64();
  const ir::Type* v3 = ctx.vectorType(f64, 3);
  auto vec = [&](double a, double b, double c) {
    interp::RtValue v;
    v.type = v3;
    v.elems = {interp::RtValue::ofFloat(f64, a), interp::RtValue::ofFloat(f64, b), interp::RtValue::ofFloat(f64, c)};
    return v;
  };
  interp::Interpreter in(**m);
  auto r = in.call(**vjp, {vec(1, 2, 3), interp::RtValue::ofInt(ctx.i32(), 4), interp::RtValue::ofFloat(f64, 0.5),
                           interp::RtValue::ofFloat(f64, 2.0)});
  ASSERT_TRUE(r) << r.error().str();
  const interp::RtValue& out = (*r)[0];
  EXPECT_EQ(out.elems[0].f, 14 * 4 * 0.5);
  EXPECT_EQ(out.elems[1].i, 4);
  // seed * 2 v k w = 2 * 2 * 4 * 0.5 * v
  EXPECT_EQ(out.elems[2].elems[0].f, 8.0);
  EXPECT_EQ(out.elems[2].elems[1].f, 16.0);
  EXPECT_EQ(out.elems[2].elems[2].f, 24.0);
  auto t = in.call(**jvp, {vec(1, 2, 3), interp::RtValue::ofInt(ctx.i32(), 4), interp::RtValue::ofFloat(f64, 0.5),
                           vec(1, 0, 0), interp::RtValue::ofFloat(f64, 1.0)});
  ASSERT_TRUE(t) << t.error().str();
  // d/dv . e0 = 2 * 1 * 4 * 0.5 = 4; d/dw = 14 * 4 = 56.
  EXPECT_EQ((*t)[0].elems[2].f, 4.0 + 56.0);
  // Asking again returns the same function; a different wrt is an error.
  auto again = passes::reverseDerivative(**m, *f, {true, false, false});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *vjp);
  auto other = passes::reverseDerivative(**m, *f, {true, false, true});
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message.find("@f.vjp exists already with type"), std::string::npos) << other.error().message;
  EXPECT_EQ(other.error().code, "P012");
}

// ---- random expression graphs ------------------------------------------------

// A random DAG over three parameters: every node applies an op, chosen among
// smooth ones with guarded domains (and min/max/select, whose kinks random
// points miss), to earlier nodes; the result is a chain through ~depth nodes.
std::string randomGraph(std::mt19937_64& rng, unsigned depth, const std::string& t) {
  std::vector<std::string> nodes = {"%x0", "%x1", "%x2"};
  std::string body;
  unsigned tmp = 0;
  auto fresh = [&] { return "%t" + std::to_string(tmp++); };
  auto pick = [&](bool recent) {
    size_t n = nodes.size();
    size_t lo = recent && n > 3 ? n - std::min<size_t>(n, 3) : 0;
    return nodes[std::uniform_int_distribution<size_t>(lo, n - 1)(rng)];
  };
  auto emit = [&](const std::string& op, const std::string& args) {
    std::string v = fresh();
    body += "  " + v + " = " + op + " " + args + " : " + t + "\n";
    return v;
  };
  auto konst = [&](double c) {
    std::string v = fresh();
    body += "  " + v + " = const {value = " + std::to_string(c) + "} : " + t + "\n";
    return v;
  };
  for (unsigned d = 0; d < depth; ++d) {
    std::string a = pick(true), b = pick(false), r;
    switch (std::uniform_int_distribution<int>(0, 13)(rng)) {
      case 0: r = emit("add", a + ", " + b); break;
      case 1: r = emit("sub", a + ", " + b); break;
      case 2: r = emit("tanh", emit("mul", a + ", " + b)); break;
      case 3: r = emit("div", a + ", " + emit("add", konst(1.5) + ", " + emit("mul", b + ", " + b))); break;
      case 4: r = emit("sin", a); break;
      case 5: r = emit("cos", a); break;
      case 6: r = emit("exp", emit("tanh", a)); break;
      case 7: r = emit("log", emit("add", konst(1.0) + ", " + emit("mul", a + ", " + a))); break;
      case 8: r = emit("sqrt", emit("add", konst(0.5) + ", " + emit("mul", a + ", " + a))); break;
      case 9: r = emit("atan", a); break;
      case 10: r = emit(std::uniform_int_distribution<int>(0, 1)(rng) ? "max" : "min", a + ", " + b); break;
      case 11: r = emit("pow", emit("add", konst(1.0) + ", " + emit("mul", a + ", " + a)) + ", " + emit("tanh", b)); break;
      case 12: {
        std::string c = fresh();
        body += "  " + c + " = lt " + a + ", " + b + " : bool\n";
        r = emit("select", c + ", " + emit("mul", a + ", " + b) + ", " + emit("sin", b));
        break;
      }
      default: r = emit("fma", a + ", " + b + ", " + pick(false)); break;
    }
    nodes.push_back(r);
  }
  return "device @f(%x0: " + t + ", %x1: " + t + ", %x2: " + t + ") -> " + t + " {\n" + body + "  return " +
         nodes.back() + "\n}\n";
}

TEST_F(Autodiff, RandomGraphsAgreeWithFiniteDifferences) {
  for (unsigned seed = 1; seed <= 12; ++seed) {
    std::mt19937_64 rng(seed);
    unsigned depth = std::uniform_int_distribution<unsigned>(5, 30)(rng);
    std::string fn = randomGraph(rng, depth, "f64");
    std::vector<double> g64 = checkF64(fn, Domain(3, {-1.5, 1.5}), 1000 + seed, 8, 1e-5);
    if (g64.empty()) continue;
    // The same graph in f32 on every target agrees with f64, loosely.
    std::string fn32 = fn;
    for (size_t p = fn32.find("f64"); p != std::string::npos; p = fn32.find("f64", p)) fn32.replace(p, 3, "f32");
    SCOPED_TRACE(fn32);
    auto p = prepare(fn32, "f32");
    if (!p) continue;
    std::vector<double> xs = points(Domain(3, {-1.5, 1.5}), 8, 1000 + seed);
    for (double& x : xs) x = float(x);
    for (const Target& t : targets(false)) {
      SCOPED_TRACE(t.name);
      Derivs d = derivatives(*p, *t.dev, xs);
      for (size_t i = 0; i < d.vjp.size(); ++i)
        EXPECT_TRUE(close(d.vjp[i], g64[i], 2e-3, 2e-3)) << "vjp[" << i << "]: f32 " << d.vjp[i] << ", f64 " << g64[i];
    }
  }
}

// Which built-in ops carry rules: all float arithmetic and math, compares and
// casts (zero / pass-through), the vector ops; not bit manipulation or memory.
TEST(AutodiffRules, BuiltinOpsWithRules) {
  using ir::OpId;
  for (OpId id : {OpId::Add, OpId::Sub, OpId::Mul, OpId::Div, OpId::Rem, OpId::Min, OpId::Max, OpId::Neg, OpId::Abs,
                  OpId::Eq, OpId::Ne, OpId::Lt, OpId::Le, OpId::Gt, OpId::Ge, OpId::Select, OpId::Cast, OpId::Sqrt,
                  OpId::Rsqrt, OpId::Exp, OpId::Log, OpId::Sin, OpId::Cos, OpId::Tan, OpId::Tanh, OpId::Floor,
                  OpId::Ceil, OpId::Pow, OpId::Asin, OpId::Acos, OpId::Atan, OpId::Atan2, OpId::Sinh, OpId::Cosh,
                  OpId::Asinh, OpId::Acosh, OpId::Atanh, OpId::Erf, OpId::Exp2, OpId::Log2, OpId::Log1p, OpId::Expm1,
                  OpId::Round, OpId::Trunc, OpId::Sign, OpId::Copysign, OpId::Fma, OpId::VecMake, OpId::VecExtract,
                  OpId::VecInsert, OpId::Dot, OpId::Cross, OpId::Length, OpId::Normalize}) {
    const ir::OpInfo& info = ir::OpTable::get()[id];
    ASSERT_TRUE(info.derivative) << info.name;
    EXPECT_TRUE(info.derivative->reverse && info.derivative->forward) << info.name;
  }
  for (OpId id : {OpId::Bitcast, OpId::And, OpId::Shl, OpId::Load, OpId::Store, OpId::AtomicAdd, OpId::StructMake})
    EXPECT_FALSE(ir::OpTable::get()[id].derivative) << ir::OpTable::get()[id].name;
}

// ---- custom ops, errors, long chains -----------------------------------------

bool interpCube(interp::Exec& ex, const ir::Op& op) {
  double x = ex.operand(op, 0).f;
  return ex.setResult(op, interp::RtValue::ofFloat(op.result(0)->type(), x * x * x));
}
std::vector<ir::Value*> revCube(const ir::DiffContext& c, std::span<ir::Value* const> g) {
  const ir::Type* t = c.operands[0]->type();
  ir::Value* three = c.b.constFloat(t, 3);
  ir::Value* x2 = c.b.op("mul", {c.operands[0], c.operands[0]}, t);
  return {c.b.op("mul", {g[0], c.b.op("mul", {three, x2}, t)}, t)};
}
std::vector<ir::Value*> fwdCube(const ir::DiffContext& c, std::span<ir::Value* const> dx) {
  return revCube(c, dx);
}
const ir::DerivativeRules kCubeRules{revCube, fwdCube};
// Broken rules (a plugin's bug, P011): too few values, and a value of the wrong type.
std::vector<ir::Value*> noValues(const ir::DiffContext&, std::span<ir::Value* const>) { return {}; }
std::vector<ir::Value*> f32Values(const ir::DiffContext& c, std::span<ir::Value* const>) {
  return {c.b.constFloat(c.b.context().f32(), 1)};
}
const ir::DerivativeRules kNoValuesRules{noValues, noValues};
const ir::DerivativeRules kF32Rules{f32Values, f32Values};
ir::OpInfo kTestOps[] = {
    {.name = "test.cube", .numOperands = 1, .numResults = 1, .flags = ir::kPure, .interp = interpCube,
     .summary = "x^3 (a test op with its own derivative)", .derivative = &kCubeRules},
    {.name = "test.opaque", .numOperands = 1, .numResults = 1, .flags = ir::kPure, .interp = interpCube,
     .summary = "x^3 (a test op without a derivative)"},
    {.name = "test.norules", .numOperands = 1, .numResults = 1, .flags = ir::kPure, .interp = interpCube,
     .summary = "x^3 (a test op whose rules return nothing)", .derivative = &kNoValuesRules},
    {.name = "test.f32rules", .numOperands = 1, .numResults = 1, .flags = ir::kPure, .interp = interpCube,
     .summary = "x^3 (a test op whose rules return an f32)", .derivative = &kF32Rules},
};
void registerTestOps() {
  static bool done = [] {
    ir::OpTable::get().add(kTestOps);
    return true;
  }();
  (void)done;
}

TEST_F(Autodiff, CustomOpUsesItsOwnRule) {
  registerTestOps();
  auto p = prepare("device @f(%x: f64, %y: f64) -> f64 {\n  %c = test.cube %x : f64\n  %r = mul %c, %y : f64\n"
                   "  return %r\n}\n",
                   "f64");
  ASSERT_TRUE(p);
  std::vector<double> xs = {1.5, 2.0, -0.5, 3.0};
  Derivs d = derivatives(*p, interp_, xs);
  for (unsigned q = 0; q < 2; ++q) {
    double x = xs[2 * q], y = xs[2 * q + 1];
    EXPECT_DOUBLE_EQ(d.vjp[3 * q], x * x * x * y);
    EXPECT_DOUBLE_EQ(d.vjp[3 * q + 1], 3 * x * x * y);
    EXPECT_DOUBLE_EQ(d.vjp[3 * q + 2], x * x * x);
    EXPECT_DOUBLE_EQ(d.jvp[2 * q], 3 * x * x * y);
  }
}

std::string errorOf(const std::string& fn, bool reverse = true) {
  registerTestOps();
  ir::Context ctx;
  auto m = ir::parseModule(ctx, fn, "err.eir");
  if (!m) return "parse: " + m.error().str();
  ir::Function* f = (*m)->lookup("f");
  std::vector<bool> all(f->paramTypes().size(), true);
  auto g = reverse ? passes::reverseDerivative(**m, *f, all) : passes::forwardDerivative(**m, *f, all);
  if (g) return "no error";
  // A failed transform leaves the module as it was.
  EXPECT_EQ((*m)->functions().size(), 1u + (fn.find("@h") != std::string::npos));
  EXPECT_TRUE(ir::verify(**m));
  return g.error().str();
}

TEST_F(Autodiff, OpsWithoutRulesAreErrorsNamingTheOp) {
  EXPECT_EQ(errorOf("device @f(%x: f64) -> f64 {\n  %c = test.opaque %x : f64\n  return %c\n}\n"),
            "err.eir:2:3: error[P009]: autodiff: 'test.opaque' has no reverse derivative rule, and its operands depend "
            "on a differentiated parameter (differentiating @f)");
  EXPECT_EQ(errorOf("device @f(%x: f64) -> f64 {\n  %c = test.opaque %x : f64\n  return %c\n}\n", false),
            "err.eir:2:3: error[P009]: autodiff: 'test.opaque' has no forward derivative rule, and its operands depend "
            "on a differentiated parameter (differentiating @f)");
  // Through a callee: the error is in @h, which @f.vjp needs.
  EXPECT_EQ(errorOf("device @h(%x: f64) -> f64 {\n  %b = bitcast %x : i64\n  %c = bitcast %b : f64\n  return %c\n}\n"
                    "device @f(%x: f64) -> f64 {\n  %c = call %x {callee = @h} : f64\n  return %c\n}\n"),
            "err.eir:2:3: error[P009]: autodiff: 'bitcast' has no reverse derivative rule, and its operands depend on "
            "a differentiated parameter (differentiating @h)");
  EXPECT_EQ(errorOf("device @f(%x: f64) -> f64 {\n  %r = while %x : f64 { |%a: f64|\n"
                    "    %z = const {value = 1.0} : f64\n    %c = lt %a, %z : bool\n    condition %c, %a\n"
                    "  } { |%b: f64|\n    %d = add %b, %b : f64\n    yield %d\n  }\n  return %r\n}\n"),
            "err.eir:2:3: error[P010]: autodiff: 'while' loops are not differentiated; use 'for' (differentiating @f)");
  EXPECT_EQ(errorOf("kernel @f(%x: f64) workgroup(1, 1, 1) {\n  return\n}\n"),
            "err.eir:1:1: error[P007]: autodiff: @f is a kernel function; only device functions are differentiated");
  EXPECT_EQ(errorOf("device @f(%x: i32) -> i32 {\n  return %x\n}\n"),
            "err.eir:1:1: error[P008]: autodiff: parameter 0 of @f has type 'i32'; only float scalars and float vectors "
            "are differentiated");
  // A non-differentiable op on values that do not depend on the parameters is fine.
  EXPECT_EQ(errorOf("device @f(%x: f64) -> f64 {\n  %one = const {value = 2.0} : f64\n"
                    "  %c = test.opaque %one : f64\n  %r = mul %c, %x : f64\n  return %r\n}\n"),
            "no error");
}

// Each of the pass's error codes (docs/errors.md, P007-P013) from a module
// that triggers it, run through the module pass as `ephc opt --passes=autodiff`
// runs it: the code, and the message.
std::vector<Error> passErrors(const std::string& text) {
  registerTestOps();
  ir::Context ctx;
  auto m = ir::parseModule(ctx, text, "err.eir");
  if (!m) return {m.error()};
  if (Status valid = ir::verify(**m); !valid) return {valid.error()};
  passes::Diagnostics diag;
  passes::autodiffPass().run(**m, diag);
  return diag.errors;
}

void expectError(const std::string& text, const std::string& code, const std::string& message) {
  std::vector<Error> errors = passErrors(text);
  ASSERT_EQ(errors.size(), 1u) << text;
  EXPECT_EQ(errors[0].code, code) << text;
  EXPECT_EQ(errors[0].message, message) << text;
}

TEST_F(Autodiff, EachErrorCodeHasAModuleThatTriggersIt) {
  expectError("kernel @f(%b: buffer<f64, device, write>) workgroup(1, 1, 1) attributes {autodiff = \"reverse\"} {\n"
              "  return\n}\n",
              "P007", "autodiff: @f is a kernel function; only device functions are differentiated");
  expectError("device @f(%x: f64, %b: buffer<f64, device, linear>) -> (f64, buffer<f64, device, linear>) "
              "attributes {autodiff = \"reverse\"} {\n  return %x, %b\n}\n",
              "P008", "autodiff: parameter 1 of @f has type 'buffer<f64, device, linear>', which cannot be used twice");
  expectError("device @f(%x: f64) -> f64 attributes {autodiff = \"forward\"} {\n  %c = test.opaque %x : f64\n"
              "  return %c\n}\n",
              "P009", "autodiff: 'test.opaque' has no forward derivative rule, and its operands depend on a "
              "differentiated parameter (differentiating @f)");
  expectError("device @f(%x: f64) -> f64 attributes {autodiff = \"reverse\"} {\n  %r = while %x : f64 { |%a: f64|\n"
              "    %z = const {value = 1.0} : f64\n    %c = lt %a, %z : bool\n    condition %c, %a\n"
              "  } { |%b: f64|\n    %d = add %b, %b : f64\n    yield %d\n  }\n  return %r\n}\n",
              "P010", "autodiff: 'while' loops are not differentiated; use 'for' (differentiating @f)");
  std::string broken = "device @f(%x: f64) -> f64 attributes {autodiff = \"MODE\"} {\n  %c = OP %x : f64\n  return %c\n}\n";
  auto with = [&](const std::string& mode, const std::string& op) {
    std::string t = broken;
    t.replace(t.find("MODE"), 4, mode);
    t.replace(t.find("OP"), 2, op);
    return t;
  };
  expectError(with("reverse", "test.norules"), "P011",
              "autodiff: 'test.norules' has a reverse rule that returned 0 adjoints for 1 operands (differentiating @f)");
  expectError(with("forward", "test.norules"), "P011",
              "autodiff: 'test.norules' has a forward rule that returned 0 tangents for 1 results (differentiating @f)");
  expectError(with("reverse", "test.f32rules"), "P011",
              "autodiff: 'test.f32rules' has a reverse rule that returned 'f32' for operand 0 of type 'f64' "
              "(differentiating @f)");
  expectError(with("forward", "test.f32rules"), "P011",
              "autodiff: 'test.f32rules' has a forward rule that returned 'f32' for result 0 of type 'f64' "
              "(differentiating @f)");
  expectError("device @f(%x: f64) -> f64 attributes {autodiff = \"reverse\"} {\n  return %x\n}\n"
              "device @f.vjp(%x: f64) -> f64 {\n  return %x\n}\n",
              "P012", "autodiff: @f.vjp exists already with type 'fn(f64) -> (f64)', not 'fn(f64, f64) -> (struct<f64, f64>)'");
  expectError("device @f(%x: f64) -> f64 attributes {autodiff = \"sideways\"} {\n  return %x\n}\n",
              "P013", "autodiff: @f: attribute 'autodiff' must be \"reverse\", \"forward\" or \"both\"");
  // The rendered form carries the code.
  EXPECT_EQ(errorOf("device @f(%x: f64) -> f64 {\n  %c = test.opaque %x : f64\n  return %c\n}\n").substr(0, 23),
            "err.eir:2:3: error[P009");
}

// A 20,000-op straight-line chain: no recursion on the graph's depth.
TEST_F(Autodiff, TwentyThousandOpChain) {
  ir::Context ctx;
  ir::Module m(ctx);
  const ir::Type* f64 = ctx.f64();
  ir::Function* f = m.addFunction("f", ir::FunctionKind::Device, ctx.functionType({f64}, {f64}));
  ir::Value* x = f->param(0);
  ir::Builder b(ctx, f->body());
  ir::Value* k = b.constFloat(f64, 0.999);
  ir::Value* v = x;
  for (unsigned i = 0; i < 20000; ++i) v = b.op(i % 2 ? "sin" : "mul", i % 2 ? std::vector<ir::Value*>{v}
                                                                            : std::vector<ir::Value*>{v, k}, f64);
  b.create("return", {v});
  auto vjp = passes::reverseDerivative(m, *f, {true});
  ASSERT_TRUE(vjp) << vjp.error().str();
  auto jvp = passes::forwardDerivative(m, *f, {true});
  ASSERT_TRUE(jvp) << jvp.error().str();
  Status valid = ir::verify(m);
  ASSERT_TRUE(valid) << valid.error().str();
  // The reference: the same chain and its derivative in C++.
  double x0 = 0.7, val = x0, der = 1;
  for (unsigned i = 0; i < 20000; ++i) {
    if (i % 2) {
      der *= std::cos(val);
      val = std::sin(val);
    } else {
      val *= 0.999;
      der *= 0.999;
    }
  }
  interp::Interpreter in(m);
  auto r = in.call(**vjp, {interp::RtValue::ofFloat(f64, x0), interp::RtValue::ofFloat(f64, 1.0)});
  ASSERT_TRUE(r) << r.error().str();
  EXPECT_NEAR((*r)[0].elems[0].f, val, 1e-12);
  EXPECT_NEAR((*r)[0].elems[1].f, der, 1e-12 * std::fabs(der));
  auto t = in.call(**jvp, {interp::RtValue::ofFloat(f64, x0), interp::RtValue::ofFloat(f64, 1.0)});
  ASSERT_TRUE(t) << t.error().str();
  EXPECT_NEAR((*t)[0].elems[1].f, der, 1e-12 * std::fabs(der));
}

}  // namespace
}  // namespace eph::test
