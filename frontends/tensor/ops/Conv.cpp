// Window ops: conv 1-D to 3-D (direct, or an implicit GEMM in the tiled matmul),
// conv_transpose, and pooling (max, average, Lp and their global forms)
// (docs/tensor.md, "Linear algebra, convolution and pooling"). Sums
// accumulate in the compute type; kernels read operands through strides.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"
#include "frontends/tensor/ops/LinalgKernels.h"

namespace eph::tensor {

namespace {

using ir::Builder;
using ir::Value;
using ir::Values;
using namespace linalg;

// ---- windows: conv, conv_transpose, pooling ---------------------------------------------------

// A sliding window over the k spatial dimensions of [N, C, d1..dk].
struct Window {
  size_t k = 0;
  std::vector<int64_t> in, out, kernel, strides, dilations, padBegin, padEnd;
};

std::string readInts(const Node& n, const std::string& name, size_t count, int64_t fallback, int64_t min,
                     std::vector<int64_t>& out) {
  out = n.attrs.ints(name);
  if (out.empty()) out.assign(count, fallback);
  if (out.size() != count)
    return n.op + ": " + name + " " + shapeText(out) + " has " + num(int64_t(out.size())) + " entries; want " +
           num(int64_t(count));
  for (int64_t v : out)
    if (v < min) return n.op + ": " + name + " " + shapeText(out) + " has an entry below " + num(min);
  return "";
}

std::string readAutoPad(const Node& n, std::string& mode) {
  mode = n.attrs.s("auto_pad", "NOTSET");
  if (mode.empty()) mode = "NOTSET";
  if (mode != "NOTSET" && mode != "SAME_UPPER" && mode != "SAME_LOWER" && mode != "VALID")
    return n.op + ": auto_pad '" + mode + "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID";
  return "";
}

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
int64_t ceilDiv(int64_t a, int64_t b) { return -floorDiv(-a, b); }

// Strides, dilations, pads and auto_pad of a forward window (conv and the
// pools) over x's spatial dimensions with `kernel`; sets the output extents.
// ceil_mode (pools) rounds the output up, dropping a last window that would
// start in the end padding (as PyTorch and ONNX).
std::string forwardWindow(const Node& n, const Shape& x, std::vector<int64_t> kernel, bool ceilMode, Window& w) {
  w.k = x.size() - 2;
  w.in.assign(x.begin() + 2, x.end());
  w.kernel = std::move(kernel);
  std::vector<int64_t> pads;
  std::string mode;
  if (std::string why = readInts(n, "strides", w.k, 1, 1, w.strides); !why.empty()) return why;
  if (std::string why = readInts(n, "dilations", w.k, 1, 1, w.dilations); !why.empty()) return why;
  if (std::string why = readInts(n, "pads", 2 * w.k, 0, 0, pads); !why.empty()) return why;
  if (std::string why = readAutoPad(n, mode); !why.empty()) return why;
  w.out.assign(w.k, 0);
  w.padBegin.assign(pads.begin(), pads.begin() + int64_t(w.k));
  w.padEnd.assign(pads.begin() + int64_t(w.k), pads.end());
  for (size_t d = 0; d < w.k; ++d) {
    int64_t eff = (w.kernel[d] - 1) * w.dilations[d] + 1, s = w.strides[d], in = w.in[d];
    if (mode == "SAME_UPPER" || mode == "SAME_LOWER") {
      w.out[d] = ceilDiv(in, s);
      int64_t total = std::max<int64_t>(0, (w.out[d] - 1) * s + eff - in);
      w.padBegin[d] = mode == "SAME_UPPER" ? total / 2 : total - total / 2;
      w.padEnd[d] = total - w.padBegin[d];
      continue;
    }
    if (mode == "VALID") w.padBegin[d] = w.padEnd[d] = 0;
    int64_t padded = in + w.padBegin[d] + w.padEnd[d];
    if (padded < eff)
      return n.op + ": the window of spatial dimension " + num(int64_t(d)) + " (kernel " + num(w.kernel[d]) +
             ", dilation " + num(w.dilations[d]) + ": extent " + num(eff) + ") is larger than the padded input (" +
             num(in) + " + " + num(w.padBegin[d]) + " + " + num(w.padEnd[d]) + ") of " + shapeText(x);
    w.out[d] = (ceilMode ? ceilDiv(padded - eff, s) : (padded - eff) / s) + 1;
    if (ceilMode && (w.out[d] - 1) * s >= in + w.padBegin[d]) --w.out[d];
  }
  return "";
}

// The input coordinate and whether it is inside, for one tap of a window.
struct Tap {
  Value* ok = nullptr;  // null: inside for every output
  Value* xoff = nullptr;  // element offset in x relative to the (n, c) base (0 when not ok)
  Value* woff = nullptr;  // Σ j_d·wstrides[d] (conv)
  Value* padOk = nullptr;  // inside the padded input (avg_pool's count_include_pad); null: always
};

// The tap j (constants when `jc`, else values) of the window at output
// coordinates `o`: input coordinate o·s − padBegin + j·dilation.
Tap forwardTap(Kernel& k, const Window& w, const std::vector<Value*>& o, const std::vector<int64_t>* jc,
               const std::vector<Value*>& jv, const std::vector<int64_t>& xs, const std::vector<int64_t>& ws,
               bool wantPad) {
  Builder& b = k.b;
  Tap t;
  Value* xoff = nullptr;
  Value* woff = nullptr;
  for (size_t d = 0; d < w.k; ++d) {
    int64_t s = w.strides[d], dil = w.dilations[d], pb = w.padBegin[d];
    Value* pos;
    bool always = false, alwaysPad = false;
    Value* j = jc ? k.i32((*jc)[d]) : jv[d];
    if (jc) {
      int64_t lo = (*jc)[d] * dil - pb, hi = (w.out[d] - 1) * s + lo;
      pos = addConst(k, mulConst(k, o[d], s), lo);
      always = lo >= 0 && hi < w.in[d];
      alwaysPad = lo >= -pb && hi < w.in[d] + w.padEnd[d];
    } else {
      pos = b.add(addConst(k, mulConst(k, o[d], s), -pb), mulConst(k, j, dil));
    }
    if (!always) {
      Value* ok = b.and_(b.ge(pos, k.i32(0)), b.lt(pos, k.i32(w.in[d])));
      t.ok = t.ok ? b.and_(t.ok, ok) : ok;
    }
    if (wantPad && !alwaysPad) {
      Value* ok = b.and_(b.ge(pos, k.i32(-pb)), b.lt(pos, k.i32(w.in[d] + w.padEnd[d])));
      t.padOk = t.padOk ? b.and_(t.padOk, ok) : ok;
    }
    if (xs[d] != 0 && w.in[d] != 1) {
      Value* term = mulConst(k, pos, xs[d]);
      xoff = xoff ? b.add(xoff, term) : term;
    }
    if (!ws.empty() && ws[d] != 0) {
      Value* term = mulConst(k, j, ws[d]);
      woff = woff ? b.add(woff, term) : term;
    }
  }
  if (!xoff) xoff = k.i32(0);
  if (t.ok) xoff = b.select(t.ok, xoff, k.i32(0));
  t.xoff = xoff;
  t.woff = woff ? woff : k.i32(0);
  return t;
}

int64_t tapCount(const Window& w) {
  int64_t n = 1;
  for (int64_t v : w.kernel) n *= v;
  return n;
}

// Up to this many taps the window is unrolled (its bounds checks computed
// once per output); beyond it, a loop over the taps.
constexpr int64_t kUnrollTaps = 64;

std::vector<int64_t> tapIndex(const Window& w, int64_t t) {
  std::vector<int64_t> j(w.k);
  for (size_t d = w.k; d-- > 0;) {
    j[d] = t % w.kernel[d];
    t /= w.kernel[d];
  }
  return j;
}

// The tap values of flattened tap index `t` (a loop variable).
std::vector<Value*> tapValues(Kernel& k, const Window& w, Value* t) {
  std::vector<Value*> j(w.k);
  int64_t inner = 1;
  for (size_t d = w.k; d-- > 0;) {
    Value* q = inner == 1 ? t : k.b.div(t, k.i32(inner));
    j[d] = d == 0 ? q : k.b.rem(q, k.i32(w.kernel[d]));
    inner *= w.kernel[d];
  }
  return j;
}

// conv: x[N, C, d..], w[M, C/group, k..], [b[M]].
std::string convWindow(const Node& n, const Shape& x, const Shape& ws, const Shape* bias, Window& w) {
  if (x.size() < 3)
    return "conv wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x);
  if (ws.size() != x.size())
    return "conv: w " + shapeText(ws) + " must have the rank of x " + shapeText(x) + " ([M, C/group, kernel..])";
  int64_t group = n.attrs.i("group", 1);
  if (group < 1) return "conv: group " + num(group) + " must be at least 1";
  if (ws[1] * group != x[1])
    return "conv: x " + shapeText(x) + " has " + num(x[1]) + " channels but w " + shapeText(ws) + " with group " +
           num(group) + " wants " + num(ws[1] * group);
  if (ws[0] % group != 0)
    return "conv: the " + num(ws[0]) + " output channels of w " + shapeText(ws) + " are not a multiple of group " +
           num(group);
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  for (int64_t e : kernel)
    if (e < 1) return "conv: w " + shapeText(ws) + " has an empty kernel";
  if (n.attrs.has("kernel_shape") && n.attrs.ints("kernel_shape") != kernel)
    return "conv: kernel_shape " + shapeText(n.attrs.ints("kernel_shape")) + " does not match w " + shapeText(ws);
  if (bias && *bias != Shape{ws[0]})
    return "conv: the bias " + shapeText(*bias) + " must be [" + num(ws[0]) + "] for w " +
           shapeText(ws);
  return forwardWindow(n, x, kernel, false, w);
}

// conv as a matrix product when it is big enough for the tiled kernel: w
// viewed as [g, M/g, C/g·taps] times the taps col[g, (c, j), (n, p)] (tap j
// of output position p from channel c of group g, 0 in the padding), as an
// implicit GEMM: the kernel gathers col's elements from x where it reads them
// (MatmulParts::bElement) and stores [g, m', (n, p)] as [n, m, p] with the
// bias added, one dispatch.
std::optional<Value*> convAsMatmul(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t G = n.attrs.i("group", 1), M = W.shape[0], Mg = M / G, Cg = W.shape[1], N = X.shape[0];
  const int64_t taps = tapCount(w), P = numel(w.out), Kc = Cg * taps, NP = N * P;
  const Shape vshape = {G, Mg, NP};
  if (W.strides != contiguousStrides(W.shape) || !useTiled(vshape, Kc) || G * Kc * NP > int64_t(INT32_MAX))
    return std::nullopt;
  const DType t = n.dtype;
  const DType acc = t == DType::F64 ? DType::F64 : DType::F32;
  const std::string key = n.attrs.key() + "|" + shapeText(n.shape);
  // Where col's element (g, r, q) sits in x: `idx` gets x's first two
  // indices (batch, channel); the result is the input position in each
  // window dimension (outside [0, in) in the padding).
  auto window = [&](Kernel& k, Value* g, Value* r, Value* q, std::vector<Value*>& idx) {
    Builder& b = k.b;
    Value* c = taps == 1 ? r : b.div(r, k.i32(taps));
    Value* j = taps == 1 ? k.i32(0) : b.rem(r, k.i32(taps));
    Value* nn = P == 1 ? q : b.div(q, k.i32(P));
    Value* p = P == 1 ? k.i32(0) : b.rem(q, k.i32(P));
    idx = {nn, G == 1 ? c : b.add(b.mul(g, k.i32(Cg)), c)};
    int64_t innerO = 1, innerJ = 1;
    std::vector<Value*> pos(w.k);
    for (size_t d = w.k; d-- > 0;) {
      Value* o = innerO == 1 ? p : b.div(p, k.i32(innerO));
      if (d > 0) o = b.rem(o, k.i32(w.out[d]));
      Value* jd = innerJ == 1 ? j : b.div(j, k.i32(innerJ));
      if (d > 0) jd = b.rem(jd, k.i32(w.kernel[d]));
      innerO *= w.out[d];
      innerJ *= w.kernel[d];
      pos[d] = b.add(addConst(k, mulConst(k, o, w.strides[d]), -w.padBegin[d]), mulConst(k, jd, w.dilations[d]));
    }
    return pos;
  };
  // Whether positions pos[0..dims) are all inside x (null for none).
  auto insideAll = [&](Kernel& k, const std::vector<Value*>& pos, size_t dims) {
    Value* ok = nullptr;
    for (size_t d = 0; d < dims; ++d) {
      Value* in = k.b.and_(k.b.ge(pos[d], k.i32(0)), k.b.lt(pos[d], k.i32(w.in[d])));
      ok = ok ? k.b.and_(ok, in) : in;
    }
    return ok;
  };
  // col's element (g, r, q) from input `x` (x's layout) of kernel k.
  auto gather = [&](Kernel& k, size_t x, Value* g, Value* r, Value* q) {
    Builder& b = k.b;
    std::vector<Value*> idx;
    const std::vector<Value*> pos = window(k, g, r, q, idx);
    Value* ok = insideAll(k, pos, w.k);
    for (size_t d = 0; d < w.k; ++d) idx.push_back(b.select(ok, pos[d], k.i32(0)));
    return b.select(ok, loadAt(k, x, k.offsetOf(x, idx), acc), k.constant(acc, 0));
  };
  // col's elements (g, r, q + e), e < 4, where a row of the output holds
  // them all (its width a multiple of 4, q of 4): the index arithmetic once,
  // then four positions `stride` apart along the last dimension.
  auto gather4 = [&](Kernel& k, size_t x, Value* g, Value* r, Value* q) {
    Builder& b = k.b;
    std::vector<Value*> idx;
    const std::vector<Value*> pos = window(k, g, r, q, idx);
    Value* ok = insideAll(k, pos, w.k - 1);  // the dimensions before the last
    for (size_t d = 0; d + 1 < w.k; ++d) idx.push_back(ok ? b.select(ok, pos[d], k.i32(0)) : pos[d]);
    idx.push_back(k.i32(0));
    Value* row = k.offsetOf(x, idx);
    const int64_t last = w.k - 1, stride = k.in(x).strides.back();
    std::vector<Value*> out;
    for (int64_t e = 0; e < 4; ++e) {
      Value* at = addConst(k, pos[last], e * w.strides[last]);
      Value* inside = b.and_(b.ge(at, k.i32(0)), b.lt(at, k.i32(w.in[last])));
      if (ok) inside = b.and_(ok, inside);
      Value* off = b.add(row, mulConst(k, b.select(inside, at, k.i32(0)), stride));
      out.push_back(b.select(inside, loadAt(k, x, off, acc), k.constant(acc, 0)));
    }
    return out;
  };
  Operand wm{W.buf, W.dtype, {G, Mg, Kc}, {Mg * Kc, Kc, 1}, W.offset};
  MatmulParts parts;
  if (in.size() == 3) parts.extra.push_back(in[2]);
  parts.bElement = [&](Kernel& k, Value* g, Value* r, Value* q) { return gather(k, 1, g, r, q); };
  if (w.out.back() % 4 == 0)
    parts.bElements4 = [&](Kernel& k, Value* g, Value* r, Value* q) { return gather4(k, 1, g, r, q); };
  parts.store = [&](Kernel& k, Value* g, Value* m, Value* q, Value* v) -> std::pair<Value*, Value*> {
    Builder& b = k.b;
    Value* mm = G == 1 ? m : b.add(b.mul(g, k.i32(Mg)), m);
    if (in.size() == 3) v = b.add(v, loadAt(k, 2, k.offsetOf(2, {mm}), acc));
    Value* nn = P == 1 ? q : b.div(q, k.i32(P));
    Value* p = P == 1 ? k.i32(0) : b.rem(q, k.i32(P));
    return {v, b.add(b.mul(b.add(b.mul(nn, k.i32(M)), mm), k.i32(P)), p)};
  };
  parts.outType = t;
  parts.outCount = numel(n.shape);
  parts.key = "conv|" + key + (parts.bElements4 ? "|4" : "");
  return tiledMatmul(l, t, wm, X, vshape, parts);
}

// Σ over the Cg channels of a group (x's and w's bases stepping by sxc and
// swc) and the window's taps of x[xbase + xoff]·w[wbase + woff], a tap
// outside the input reading 0: the taps `listed` (unrolled), or else tapAt
// of each of `taps` tap numbers in a loop. conv and conv_transpose differ
// only in their taps.
Value* accumulateTaps(Kernel& k, DType t, Value* xbase, Value* wbase, int64_t Cg, int64_t sxc, int64_t swc,
                      const std::vector<Tap>& listed, int64_t taps, const std::function<Tap(Value* tap)>& tapAt) {
  Value* acc0 = k.constant(t, 0);
  auto term = [&](Builder& b, Value* acc, const Tap& tp, Value* xb, Value* wb) {
    Value* xv = loadAt(k, 0, b.add(xb, tp.xoff), t);
    if (tp.ok) xv = b.select(tp.ok, xv, acc0);
    return b.add(acc, b.mul(xv, loadAt(k, 1, b.add(wb, tp.woff), t)));
  };
  ir::Op* loop = k.b.forOp(k.i32(0), k.i32(Cg), k.i32(1), {acc0, xbase, wbase},
                           [&](Builder& lb, Value*, const Values& c) -> Values {
    Value* acc = c[0];
    if (!listed.empty()) {
      for (const Tap& tp : listed) acc = term(lb, acc, tp, c[1], c[2]);
    } else {
      acc = lb.forOp(k.i32(0), k.i32(taps), k.i32(1), {c[0]}, [&](Builder& ib, Value* tv, const Values& a) -> Values {
                return {term(ib, a[0], tapAt(tv), c[1], c[2])};
              })->result(0);
    }
    return {acc, addConst(k, c[1], sxc), addConst(k, c[2], swc)};
  });
  return loop->result(0);
}

Expected<Value*> lowerConv(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  if (auto viaMatmul = convAsMatmul(l, n, in, w)) return *viaMatmul;
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t group = n.attrs.i("group", 1);
  const int64_t M = W.shape[0], Cg = W.shape[1], Mg = M / group;
  const DType t = n.dtype;
  std::vector<int64_t> xs(X.strides.begin() + 2, X.strides.end()), wsp(W.strides.begin() + 2, W.strides.end());
  const int64_t taps = tapCount(w);
  return mapTop(l, "conv", t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    Value* nn = k.index[0];
    Value* m = k.index[1];
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* c0 = group == 1 ? k.i32(0) : b.mul(b.div(m, k.i32(Mg)), k.i32(Cg));
    std::vector<Value*> xi(X.shape.size(), k.i32(0)), wi(W.shape.size(), k.i32(0));
    xi[0] = nn;
    xi[1] = c0;
    wi[0] = m;
    Value* xbase = k.offsetOf(0, xi);
    Value* wbase = k.offsetOf(1, wi);
    const int64_t sxc = X.shape[1] == 1 ? 0 : X.strides[1], swc = W.shape[1] == 1 ? 0 : W.strides[1];
    std::vector<Tap> tl;
    if (taps <= kUnrollTaps)
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<int64_t> j = tapIndex(w, tp);
        tl.push_back(forwardTap(k, w, o, &j, {}, xs, {}, false));
        int64_t wo = 0;
        for (size_t d = 0; d < w.k; ++d) wo += j[d] * (W.shape[d + 2] == 1 ? 0 : wsp[d]);
        tl.back().woff = k.i32(wo);
      }
    Value* sum = accumulateTaps(k, t, xbase, wbase, Cg, sxc, swc, tl, taps, [&](Value* tv) {
      return forwardTap(k, w, o, nullptr, tapValues(k, w, tv), xs, wsp, false);
    });
    if (in.size() == 3) sum = b.add(sum, loadAt(k, 2, k.offsetOf(2, {m}), t));
    return sum;
  }, n.attrs.key());
}

