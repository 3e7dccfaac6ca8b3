// DeviceLinalg's kernels (built once with ir/Builder.h) and DevicePcgOps.
#include "frontends/value/solve/DevicePcg.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/Builder.h"
#include "ir/Verifier.h"

namespace eph::value {

namespace {

constexpr unsigned kGroup = 64;

using ir::Builder;
using ir::Value;

struct KernelBuilder {
  ir::Module& m;
  ir::Context& ctx;
  const ir::Type* f64() const { return ctx.f64(); }
  const ir::Type* u32() const { return ctx.u32(); }
  const ir::Type* rd(const ir::Type* e) const { return ctx.bufferType(e, ir::Space::Device, ir::Ownership::Read); }
  const ir::Type* wr(const ir::Type* e) const { return ctx.bufferType(e, ir::Space::Device, ir::Ownership::Write); }

  // kernel @name(params..., %n: u32): body(b, params, i) for each i < n.
  void elementwise(const char* name, std::vector<const ir::Type*> params,
                   const std::function<void(Builder&, ir::Function&, Value*)>& body) {
    params.push_back(u32());
    ir::Function* k = m.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType(params, {}));
    k->workgroupSize = {kGroup, 1, 1};
    Builder b(ctx, k->body());
    Value* i = b.globalId(0);
    b.ifOp(b.lt(i, k->param(unsigned(params.size() - 1))), {}, [&](Builder& b) { body(b, *k, i); });
    b.ret();
  }

  // kernel @name(params..., %out: write f64, %n: u32): thread i < P folds
  // term(k) over k = i, i + P, ... < n with `combine` from `init` into out[i].
  void reduction(const char* name, std::vector<const ir::Type*> params, double init,
                 const std::function<Value*(Builder&, ir::Function&, Value*)>& term,
                 const std::function<Value*(Builder&, Value*, Value*)>& combine) {
    params.push_back(wr(f64()));
    params.push_back(u32());
    unsigned outIdx = unsigned(params.size() - 2), nIdx = unsigned(params.size() - 1);
    ir::Function* k = m.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType(params, {}));
    k->workgroupSize = {kGroup, 1, 1};
    Builder b(ctx, k->body());
    Value* i = b.globalId(0);
    Value* P = b.constInt(u32(), DeviceLinalg::kReduceThreads);
    b.ifOp(b.lt(i, P), {}, [&](Builder& b) {
      ir::Op* loop = b.forOp(i, k->param(nIdx), P, {b.constFloat(f64(), init)},
                             [&](Builder& b, Value* j, const ir::Values& acc) {
                               return ir::Values{combine(b, acc[0], term(b, *k, j))};
                             });
      b.store(k->param(outIdx), i, loop->result(0));
    });
    b.ret();
  }
};

}  // namespace

Expected<std::unique_ptr<DeviceLinalg>> DeviceLinalg::create(runtime::Device& dev, bool f32Jacobian, ir::Context* ctx) {
  std::unique_ptr<DeviceLinalg> la(new DeviceLinalg(dev, f32Jacobian, ctx));
  if (Status s = la->build(); !s) return s.error();
  return la;
}

DeviceLinalg::~DeviceLinalg() {
  for (uint64_t h : owned_) (void)dev_.free(h, {});
}

