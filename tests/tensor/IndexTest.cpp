// The index family (docs/tensor.md, "Indexing, shaping and creation"): each
// op on every target against float64 references computed here, on shapes
// with size-1, empty and odd dimensions and on non-contiguous views; index
// edge cases (negative, out of range, duplicates); error messages. (resize:
// ResizeTest.cpp.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "tests/tensor/IndexTestUtil.h"
#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

// ---- concat, stack, split -------------------------------------------------------

Ref concatRef(const std::vector<Ref>& xs, size_t axis) {
  Shape s = xs[0].shape;
  s[axis] = 0;
  for (const Ref& x : xs) s[axis] += x.shape[axis];
  return build(s, [&](std::vector<int64_t> i) {
    for (const Ref& x : xs) {
      if (i[axis] < x.shape[axis]) return at(x, i);
      i[axis] -= x.shape[axis];
    }
    return 0.0;
  });
}

TEST(IndexConcat, EveryAxisWithEmptySizeOneAndNonContiguousInputs) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rnd({2, 3}, 1), b = rnd({2, 1}, 2), e{{2, 0}, {}}, c = rnd({2, 5}, 3);
  Tensor ta = inputOf(p, "a", DType::F32, a, in), tb = inputOf(p, "b", DType::F32, b, in);
  Tensor te = inputOf(p, "e", DType::F32, e, in), tc = viewOf(p, "c", DType::F32, c, in);
  p.output("x", concat({ta, tb, te, tc}, 1));                  // [2, 9]
  p.output("y", concat({ta, slice(tc, 1, 0, 5, 2)}, -2));      // [4, 3], a strided view
  p.output("z", concat({te, te}, 0));                          // [4, 0]
  p.output("w", concat({ta}, 0));
  Ref cs = build({2, 3}, [&](const std::vector<int64_t>& i) { return at(c, {i[0], 2 * i[1]}); });
  expectOnAllTargets(p, in, {concatRef({a, b, e, c}, 1).v, concatRef({a, cs}, 0).v, {}, a.v}, 0);
}

TEST(IndexConcat, IntegerAndBoolTensorsAndStackAndSplit) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rndInt({3, 1, 2}, 4, -1000000, 1000000), b = rndInt({3, 2, 2}, 5, -9, 9);
  for (double& x : a.v) x *= 1 << 20;  // beyond i32
  Tensor ta = inputOf(p, "a", DType::I64, a, in), tb = inputOf(p, "b", DType::I64, b, in);
  p.output("ab", concat({ta, tb, ta}, 1));
  Ref m = rndInt({2, 3}, 6, 0, 1);
  Tensor tm = inputOf(p, "m", DType::Bool, m, in);
  Tensor cm = concat({tm, tm}, 0);
  EXPECT_EQ(cm.dtype(), DType::Bool);
  p.output("m", cm);
  std::vector<Tensor> many;  // many inputs: a deep chain of ifs
  for (int k = 0; k < 12; ++k) many.push_back(slice(tb, 1, k % 2, k % 2 + 1));
  p.output("many", concat(many, 1));
  // stack of three [2, 3] views at axis 1 → [2, 3, 3]; split back.
  Ref x = rnd({2, 3}, 7);
  Tensor tx = inputOf(p, "x", DType::F64, x, in);
  Tensor st = stack({tx, tx * 2.0, tx * 3.0}, 1);
  EXPECT_EQ(st.shape(), (Shape{2, 3, 3}));
  p.output("st", st);
  std::vector<Tensor> parts = split(tx, {1, 0, 2}, -1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0}));
  p.output("p2", parts[2] * 1.0);
  std::vector<Tensor> ch = chunk(p.input("y", DType::F32, {7, 2}), 3);
  in.push_back(host(DType::F32, rnd({7, 2}, 8)));
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(ch[2].shape(), (Shape{1, 2}));
  Ref st3 = build({2, 3, 3}, [&](const std::vector<int64_t>& i) { return at(x, {i[0], i[2]}) * double(i[1] + 1); });
  Ref p2 = build({2, 2}, [&](const std::vector<int64_t>& i) { return at(x, {i[0], i[1] + 1}); });
  std::vector<Ref> rows;
  for (int k = 0; k < 12; ++k)
    rows.push_back(build({3, 1, 2}, [&](const std::vector<int64_t>& i) { return at(b, {i[0], k % 2, i[2]}); }));
  expectOnAllTargets(p, in, {concatRef({a, b, a}, 1).v, concatRef({m, m}, 0).v, concatRef(rows, 1).v, st3.v, p2.v}, 0);
}

// ---- tile, pad ---------------------------------------------------------------------

Ref tileRef(const Ref& x, const std::vector<int64_t>& reps) {
  Shape s = x.shape;
  for (size_t d = 0; d < s.size(); ++d) s[d] *= reps[d];
  return build(s, [&](std::vector<int64_t> i) {
    for (size_t d = 0; d < i.size(); ++d) i[d] %= x.shape[d];
    return at(x, i);
  });
}

TEST(IndexTile, RepeatsIncludingZeroAndOne) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rnd({2, 3}, 11), s = rnd({1}, 12), c = rndInt({3, 1, 2}, 13, -50, 50);
  Tensor ta = inputOf(p, "a", DType::F32, a, in), ts = inputOf(p, "s", DType::F32, s, in);
  Tensor tc = viewOf(p, "c", DType::I32, c, in);
  p.output("a", tile(ta, {2, 3}));
  p.output("s", tile(ts, {5}));
  p.output("c", tile(tc, {1, 4, 3}));
  p.output("z", tile(ta, {0, 2}));
  EXPECT_EQ(tile(ta, {0, 2}).shape(), (Shape{0, 6}));
  expectOnAllTargets(p, in, {tileRef(a, {2, 3}).v, tileRef(s, {5}).v, tileRef(c, {1, 4, 3}).v, {}}, 0);
}