// conv_transpose: x[N, C, d..], w[C, M/group, k..], [b[M]].
std::string convTransposeWindow(const Node& n, const Shape& x, const Shape& ws, const Shape* bias, Window& w,
                                Shape& out) {
  if (x.size() < 3)
    return "conv_transpose wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x);
  if (ws.size() != x.size())
    return "conv_transpose: w " + shapeText(ws) + " must have the rank of x " + shapeText(x) + " ([C, M/group, kernel..])";
  int64_t group = n.attrs.i("group", 1);
  if (group < 1) return "conv_transpose: group " + num(group) + " must be at least 1";
  if (ws[0] != x[1])
    return "conv_transpose: x " + shapeText(x) + " has " + num(x[1]) + " channels but w " + shapeText(ws) + " has " +
           num(ws[0]);
  if (x[1] % group != 0)
    return "conv_transpose: the " + num(x[1]) + " channels of x " + shapeText(x) + " are not a multiple of group " +
           num(group);
  const int64_t M = ws[1] * group;
  w.k = x.size() - 2;
  w.in.assign(x.begin() + 2, x.end());
  w.kernel.assign(ws.begin() + 2, ws.end());
  for (int64_t e : w.kernel)
    if (e < 1) return "conv_transpose: w " + shapeText(ws) + " has an empty kernel";
  if (n.attrs.has("kernel_shape") && n.attrs.ints("kernel_shape") != w.kernel)
    return "conv_transpose: kernel_shape " + shapeText(n.attrs.ints("kernel_shape")) + " does not match w " + shapeText(ws);
  if (bias && *bias != Shape{M})
    return "conv_transpose: the bias " + shapeText(*bias) + " must be [" + num(M) + "] for w " +
           shapeText(ws) + " and group " + num(group);
  std::vector<int64_t> pads, outPad;
  std::string mode;
  if (std::string why = readInts(n, "strides", w.k, 1, 1, w.strides); !why.empty()) return why;
  if (std::string why = readInts(n, "dilations", w.k, 1, 1, w.dilations); !why.empty()) return why;
  if (std::string why = readInts(n, "pads", 2 * w.k, 0, 0, pads); !why.empty()) return why;
  if (std::string why = readInts(n, "output_padding", w.k, 0, 0, outPad); !why.empty()) return why;
  if (std::string why = readAutoPad(n, mode); !why.empty()) return why;
  std::vector<int64_t> want = n.attrs.ints("output_shape");
  if (want.size() == w.k + 2) want.erase(want.begin(), want.begin() + 2);
  if (!want.empty() && want.size() != w.k)
    return "conv_transpose: output_shape " + shapeText(n.attrs.ints("output_shape")) + " has " +
           num(int64_t(n.attrs.ints("output_shape").size())) + " entries; want " + num(int64_t(w.k));
  if (want.empty() && (mode == "SAME_UPPER" || mode == "SAME_LOWER"))
    for (size_t d = 0; d < w.k; ++d) want.push_back(w.in[d] * w.strides[d]);
  w.padBegin.assign(pads.begin(), pads.begin() + int64_t(w.k));
  w.padEnd.assign(pads.begin() + int64_t(w.k), pads.end());
  w.out.assign(w.k, 0);
  out = {x[0], M};
  for (size_t d = 0; d < w.k; ++d) {
    int64_t eff = (w.kernel[d] - 1) * w.dilations[d] + 1;
    int64_t full = w.strides[d] * (w.in[d] - 1) + outPad[d] + eff;
    if (mode == "VALID") w.padBegin[d] = w.padEnd[d] = 0;
    if (!want.empty()) {
      // Negative when output_shape is larger than the full extent: the
      // output then extends past it with positions no input reaches (ONNX
      // allows it). Halves round down, as ONNX's reference (Python's //).
      int64_t total = full - want[d];
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      w.padBegin[d] = mode == "SAME_UPPER" ? half : total - half;
      w.padEnd[d] = total - w.padBegin[d];
    }
    w.out[d] = full - w.padBegin[d] - w.padEnd[d];
    if (w.out[d] < 0)
      return "conv_transpose: the pads " + shapeText(pads) + " remove more than the output extent " + num(full) +
             " of spatial dimension " + num(int64_t(d));
    out.push_back(w.out[d]);
  }
  return "";
}

