// The reduce family (ops/Reduce.cpp): reductions, arg-reductions, softmax and
// its kin, normalisations, cumsum, top-k and sorting, on every target against
// float64 references computed here, on contiguous tensors and strided views,
// with size-1, empty and odd dimensions; and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

const double kInf = INFINITY;

// ---- float64 references -----------------------------------------------------------

// The values of a row-major array of `shape` permuted by `perm` (numpy.transpose).
std::vector<double> permuteHost(const std::vector<double>& x, const Shape& shape, const std::vector<int64_t>& perm,
                                Shape& outShape) {
  outShape.clear();
  for (int64_t a : perm) outShape.push_back(shape[size_t(a)]);
  std::vector<int64_t> st = contiguousStrides(shape);
  std::vector<double> out(x.size());
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t rem = int64_t(o), off = 0;
    std::vector<int64_t> ocs = contiguousStrides(outShape);
    for (size_t d = 0; d < outShape.size(); ++d) {
      int64_t i = rem / ocs[d];
      rem %= ocs[d];
      off += i * st[size_t(perm[d])];
    }
    out[o] = x[size_t(off)];
  }
  return out;
}

// The rows of x: for each element of the kept shape (row-major), the values
// over the reduced axes (row-major).
std::vector<std::vector<double>> rowsOf(const std::vector<double>& x, const Shape& shape, const std::vector<bool>& red) {
  Shape keep;
  for (size_t d = 0; d < shape.size(); ++d) keep.push_back(red[d] ? 1 : shape[d]);
  std::vector<std::vector<double>> rows(size_t(numel(keep)));
  std::vector<int64_t> cs = contiguousStrides(shape), ks = contiguousStrides(keep);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t rem = int64_t(i), r = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t id = rem / cs[d];
      rem %= cs[d];
      if (!red[d]) r += id * ks[d];
    }
    rows[size_t(r)].push_back(x[i]);
  }
  return rows;
}

// Scatters per-element results of rows back to x's layout (the inverse of rowsOf).
std::vector<double> unrows(const std::vector<std::vector<double>>& rows, const Shape& shape, const std::vector<bool>& red) {
  Shape keep;
  for (size_t d = 0; d < shape.size(); ++d) keep.push_back(red[d] ? 1 : shape[d]);
  std::vector<double> out(size_t(numel(shape)));
  std::vector<size_t> used(rows.size(), 0);
  std::vector<int64_t> cs = contiguousStrides(shape), ks = contiguousStrides(keep);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t rem = int64_t(i), r = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t id = rem / cs[d];
      rem %= cs[d];
      if (!red[d]) r += id * ks[d];
    }
    out[i] = rows[size_t(r)][used[size_t(r)]++];
  }
  return out;
}

std::vector<bool> mask(size_t rank, std::vector<int64_t> axes) {
  std::vector<bool> m(rank, axes.empty());
  for (int64_t a : axes) m[size_t(a < 0 ? a + int64_t(rank) : a)] = true;
  return m;
}

template <class F>
std::vector<double> reduceRef(const std::vector<double>& x, const Shape& shape, const std::vector<bool>& red, F f) {
  std::vector<double> out;
  for (const auto& row : rowsOf(x, shape, red)) out.push_back(f(row));
  return out;
}

double refSum(const std::vector<double>& r) { return std::accumulate(r.begin(), r.end(), 0.0); }
double refMax(const std::vector<double>& r) {
  double m = -kInf;
  for (double v : r) m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  return m;
}
double refMin(const std::vector<double>& r) {
  double m = kInf;
  for (double v : r) m = std::isnan(v) || std::isnan(m) ? NAN : std::min(m, v);
  return m;
}
double refLse(const std::vector<double>& r) {
  double m = refMax(r);
  if (std::isinf(m)) m = 0;
  double s = 0;
  for (double v : r) s += std::exp(v - m);
  return m + std::log(s);
}
double refMeanOf(const std::vector<double>& r) { return refSum(r) / double(r.size()); }
double refSquares(const std::vector<double>& r) {
  double m = refMeanOf(r), q = 0;
  for (double v : r) q += (v - m) * (v - m);
  return q;
}

// A row-wise transform.
template <class F>
std::vector<double> rowwise(const std::vector<double>& x, const Shape& shape, const std::vector<bool>& red, F f) {
  auto rows = rowsOf(x, shape, red);
  for (auto& row : rows) row = f(row);
  return unrows(rows, shape, red);
}

// ---- reductions ----------------------------------------------------------------------

struct ReduceCase {
  Shape shape;
  std::vector<int64_t> axes;
  bool keepdims;
  bool transposed;  // reduce a transposed view of an input of the reversed shape
};