// numpy.pad's modes, by repeated mirroring / wrapping (a different route from the kernels').
Ref padRef(const Ref& x, const std::vector<int64_t>& pads, const std::string& mode, double value) {
  const size_t r = x.shape.size();
  Shape s = x.shape;
  for (size_t d = 0; d < r; ++d) s[d] += pads[d] + pads[d + r];
  return build(s, [&](std::vector<int64_t> i) {
    for (size_t d = 0; d < r; ++d) {
      int64_t n = x.shape[d], j = i[d] - pads[d];
      if (mode == "constant") {
        if (j < 0 || j >= n) return value;
      } else if (mode == "edge") {
        j = std::clamp<int64_t>(j, 0, n - 1);
      } else if (mode == "wrap") {
        while (j < 0) j += n;
        while (j >= n) j -= n;
      } else if (n == 1) {
        j = 0;
      } else {
        while (j < 0 || j >= n) j = j < 0 ? -j : 2 * (n - 1) - j;
      }
      i[d] = j;
    }
    return at(x, i);
  });
}

TEST(IndexPad, EveryModeWithLargeNegativeAndSizeOnePads) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rnd({3, 4}, 21), one = rnd({1, 3}, 22);
  Tensor ta = inputOf(p, "a", DType::F32, a, in);
  Tensor tv = viewOf(p, "v", DType::F32, a, in);  // the same values through a transposed view
  Tensor to = inputOf(p, "o", DType::F32, one, in);
  std::vector<std::vector<double>> want;
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    std::vector<int64_t> big = {5, 2, 1, 7};  // beyond the extents: reflect and wrap go round more than once
    p.output(mode, pad(ta, big, mode, 2.5));
    want.push_back(padRef(a, big, mode, 2.5).v);
    p.output(mode + "v", pad(tv, {1, -1, 0, 2}, mode, -1));  // a negative pad crops
    want.push_back(padRef(a, {1, -1, 0, 2}, mode, -1).v);
    p.output(mode + "1", pad(to, {2, 0, 3, 1}, mode));
    want.push_back(padRef(one, {2, 0, 3, 1}, mode, 0).v);
  }
  expectOnAllTargets(p, in, want, 0);
}

TEST(IndexPad, EmptyInputsAxesAndIntegerValues) {
  Program p;
  std::vector<HostTensor> in;
  Tensor e = inputOf(p, "e", DType::F32, Ref{{0, 3}, {}}, in);
  p.output("e", pad(e, {1, 0, 1, 1}, "constant", 7));  // [2, 4], all 7
  Ref x = rndInt({2, 3}, 23, -100, 100);
  Tensor tx = inputOf(p, "x", DType::I16, x, in);
  // pads on axis 1 only, given by axes (ONNX Pad's axes input as an attribute).
  p.output("ax", p.apply("pad", {tx}, {{"pads", std::vector<int64_t>{2, 1}}, {"axes", std::vector<int64_t>{-1}},
                                       {"mode", std::string("constant")}, {"value", 9.0}}));
  p.output("e0", pad(e, {0, 0, 0, 0}, "reflect"));  // nothing to pad: fine although empty
  expectOnAllTargets(p, in, {std::vector<double>(8, 7), padRef(x, {0, 2, 0, 1}, "constant", 9).v, {}}, 0);
}

// ---- gather, gather_elements, gather_nd ---------------------------------------------

// An index as the ops read it: negative counts from the end; -1 when out of range.
int64_t norm(double raw, int64_t dim) {
  int64_t i = int64_t(raw);
  if (i < 0) i += dim;
  return i >= 0 && i < dim ? i : -1;
}

Ref gatherRef(const Ref& data, const Ref& ind, size_t axis) {
  Shape s(data.shape.begin(), data.shape.begin() + ptrdiff_t(axis));
  s.insert(s.end(), ind.shape.begin(), ind.shape.end());
  s.insert(s.end(), data.shape.begin() + ptrdiff_t(axis) + 1, data.shape.end());
  const size_t q = ind.shape.size();
  return build(s, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> ii(o.begin() + ptrdiff_t(axis), o.begin() + ptrdiff_t(axis + q));
    int64_t j = norm(at(ind, ii), data.shape[axis]);
    if (j < 0) return 0.0;
    std::vector<int64_t> di(o.begin(), o.begin() + ptrdiff_t(axis));
    di.push_back(j);
    di.insert(di.end(), o.begin() + ptrdiff_t(axis + q), o.end());
    return at(data, di);
  });
}

TEST(IndexGather, AxesNegativeAndOutOfRangeIndicesScalarAndEmpty) {
  Program p;
  std::vector<HostTensor> in;
  Ref d = rnd({4, 3}, 31);
  Tensor td = viewOf(p, "d", DType::F32, d, in);
  Ref i0{{2, 2}, {-1, 0, 3, 5}}, i1{{5}, {2, -3, 0, 3, -4}}, is{{}, {-2}}, ie{{0}, {}};
  Tensor t0 = inputOf(p, "i0", DType::I64, i0, in), t1 = inputOf(p, "i1", DType::I32, i1, in);
  Tensor ts = inputOf(p, "is", DType::I32, is, in), te = inputOf(p, "ie", DType::I64, ie, in);
  p.output("a0", gather(td, t0, 0));
  p.output("a1", gather(td, t1, -1));
  p.output("as", gather(td, ts, 1));
  p.output("ae", gather(td, te, 0));
  Ref z{{2, 0}, {}};
  Tensor tz = inputOf(p, "z", DType::F32, z, in);
  Tensor gz = gather(tz, t1, 1);  // every index is out of range of an empty axis: zeros
  EXPECT_EQ(gz.shape(), (Shape{2, 5}));
  p.output("z", gz);
  Ref table = rndInt({5, 3}, 32, -1000, 1000), ids{{2, 3}, {0, 4, 4, -5, 2, 1}};
  Tensor tt = inputOf(p, "t", DType::I64, table, in), tids = inputOf(p, "ids", DType::I32, ids, in);
  p.output("emb", embedding(tt, tids));
  p.output("sel", index_select(tt, 1, t1));
  expectOnAllTargets(p, in,
                     {gatherRef(d, i0, 0).v, gatherRef(d, i1, 1).v, gatherRef(d, is, 1).v, {}, std::vector<double>(10, 0),
                      gatherRef(table, ids, 0).v, gatherRef(table, i1, 1).v},
                     0);
}