Expected<Value*> lowerConvTranspose(Lowering& l, const Node& n, std::span<const Operand> in, const Window& w) {
  const Operand& X = in[0];
  const Operand& W = in[1];
  const int64_t group = n.attrs.i("group", 1);
  const int64_t C = X.shape[1], Cg = C / group, Mg = W.shape[1];
  const DType t = n.dtype;
  const int64_t taps = tapCount(w);
  return mapTop(l, "conv_transpose", t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    Value* nn = k.index[0];
    Value* m = k.index[1];
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* g = group == 1 ? k.i32(0) : b.div(m, k.i32(Mg));
    Value* ml = group == 1 ? m : b.rem(m, k.i32(Mg));
    std::vector<Value*> xi(X.shape.size(), k.i32(0)), wi(W.shape.size(), k.i32(0));
    xi[0] = nn;
    xi[1] = group == 1 ? k.i32(0) : b.mul(g, k.i32(Cg));
    wi[0] = xi[1];
    wi[1] = ml;
    Value* xbase = k.offsetOf(0, xi);
    Value* wbase = k.offsetOf(1, wi);
    const int64_t sxc = X.shape[1] == 1 ? 0 : X.strides[1], swc = W.shape[0] == 1 ? 0 : W.strides[0];
    // Tap j of output coordinate o reads input i = (o + pb − j·dil) / s when that divides exactly and is inside.
    auto tapOf = [&](const std::vector<Value*>& j) {
      Tap tp;
      Value* xoff = k.i32(0);
      Value* woff = k.i32(0);
      for (size_t d = 0; d < w.k; ++d) {
        Value* tt = b.sub(addConst(k, o[d], w.padBegin[d]), mulConst(k, j[d], w.dilations[d]));
        Value* ok = b.ge(tt, k.i32(0));
        Value* safe = b.select(ok, tt, k.i32(0));
        Value* i = w.strides[d] == 1 ? safe : b.div(safe, k.i32(w.strides[d]));
        if (w.strides[d] != 1) ok = b.and_(ok, b.eq(b.rem(safe, k.i32(w.strides[d])), k.i32(0)));
        ok = b.and_(ok, b.lt(i, k.i32(w.in[d])));
        tp.ok = tp.ok ? b.and_(tp.ok, ok) : ok;
        if (X.shape[d + 2] != 1) xoff = b.add(xoff, mulConst(k, i, X.strides[d + 2]));
        if (W.shape[d + 2] != 1) woff = b.add(woff, mulConst(k, j[d], W.strides[d + 2]));
      }
      tp.xoff = b.select(tp.ok, xoff, k.i32(0));
      tp.woff = woff;
      return tp;
    };
    std::vector<Tap> tl;
    if (taps <= kUnrollTaps)
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<Value*> jv;
        for (int64_t j : tapIndex(w, tp)) jv.push_back(k.i32(j));
        tl.push_back(tapOf(jv));
      }
    Value* sum = accumulateTaps(k, t, xbase, wbase, Cg, sxc, swc, tl, taps,
                                [&](Value* tv) { return tapOf(tapValues(k, w, tv)); });
    if (in.size() == 3) sum = b.add(sum, loadAt(k, 2, k.offsetOf(2, {m}), t));
    return sum;
  }, n.attrs.key());
}

