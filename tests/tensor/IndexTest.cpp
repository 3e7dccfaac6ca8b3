// The index family (docs/tensor.md, "Indexing, shaping and creation"): each
// op on every target against float64 references computed here, on shapes
// with size-1, empty and odd dimensions and on non-contiguous views; index
// edge cases (negative, out of range, duplicates); error messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

#include "tests/tensor/TensorTestUtil.h"

namespace eph::tensor::test {
namespace {

// ---- float64 reference tensors -----------------------------------------------

struct Ref {
  Shape shape;
  std::vector<double> v;
};

std::vector<int64_t> unravel(int64_t i, const Shape& s) {
  std::vector<int64_t> idx(s.size());
  for (size_t d = s.size(); d-- > 0;) {
    idx[d] = s[d] ? i % s[d] : 0;
    i = s[d] ? i / s[d] : 0;
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& s) {
  int64_t i = 0;
  for (size_t d = 0; d < s.size(); ++d) i = i * s[d] + idx[d];
  return i;
}

double at(const Ref& r, const std::vector<int64_t>& idx) { return r.v[size_t(ravel(idx, r.shape))]; }

// A reference of shape s whose element at idx is f(idx).
Ref build(const Shape& s, const std::function<double(const std::vector<int64_t>&)>& f) {
  Ref r{s, std::vector<double>(size_t(numel(s)))};
  for (int64_t i = 0; i < numel(s); ++i) r.v[size_t(i)] = f(unravel(i, s));
  return r;
}

// Values exact in f32 (so an f32 input holds them as they are).
Ref rnd(const Shape& s, uint64_t seed, double lo = -4, double hi = 4) {
  Ref r{s, randomValues(size_t(numel(s)), seed, lo, hi)};
  for (double& x : r.v) x = double(float(x));
  return r;
}

// Integer-valued (exact in every dtype used here).
Ref rndInt(const Shape& s, uint64_t seed, int lo, int hi) {
  Ref r = rnd(s, seed, lo, hi + 1);
  for (double& x : r.v) x = std::floor(x);
  return r;
}

HostTensor host(DType t, const Ref& r) { return HostTensor::of(t, r.shape, r.v); }

// The reference with its axes reversed: what an input must hold so that
// transpose(input) (a non-contiguous view) is `r`.
Ref reversed(const Ref& r) {
  Shape s(r.shape.rbegin(), r.shape.rend());
  return build(s, [&](const std::vector<int64_t>& i) { return at(r, std::vector<int64_t>(i.rbegin(), i.rend())); });
}

// An input whose transpose is `r`, and that transpose.
Tensor viewOf(Program& p, const std::string& name, DType t, const Ref& r, std::vector<HostTensor>& inputs) {
  Ref rv = reversed(r);
  inputs.push_back(host(t, rv));
  return transpose(p.input(name, t, rv.shape));
}

Tensor inputOf(Program& p, const std::string& name, DType t, const Ref& r, std::vector<HostTensor>& inputs) {
  inputs.push_back(host(t, r));
  return p.input(name, t, r.shape);
}

// The program's first error, which must exist.
std::string errorOf(const Program& p) { return p.error() ? p.error()->message : "(no error)"; }

#define EXPECT_ERROR(prog, text) EXPECT_NE(errorOf(prog).find(text), std::string::npos) << errorOf(prog)

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
  expectOnAllTargets(p, in, {concatRef({a, b, a}, 1).v, concatRef({m, m}, 0).v, st3.v, p2.v}, 0);
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

}  // namespace
}  // namespace eph::tensor::test