// Every reduce_* op on one case, as one program (one run per target).
void checkAllReductions(const ReduceCase& c, uint64_t seed) {
  SCOPED_TRACE("shape " + shapeText(c.shape) + " axes " + shapeText(c.axes) + (c.transposed ? " transposed" : ""));
  Program p;
  Shape inShape = c.shape;
  std::vector<double> xv = randomValues(size_t(numel(c.shape)), seed);
  std::vector<double> inValues = xv;
  Tensor x;
  if (c.transposed) {
    // The input is x's transpose; the program transposes it back (a strided view).
    std::vector<int64_t> rev(c.shape.size());
    std::iota(rev.begin(), rev.end(), 0);
    std::reverse(rev.begin(), rev.end());
    inValues = permuteHost(xv, c.shape, rev, inShape);
    x = transpose(p.input("x", DType::F32, inShape));
  } else {
    x = p.input("x", DType::F32, inShape);
  }
  ASSERT_EQ(x.shape(), c.shape);
  const std::vector<int64_t>& a = c.axes;
  bool kd = c.keepdims;
  p.output("sum", sum(x, a, kd));
  p.output("mean", mean(x, a, kd));
  p.output("max", max(x, a, kd));
  p.output("min", min(x, a, kd));
  p.output("prod", prod(x * 2.0, a, kd));
  p.output("l1", norm_l1(x, a, kd));
  p.output("l2", norm_l2(x, a, kd));
  p.output("sumsq", sum_square(x, a, kd));
  p.output("logsum", p.apply("reduce_log_sum", {exp(x)}, {{"axes", a}, {"keepdims", int64_t(kd)}}));
  p.output("lse", logsumexp(x * 3.0, a, kd));
  Shape want;
  std::vector<bool> red = mask(c.shape.size(), a);
  for (size_t d = 0; d < c.shape.size(); ++d)
    if (!red[d]) want.push_back(c.shape[d]);
    else if (kd) want.push_back(1);
  EXPECT_EQ(p.node(p.outputs()[0].second).shape, want);
  auto R = [&](auto f) { return reduceRef(xv, c.shape, red, f); };
  expectOnAllTargets(p, {HostTensor::of(DType::F32, inShape, inValues)},
                     {R(refSum), R(refMeanOf), R(refMax), R(refMin), R([](const std::vector<double>& r) {
                        double v = 1;
                        for (double e : r) v *= double(float(2 * e));
                        return v;
                      }),
                      R([](const std::vector<double>& r) {
                        double s = 0;
                        for (double e : r) s += std::abs(e);
                        return s;
                      }),
                      R([](const std::vector<double>& r) {
                        double s = 0;
                        for (double e : r) s += e * e;
                        return std::sqrt(s);
                      }),
                      R([](const std::vector<double>& r) {
                        double s = 0;
                        for (double e : r) s += e * e;
                        return s;
                      }),
                      R(refLse), R([](const std::vector<double>& r) {
                        std::vector<double> t;
                        for (double e : r) t.push_back(3 * e);
                        return refLse(t);
                      })},
                     1e-5);
}

// One test per case (each compiles its kernels for every target).
TEST(ReduceOps, OneAxisKeepdims) { checkAllReductions({{2, 3, 4}, {1}, true, false}, 1); }
TEST(ReduceOps, AllAxesGiveAScalar) { checkAllReductions({{2, 3, 4}, {}, false, false}, 2); }
TEST(ReduceOps, AxesThatAreNotAdjacent) { checkAllReductions({{2, 3, 4}, {0, 2}, false, false}, 3); }
TEST(ReduceOps, OddExtentsNegativeAxis) { checkAllReductions({{5, 7}, {-1}, false, false}, 4); }
TEST(ReduceOps, SizeOne) { checkAllReductions({{1, 1}, {1}, true, false}, 5); }
TEST(ReduceOps, TransposedViews) {
  checkAllReductions({{3, 5}, {0}, false, true}, 6);
  checkAllReductions({{2, 3, 5}, {1, 2}, true, true}, 7);
}
// Rows of 128 and more reduce with a workgroup per row.
TEST(ReduceOps, LongRowsContiguous) { checkAllReductions({{3, 200}, {1}, false, false}, 8); }
TEST(ReduceOps, LongRowsStrided) {
  checkAllReductions({{2, 150}, {-1}, true, true}, 9);
  checkAllReductions({{10, 4, 40}, {0, 2}, false, false}, 10);
}

TEST(ReduceOps, EmptyAxesGiveTheIdentities) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 0});
  p.output("sum", sum(x, {1}));
  p.output("prod", prod(x, {1}));
  p.output("max", max(x, {1}));
  p.output("min", min(x, {1}));
  p.output("mean", mean(x, {1}));
  p.output("lse", logsumexp(x, {1}));
  p.output("l2", norm_l2(x, {1}));
  p.output("empty", sum(x, {0}));  // [0]: nothing to compute
  std::vector<double> nan3(3, NAN);
  expectOnAllTargets(p, {HostTensor(DType::F32, {3, 0})},
                     {{0, 0, 0}, {1, 1, 1}, {-kInf, -kInf, -kInf}, {kInf, kInf, kInf}, nan3, {-kInf, -kInf, -kInf},
                      {0, 0, 0}, {}});
}

TEST(ReduceOps, IntegersKeepTheirDtypeAndNaNPropagates) {
  Program p;
  Tensor i = p.input("i", DType::I32, {2, 3});
  Tensor f = p.input("f", DType::F64, {2, 3});
  Tensor s = sum(i, {1});
  EXPECT_EQ(s.dtype(), DType::I32);
  p.output("sum", s);
  p.output("mean", mean(i, {1}));  // truncates, in i32
  p.output("max", max(i, {0}));
  p.output("min", min(i));
  p.output("prod", prod(i, {1}));
  p.output("l1", norm_l1(i, {1}));
  p.output("fmax", max(f, {1}));
  p.output("fmin", min(f, {1}));
  p.output("noop", p.apply("reduce_sum_square", {f}, {{"noop_with_empty_axes", int64_t(1)}}));
  std::vector<double> iv = {-7, 2, 4, 9, -1, 3};
  std::vector<double> fv = {1, NAN, 3, -2, 5, 0.5};
  expectOnAllTargets(p, {HostTensor::of(DType::I32, {2, 3}, iv), HostTensor::of(DType::F64, {2, 3}, fv)},
                     {{-1, 11}, {0, 3}, {9, 2, 4}, {-7}, {-56, -27}, {13, 13}, {NAN, 5}, {NAN, -2},
                      {1, NAN, 9, 4, 25, 0.25}});
}