Status DeviceLinalg::build() {
  m_ = std::make_unique<ir::Module>(ctx_);
  KernelBuilder kb{*m_, ctx_};
  const ir::Type *f64 = ctx_.f64(), *u32 = ctx_.u32();
  const ir::Type* t = f32_ ? ctx_.f32() : f64;  // the Jacobian's values
  auto R = [&](const ir::Type* e) { return kb.rd(e); };
  auto W = [&](const ir::Type* e) { return kb.wr(e); };
  auto wide = [&](Builder& b, Value* v) { return f32_ ? b.cast(v, f64) : v; };

  kb.reduction("la.dot", {R(f64), R(f64)}, 0.0,
               [&](Builder& b, ir::Function& k, Value* j) { return b.mul(b.load(k.param(0), j), b.load(k.param(1), j)); },
               [](Builder& b, Value* acc, Value* v) { return b.add(acc, v); });
  // NaN wins: acc' = v when v is NaN or v > acc.
  kb.reduction("la.maxabs", {R(f64)}, 0.0,
               [&](Builder& b, ir::Function& k, Value* j) { return b.abs(b.load(k.param(0), j)); },
               [](Builder& b, Value* acc, Value* v) { return b.select(b.or_(b.ne(v, v), b.gt(v, acc)), v, acc); });
  kb.reduction("la.sqvals", {R(t)}, 0.0,
               [&](Builder& b, ir::Function& k, Value* j) {
                 Value* v = wide(b, b.load(k.param(0), j));
                 return b.mul(v, v);
               },
               [](Builder& b, Value* acc, Value* v) { return b.add(acc, v); });
  kb.elementwise("la.axpy", {f64, R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    b.store(k.param(2), i, b.add(b.mul(k.param(0), b.load(k.param(1), i)), b.load(k.param(2), i)));
  });
  kb.elementwise("la.xpay", {R(f64), f64, W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    b.store(k.param(2), i, b.add(b.load(k.param(0), i), b.mul(k.param(1), b.load(k.param(2), i))));
  });
  kb.elementwise("la.scale", {f64, R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    b.store(k.param(2), i, b.mul(k.param(0), b.load(k.param(1), i)));
  });
  kb.elementwise("la.fill", {f64, W(f64)}, [&](Builder& b, ir::Function& k, Value* i) { b.store(k.param(1), i, k.param(0)); });
  kb.elementwise("la.muladd", {R(f64), R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    b.store(k.param(2), i, b.add(b.load(k.param(2), i), b.mul(b.load(k.param(0), i), b.load(k.param(1), i))));
  });
  kb.elementwise("la.mul", {R(f64), R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    b.store(k.param(2), i, b.mul(b.load(k.param(0), i), b.load(k.param(1), i)));
  });
  kb.elementwise("la.clampscale", {R(f64), f64, f64, f64, W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    Value* D = b.load(k.param(0), i);
    Value* c = b.select(b.lt(D, k.param(2)), k.param(2), b.select(b.lt(k.param(3), D), k.param(3), D));
    b.store(k.param(4), i, b.mul(k.param(1), c));
  });
  kb.elementwise("la.invdiag", {R(f64), R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    Value* m = b.add(b.load(k.param(0), i), b.load(k.param(1), i));
    Value* one = b.constFloat(f64, 1.0);
    b.store(k.param(2), i, b.select(b.gt(m, b.constFloat(f64, 0.0)), b.div(one, m), one));
  });
  if (f32_) {
    kb.elementwise("la.narrow", {R(f64), W(t)}, [&](Builder& b, ir::Function& k, Value* i) {
      b.store(k.param(1), i, b.cast(b.load(k.param(0), i), t));
    });
    kb.elementwise("la.widen", {R(t), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
      b.store(k.param(1), i, b.cast(b.load(k.param(0), i), f64));
    });
  }
  // out[i] = Σ vals[p]·v[col[p]], p in rowStart[i] .. + rowLen[i].
  kb.elementwise("la.jmul", {R(t), R(u32), R(u32), R(u32), R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* i) {
    Value* lo = b.load(k.param(1), i);
    Value* hi = b.add(lo, b.load(k.param(2), i));
    ir::Op* loop = b.forOp(lo, hi, b.constInt(u32, 1), {b.constFloat(f64, 0.0)}, [&](Builder& b, Value* p, const ir::Values& acc) {
      Value* v = b.load(k.param(4), b.load(k.param(3), p));
      return ir::Values{b.add(acc[0], b.mul(wide(b, b.load(k.param(0), p)), v))};
    });
    b.store(k.param(5), i, loop->result(0));
  });
  // out[c] = Σ vals[colPos[q]]·u[colRow[q]], q in colStart[c] .. colStart[c + 1].
  kb.elementwise("la.jtmul", {R(t), R(u32), R(u32), R(u32), R(f64), W(f64)}, [&](Builder& b, ir::Function& k, Value* c) {
    Value* lo = b.load(k.param(1), c);
    Value* hi = b.load(k.param(1), b.add(c, b.constInt(u32, 1)));
    ir::Op* loop = b.forOp(lo, hi, b.constInt(u32, 1), {b.constFloat(f64, 0.0)}, [&](Builder& b, Value* q, const ir::Values& acc) {
      Value* u = b.load(k.param(4), b.load(k.param(3), q));
      return ir::Values{b.add(acc[0], b.mul(wide(b, b.load(k.param(0), b.load(k.param(2), q))), u))};
    });
    b.store(k.param(5), c, loop->result(0));
  });
  kb.elementwise("la.colsq", {R(t), R(u32), R(u32), W(f64)}, [&](Builder& b, ir::Function& k, Value* c) {
    Value* lo = b.load(k.param(1), c);
    Value* hi = b.load(k.param(1), b.add(c, b.constInt(u32, 1)));
    ir::Op* loop = b.forOp(lo, hi, b.constInt(u32, 1), {b.constFloat(f64, 0.0)}, [&](Builder& b, Value* q, const ir::Values& acc) {
      Value* v = wide(b, b.load(k.param(0), b.load(k.param(2), q)));
      return ir::Values{b.add(acc[0], b.mul(v, v))};
    });
    b.store(k.param(3), c, loop->result(0));
  });
  if (Status st = ir::verify(*m_); !st)
    return makeError({}, "internal error: the solver's device kernels do not verify: " + st.error().message);
  if (Status st = dev_.prepare(*m_); !st) return st;
  auto p = alloc(kReduceThreads);
  if (!p) return p.error();
  partials_ = *p;
  return Status::ok();
}