Ref gatherElementsRef(const Ref& data, const Ref& ind, size_t axis) {
  return build(ind.shape, [&](std::vector<int64_t> o) {
    int64_t j = norm(at(ind, o), data.shape[axis]);
    if (j < 0) return 0.0;
    o[axis] = j;
    return at(data, o);
  });
}

Ref gatherNDRef(const Ref& data, const Ref& ind, size_t b) {
  const size_t q = ind.shape.size();
  const int64_t m = ind.shape.back();
  Shape s(ind.shape.begin(), ind.shape.end() - 1);
  s.insert(s.end(), data.shape.begin() + ptrdiff_t(b) + m, data.shape.end());
  return build(s, [&](const std::vector<int64_t>& o) {
    std::vector<int64_t> di(o.begin(), o.begin() + ptrdiff_t(b));
    std::vector<int64_t> ii(o.begin(), o.begin() + ptrdiff_t(q - 1));
    ii.push_back(0);
    for (int64_t c = 0; c < m; ++c) {
      ii.back() = c;
      int64_t j = norm(at(ind, ii), data.shape[b + size_t(c)]);
      if (j < 0) return 0.0;
      di.push_back(j);
    }
    di.insert(di.end(), o.begin() + ptrdiff_t(q - 1), o.end());
    return at(data, di);
  });
}

TEST(IndexGather, ElementsAndNDWithBatchDims) {
  Program p;
  std::vector<HostTensor> in;
  Ref d = rnd({3, 4}, 41);
  Tensor td = viewOf(p, "d", DType::F64, d, in);
  Ref e0{{2, 3}, {2, -1, 0, 3, 1, -4}}, e1{{3, 2}, {3, 0, -1, 4, 1, 1}};
  Tensor te0 = inputOf(p, "e0", DType::I32, e0, in), te1 = inputOf(p, "e1", DType::I64, e1, in);
  p.output("e0", gather_elements(td, te0, 0));
  p.output("e1", gather_elements(td, te1, -1));
  Ref d3 = rnd({2, 3, 5}, 42);
  Tensor td3 = inputOf(p, "d3", DType::F32, d3, in);
  Ref n0{{2, 2}, {1, -1, 0, 4}}, n1{{3, 1}, {1, -2, 2}}, n2{{2, 3}, {1, 2, 4, 0, 0, -6}}, nb{{2, 2, 1}, {2, -1, 0, 3}};
  Tensor tn0 = inputOf(p, "n0", DType::I64, n0, in), tn1 = inputOf(p, "n1", DType::I32, n1, in);
  Tensor tn2 = inputOf(p, "n2", DType::I32, n2, in), tnb = inputOf(p, "nb", DType::I64, nb, in);
  p.output("n0", gather_nd(td3, tn0));
  p.output("n1", gather_nd(td3, tn1));
  p.output("n2", gather_nd(td3, tn2));
  Tensor gb = gather_nd(td3, tnb, 1);
  EXPECT_EQ(gb.shape(), (Shape{2, 2, 5}));
  p.output("nb", gb);
  expectOnAllTargets(p, in,
                     {gatherElementsRef(d, e0, 0).v, gatherElementsRef(d, e1, 1).v, gatherNDRef(d3, n0, 0).v,
                      gatherNDRef(d3, n1, 0).v, gatherNDRef(d3, n2, 0).v, gatherNDRef(d3, nb, 1).v},
                     0);
}

// ---- scatter_elements, scatter_nd ----------------------------------------------------

double reduceRef(const std::string& red, double acc, double u) {
  if (red == "add") return acc + u;
  if (red == "mul") return acc * u;
  if (red == "max") return std::max(acc, u);
  if (red == "min") return std::min(acc, u);
  return u;
}

// ONNX's reference: the updates in row-major order, each applied in turn.
Ref scatterElementsRef(const Ref& data, const Ref& ind, const Ref& upd, size_t axis, const std::string& red) {
  Ref out = data;
  for (int64_t i = 0; i < numel(ind.shape); ++i) {
    std::vector<int64_t> q = unravel(i, ind.shape);
    int64_t j = norm(ind.v[size_t(i)], data.shape[axis]);
    if (j < 0) continue;
    q[axis] = j;
    double& x = out.v[size_t(ravel(q, data.shape))];
    x = reduceRef(red, x, upd.v[size_t(i)]);
  }
  return out;
}

Ref scatterNDRef(const Ref& data, const Ref& ind, const Ref& upd, const std::string& red) {
  Ref out = data;
  const int64_t m = ind.shape.back();
  const int64_t tuples = numel(ind.shape) / m, slab = numel(data.shape) / numel(Shape(data.shape.begin(), data.shape.begin() + m));
  for (int64_t t = 0; t < tuples; ++t) {
    std::vector<int64_t> pos;
    bool ok = true;
    for (int64_t c = 0; c < m; ++c) {
      int64_t j = norm(ind.v[size_t(t * m + c)], data.shape[size_t(c)]);
      ok &= j >= 0;
      pos.push_back(j);
    }
    if (!ok) continue;
    pos.resize(data.shape.size(), 0);
    int64_t base = ravel(pos, data.shape);
    for (int64_t e = 0; e < slab; ++e) {
      double& x = out.v[size_t(base + e)];
      x = reduceRef(red, x, upd.v[size_t(t * slab + e)]);
    }
  }
  return out;
}