TEST(ReduceOps, SmallAndUnsignedIntegersUseTheirTypesLimits) {
  Program p;
  Tensor u8 = p.input("u8", DType::U8, {2, 0});
  Tensor u64 = p.input("u64", DType::U64, {2, 0});
  Tensor i8 = p.input("i8", DType::I8, {2, 0});
  Tensor v = p.input("v", DType::U8, {2, 3});
  p.output("minu8", min(u8, {1}));
  p.output("minu64", min(u64, {1}));
  p.output("maxi8", max(i8, {1}));
  p.output("mini8", min(i8, {1}));
  p.output("maxv", max(v, {1}));
  p.output("sumv", sum(v, {1}));  // wraps in u8
  expectOnAllTargets(p,
                     {HostTensor(DType::U8, {2, 0}), HostTensor(DType::U64, {2, 0}), HostTensor(DType::I8, {2, 0}),
                      HostTensor::of(DType::U8, {2, 3}, {200, 7, 100, 1, 2, 3})},
                     {{255, 255}, {18446744073709551615.0, 18446744073709551615.0}, {-128, -128}, {127, 127}, {200, 3},
                      {51, 6}},
                     0);
}

TEST(ReduceOps, HalfSumsAccumulateInFloat32) {
  Program p;
  Tensor x = p.input("x", DType::F16, {2, 4000});
  Tensor y = p.input("y", DType::F16, {3000, 2});
  p.output("s", sum(x, {1}));  // in f16, 2048 + 1 would stay 2048
  p.output("t", sum(y, {0}));  // the same down strided columns
  std::vector<double> xv(8000, 1.0), yv(6000, 1.0);
  for (size_t i = 4000; i < 8000; ++i) xv[i] = 0.25;
  expectOnAllTargets(p, {HostTensor::of(DType::F16, {2, 4000}, xv), HostTensor::of(DType::F16, {3000, 2}, yv)},
                     {{4000, 1000}, {3000, 3000}}, 1e-3);
}

TEST(ReduceOps, VarWithCorrection) {
  Program p;
  Tensor x = p.input("x", DType::F32, {4, 5});
  Tensor t = slice(x, 1, 0, 5, 2);  // [4, 3], strided
  p.output("v0", var(t, {1}));
  p.output("v1", var(t, {0}, true, 1));
  p.output("vall", var(x));
  auto xv = randomValues(20, 11);
  std::vector<double> tv;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 5; c += 2) tv.push_back(xv[size_t(r * 5 + c)]);
  auto v0 = reduceRef(tv, {4, 3}, mask(2, {1}), [](const std::vector<double>& r) { return refSquares(r) / 3; });
  auto v1 = reduceRef(tv, {4, 3}, mask(2, {0}), [](const std::vector<double>& r) { return refSquares(r) / 3; });
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {4, 5}, xv)}, {v0, v1, {refSquares(xv) / 20}});
}

TEST(ReduceOps, ArgmaxArgminTiesNaNAndLastIndex) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 4});
  Tensor i = p.input("i", DType::I64, {2, 3});
  Tensor a = argmax(x, 1);
  EXPECT_EQ(a.dtype(), DType::I64);
  p.output("amax", a);
  p.output("amin", argmin(x, 1));
  p.output("amaxLast", argmax(x, 1, false, true));
  p.output("aminLast", argmin(x, -1, true, true));
  p.output("amax0", argmax(transpose(x), 0));  // a strided view: the same as axis 1
  p.output("iamax", argmax(i, 0));
  p.output("default", p.apply("argmin", {i}));  // axis 0, keepdims 1: [1, 3]
  std::vector<double> xv = {1, 5, 5, -2,   //
                            NAN, 3, NAN, 0,  //
                            -kInf, -kInf, -kInf, -kInf};
  std::vector<double> iv = {4, -1, 7, 4, 2, 7};
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, 4}, xv), HostTensor::of(DType::I64, {2, 3}, iv)},
                     {{1, 0, 0}, {3, 0, 0}, {2, 2, 3}, {3, 2, 3}, {1, 0, 0}, {0, 1, 0}, {0, 0, 0}});
}

// ---- softmax and kin -----------------------------------------------------------------

std::vector<double> softmaxRow(const std::vector<double>& r) {
  double m = refMax(r), s = 0;
  for (double v : r) s += std::exp(v - m);
  std::vector<double> o;
  for (double v : r) o.push_back(std::exp(v - m) / s);
  return o;
}
std::vector<double> logSoftmaxRow(const std::vector<double>& r) {
  double l = refLse(r);
  std::vector<double> o;
  for (double v : r) o.push_back(v - l);
  return o;
}
std::vector<double> hardmaxRow(const std::vector<double>& r) {
  std::vector<double> o(r.size(), 0);
  if (!r.empty()) o[size_t(std::max_element(r.begin(), r.end()) - r.begin())] = 1;
  return o;
}