enum class Pool { Max, Avg, Lp };

std::string poolWindow(const Program& p, const Node& n, Pool kind, Window& w) {
  const Node& x = p.node(n.inputs[0]);
  if (x.shape.size() < 3) return n.op + " wants x of rank 3 or more ([N, C, spatial..]), got " + shapeText(x.shape);
  if (kind == Pool::Max ? !(isFloat(x.dtype) || isInt(x.dtype)) : !isFloat(x.dtype))
    return n.op + " wants " + (kind == Pool::Max ? "a numeric" : "a float") + " tensor, not " + dt(x.dtype);
  if (!n.attrs.has("kernel_shape")) return n.op + ": kernel_shape is required";
  std::vector<int64_t> kernel;
  if (std::string why = readInts(n, "kernel_shape", x.shape.size() - 2, 1, 1, kernel); !why.empty()) return why;
  if (kind == Pool::Lp && n.attrs.i("p", 2) < 1) return n.op + ": p " + num(n.attrs.i("p", 2)) + " must be at least 1";
  return forwardWindow(n, x.shape, kernel, n.attrs.i("ceil_mode", 0) != 0, w);
}

Value* lpPow(Kernel& k, Value* v, int64_t p, DType t) {
  Value* a = k.b.abs(v);
  if (p == 1) return a;
  if (p == 2) return k.b.mul(v, v);
  return k.b.pow(a, k.constant(t, double(p)));
}

