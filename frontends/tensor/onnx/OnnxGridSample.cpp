// ONNX GridSample (2-D), composed of gathers and weights.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "frontends/tensor/Ops.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

namespace {

// GridSample (2-D), as PyTorch's grid_sample that ONNX follows: each output
// position reads X at grid (x, y) in [-1, 1], unnormalised by align_corners;
// padding zeros / border / reflection; bilinear (4 taps), nearest (1) or
// bicubic (16, A = -0.75). Each tap is a gather_elements from X[N, C, H·W]
// with its weight.
struct GridCtx {
  NodeCtx& c;
  DType t;
  bool align;
  std::string padding;
  Tensor s(double v) { return c.scalar(t, v); }
  Tensor add(Tensor a, Tensor b) { return c.op("add", {a, b}); }
  Tensor sub(Tensor a, Tensor b) { return c.op("sub", {a, b}); }
  Tensor mul(Tensor a, Tensor b) { return c.op("mul", {a, b}); }
  Tensor clampTo(Tensor v, int64_t size) { return c.op("min", {c.op("max", {v, s(0)}), s(double(size - 1))}); }
  Tensor reflect(Tensor v, double twiceLow, double twiceHigh) {
    if (twiceLow == twiceHigh) return c.op("mul", {v, s(0)});
    double mn = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
    Tensor in = c.op("abs", {sub(v, s(mn))});
    Tensor extra = c.op("fmod", {in, s(span)});
    Tensor flips = c.op("floor", {c.op("div", {in, s(span)})});
    Tensor even = c.op("eq", {c.op("fmod", {flips, s(2)}), s(0)});
    return c.op("where", {even, add(extra, s(mn)), add(sub(s(span), extra), s(mn))});
  }
  // Padding applied to a coordinate (border and reflection; zeros: unchanged).
  Tensor pad(Tensor v, int64_t size) {
    if (padding == "border") return clampTo(v, size);
    if (padding == "reflection") {
      v = align ? reflect(v, 0, 2.0 * double(size - 1)) : reflect(v, -1, 2.0 * double(size) - 1);
      return clampTo(v, size);
    }
    return v;
  }
  // Stores `v` (a view reader keeps the lowering from fusing it into each of
  // its many readers, which would recompute it and read its inputs once per use).
  Tensor store(Tensor v) { return c.op("identity", {v}); }
  Tensor unnormalise(Tensor g, int64_t size) {
    Tensor one1 = s(1);
    if (align) return mul(mul(add(g, one1), s(0.5)), s(double(size - 1)));
    return mul(sub(mul(add(g, one1), s(double(size))), one1), s(0.5));
  }
};

std::string mapGridSample(NodeCtx& c) {
  Tensor X = c.in(0), grid = c.in(1);
  if (X.rank() != 4 || grid.rank() != 4 || grid.shape()[3] != 2)
    return "only 2-D GridSample (X [N, C, H, W], grid [N, H_out, W_out, 2]) is supported";
  std::string mode = c.s("mode", "bilinear"), padding = c.s("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") return "mode '" + mode + "' is not supported";
  if (padding != "zeros" && padding != "border" && padding != "reflection") return "padding_mode '" + padding + "' is not supported";
  int64_t N = X.shape()[0], C = X.shape()[1], H = X.shape()[2], W = X.shape()[3];
  int64_t Ho = grid.shape()[1], Wo = grid.shape()[2];
  DType t = X.dtype();
  if (!isFloat(t)) return "X must be a float tensor";
  GridCtx g{c, t, c.i("align_corners", 0) != 0, padding};
  Tensor gr = c.cast(grid, t);
  auto coord = [&](int64_t k) {
    return c.op("squeeze", {c.op("slice", {gr}, {{"starts", Ints{k}}, {"ends", Ints{k + 1}}, {"axes", Ints{3}}})}, {{"axes", Ints{3}}});
  };
  Tensor ix = g.store(g.unnormalise(coord(0), W)), iy = g.store(g.unnormalise(coord(1), H));  // [N, Ho, Wo]
  Tensor xf = c.op("reshape", {X}, {{"shape", Ints{N, C, H * W}}});
  Tensor acc;
  // One tap at integer coordinates (as floats) with its weight.
  auto tap = [&](Tensor tx, Tensor ty, Tensor w, bool padTaps) {
    if (padTaps) {
      tx = g.store(g.pad(tx, W));
      ty = g.store(g.pad(ty, H));
    }
    if (padding == "zeros") {
      Tensor inside = c.op("and", {c.op("and", {c.op("ge", {tx, g.s(0)}), c.op("le", {tx, g.s(double(W - 1))})}),
                                   c.op("and", {c.op("ge", {ty, g.s(0)}), c.op("le", {ty, g.s(double(H - 1))})})});
      w = g.mul(w, c.cast(inside, t));
    }
    Tensor lin = g.add(g.mul(g.clampTo(ty, H), g.s(double(W))), g.clampTo(tx, W));
    Tensor idx = c.op("reshape", {c.cast(lin, DType::I64)}, {{"shape", Ints{N, 1, Ho * Wo}}});
    idx = c.op("expand", {idx}, {{"shape", Ints{N, C, Ho * Wo}}});
    Tensor v = c.op("gather_elements", {xf, idx}, {{"axis", int64_t(2)}});
    v = g.mul(v, c.op("reshape", {w}, {{"shape", Ints{N, 1, Ho * Wo}}}));
    acc = acc ? g.add(acc, v) : v;
  };
  if (mode == "nearest") {
    Tensor px = g.pad(ix, W), py = g.pad(iy, H);
    tap(c.op("round", {px}), c.op("round", {py}), c.op("expand", {g.s(1)}, {{"shape", Ints{N, Ho, Wo}}}), false);
  } else if (mode == "bilinear") {
    Tensor px = g.store(g.pad(ix, W)), py = g.store(g.pad(iy, H));
    Tensor x0 = g.store(c.op("floor", {px})), y0 = g.store(c.op("floor", {py}));
    Tensor x1 = g.add(x0, g.s(1)), y1 = g.add(y0, g.s(1));
    Tensor fx = g.sub(px, x0), fy = g.sub(py, y0);
    Tensor gx = g.sub(g.s(1), fx), gy = g.sub(g.s(1), fy);
    tap(x0, y0, g.mul(gx, gy), false);
    tap(x1, y0, g.mul(fx, gy), false);
    tap(x0, y1, g.mul(gx, fy), false);
    tap(x1, y1, g.mul(fx, fy), false);
  } else {
    const double A = -0.75;
    Tensor x0 = g.store(c.op("floor", {ix})), y0 = g.store(c.op("floor", {iy}));
    Tensor tx = g.store(g.sub(ix, x0)), ty = g.store(g.sub(iy, y0));
    auto cc1 = [&](Tensor x) {  // ((A + 2) x - (A + 3)) x² + 1
      return g.add(g.mul(g.mul(g.sub(g.mul(x, g.s(A + 2)), g.s(A + 3)), x), x), g.s(1));
    };
    auto cc2 = [&](Tensor x) {  // ((A x - 5A) x + 8A) x - 4A
      return g.sub(g.mul(g.add(g.mul(g.sub(g.mul(x, g.s(A)), g.s(5 * A)), x), g.s(8 * A)), x), g.s(4 * A));
    };
    auto coeffs = [&](Tensor tt) {
      return std::vector<Tensor>{g.store(cc2(g.add(tt, g.s(1)))), g.store(cc1(tt)), g.store(cc1(g.sub(g.s(1), tt))),
                                 g.store(cc2(g.sub(g.s(2), tt)))};
    };
    std::vector<Tensor> wx = coeffs(tx), wy = coeffs(ty);
    for (int j = 0; j < 4; ++j)
      for (int i = 0; i < 4; ++i)
        tap(g.add(x0, g.s(i - 1)), g.add(y0, g.s(j - 1)), g.mul(wx[size_t(i)], wy[size_t(j)]), true);
  }
  return one(c, c.op("reshape", {acc}, {{"shape", Ints{N, C, Ho, Wo}}}));
}

}  // namespace

std::vector<OpEntry> gridSampleEntries() {
  return {
    {"GridSample", 16, 99, "align_corners,mode,padding_mode", mapGridSample},
  };
}

}  // namespace eph::tensor::onnx