// softmax, log_softmax and hardmax of x along `axis`.
void checkSoftmaxes(const Shape& shape, int64_t axis) {
  SCOPED_TRACE("shape " + shapeText(shape) + " axis " + std::to_string(axis));
  Program p;
  Tensor x = p.input("x", DType::F32, shape);
  p.output("s", softmax(x, axis));
  p.output("l", log_softmax(x, axis));
  p.output("h", hardmax(x, axis));
  auto xv = randomValues(size_t(numel(shape)), 20 + uint64_t(axis), -3, 3);
  auto red = mask(shape.size(), {axis});
  expectOnAllTargets(p, {HostTensor::of(DType::F32, shape, xv)},
                     {rowwise(xv, shape, red, softmaxRow), rowwise(xv, shape, red, logSoftmaxRow),
                      rowwise(xv, shape, red, hardmaxRow)});
}

TEST(ReduceSoftmax, LastAndFirstAxis) {
  checkSoftmaxes({3, 5}, -1);
  checkSoftmaxes({3, 5}, 0);
}
TEST(ReduceSoftmax, MiddleAxisSizeOneAndVector) {
  checkSoftmaxes({2, 3, 4}, 1);
  checkSoftmaxes({1, 1}, 0);
  checkSoftmaxes({7}, 0);
}

TEST(ReduceSoftmax, StridedViewF64) {
  // Every other column of the transpose.
  Program p;
  Tensor x = p.input("x", DType::F64, {6, 4});
  Tensor v = slice(transpose(x), 1, 0, 6, 2);  // [4, 3]
  p.output("s", softmax(v));
  p.output("l", log_softmax(v, 0));
  auto xv = randomValues(24, 31, -2, 2);
  std::vector<double> vv;
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 6; c += 2) vv.push_back(xv[size_t(c * 4 + r)]);
  expectOnAllTargets(p, {HostTensor::of(DType::F64, {6, 4}, xv)},
                     {rowwise(vv, {4, 3}, mask(2, {1}), softmaxRow), rowwise(vv, {4, 3}, mask(2, {0}), logSoftmaxRow)},
                     1e-12);
}

TEST(ReduceSoftmax, StableForLargeValuesAndInfinities) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 4});
  p.output("s", softmax(x));
  p.output("l", log_softmax(x));
  p.output("e", softmax(p.input("e", DType::F32, {0, 4})));
  std::vector<double> xv = {1000, 1001, 999, 1000,  //
                            -1000, -1001, -999, -kInf, //
                            -kInf, 0, 2, -kInf};
  auto red = mask(2, {1});
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, 4}, xv), HostTensor(DType::F32, {0, 4})},
                     {rowwise(xv, {3, 4}, red, softmaxRow), rowwise(xv, {3, 4}, red, logSoftmaxRow), {}});
}

// Rows long enough for the cooperative kernel (whose maximum is the IR's
// max, not NaN-propagating: the sum carries a NaN to every output), kept in
// registers and not, with shuffles and through workgroup memory: a NaN
// makes its whole row NaN; with a +inf (the shift is then 0 and the sum
// inf) softmax is NaN there and 0 elsewhere; -inf elements are zeros.
TEST(ReduceSoftmax, NaNAndInfinitiesInLongRows) {
  for (int64_t cols : {int64_t(300), int64_t(20001)}) {
    Program p;
    Tensor x = p.input("x", DType::F32, {3, cols});
    p.output("s", softmax(x));
    p.output("l", log_softmax(x));
    auto xv = randomValues(size_t(3 * cols), 45, -5, 5);
    xv[size_t(cols / 2)] = NAN;                  // row 0
    xv[size_t(cols + 7)] = kInf;                 // row 1
    xv[size_t(2 * cols + 1)] = -kInf;            // row 2
    std::vector<double> s, l;
    for (int64_t r = 0; r < 3; ++r) {
      std::vector<double> row(xv.begin() + r * cols, xv.begin() + (r + 1) * cols);
      for (double& v : row) v = double(float(v));
      std::vector<double> sr = r == 0 ? std::vector<double>(size_t(cols), NAN) : softmaxRow(row);
      std::vector<double> lr = r == 0 ? std::vector<double>(size_t(cols), NAN) : logSoftmaxRow(row);
      if (r == 1)  // +inf: the shift is 0 and the sum inf, so exp(x) / inf (NaN at the inf, 0 elsewhere), x - inf
        for (int64_t c = 0; c < cols; ++c) {
          sr[size_t(c)] = c == 7 ? NAN : 0;
          lr[size_t(c)] = c == 7 ? NAN : -kInf;
        }
      s.insert(s.end(), sr.begin(), sr.end());
      l.insert(l.end(), lr.begin(), lr.end());
    }
    for (bool shuffles : {true, false}) {
      SCOPED_TRACE("cols " + std::to_string(cols) + (shuffles ? ", shuffles" : ", workgroup memory"));
      LowerOptions o;
      o.tune = false;
      o.rowShuffles = shuffles;
      expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, cols}, xv)}, {s, l}, 1e-4, o);
    }
  }
}

TEST(ReduceSoftmax, LongRows) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 1000});
  p.output("s", softmax(x));
  auto xv = randomValues(3000, 41, -5, 5);
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, 1000}, xv)}, {rowwise(xv, {3, 1000}, mask(2, {1}), softmaxRow)});
}