// scatter_elements with each reduction of `reds` (one program, so that a test stays short on lavapipe).
void scatterElementsCase(const std::vector<std::string>& reds, bool integers) {
  Program p;
  std::vector<HostTensor> in;
  Ref d = rndInt({3, 4}, 51, -5, 5);
  Tensor td = viewOf(p, "d", DType::F32, d, in);
  // Axis 0: column 0 gets rows 1, 1, -2 (= 1): three updates of one element; 7 and -4 are skipped.
  Ref i0{{3, 3}, {1, 0, 7, 1, 2, 2, -2, -4, 2}}, u0 = rndInt({3, 3}, 52, -3, 3);
  Ref i1{{3, 2}, {3, 3, 0, -1, 1, 9}}, u1 = rndInt({3, 2}, 53, -3, 3);
  Tensor ti0 = inputOf(p, "i0", DType::I64, i0, in), tu0 = inputOf(p, "u0", DType::F32, u0, in);
  Tensor ti1 = inputOf(p, "i1", DType::I32, i1, in), tu1 = viewOf(p, "u1", DType::F32, u1, in);
  std::vector<std::vector<double>> want;
  for (const std::string& red : reds) {
    p.output(red + "0", scatter_elements(td, ti0, tu0, 0, red));
    want.push_back(scatterElementsRef(d, i0, u0, 0, red).v);
    p.output(red + "1", scatter_elements(td, ti1, tu1, -1, red));
    want.push_back(scatterElementsRef(d, i1, u1, 1, red).v);
  }
  if (!integers) return expectOnAllTargets(p, in, want, 0);
  // Integers, and no updates at all.
  Ref di = rndInt({2, 3}, 54, -100, 100), ii{{2, 1}, {2, 2}}, ui{{2, 1}, {1000000, 7}};
  Tensor tdi = inputOf(p, "di", DType::I32, di, in);
  p.output("i", scatter_elements(tdi, inputOf(p, "ii", DType::I32, ii, in), inputOf(p, "ui", DType::I32, ui, in), 1, "add"));
  want.push_back(scatterElementsRef(di, ii, ui, 1, "add").v);
  Ref ie{{2, 0}, {}};
  p.output("e", scatter_elements(tdi, inputOf(p, "ie", DType::I64, ie, in), inputOf(p, "ue", DType::I32, ie, in), 1));
  want.push_back(di.v);
  expectOnAllTargets(p, in, want, 0);
}

TEST(IndexScatter, ElementsWithDuplicatesAndSkippedIndicesNoneAddMul) { scatterElementsCase({"none", "add", "mul"}, false); }
TEST(IndexScatter, ElementsWithDuplicatesAndSkippedIndicesMaxMinAndIntegers) {
  scatterElementsCase({"max", "min"}, true);
}

void scatterNDCase(const std::vector<std::string>& reds) {
  Program p;
  std::vector<HostTensor> in;
  Ref d = rndInt({4, 3}, 61, -5, 5);
  Tensor td = viewOf(p, "d", DType::F64, d, in);
  Ref i0{{5, 1}, {1, 3, 1, -1, 7}}, u0 = rndInt({5, 3}, 62, -3, 3);  // rows 1 and 3 twice each; 7 skipped
  Ref i1{{2, 2, 2}, {0, 2, -4, -1, 0, 2, 3, 3}}, u1 = rndInt({2, 2}, 63, -3, 3);
  Tensor ti0 = inputOf(p, "i0", DType::I32, i0, in), tu0 = inputOf(p, "u0", DType::F64, u0, in);
  Tensor ti1 = inputOf(p, "i1", DType::I64, i1, in), tu1 = inputOf(p, "u1", DType::F64, u1, in);
  std::vector<std::vector<double>> want;
  for (const std::string& red : reds) {
    p.output(red + "0", scatter_nd(td, ti0, tu0, red));
    want.push_back(scatterNDRef(d, i0, u0, red).v);
    p.output(red + "1", scatter_nd(td, ti1, tu1, red));
    want.push_back(scatterNDRef(d, i1, u1, red).v);
  }
  expectOnAllTargets(p, in, want, 0);
}

TEST(IndexScatter, NDWithDuplicatesAndSkippedIndicesNoneAddMul) { scatterNDCase({"none", "add", "mul"}); }
TEST(IndexScatter, NDWithDuplicatesAndSkippedIndicesMaxMin) { scatterNDCase({"max", "min"}); }

// ---- one_hot, trilu, range ----------------------------------------------------------

TEST(IndexOneHot, AxesNegativeAndOutOfRangeIndices) {
  Program p;
  std::vector<HostTensor> in;
  Ref i{{2, 3}, {0, 3, -1, -4, 4, 2}};  // depth 4: -1 → 3, -4 → 0, 4 → none
  Tensor ti = inputOf(p, "i", DType::I64, i, in);
  auto ref = [&](int64_t axis, double on, double off) {
    Shape s = i.shape;
    s.insert(s.begin() + axis, 4);
    return build(s, [&](std::vector<int64_t> o) {
      int64_t j = o[size_t(axis)];
      o.erase(o.begin() + axis);
      return norm(at(i, o), 4) == j ? on : off;
    }).v;
  };
  p.output("a", one_hot(ti, 4));
  p.output("b", one_hot(ti, 4, 0, 5, -2, DType::I32));
  p.output("c", one_hot(ti, 4, -2, 1, 0, DType::Bool));
  Tensor e = one_hot(inputOf(p, "e", DType::I32, Ref{{0}, {}}, in), 3);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  p.output("e", e);
  expectOnAllTargets(p, in, {ref(2, 1, 0), ref(0, 5, -2), ref(1, 1, 0), {}}, 0);
}

TEST(IndexTrilu, UpperAndLowerWithOffsetsBatchesAndViews) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rnd({3, 5}, 71), b = rnd({2, 4, 3}, 72), one = rnd({1, 1}, 73);
  Tensor ta = inputOf(p, "a", DType::F32, a, in), tb = viewOf(p, "b", DType::F32, b, in);
  Tensor to = inputOf(p, "o", DType::F32, one, in);
  auto ref = [](const Ref& x, bool upper, int64_t k) {
    return build(x.shape, [&](const std::vector<int64_t>& i) {
      int64_t diff = i[i.size() - 1] - i[i.size() - 2];
      return (upper ? diff >= k : diff <= k) ? at(x, i) : 0.0;
    }).v;
  };
  std::vector<std::vector<double>> want;
  for (int64_t k : {-2, 1, 7}) {
    p.output("u" + std::to_string(k), triu(ta, k));
    want.push_back(ref(a, true, k));
    p.output("l" + std::to_string(k), tril(tb, k));
    want.push_back(ref(b, false, k));
  }
  p.output("o", trilu(to, false, -1));
  want.push_back({0});
  p.output("o2", trilu(ta, false, -100));  // k far beyond the matrix
  want.push_back(std::vector<double>(15, 0));
  p.output("e", triu(inputOf(p, "e", DType::F32, Ref{{0, 3}, {}}, in)));
  want.push_back({});
  expectOnAllTargets(p, in, want, 0);
}