Expected<uint64_t> DeviceLinalg::alloc(size_t n, bool narrowType) {
  const ir::Type* e = narrowType && f32_ ? ctx_.f32() : ctx_.f64();
  n = std::max<size_t>(n, 1);
  auto h = dev_.alloc(ctx_.bufferType(e, ir::Space::Device, ir::Ownership::Linear), n, {});
  if (!h) return h.error();
  owned_.push_back(*h);
  // Every element written once, so no kernel reads an unwritten one.
  if (e == ctx_.f32()) {
    std::vector<float> zeros(n, 0.0f);
    if (Status s = dev_.uploadBytes(*h, std::as_bytes(std::span(zeros)), {}); !s) return s.error();
  } else {
    std::vector<double> zeros(n, 0.0);
    if (Status s = dev_.uploadBytes(*h, std::as_bytes(std::span(zeros)), {}); !s) return s.error();
  }
  return *h;
}

Expected<uint64_t> DeviceLinalg::allocU32(std::span<const uint32_t> init) {
  std::vector<uint32_t> v(init.begin(), init.end());
  v.resize(std::max<size_t>(v.size(), 1), 0);
  auto h = dev_.alloc(ctx_.bufferType(ctx_.u32(), ir::Space::Device, ir::Ownership::Linear), v.size(), {});
  if (!h) return h.error();
  owned_.push_back(*h);
  if (Status s = dev_.uploadBytes(*h, std::as_bytes(std::span(v)), {}); !s) return s.error();
  return *h;
}

void DeviceLinalg::release(uint64_t buf) {
  auto it = std::find(owned_.begin(), owned_.end(), buf);
  if (it == owned_.end()) return;
  owned_.erase(it);
  (void)dev_.free(buf, {});
}

Status DeviceLinalg::upload(uint64_t buf, std::span<const double> v) {
  std::vector<double> xs(v.begin(), v.end());
  xs.resize(std::max<size_t>(xs.size(), 1), 0.0);
  return dev_.uploadBytes(buf, std::as_bytes(std::span(xs)), {});
}