Value* lpRoot(Kernel& k, Value* s, int64_t p, DType t) {
  if (p == 1) return s;
  if (p == 2) return k.b.sqrt(s);
  return k.b.pow(s, k.constant(t, 1.0 / double(p)));
}

// The lowest value of t (max_pool's start): -inf for floats.
double lowest(DType t) {
  if (isFloat(t)) return -INFINITY;
  if (!isSigned(t)) return 0;
  return -std::ldexp(1.0, int(bits(t)) - 1);
}

// max(acc, v) where a NaN wins.
Value* maxNaN(Kernel& k, Value* acc, Value* v, DType t) {
  if (!isFloat(t)) return k.b.max(acc, v);
  return k.b.select(k.b.or_(k.b.gt(v, acc), k.b.ne(v, v)), v, acc);
}

Expected<Value*> lowerPool(Lowering& l, const Node& n, std::span<const Operand> in, Pool kind, const Window& w) {
  const Operand& X = in[0];
  const DType t = n.dtype;
  const int64_t taps = tapCount(w);
  const int64_t p = n.attrs.i("p", 2);
  const bool includePad = n.attrs.i("count_include_pad", 0) != 0;
  std::vector<int64_t> xs(X.strides.begin() + 2, X.strides.end());
  return mapTop(l, n.op, t, n.shape, in, [&](Kernel& k) {
    Builder& b = k.b;
    std::vector<Value*> xi(X.shape.size(), k.i32(0));
    xi[0] = k.index[0];
    xi[1] = k.index[1];
    Value* base = k.offsetOf(0, xi);
    std::vector<Value*> o(k.index.begin() + 2, k.index.end());
    Value* start = kind == Pool::Max ? k.constant(t, lowest(t)) : k.constant(t, 0);
    Value* zero = k.constant(t, 0);
    Value* one = k.constant(t, 1);
    // Carried: the max or sum, and the count (avg).
    auto step = [&](const Tap& tp, const Values& c) -> Values {
      Value* v = loadAt(k, 0, b.add(base, tp.xoff), t);
      Value* acc;
      if (kind == Pool::Max) acc = maxNaN(k, c[0], v, t);
      else acc = b.add(c[0], kind == Pool::Lp ? lpPow(k, v, p, t) : v);
      if (tp.ok) acc = b.select(tp.ok, acc, c[0]);
      Value* cnt = c[1];
      Value* inside = includePad ? tp.padOk : tp.ok;
      cnt = b.add(cnt, inside ? b.select(inside, one, zero) : one);
      return {acc, cnt};
    };
    Values c = {start, zero};
    if (taps <= kUnrollTaps) {
      for (int64_t tp = 0; tp < taps; ++tp) {
        std::vector<int64_t> j = tapIndex(w, tp);
        c = step(forwardTap(k, w, o, &j, {}, xs, {}, includePad), c);
      }
    } else {
      ir::Op* loop = b.forOp(k.i32(0), k.i32(taps), k.i32(1), c, [&](Builder&, Value* tv, const Values& cc) -> Values {
        return step(forwardTap(k, w, o, nullptr, tapValues(k, w, tv), xs, {}, includePad), cc);
      });
      c = {loop->result(0), loop->result(1)};
    }
    if (kind == Pool::Avg) return b.div(c[0], c[1]);
    if (kind == Pool::Lp) return lpRoot(k, c[0], p, t);
    return c[0];
  }, n.attrs.key());
}