// Rows kept in registers by workgroups of 64, 128 and 1024 invocations
// (a last position past the row's end in each), and a row too long for
// registers (folded by a loop that reloads it): softmax, layer norm, max
// and sum against float64 on every target, the workgroup's partial results
// combined through shuffles and through workgroup memory.
TEST(ReduceSoftmax, RowsInRegistersAndRowsTooLongForThem) {
  for (int64_t cols : {int64_t(129), int64_t(2000), int64_t(16383), int64_t(20001)}) {
    SCOPED_TRACE("cols " + std::to_string(cols));
    Program p;
    Tensor x = p.input("x", DType::F32, {2, cols});
    Tensor g = p.input("g", DType::F32, {cols});
    p.output("s", softmax(x));
    p.output("ln", layer_norm(x, g, g));
    p.output("max", max(x, {1}));
    p.output("sum", sum(x, {1}));
    auto xv = randomValues(size_t(2 * cols), 43, -5, 5), gv = randomValues(size_t(cols), 44);
    auto red = mask(2, {1});
    auto ln = rowwise(xv, {2, cols}, red, [](const std::vector<double>& r) {
      double m = refMeanOf(r), var = refSquares(r) / double(r.size());
      std::vector<double> o;
      for (double e : r) o.push_back((e - m) / std::sqrt(var + 1e-5));
      return o;
    });
    for (size_t i = 0; i < ln.size(); ++i) ln[i] = ln[i] * gv[i % size_t(cols)] + gv[i % size_t(cols)];
    auto mx = reduceRef(xv, {2, cols}, red, [](const std::vector<double>& r) { return refMax(r); });
    auto sm = reduceRef(xv, {2, cols}, red, [](const std::vector<double>& r) {
      double a = 0;
      for (double e : r) a += e;
      return a;
    });
    for (bool shuffles : {true, false}) {  // LowerOptions::rowShuffles
      SCOPED_TRACE(shuffles ? "shuffles" : "workgroup memory");
      LowerOptions o;
      o.tune = false;
      o.rowShuffles = shuffles;
      expectOnAllTargets(p, {HostTensor::of(DType::F32, {2, cols}, xv), HostTensor::of(DType::F32, {cols}, gv)},
                         {rowwise(xv, {2, cols}, red, softmaxRow), ln, mx, sm}, 1e-4, o);
    }
  }
}

// ---- normalisations ---------------------------------------------------------------------

TEST(ReduceNorm, LayerNormOverTrailingAxesWithBroadcastParams) {
  // [4, 6] over the last axis; [2, 3, 5] over the last two with scale [3, 5]
  // and bias [5]; the same without bias on a transposed view; f64.
  {
    Program p;
    Tensor x = p.input("x", DType::F32, {4, 6});
    Tensor s = p.input("s", DType::F32, {6});
    Tensor b = p.input("b", DType::F32, {6});
    p.output("y", layer_norm(x, s, b));
    auto xv = randomValues(24, 50), sv = randomValues(6, 51), bv = randomValues(6, 52);
    auto red = mask(2, {1});
    std::vector<double> want = rowwise(xv, {4, 6}, red, [](const std::vector<double>& r) {
      double m = refMeanOf(r), var = refSquares(r) / double(r.size());
      std::vector<double> o;
      for (double v : r) o.push_back((v - m) / std::sqrt(var + 1e-5));
      return o;
    });
    for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * sv[i % 6] + bv[i % 6];
    expectOnAllTargets(p,
                       {HostTensor::of(DType::F32, {4, 6}, xv), HostTensor::of(DType::F32, {6}, sv),
                        HostTensor::of(DType::F32, {6}, bv)},
                       {want}, 1e-4);
  }
  {
    Program p;
    Tensor x = p.input("x", DType::F64, {5, 3, 2});
    Tensor v = transpose(x, {2, 1, 0});  // [2, 3, 5]
    Tensor s = p.input("s", DType::F64, {3, 5});
    Tensor b = p.input("b", DType::F64, {5});
    p.output("y", layer_norm(v, s, b, 1, 1e-3));
    p.output("n", layer_norm(v, s, Tensor(), -2, 1e-3));
    auto xv = randomValues(30, 53), sv = randomValues(15, 54), bv = randomValues(5, 55);
    Shape vs;
    auto vv = permuteHost(xv, {5, 3, 2}, {2, 1, 0}, vs);
    auto norm = rowwise(vv, {2, 3, 5}, mask(3, {1, 2}), [](const std::vector<double>& r) {
      double m = refMeanOf(r), var = refSquares(r) / double(r.size());
      std::vector<double> o;
      for (double v : r) o.push_back((v - m) / std::sqrt(var + 1e-3));
      return o;
    });
    std::vector<double> y, n;
    for (size_t i = 0; i < norm.size(); ++i) {
      n.push_back(norm[i] * sv[i % 15]);
      y.push_back(n.back() + bv[i % 5]);
    }
    expectOnAllTargets(p,
                       {HostTensor::of(DType::F64, {5, 3, 2}, xv), HostTensor::of(DType::F64, {3, 5}, sv),
                        HostTensor::of(DType::F64, {5}, bv)},
                       {y, n}, 1e-10);
  }
}

