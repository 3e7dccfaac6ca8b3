// Shared by the tensor tests: run a program on every target this build has
// (vulkan must open under EPH_REQUIRE_VULKAN=1) and compare with a float64
// reference.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "frontends/tensor/Run.h"
#include "frontends/tensor/Tensor.h"
#include "runtime/Device.h"
#include "tests/support/InterpSample.h"

namespace eph::tensor::test {

// EPH_TENSOR_TARGETS=interp,cpu limits them (for a quick local run); the
// interpreter is sampled under EPH_INTERP_SAMPLE (tests/support/InterpSample.h).
inline std::vector<std::string> targets() {
  std::vector<std::string> out;
  const char* only = std::getenv("EPH_TENSOR_TARGETS");
  for (const std::string& t : runtime::availableTargets()) {
    if (only && ("," + std::string(only) + ",").find("," + t + ",") == std::string::npos) continue;
    if (t == "interp" && !eph::test::interpThisTime()) continue;
    if (t == "vulkan") {
      auto dev = runtime::openDevice("vulkan");
      const char* req = std::getenv("EPH_REQUIRE_VULKAN");
      if (!dev && !(req && std::string(req) == "1")) continue;
    }
    out.push_back(t);
  }
  return out;
}

// Runs p on every target; each output is checked against `want` (one vector per
// output, as doubles) within `tol` (absolute + relative), and the dtypes and shapes
// against the program's.
inline void expectOnAllTargets(const Program& p, const std::vector<HostTensor>& inputs,
                               const std::vector<std::vector<double>>& want, double tol = 1e-5,
                               const LowerOptions& opts = {}) {
  ASSERT_FALSE(p.error()) << p.error()->message;
  for (const std::string& t : targets()) {
    SCOPED_TRACE("target " + t);
    auto got = run(p, t, inputs, opts);
    ASSERT_TRUE(got) << got.error().message;
    ASSERT_EQ(got->size(), want.size());
    for (size_t o = 0; o < want.size(); ++o) {
      const HostTensor& h = (*got)[o];
      EXPECT_EQ(h.shape, p.node(p.outputs()[o].second).shape);
      ASSERT_EQ(size_t(h.size()), want[o].size()) << "output " << o;
      for (size_t i = 0; i < want[o].size(); ++i) {
        double g = h.get(int64_t(i)), w = want[o][i];
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(g)) << "output " << o << " element " << i;
          continue;
        }
        if (std::isinf(w)) {  // equal infinities compare equal (EXPECT_NEAR would fail on inf - inf)
          EXPECT_EQ(g, w) << "output " << o << " element " << i;
          continue;
        }
        EXPECT_NEAR(g, w, tol * (1 + std::abs(w))) << "output " << o << " element " << i;
      }
    }
  }
}

// Row-major index of element i of shape s, and back.
inline std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}

inline int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + idx[d];
  return i;
}

// The program's first error, which must exist.
inline std::string errorOf(const Program& p) { return p.error() ? p.error()->message : std::string("(no error)"); }

#define EXPECT_ERROR(prog, text) EXPECT_NE(errorOf(prog).find(text), std::string::npos) << errorOf(prog)

// Deterministic pseudo-random values in [lo, hi).
inline std::vector<double> randomValues(size_t n, uint64_t seed, double lo = -1, double hi = 1) {
  std::vector<double> v(n);
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = lo + (hi - lo) * double(s >> 11) / double(1ull << 53);
  }
  return v;
}

// Deterministic pseudo-random integers in [lo, hi) as doubles: products of
// them are exact in f16 inputs and f32 sums.
inline std::vector<double> randomInts(size_t n, uint64_t seed, double lo, double hi) {
  std::vector<double> v = randomValues(n, seed, lo, hi);
  for (double& x : v) x = std::floor(x);
  return v;
}

}  // namespace eph::tensor::test