TEST(IndexRange, FloatIntegerNegativeAndEmpty) {
  Program p;
  auto ref = [](double start, double limit, double delta) {
    std::vector<double> v;
    for (int64_t i = 0; i < int64_t(std::ceil((limit - start) / delta)); ++i) v.push_back(start + double(i) * delta);
    return v;
  };
  Tensor a = range(p, 0.5, 3.7, 0.3);
  EXPECT_EQ(a.shape(), (Shape{11}));
  p.output("a", a);
  p.output("b", range(p, 10, -3, -4, DType::I64));
  p.output("c", range(p, 5, 5, 1, DType::I32));
  p.output("d", range(p, 1, 2, 0.25, DType::F64));
  Tensor h = range(p, 3, -2, -0.5, DType::F16);
  p.output("h", h);
  std::vector<double> av = ref(0.5, 3.7, 0.3);
  for (double& x : av) x = double(float(x));
  expectOnAllTargets(p, {}, {av, ref(10, -3, -4), {}, ref(1, 2, 0.25), ref(3, -2, -0.5)}, 0);
}

// ---- random_uniform, random_normal, bernoulli ------------------------------------------

// The generator as docs/tensor.md states it, on the host.
uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
uint32_t triple32(uint32_t x) {
  x ^= x >> 17;
  x *= 0xed5ad4bbu;
  x ^= x >> 11;
  x *= 0xac4c1b51u;
  x ^= x >> 15;
  x *= 0x31848babu;
  x ^= x >> 14;
  return x;
}
uint32_t draw(uint32_t i, int64_t seed, uint64_t stream) {
  uint64_t key = splitmix64(splitmix64(uint64_t(seed)) + stream);
  return triple32(triple32(i ^ uint32_t(key)) + uint32_t(key >> 32));
}

// Runs p on every target; returns each target's outputs (the first target's
// first) and, in `names`, the targets that gave them.
std::vector<std::vector<HostTensor>> runEverywhere(const Program& p, const std::vector<HostTensor>& in,
                                                   std::vector<std::string>* names = nullptr) {
  std::vector<std::vector<HostTensor>> out;
  EXPECT_FALSE(p.error()) << errorOf(p);
  for (const std::string& t : targets()) {
    auto got = run(p, t, in);
    EXPECT_TRUE(got) << t << ": " << (got ? "" : got.error().message);
    if (got) out.push_back(*got);
    if (got && names) names->push_back(t);
  }
  return out;
}

struct Moments {
  double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
};
Moments moments(const HostTensor& h) {
  Moments m;
  for (double v : h.values()) {
    m.mean += v;
    m.lo = std::min(m.lo, v);
    m.hi = std::max(m.hi, v);
  }
  m.mean /= double(h.size());
  for (double v : h.values()) m.var += (v - m.mean) * (v - m.mean);
  m.var /= double(h.size());
  return m;
}

TEST(IndexRandom, SameBitsOnEveryTargetAndTheDocumentedGenerator) {
  Program p;
  p.output("u32", random_uniform(p, {64, 33}, DType::F32, -2, 3, 7));
  p.output("u64", random_uniform(p, {65}, DType::F64, 0, 1, 7));
  p.output("u16", random_uniform(p, {3, 5}, DType::F16, -1, 1, 123456789));
  p.output("n32", random_normal(p, {64, 33}, DType::F32, 1, 2, -5));
  p.output("n64", random_normal(p, {17}, DType::F64, 0, 1, 5));
  Ref probs = rnd({40, 50}, 91, 0, 1);
  std::vector<HostTensor> in;
  Tensor tp = inputOf(p, "p", DType::F32, probs, in);
  p.output("b", bernoulli(tp, 3));
  p.output("bv", bernoulli(transpose(tp), 3));  // a view: the counter is the output's element index
  std::vector<std::string> names;
  auto outs = runEverywhere(p, in, &names);
  ASSERT_FALSE(outs.empty());
  const auto& first = outs[0];
  for (size_t t = 1; t < outs.size(); ++t)
    for (size_t o = 0; o < first.size(); ++o) {
      SCOPED_TRACE("target " + names[t] + ", output " + p.outputs()[o].first);
      if (p.outputs()[o].first == "n64") {  // Vulkan's own f64 log and cos: within a few ulp
        for (int64_t i = 0; i < first[o].size(); ++i) EXPECT_NEAR(outs[t][o].get(i), first[o].get(i), 1e-14 * (1 + std::abs(first[o].get(i))));
        continue;
      }
      EXPECT_TRUE(outs[t][o].bytes == first[o].bytes);
    }
  // The values are the documented generator's, exactly.
  for (int64_t i = 0; i < first[0].size(); ++i) {
    double u = double(draw(uint32_t(i), 7, 0) >> 8) * 0x1p-24;
    ASSERT_EQ(first[0].get(i), double(float(std::fma(5.0, u, -2.0)))) << i;
  }
  for (int64_t i = 0; i < first[1].size(); ++i) {
    double u = (double(draw(uint32_t(i), 7, 0) >> 5) * 0x1p26 + double(draw(uint32_t(i), 7, 1) >> 6)) * 0x1p-53;
    ASSERT_EQ(first[1].get(i), u) << i;
  }
  for (int64_t i = 0; i < first[5].size(); ++i) {
    double u = double(draw(uint32_t(i), 3, 0) >> 8) * 0x1p-24;
    ASSERT_EQ(first[5].get(i), u < probs.v[size_t(i)] ? 1 : 0) << i;
  }
  Ref pt = reversed(probs);
  for (int64_t i = 0; i < first[6].size(); ++i) {
    double u = double(draw(uint32_t(i), 3, 0) >> 8) * 0x1p-24;
    ASSERT_EQ(first[6].get(i), u < pt.v[size_t(i)] ? 1 : 0) << i;
  }
}