TEST(ReduceNorm, BatchInstanceLpAndMeanVarianceNorms) {
  const Shape shape = {2, 3, 2, 3};
  Program p;
  Tensor x = p.input("x", DType::F32, shape);
  Tensor sc = p.input("scale", DType::F32, {3});
  Tensor bi = p.input("bias", DType::F32, {3});
  Tensor mu = p.input("mean", DType::F32, {3});
  Tensor va = p.input("var", DType::F32, {3});
  p.output("bn", batch_norm(x, sc, bi, mu, va));
  p.output("in", instance_norm(x, sc, bi, 1e-4));
  p.output("lp2", lp_normalize(x));
  p.output("lp1", lp_normalize(x, 1, 1));
  p.output("mvn", mean_variance_normalize(x));
  auto xv = randomValues(36, 60), sv = randomValues(3, 61), bv = randomValues(3, 62), mv = randomValues(3, 63);
  auto vv = randomValues(3, 64, 0.5, 2);
  auto chan = [&](size_t i) { return (i / 6) % 3; };
  std::vector<double> bn;
  for (size_t i = 0; i < xv.size(); ++i) {
    size_t c = chan(i);
    bn.push_back((xv[i] - mv[c]) / std::sqrt(vv[c] + 1e-5) * sv[c] + bv[c]);
  }
  auto standardise = [](double eps, bool mvn) {
    return [eps, mvn](const std::vector<double>& r) {
      double m = refMeanOf(r), var = refSquares(r) / double(r.size());
      std::vector<double> o;
      for (double v : r) o.push_back(mvn ? (v - m) / (std::sqrt(var) + 1e-9) : (v - m) / std::sqrt(var + eps));
      return o;
    };
  };
  std::vector<double> in = rowwise(xv, shape, mask(4, {2, 3}), standardise(1e-4, false));
  for (size_t i = 0; i < in.size(); ++i) in[i] = in[i] * sv[chan(i)] + bv[chan(i)];
  auto lp = [](int pw) {
    return [pw](const std::vector<double>& r) {
      double s = 0;
      for (double v : r) s += pw == 1 ? std::abs(v) : v * v;
      if (pw == 2) s = std::sqrt(s);
      std::vector<double> o;
      for (double v : r) o.push_back(v / s);
      return o;
    };
  };
  expectOnAllTargets(p,
                     {HostTensor::of(DType::F32, shape, xv), HostTensor::of(DType::F32, {3}, sv),
                      HostTensor::of(DType::F32, {3}, bv), HostTensor::of(DType::F32, {3}, mv),
                      HostTensor::of(DType::F32, {3}, vv)},
                     {bn, in, rowwise(xv, shape, mask(4, {3}), lp(2)), rowwise(xv, shape, mask(4, {1}), lp(1)),
                      rowwise(xv, shape, mask(4, {0, 2, 3}), standardise(0, true))},
                     1e-4);
}

TEST(ReduceNorm, LongRowsUseWorkgroupKernels) {
  Program p;
  Tensor x = p.input("x", DType::F32, {300, 3});
  Tensor v = transpose(x);  // [3, 300], strided rows
  Tensor s = p.input("s", DType::F32, {300});
  Tensor b = p.input("b", DType::F32, {300});
  Tensor im = p.input("im", DType::F32, {1, 2, 16, 9});
  Tensor c = p.input("c", DType::F32, {2});
  p.output("ln", layer_norm(v, s, b));
  p.output("lsm", log_softmax(v));
  p.output("in", instance_norm(im, c, c));
  p.output("lp", lp_normalize(v, 1, 1));
  p.output("var", var(v, {1}, false, 1));
  p.output("var0", var(v, {1}));  // the same shapes, another correction: another kernel
  auto xv = randomValues(900, 80, -4, 4), sv = randomValues(300, 81), bv = randomValues(300, 82);
  auto iv = randomValues(288, 83), cv = randomValues(2, 84);
  Shape vs;
  auto vv = permuteHost(xv, {300, 3}, {1, 0}, vs);
  auto red = mask(2, {1});
  auto standardise = [](const std::vector<double>& r) {
    double m = refMeanOf(r), var = refSquares(r) / double(r.size());
    std::vector<double> o;
    for (double e : r) o.push_back((e - m) / std::sqrt(var + 1e-5));
    return o;
  };
  auto ln = rowwise(vv, {3, 300}, red, standardise);
  for (size_t i = 0; i < ln.size(); ++i) ln[i] = ln[i] * sv[i % 300] + bv[i % 300];
  auto in = rowwise(iv, {1, 2, 16, 9}, mask(4, {2, 3}), standardise);
  for (size_t i = 0; i < in.size(); ++i) in[i] = in[i] * cv[i / 144] + cv[i / 144];
  auto lp = rowwise(vv, {3, 300}, red, [](const std::vector<double>& r) {
    double s = 0;
    for (double e : r) s += std::abs(e);
    std::vector<double> o;
    for (double e : r) o.push_back(e / s);
    return o;
  });
  auto var1 = reduceRef(vv, {3, 300}, red, [](const std::vector<double>& r) { return refSquares(r) / 299; });
  auto var0 = reduceRef(vv, {3, 300}, red, [](const std::vector<double>& r) { return refSquares(r) / 300; });
  expectOnAllTargets(p,
                     {HostTensor::of(DType::F32, {300, 3}, xv), HostTensor::of(DType::F32, {300}, sv),
                      HostTensor::of(DType::F32, {300}, bv), HostTensor::of(DType::F32, {1, 2, 16, 9}, iv),
                      HostTensor::of(DType::F32, {2}, cv)},
                     {ln, rowwise(vv, {3, 300}, red, logSoftmaxRow), in, lp, var1, var0}, 1e-4);
}