void addWindows(std::vector<OpDef>& ops) {
  OpDef c;
  c.name = "conv";
  c.minInputs = 2;
  c.maxInputs = 3;
  c.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = floatDtype(p, n, n.inputs.size(), n.dtype); !why.empty()) return why;
    Window w;
    const Shape* bias = n.inputs.size() == 3 ? &p.node(n.inputs[2]).shape : nullptr;
    if (std::string why = convWindow(n, p.node(n.inputs[0]).shape, p.node(n.inputs[1]).shape, bias, w); !why.empty())
      return why;
    const Shape& x = p.node(n.inputs[0]).shape;
    n.shape = {x[0], p.node(n.inputs[1]).shape[0]};
    n.shape.insert(n.shape.end(), w.out.begin(), w.out.end());
    return "";
  };
  c.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    Window w;  // again, from the operands' shapes (as at infer)
    const Shape* bias = in.size() == 3 ? &in[2].shape : nullptr;
    if (std::string why = convWindow(n, in[0].shape, in[1].shape, bias, w); !why.empty()) return Error{{}, why};
    return lowerConv(l, n, in, w);
  };
  ops.push_back(std::move(c));

  OpDef ct;
  ct.name = "conv_transpose";
  ct.minInputs = 2;
  ct.maxInputs = 3;
  ct.infer = [](const Program& p, Node& n) -> std::string {
    if (std::string why = floatDtype(p, n, n.inputs.size(), n.dtype); !why.empty()) return why;
    Window w;
    const Shape* bias = n.inputs.size() == 3 ? &p.node(n.inputs[2]).shape : nullptr;
    return convTransposeWindow(n, p.node(n.inputs[0]).shape, p.node(n.inputs[1]).shape, bias, w, n.shape);
  };
  ct.lower = [](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
    Window w;
    Shape out;
    const Shape* bias = in.size() == 3 ? &in[2].shape : nullptr;
    if (std::string why = convTransposeWindow(n, in[0].shape, in[1].shape, bias, w, out); !why.empty())
      return Error{{}, why};
    return lowerConvTranspose(l, n, in, w);
  };
  ops.push_back(std::move(ct));

  for (auto [name, kind] : {std::pair{"max_pool", Pool::Max}, {"avg_pool", Pool::Avg}, {"lp_pool", Pool::Lp}}) {
    OpDef d;
    d.name = name;
    d.infer = [kind](const Program& p, Node& n) -> std::string {
      Window w;
      if (std::string why = poolWindow(p, n, kind, w); !why.empty()) return why;
      const Node& x = p.node(n.inputs[0]);
      n.dtype = x.dtype;
      n.shape = {x.shape[0], x.shape[1]};
      n.shape.insert(n.shape.end(), w.out.begin(), w.out.end());
      return "";
    };
    d.lower = [kind](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
      Window w;
      std::vector<int64_t> kernel = n.attrs.ints("kernel_shape");
      if (std::string why = forwardWindow(n, in[0].shape, kernel, n.attrs.i("ceil_mode", 0) != 0, w); !why.empty())
        return Error{{}, why};
      return lowerPool(l, n, in, kind, w);
    };
    ops.push_back(std::move(d));
  }

  // Global pools: over every spatial dimension, keeping them as extent 1.
  for (auto [name, kind] : {std::pair{"global_avg_pool", Pool::Avg}, {"global_max_pool", Pool::Max},
                            {"global_lp_pool", Pool::Lp}}) {
    OpDef d;
    d.name = name;
    d.infer = [kind](const Program& p, Node& n) -> std::string {
      const Node& x = p.node(n.inputs[0]);
      if (x.shape.size() < 2) return n.op + " wants x of rank 2 or more ([N, C, spatial..]), got " + shapeText(x.shape);
      if (kind == Pool::Max ? !(isFloat(x.dtype) || isInt(x.dtype)) : !isFloat(x.dtype))
        return n.op + " wants " + (kind == Pool::Max ? "a numeric" : "a float") + " tensor, not " + dt(x.dtype);
      if (kind == Pool::Lp && n.attrs.i("p", 2) < 1) return n.op + ": p " + num(n.attrs.i("p", 2)) + " must be at least 1";
      n.dtype = x.dtype;
      n.shape = x.shape;
      for (size_t d = 2; d < n.shape.size(); ++d) n.shape[d] = 1;
      return "";
    };
    d.lower = [kind](Lowering& l, const Node& n, std::span<const Operand> in) -> Expected<Value*> {
      const Operand& X = in[0];
      const DType t = n.dtype;
      const int64_t p = n.attrs.i("p", 2);
      Shape spatial(X.shape.begin() + 2, X.shape.end());
      const int64_t count = numel(spatial);
      return mapTop(l, n.op, t, n.shape, in, [&](Kernel& k) {
        Builder& b = k.b;
        std::vector<Value*> xi(X.shape.size(), k.i32(0));
        xi[0] = k.index[0];
        xi[1] = k.index[1];
        Value* base = k.offsetOf(0, xi);
        Value* start = kind == Pool::Max ? k.constant(t, lowest(t)) : k.constant(t, 0);
        ir::Op* loop = b.forOp(k.i32(0), k.i32(count), k.i32(1), {start}, [&](Builder& lb, Value* i, const Values& c) -> Values {
          Value* off = base;
          int64_t inner = 1;
          for (size_t d = spatial.size(); d-- > 0;) {
            if (spatial[d] != 1 && X.strides[d + 2] != 0) {
              Value* q = inner == 1 ? i : lb.div(i, k.i32(inner));
              if (d > 0) q = lb.rem(q, k.i32(spatial[d]));
              off = lb.add(off, mulConst(k, q, X.strides[d + 2]));
            }
            inner *= spatial[d];
          }
          Value* v = loadAt(k, 0, off, t);
          if (kind == Pool::Max) return {maxNaN(k, c[0], v, t)};
          return {lb.add(c[0], kind == Pool::Lp ? lpPow(k, v, p, t) : v)};
        });
        Value* r = loop->result(0);
        if (kind == Pool::Avg) return b.div(r, k.constant(t, double(count)));
        if (kind == Pool::Lp) return lpRoot(k, r, p, t);
        return r;
      }, n.attrs.key());
    };
    ops.push_back(std::move(d));
  }
}

}  // namespace

void addConvOps(std::vector<OpDef>& ops) { addWindows(ops); }

}  // namespace eph::tensor