TEST(IndexRandom, MomentsAreRightAndSeedsDiffer) {
  Program p;
  const Shape s = {100, 100};
  p.output("u", random_uniform(p, s, DType::F32, -2, 3, 11));
  p.output("u2", random_uniform(p, s, DType::F32, -2, 3, 12));
  p.output("u3", random_uniform(p, s, DType::F32, -2, 3, 11));
  p.output("n", random_normal(p, s, DType::F32, 1, 2, 11));
  p.output("n64", random_normal(p, s, DType::F64, -3, 0.5, 13));
  auto outs = runEverywhere(p, {});
  ASSERT_FALSE(outs.empty());
  for (const auto& o : outs) {
    Moments u = moments(o[0]);
    EXPECT_NEAR(u.mean, 0.5, 0.05);
    EXPECT_NEAR(u.var, 25.0 / 12, 0.1);
    EXPECT_GE(u.lo, -2);
    EXPECT_LE(u.hi, 3);
    int same = 0, again = 0;
    for (int64_t i = 0; i < o[0].size(); ++i) {
      same += o[0].get(i) == o[1].get(i);
      again += o[0].get(i) == o[2].get(i);
    }
    EXPECT_LT(same, 10);            // another seed: other numbers
    EXPECT_EQ(again, 10000);        // the same seed: the same numbers
    Moments n = moments(o[3]);
    EXPECT_NEAR(n.mean, 1, 0.1);
    EXPECT_NEAR(n.var, 4, 0.25);
    int within = 0;
    for (double v : o[3].values()) within += std::abs(v - 1) < 2;
    EXPECT_NEAR(within / 10000.0, 0.6827, 0.02);
    Moments n64 = moments(o[4]);
    EXPECT_NEAR(n64.mean, -3, 0.025);
    EXPECT_NEAR(n64.var, 0.25, 0.02);
  }
}

TEST(IndexRandom, BernoulliFrequencies) {
  Program p;
  Ref probs = build({3, 4000}, [](const std::vector<int64_t>& i) { return i[0] == 0 ? 0.0 : i[0] == 1 ? 0.3 : 1.0; });
  std::vector<HostTensor> in;
  Tensor tp = inputOf(p, "p", DType::F64, probs, in);
  p.output("b", bernoulli(tp, 11));
  Tensor bi = p.apply("bernoulli", {tp}, {{"seed", int64_t(11)}, {"dtype", std::string("i32")}});
  EXPECT_EQ(bi.dtype(), DType::I32);
  p.output("bi", bi);
  auto outs = runEverywhere(p, in);
  ASSERT_FALSE(outs.empty());
  for (const auto& o : outs) {
    std::vector<double> b = o[0].values();
    EXPECT_EQ(o[0].dtype, DType::F64);
    double ones[3] = {0, 0, 0};
    for (size_t i = 0; i < b.size(); ++i) {
      ASSERT_TRUE(b[i] == 0 || b[i] == 1);
      ones[i / 4000] += b[i];
    }
    EXPECT_EQ(ones[0], 0);
    EXPECT_NEAR(ones[1] / 4000, 0.3, 0.03);
    EXPECT_EQ(ones[2], 4000);
    EXPECT_EQ(o[1].values(), b);  // another output dtype: the same draws
  }
}

// f16 tensors (stored as f16, computed in f32) and index tensors that are views.
TEST(IndexFloat16, ConcatPadGatherScatterResizeAndIndexViews) {
  Program p;
  std::vector<HostTensor> in;
  Ref a = rnd({3, 4}, 101), b = rnd({3, 1}, 102);
  for (double& v : a.v) v = double(_Float16(v));
  for (double& v : b.v) v = double(_Float16(v));
  Tensor ta = inputOf(p, "a", DType::F16, a, in), tb = inputOf(p, "b", DType::F16, b, in);
  p.output("c", concat({tb, ta}, 1));
  p.output("p", pad(ta, {1, 2, 0, 1}, "reflect"));
  Ref i{{2, 3}, {0, -1, 2, 1, 1, 3}};  // given as a transposed view [3, 2] → its transpose
  Tensor ti = viewOf(p, "i", DType::I64, i, in);
  p.output("g", gather(ta, ti, 1));
  Ref ie{{2, 4}, {2, 0, 1, 1, 2, 0, -3, 1}}, ue = rnd({2, 4}, 103);
  for (double& v : ue.v) v = double(_Float16(v));
  Tensor tie = inputOf(p, "ie", DType::I32, ie, in), tue = inputOf(p, "ue", DType::F16, ue, in);
  p.output("s", scatter_elements(ta, tie, tue, 0, "add"));
  p.output("r", resize(ta, {5, 7}, opts("linear", "half_pixel")));
  std::vector<std::vector<double>> want = {concatRef({b, a}, 1).v, padRef(a, {1, 2, 0, 1}, "reflect", 0).v,
                                           gatherRef(a, i, 1).v, scatterElementsRef(a, ie, ue, 0, "add").v,
                                           resizeRef(a, {5, 7}, opts("linear", "half_pixel")).v};
  for (auto& w : want)
    for (double& v : w) v = double(_Float16(v));
  expectOnAllTargets(p, in, want, 1e-3);
}

TEST(IndexBool, GatherScatterPadTriluOnBoolAndUnsignedData) {
  Program p;
  std::vector<HostTensor> in;
  Ref m = rndInt({3, 4}, 111, 0, 1), u = rndInt({3, 4}, 112, 0, 60000);
  Tensor tm = inputOf(p, "m", DType::Bool, m, in), tu = viewOf(p, "u", DType::U16, u, in);
  Ref i{{2}, {-1, 5}}, ni{{2, 1}, {2, 0}}, nu = rndInt({2, 4}, 113, 0, 1);
  Tensor ti = inputOf(p, "i", DType::I32, i, in), tni = inputOf(p, "ni", DType::I64, ni, in);
  p.output("g", gather(tm, ti, 1));
  p.output("s", scatter_nd(tm, tni, inputOf(p, "nu", DType::Bool, nu, in)));
  p.output("p", pad(tm, {1, 0, 0, 1}, "constant", 1));
  p.output("t", tril(tm));
  p.output("gu", gather(tu, ti, 0));
  p.output("su", scatter_nd(tu, tni, inputOf(p, "nuu", DType::U16, nu, in), "max"));
  auto tri = build(m.shape, [&](const std::vector<int64_t>& x) { return x[1] <= x[0] ? at(m, x) : 0.0; });
  expectOnAllTargets(p, in,
                     {gatherRef(m, i, 1).v, scatterNDRef(m, ni, nu, "none").v, padRef(m, {1, 0, 0, 1}, "constant", 1).v, tri.v,
                      gatherRef(u, i, 0).v, scatterNDRef(u, ni, nu, "max").v},
                     0);
}