// More rows than one dimension of workgroups holds (32768): the groups past
// the last row recompute it and store nothing. On the cpu target only (the
// interpreter would take long), sampled rows checked.
TEST(ReduceNorm, MoreRowsThanOneGridDimension) {
  const int64_t rows = 33000, cols = 128;
  Program p;
  Tensor x = p.input("x", DType::F32, {rows, cols});
  p.output("s", softmax(x));
  p.output("m", max(x, {1}));
  auto xv = randomValues(size_t(rows * cols), 90, -2, 2);
  auto got = run(p, "cpu", {HostTensor::of(DType::F32, {rows, cols}, xv)});
  ASSERT_TRUE(got) << got.error().message;
  for (int64_t r : {int64_t(0), int64_t(1), int64_t(32767), int64_t(32768), rows - 1}) {
    std::vector<double> row(xv.begin() + r * cols, xv.begin() + (r + 1) * cols);
    auto want = softmaxRow(row);
    for (int64_t c = 0; c < cols; c += 13) EXPECT_NEAR((*got)[0].get(r * cols + c), want[size_t(c)], 1e-6) << r << "," << c;
    EXPECT_EQ((*got)[1].get(r), double(float(refMax(row)))) << r;
  }
}

// ---- cumsum, top-k, sort -------------------------------------------------------------------

std::vector<double> cumsumRow(const std::vector<double>& r, bool excl, bool rev) {
  std::vector<double> o(r.size());
  double acc = 0;
  for (size_t k = 0; k < r.size(); ++k) {
    size_t i = rev ? r.size() - 1 - k : k;
    if (excl) o[i] = acc;
    acc += r[i];
    if (!excl) o[i] = acc;
  }
  return o;
}

TEST(ReduceScan, CumsumExclusiveReverseOnViews) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 5});
  Tensor i = p.input("i", DType::I32, {4});
  p.output("c", cumsum(x, 1));
  p.output("e", cumsum(x, -1, true));
  p.output("r", cumsum(x, 0, false, true));
  p.output("er", cumsum(transpose(x), 1, true, true));  // [5, 3]
  p.output("i", cumsum(i, 0));
  p.output("empty", cumsum(p.input("z", DType::F32, {2, 0}), 1));
  auto xv = randomValues(15, 70);
  Shape ts;
  auto tv = permuteHost(xv, {3, 5}, {1, 0}, ts);
  auto f = [](bool e, bool r) { return [e, r](const std::vector<double>& row) { return cumsumRow(row, e, r); }; };
  expectOnAllTargets(p,
                     {HostTensor::of(DType::F32, {3, 5}, xv), HostTensor::of(DType::I32, {4}, {3, -1, 4, 1}),
                      HostTensor(DType::F32, {2, 0})},
                     {rowwise(xv, {3, 5}, mask(2, {1}), f(false, false)), rowwise(xv, {3, 5}, mask(2, {1}), f(true, false)),
                      rowwise(xv, {3, 5}, mask(2, {0}), f(false, true)), rowwise(tv, {5, 3}, mask(2, {1}), f(true, true)),
                      {3, 2, 6, 7}, {}});
}

// Stable order of a row (NaN largest), as indices.
std::vector<size_t> order(const std::vector<double>& r, bool desc) {
  std::vector<size_t> idx(r.size());
  std::iota(idx.begin(), idx.end(), 0);
  auto key = [&](size_t i) { return std::isnan(r[i]) ? kInf * 2 : r[i]; };  // NaN above inf
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    bool na = std::isnan(r[a]), nb = std::isnan(r[b]);
    if (na || nb) return desc ? (na && !nb) : (nb && !na);
    return desc ? key(a) > key(b) : key(a) < key(b);
  });
  return idx;
}

TEST(ReduceSort, SortArgsortTopkStableWithNaN) {
  Program p;
  Tensor x = p.input("x", DType::F32, {3, 5});
  p.output("sort", sort(x));
  p.output("argsort", argsort(x));
  p.output("dsort", sort(x, -1, true));
  p.output("dargsort", argsort(x, 1, true));
  auto [tv, ti] = topk(x, 2);
  p.output("topv", tv);
  p.output("topi", ti);
  auto [bv, bi] = topk(transpose(x), 2, 0, false);  // smallest 2 of each column: [2, 3]
  p.output("botv", bv);
  p.output("boti", bi);
  p.output("k0", topk(x, 0).first);
  std::vector<double> xv = {3, 1, 3, NAN, -2,  //
                            0, 0, -0.5, 7, 0,  //
                            5, -kInf, 5, 5, 1};
  std::vector<double> sorted, args, dsorted, dargs, topv, topi;
  for (int r = 0; r < 3; ++r) {
    std::vector<double> row(xv.begin() + r * 5, xv.begin() + r * 5 + 5);
    for (size_t i : order(row, false)) sorted.push_back(row[i]), args.push_back(double(i));
    auto d = order(row, true);
    for (size_t i : d) dsorted.push_back(row[i]), dargs.push_back(double(i));
    for (size_t k = 0; k < 2; ++k) topv.push_back(row[d[k]]), topi.push_back(double(d[k]));
  }
  std::vector<double> botv(6), boti(6);
  for (int c = 0; c < 3; ++c) {  // column c of the transpose is row c of x
    std::vector<double> col(xv.begin() + c * 5, xv.begin() + c * 5 + 5);
    auto o = order(col, false);
    for (size_t k = 0; k < 2; ++k) botv[k * 3 + size_t(c)] = col[o[k]], boti[k * 3 + size_t(c)] = double(o[k]);
  }
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {3, 5}, xv)},
                     {sorted, args, dsorted, dargs, topv, topi, botv, boti, {}}, 0);
}