Status DeviceLinalg::download(uint64_t buf, std::span<double> v) {
  // Whole buffers only: the caller's span is the buffer's length (or 0 → 1).
  std::vector<double> xs(std::max<size_t>(v.size(), 1));
  if (Status s = dev_.downloadBytes(std::as_writable_bytes(std::span(xs)), buf, {}); !s) return s;
  std::copy(xs.begin(), xs.begin() + v.size(), v.begin());
  return Status::ok();
}

interp::RtValue DeviceLinalg::buf(const char* kernel, unsigned i, uint64_t h) const {
  interp::RtValue v;
  v.type = m_->lookup(kernel)->paramTypes()[i];
  v.buffer = h;
  return v;
}

interp::RtValue DeviceLinalg::num(const char* kernel, unsigned i, double x) const {
  return interp::RtValue::ofFloat(m_->lookup(kernel)->paramTypes()[i], x);
}

interp::RtValue DeviceLinalg::count(const char* kernel, unsigned i, size_t n) const {
  return interp::RtValue::ofInt(m_->lookup(kernel)->paramTypes()[i], int64_t(n));
}

Status DeviceLinalg::run(const char* kernel, size_t threads, std::vector<interp::RtValue> args) {
  if (threads == 0) return Status::ok();
  const ir::Function* f = m_->lookup(kernel);
  std::array<uint32_t, 3> grid{uint32_t((threads + kGroup - 1) / kGroup), 1, 1};
  return dev_.dispatch(*f, grid, args, {});
}

Expected<double> DeviceLinalg::reduce(const char* kernel, std::vector<interp::RtValue> args, bool isMax) {
  if (Status s = run(kernel, kReduceThreads, std::move(args)); !s) return s.error();
  std::vector<double> parts(kReduceThreads);
  if (Status s = download(partials_, parts); !s) return s.error();
  double acc = 0;
  for (double v : parts) {
    if (!isMax) acc += v;
    else if (std::isnan(v) || v > acc) acc = v;
  }
  return acc;
}

Expected<double> DeviceLinalg::dot(uint64_t a, uint64_t b, size_t n) {
  const char* k = "la.dot";
  return reduce(k, {buf(k, 0, a), buf(k, 1, b), buf(k, 2, partials_), count(k, 3, n)}, false);
}

Expected<double> DeviceLinalg::maxAbs(uint64_t a, size_t n) {
  const char* k = "la.maxabs";
  return reduce(k, {buf(k, 0, a), buf(k, 1, partials_), count(k, 2, n)}, true);
}

Expected<double> DeviceLinalg::valuesSquared(const DeviceJacobian& J) {
  const char* k = "la.sqvals";
  return reduce(k, {buf(k, 0, J.vals), buf(k, 1, partials_), count(k, 2, J.values)}, false);
}