TEST(IndexErrors, ConcatTilePadNameTheOpAndTheShapes) {
  {
    Program p;
    concat({p.input("a", DType::F32, {2, 3}), p.input("b", DType::F32, {3, 3})}, 1);
    EXPECT_ERROR(p, "concat: shapes [2, 3] and [3, 3] differ outside axis 1");
  }
  {
    Program p;
    concat({p.input("a", DType::F32, {2}), p.input("b", DType::I32, {2})});
    EXPECT_ERROR(p, "concat: the inputs have different dtypes (f32 and i32)");
  }
  {
    Program p;
    concat({p.input("a", DType::F32, {2})}, 1);
    EXPECT_ERROR(p, "concat: axis 1 is out of range for rank 1");
  }
  {
    Program p;
    concat({p.input("a", DType::F32, {})});
    EXPECT_ERROR(p, "concat: cannot concatenate scalars");
  }
  {
    Program p;
    stack({p.input("a", DType::F32, {2}), p.input("b", DType::F32, {3})});
    EXPECT_ERROR(p, "stack: shapes [2] and [3] differ");
  }
  {
    Program p;
    split(p.input("a", DType::F32, {5, 2}), {2, 2});
    EXPECT_ERROR(p, "split: sizes [2, 2] add up to 4, not to the extent 5 of axis 0 of [5, 2]");
  }
  {
    Program p;
    tile(p.input("a", DType::F32, {2, 3}), {2});
    EXPECT_ERROR(p, "tile: repeats [2] has 1 entries for a tensor of shape [2, 3]");
  }
  {
    Program p;
    tile(p.input("a", DType::F32, {2}), {-1});
    EXPECT_ERROR(p, "tile: a negative repeat in [-1]");
  }
  {
    Program p;
    pad(p.input("a", DType::F32, {2, 3}), {1, 1, 1});
    EXPECT_ERROR(p, "pad: pads [1, 1, 1] has 3 entries; a tensor of shape [2, 3] needs 4");
  }
  {
    Program p;
    pad(p.input("a", DType::F32, {2, 3}), {0, -2, 0, -2});
    EXPECT_ERROR(p, "pad: pads [0, -2, 0, -2] would give axis 1 of [2, 3] the extent -1");
  }
  {
    Program p;
    pad(p.input("a", DType::F32, {2}), {1, 1}, "mirror");
    EXPECT_ERROR(p, "pad: unknown mode 'mirror'");
  }
  {
    Program p;
    pad(p.input("a", DType::F32, {0, 2}), {1, 0, 0, 0}, "edge");
    EXPECT_ERROR(p, "pad: mode 'edge' cannot pad the empty axis 0 of [0, 2]");
  }
  {  // The error names the line that made it.
    Program p;
    Tensor a = p.input("a", DType::F32, {2, 3});
    tile(a, {1});  int line = __LINE__;
    EXPECT_EQ(errorOf(p).rfind("IndexTest.cpp:" + std::to_string(line) + ": tile:", 0), 0u) << errorOf(p);
  }
}