TEST(ReduceSort, IntegersAndEmpty) {
  Program p;
  Tensor x = p.input("x", DType::I64, {6});
  p.output("s", sort(x, 0, true));
  p.output("a", argsort(x));
  p.output("t", topk(x, 3).second);
  p.output("e", sort(p.input("e", DType::F32, {0, 3}), 1));
  std::vector<double> xv = {4, -9, 4, 100, 0, -9};
  expectOnAllTargets(p, {HostTensor::of(DType::I64, {6}, xv), HostTensor(DType::F32, {0, 3})},
                     {{100, 4, 4, 0, -9, -9}, {1, 5, 4, 0, 2, 3}, {3, 0, 2}, {}}, 0);
}

// ---- errors -------------------------------------------------------------------------------

std::string errorOf(const std::function<void(Program&)>& build) {
  Program p;
  build(p);
  return p.error() ? p.error()->message : "(no error)";
}

TEST(ReduceErrors, BadAxesDtypesAndShapesAreErrorsNamingThem) {
  auto expectError = [](const std::function<void(Program&)>& build, const std::string& want) {
    std::string got = errorOf(build);
    EXPECT_NE(got.find(want), std::string::npos) << got;
  };
  expectError([](Program& p) { sum(p.input("x", DType::F32, {2, 3}), {2}); },
              "reduce_sum: axis 2 is out of range for [2, 3]");
  expectError([](Program& p) { sum(p.input("x", DType::F32, {2, 3}), {1, -1}); }, "reduce_sum: axis -1 is given twice");
  expectError([](Program& p) { sum(p.input("x", DType::Bool, {2})); }, "reduce_sum wants a numeric tensor, not bool");
  expectError([](Program& p) { norm_l2(p.input("x", DType::I32, {2})); }, "reduce_l2 wants a float tensor, not i32");
  expectError([](Program& p) { var(p.input("x", DType::I32, {2})); }, "var wants a float tensor, not i32");
  expectError([](Program& p) { argmax(p.input("x", DType::F32, {3, 0}), 1); }, "argmax: axis 1 of [3, 0] is empty");
  expectError([](Program& p) { argmin(p.input("x", DType::F32, {3}), -2); }, "argmin: axis -2 is out of range for [3]");
  expectError([](Program& p) { softmax(p.input("x", DType::I32, {3})); }, "softmax wants a float tensor, not i32");
  expectError([](Program& p) { log_softmax(p.input("x", DType::F32, {3}), 1); },
              "log_softmax: axis 1 is out of range for [3]");
  expectError([](Program& p) {
    layer_norm(p.input("x", DType::F32, {2, 4}), p.input("s", DType::F32, {3}));
  }, "layer_norm: scale [3] does not broadcast to the normalised shape [4] of x [2, 4]");
  expectError([](Program& p) {
    layer_norm(p.input("x", DType::F32, {2, 4}), p.input("s", DType::I32, {4}));
  }, "layer_norm: scale must be a float tensor, not i32");
  expectError([](Program& p) {
    Tensor c = p.input("c", DType::F32, {3});
    batch_norm(p.input("x", DType::F32, {2, 4, 5}), c, c, c, c);
  }, "batch_norm: scale [3] must be [4], one per channel of x [2, 4, 5]");
  expectError([](Program& p) {
    Tensor c = p.input("c", DType::F32, {2});
    instance_norm(p.input("x", DType::F32, {2}), c, c);
  }, "instance_norm: x [2] must have a batch and a channel dimension");
  expectError([](Program& p) { lp_normalize(p.input("x", DType::F32, {3}), -1, 3); },
              "lp_normalization: p must be 1 or 2, not 3");
  expectError([](Program& p) { mean_variance_normalize(p.input("x", DType::F32, {2, 3})); },
              "mean_variance_normalization: axis 2 is out of range for [2, 3]");
  expectError([](Program& p) { p.apply("cumsum", {p.input("x", DType::F32, {3})}); },
              "cumsum: the attribute axis is required");
  expectError([](Program& p) { topk(p.input("x", DType::F32, {2, 4}), 5); },
              "topk: k = 5 is out of range for axis 1 of [2, 4] (extent 4)");
  expectError([](Program& p) { topk(p.input("x", DType::F32, {2, 4}), -1, 0); },
              "topk: k = -1 is out of range for axis 0 of [2, 4] (extent 2)");
  expectError([](Program& p) { p.apply("topk", {p.input("x", DType::F32, {2})}); }, "topk: the attribute k is required");
  expectError([](Program& p) { sort(p.input("x", DType::Bool, {2})); }, "sort wants a numeric tensor, not bool");
}

}  // namespace
}  // namespace eph::tensor::test