Status DeviceLinalg::axpy(double a, uint64_t x, uint64_t y, size_t n) {
  const char* k = "la.axpy";
  return run(k, n, {num(k, 0, a), buf(k, 1, x), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::xpay(uint64_t x, double a, uint64_t y, size_t n) {
  const char* k = "la.xpay";
  return run(k, n, {buf(k, 0, x), num(k, 1, a), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::scale(double a, uint64_t x, uint64_t y, size_t n) {
  const char* k = "la.scale";
  return run(k, n, {num(k, 0, a), buf(k, 1, x), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::fill(uint64_t y, double v, size_t n) {
  const char* k = "la.fill";
  return run(k, n, {num(k, 0, v), buf(k, 1, y), count(k, 2, n)});
}

Status DeviceLinalg::mulAdd(uint64_t d, uint64_t x, uint64_t y, size_t n) {
  const char* k = "la.muladd";
  return run(k, n, {buf(k, 0, d), buf(k, 1, x), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::mul(uint64_t d, uint64_t x, uint64_t y, size_t n) {
  const char* k = "la.mul";
  return run(k, n, {buf(k, 0, d), buf(k, 1, x), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::clampScale(uint64_t D, double lambda, double lo, double hi, uint64_t y, size_t n) {
  const char* k = "la.clampscale";
  return run(k, n, {buf(k, 0, D), num(k, 1, lambda), num(k, 2, lo), num(k, 3, hi), buf(k, 4, y), count(k, 5, n)});
}

Status DeviceLinalg::invDiag(uint64_t D, uint64_t d, uint64_t y, size_t n) {
  const char* k = "la.invdiag";
  return run(k, n, {buf(k, 0, D), buf(k, 1, d), buf(k, 2, y), count(k, 3, n)});
}

Status DeviceLinalg::narrow(uint64_t x64, uint64_t y, size_t n) {
  if (!f32_) return copy(x64, y, n);
  const char* k = "la.narrow";
  return run(k, n, {buf(k, 0, x64), buf(k, 1, y), count(k, 2, n)});
}

Status DeviceLinalg::widen(uint64_t x, uint64_t y64, size_t n) {
  if (!f32_) return copy(x, y64, n);
  const char* k = "la.widen";
  return run(k, n, {buf(k, 0, x), buf(k, 1, y64), count(k, 2, n)});
}

Status DeviceLinalg::multiplyJ(const DeviceJacobian& J, uint64_t v, uint64_t out) {
  const char* k = "la.jmul";
  return run(k, J.rows, {buf(k, 0, J.vals), buf(k, 1, J.rowStart), buf(k, 2, J.rowLen), buf(k, 3, J.col), buf(k, 4, v),
                         buf(k, 5, out), count(k, 6, J.rows)});
}

Status DeviceLinalg::multiplyJt(const DeviceJacobian& J, uint64_t u, uint64_t out) {
  const char* k = "la.jtmul";
  return run(k, J.cols, {buf(k, 0, J.vals), buf(k, 1, J.colStart), buf(k, 2, J.colPos), buf(k, 3, J.colRow),
                         buf(k, 4, u), buf(k, 5, out), count(k, 6, J.cols)});
}

Status DeviceLinalg::columnSquares(const DeviceJacobian& J, uint64_t out) {
  const char* k = "la.colsq";
  return run(k, J.cols, {buf(k, 0, J.vals), buf(k, 1, J.colStart), buf(k, 2, J.colPos), buf(k, 3, out), count(k, 4, J.cols)});
}

Expected<DeviceJacobian> DeviceLinalg::jacobian(size_t rows, size_t cols, size_t values, std::span<const uint64_t> start,
                                                std::span<const uint32_t> rowLen, std::span<const uint32_t> colOfValue) {
  DeviceJacobian J;
  J.rows = rows, J.cols = cols, J.values = values;
  std::vector<uint32_t> rs(rows);
  for (size_t i = 0; i < rows; ++i) rs[i] = uint32_t(start[i]);
  // The columns' lists, rows increasing within a column.
  std::vector<uint32_t> cs(cols + 1, 0), pos(values), row(values);
  for (size_t i = 0; i < rows; ++i)
    for (uint32_t e = 0; e < rowLen[i]; ++e) ++cs[colOfValue[start[i] + e] + 1];
  for (size_t c = 0; c < cols; ++c) cs[c + 1] += cs[c];
  std::vector<uint32_t> fillAt(cs.begin(), cs.end() - 1);
  size_t used = 0;
  for (size_t i = 0; i < rows; ++i)
    for (uint32_t e = 0; e < rowLen[i]; ++e) {
      uint32_t p = uint32_t(start[i] + e), c = colOfValue[p];
      pos[fillAt[c]] = p, row[fillAt[c]] = uint32_t(i), ++fillAt[c], ++used;
    }
  pos.resize(used), row.resize(used);
  auto up = [&](std::span<const uint32_t> v, uint64_t& h) -> Status {
    auto got = allocU32(v);
    if (!got) return got.error();
    h = *got;
    return Status::ok();
  };
  if (Status s = up(rs, J.rowStart); !s) return s.error();
  if (Status s = up(rowLen, J.rowLen); !s) return s.error();
  if (Status s = up(colOfValue, J.col); !s) return s.error();
  if (Status s = up(cs, J.colStart); !s) return s.error();
  if (Status s = up(pos, J.colPos); !s) return s.error();
  if (Status s = up(row, J.colRow); !s) return s.error();
  return J;
}

Expected<DeviceJacobian> DeviceLinalg::upload(const SparseRows& Jh) {
  std::vector<uint64_t> start(Jh.rowStart.begin(), Jh.rowStart.end() - 1);
  std::vector<uint32_t> len(Jh.rows());
  for (size_t i = 0; i < Jh.rows(); ++i) len[i] = uint32_t(Jh.rowStart[i + 1] - Jh.rowStart[i]);
  auto J = jacobian(Jh.rows(), Jh.numCols, Jh.nonZeros(), start, len, Jh.cols);
  if (!J) return J;
  auto vals = alloc(Jh.nonZeros(), true);
  if (!vals) return vals.error();
  J->vals = *vals;
  Status s;
  if (f32_) {
    std::vector<float> v(Jh.vals.begin(), Jh.vals.end());
    v.resize(std::max<size_t>(v.size(), 1), 0.0f);
    s = dev_.uploadBytes(J->vals, std::as_bytes(std::span(v)), {});
  } else {
    s = upload(J->vals, Jh.vals);
  }
  if (!s) return s.error();
  return J;
}

// ---- DevicePcgOps ------------------------------------------------------------------

Expected<std::unique_ptr<DevicePcgOps>> DevicePcgOps::create(DeviceLinalg& la, const DeviceJacobian& J, uint64_t damping) {
  std::unique_ptr<DevicePcgOps> ops(new DevicePcgOps(la, J, damping));
  for (auto& v : ops->v_) {
    auto h = la.alloc(J.cols);
    if (!h) return h.error();
    v = *h;
  }
  for (uint64_t* h : {&ops->t_}) {
    auto got = la.alloc(J.rows);
    if (!got) return got.error();
    *h = *got;
  }
  for (uint64_t* h : {&ops->colSq_, &ops->invDiag_}) {
    auto got = la.alloc(J.cols);
    if (!got) return got.error();
    *h = *got;
  }
  if (Status s = ops->setDamping(damping); !s) return s.error();
  return ops;
}

DevicePcgOps::~DevicePcgOps() {
  for (uint64_t h : v_) la_.release(h);
  la_.release(t_);
  la_.release(colSq_);
  la_.release(invDiag_);
}

Status DevicePcgOps::setDamping(uint64_t damping) {
  d_ = damping;
  if (Status s = la_.columnSquares(J_, colSq_); !s) return s;
  return la_.invDiag(colSq_, d_, invDiag_, J_.cols);
}

double DevicePcgOps::dot(Vec a, Vec b) {
  auto d = la_.dot(v_[a], v_[b], J_.cols);
  if (!d) {
    keep(d.error());
    return std::nan("");  // pcg() stops at a non-finite pᵀq
  }
  return *d;
}

void DevicePcgOps::axpy(double a, Vec x, Vec y) { keep(la_.axpy(a, v_[x], v_[y], J_.cols)); }
void DevicePcgOps::xpay(Vec x, double a, Vec y) { keep(la_.xpay(v_[x], a, v_[y], J_.cols)); }
void DevicePcgOps::copy(Vec from, Vec to) { keep(la_.copy(v_[from], v_[to], J_.cols)); }
void DevicePcgOps::zero(Vec v) { keep(la_.fill(v_[v], 0.0, J_.cols)); }
void DevicePcgOps::multiplyJ(Vec in) { keep(la_.multiplyJ(J_, v_[in], t_)); }
void DevicePcgOps::multiplyJt(Vec out) { keep(la_.multiplyJt(J_, t_, v_[out])); }
void DevicePcgOps::addDamping(Vec in, Vec out) { keep(la_.mulAdd(d_, v_[in], v_[out], J_.cols)); }
void DevicePcgOps::precondition(Vec in, Vec out) { keep(la_.mul(invDiag_, v_[in], v_[out], J_.cols)); }

}  // namespace eph::value