TEST(IndexErrors, GatherScatterOneHotTriluRange) {
  auto check = [](const std::function<void(Program&)>& make, const std::string& text) {
    SCOPED_TRACE(text);
    Program p;
    make(p);
    EXPECT_ERROR(p, text);
  };
  check([](Program& p) { gather(p.input("d", DType::F32, {2, 3}), p.input("i", DType::F32, {2})); },
        "gather: indices must be i32 or i64, not f32");
  check([](Program& p) { gather(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I32, {2}), 2); },
        "gather: axis 2 is out of range for data of shape [2, 3]");
  check([](Program& p) { gather(p.input("d", DType::F32, {}), p.input("i", DType::I32, {2})); },
        "gather: data must have rank >= 1");
  check([](Program& p) { gather_elements(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I64, {1, 4})); },
        "gather_elements: indices [1, 4] must have the rank of data [2, 3] and no larger extent outside axis 0");
  check([](Program& p) { gather_elements(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I64, {2})); },
        "gather_elements: indices [2] must have the rank of data [2, 3]");
  check([](Program& p) { gather_nd(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I64, {4, 3})); },
        "gather_nd: the last dimension of indices [4, 3] is 3; it must be in [1, 2] for data [2, 3] and batch_dims 0");
  check([](Program& p) { gather_nd(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I64, {3, 1}), 1); },
        "gather_nd: the first 1 (batch) dimensions of data [2, 3] and indices [3, 1] differ");
  check([](Program& p) { gather_nd(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I64, {2, 1}), 2); },
        "gather_nd: batch_dims 2 must be in [0, 2)");
  check([](Program& p) {
          scatter_elements(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I32, {2, 2}), p.input("u", DType::F32, {2, 3}));
        },
        "scatter_elements: updates [2, 3] must have the shape of indices [2, 2]");
  check([](Program& p) {
          scatter_elements(p.input("d", DType::F32, {2, 3}), p.input("i", DType::I32, {2, 2}), p.input("u", DType::F64, {2, 2}));
        },
        "scatter_elements: updates (f64) must have the dtype of data (f32)");
  check([](Program& p) {
          scatter_elements(p.input("d", DType::F32, {2}), p.input("i", DType::I32, {2}), p.input("u", DType::F32, {2}), 0, "sum");
        },
        "scatter_elements: unknown reduction 'sum' (none, add, mul, max or min)");
  check([](Program& p) {
          scatter_elements(p.input("d", DType::Bool, {2}), p.input("i", DType::I32, {2}), p.input("u", DType::Bool, {2}), 0, "add");
        },
        "scatter_elements: reduction 'add' wants a numeric tensor, not bool");
  check([](Program& p) {
          scatter_nd(p.input("d", DType::F32, {4, 3}), p.input("i", DType::I32, {2, 1}), p.input("u", DType::F32, {2, 4}));
        },
        "scatter_nd: updates [2, 4] must have shape [2, 3] (indices [2, 1], data [4, 3])");
  check([](Program& p) {
          scatter_nd(p.input("d", DType::F32, {4}), p.input("i", DType::I32, {2, 2}), p.input("u", DType::F32, {2}));
        },
        "scatter_nd: the last dimension of indices [2, 2] is 2; it must be in [1, 1] for data [4]");
  check([](Program& p) { one_hot(p.input("i", DType::U8, {2}), 3); }, "one_hot: indices must be i32 or i64, not u8");
  check([](Program& p) { one_hot(p.input("i", DType::I32, {2}), -1); }, "one_hot: depth -1 is negative");
  check([](Program& p) { one_hot(p.input("i", DType::I32, {2}), 3, 2); },
        "one_hot: axis 2 is out of range for a result of rank 2");
  check([](Program& p) { p.apply("one_hot", {p.input("i", DType::I32, {2})}, {}); }, "one_hot: the depth attribute is required");
  check([](Program& p) { triu(p.input("x", DType::F32, {3})); }, "trilu: the input must have rank >= 2, not [3]");
  check([](Program& p) { range(p, 0, 1, 0); }, "range: delta is 0");
  check([](Program& p) { range(p, 0, 1, 0.5, DType::I32); }, "range: start and delta must be integers for dtype i32");
  check([](Program& p) { range(p, 0, 1e12, 1); }, "range: 1000000000000 elements; at most 2147483647");
  check([](Program& p) { resize(p.input("x", DType::Bool, {2, 2}), {4, 4}, opts("linear", "half_pixel")); },
        "resize: mode 'linear' wants a numeric tensor, not bool");
  check([](Program& p) { resize(p.input("x", DType::F32, {2, 2}), {4}); },
        "resize: sizes [4] has 1 entries for an input of shape [2, 2]");
  check([](Program& p) { resize(p.input("x", DType::F32, {0, 2}), {3, 2}); },
        "resize: cannot resize the empty axis 0 of [0, 2] to 3");
  check([](Program& p) { resize(p.input("x", DType::F32, {2}), {3}, opts("bilinear", "half_pixel")); },
        "resize: unknown mode 'bilinear' (nearest, linear or cubic)");
  check([](Program& p) { resize(p.input("x", DType::F32, {2}), {3}, opts("nearest", "half_pixel", "round")); },
        "resize: unknown nearest_mode 'round'");
  check([](Program& p) { resize(p.input("x", DType::F32, {2}), {3}, opts("nearest", "tf_bogus")); },
        "resize: unknown coordinate_transformation_mode 'tf_bogus'");
  check([](Program& p) { p.apply("resize", {p.input("x", DType::F32, {2})}, {}); },
        "resize: the sizes attribute (the output shape) is required");
  check([](Program& p) {
          ResizeOptions o;
          o.scales = {2, 0};
          resize(p.input("x", DType::F32, {2, 2}), {4, 0}, o);
        },
        "resize: scales [2, 0] must be positive and finite");
  check([](Program& p) {
          p.apply("resize", {p.input("x", DType::F32, {2})}, {{"sizes", std::vector<int64_t>{4}}, {"antialias", int64_t(1)}});
        },
        "resize: antialias is not supported");
  check([](Program& p) { random_uniform(p, {2}, DType::I32); }, "random_uniform: dtype must be a float type, not i32");
  check([](Program& p) { random_normal(p, {2, -1}); }, "random_normal: a negative extent in shape [2, -1]");
  check([](Program& p) { p.apply("random_normal", {}, {}); }, "random_normal: the shape attribute is required");
  check([](Program& p) { bernoulli(p.input("p", DType::I32, {2})); },
        "bernoulli: the probabilities must be a float tensor, not i32");
  check([](Program& p) { index_select(p.input("x", DType::F32, {3}), 0, p.input("i", DType::I32, {1, 1})); },
        "index_select: indices must be 1-D, not [1, 1]");
  check([](Program& p) { embedding(p.input("x", DType::F32, {3}), p.input("i", DType::I32, {2})); },
        "embedding: the table must be 2-D [rows, dim], not [3]");
}

}  // namespace
}  // namespace eph::tensor::test

namespace eph::tensor::test {
namespace {

// ONNX's reference uses the unrounded resized length in * scale when scales
// are given (align_corners: 4 · 0.6 = 2.4, so x' = x · 3 / 1.4), and Resize-11's
// tf_half_pixel_for_nn maps x to (x + 0.5) / scale. Values from ONNX 1.12's
// backend tests resize_downsample_scales_linear_align_corners and
// resize_downsample_sizes_nearest_tf_half_pixel_for_nn.
TEST(IndexResize, AlignCornersWithScalesAndTfHalfPixelForNn) {
  Program p;
  Tensor x = p.input("x", DType::F32, {1, 1, 2, 4});
  ResizeOptions ac;
  ac.mode = "linear";
  ac.coordinate_transformation_mode = "align_corners";
  ac.scales = {1, 1, 0.6, 0.6};
  p.output("a", resize(x, {1, 1, 1, 2}, ac));
  Program q;
  Tensor y = q.input("y", DType::F32, {1, 1, 4, 4});
  ResizeOptions nn;
  nn.coordinate_transformation_mode = "tf_half_pixel_for_nn";
  q.output("b", resize(y, {1, 1, 3, 2}, nn));
  std::vector<double> xv = {1, 2, 3, 4, 5, 6, 7, 8}, yv(16);
  for (size_t i = 0; i < 16; ++i) yv[i] = double(i + 1);
  expectOnAllTargets(p, {HostTensor::of(DType::F32, {1, 1, 2, 4}, xv)}, {{1, 3.142857142857143}}, 1e-6);
  expectOnAllTargets(q, {HostTensor::of(DType::F32, {1, 1, 4, 4}, yv)}, {{6, 8, 10, 12, 14, 16}}, 0);
}

}  // namespace
}  // namespace eph::tensor::test
