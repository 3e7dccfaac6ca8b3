#include "frontends/value/solve/DeviceProblem.h"

#include <algorithm>
#include <cmath>

#include "frontends/value/Eval.h"
#include "frontends/value/Lower.h"
#include "frontends/value/solve/Internal.h"
#include "ir/Verifier.h"

namespace eph::value {

namespace {
const char* kindOf(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf"; }
}  // namespace

Expected<std::unique_ptr<DeviceProblem>> DeviceProblem::create(const Graph& g, runtime::Device& dev, bool f32) {
  std::unique_ptr<DeviceProblem> p(new DeviceProblem(g, dev));
  if (Status s = p->init(f32); !s) return s.error();
  return p;
}

DeviceProblem::~DeviceProblem() {
  la_.reset();  // its buffers first
  for (uint64_t h : owned_) (void)dev_.free(h, {});
}

Status DeviceProblem::init(bool f32) {
  f32_ = f32;
  const Graph& g = host_.graph();
  initial_ = host_.initial();
  groups_ = groupResiduals(g);
  LowerOptions opts;
  opts.f32 = f32;
  opts.jacobian = true;
  opts.hostMain = false;
  auto m = compileGraph(ctx_, g, groups_, opts, dev_);
  if (!m) return m.error();
  m_ = std::move(*m);
  auto la = DeviceLinalg::create(dev_, f32, &ctx_);
  if (!la) return la.error();
  la_ = std::move(*la);

  uint32_t np, nc;
  std::vector<uint32_t> slot = leafSlots(g, np, nc);
  numParams_ = np, numConsts_ = nc, numResiduals_ = g.residuals().size();
  std::vector<uint64_t> offset = jacobianLayout(groups_);
  numValues_ = offset.back();

  auto buffer = [&](size_t n, bool narrow, uint64_t& h) -> Status {
    auto got = la_->alloc(n, narrow);
    if (!got) return got.error();
    h = *got;
    return Status::ok();
  };
  if (Status s = buffer(numParams_, true, params_); !s) return s;
  if (Status s = buffer(numConsts_, true, consts_); !s) return s;
  if (Status s = buffer(numResiduals_, true, rNarrow_); !s) return s;
  if (Status s = buffer(numParams_, false, x64_); !s) return s;
  if (Status s = buffer(numResiduals_, false, r64_); !s) return s;
  std::vector<double> constValues = constantValues(g);
  {
    // The constants as f64, narrowed on the device when the kernels are f32.
    uint64_t tmp;
    if (Status s = buffer(numConsts_, false, tmp); !s) return s;
    if (Status s = la_->upload(tmp, constValues); !s) return s;
    if (Status s = la_->narrow(tmp, consts_, numConsts_); !s) return s;
    if (Status s = dev_.wait({}); !s) return s;
    la_->release(tmp);
  }
  auto tables = uploadTables(dev_, ctx_, groups_, slot, owned_);
  if (!tables) return tables.error();
  tables_ = std::move(*tables);
  // The Jacobian's rows: per residual its entries (consecutive) and columns.
  rowStart_.assign(numResiduals_, 0);
  rowLen_.assign(numResiduals_, 0);
  rowOf_.assign(numValues_, 0);
  colOf_.assign(numValues_, 0);
  for (size_t k = 0; k < groups_.size(); ++k) {
    const Group& grp = groups_[k];
    uint64_t at = offset[k];
    for (size_t i = 0; i < grp.residuals.size(); ++i) {
      uint32_t r = grp.residuals[i];
      rowStart_[r] = at;
      for (size_t s = 0; s < grp.slots(); ++s)
        if (grp.trainable[s]) {
          rowOf_[at] = r, colOf_[at] = slot[grp.leaves[i * grp.slots() + s]];
          ++rowLen_[r], ++at;
        }
    }
  }
  auto J = la_->jacobian(numResiduals_, numParams_, numValues_, rowStart_, rowLen_, colOf_);
  if (!J) return J.error();
  tablesOnly_ = *J;
  auto hj = newJacobian();
  if (!hj) return hj.error();
  hostJ_ = *hj;
  return Status::ok();
}

Expected<DeviceJacobian> DeviceProblem::newJacobian() {
  DeviceJacobian J = tablesOnly_;
  auto v = la_->alloc(numValues_, true);
  if (!v) return v.error();
  J.vals = *v;
  return J;
}

Status DeviceProblem::evaluateOn(uint64_t x, uint64_t r, const DeviceJacobian* J) {
  uint64_t jac = J ? J->vals : 0;
  if (!f32_) return dispatchGraph(dev_, *m_, groups_, x, consts_, tables_, r, jac, ".j");
  if (Status s = la_->narrow(x, params_, numParams_); !s) return s;
  if (Status s = dispatchGraph(dev_, *m_, groups_, params_, consts_, tables_, rNarrow_, jac, ".j"); !s) return s;
  return la_->widen(rNarrow_, r, numResiduals_);
}

Status DeviceProblem::downloadValues(const DeviceJacobian& J, std::span<double> vals) {
  if (!f32_) return la_->download(J.vals, vals);
  std::vector<float> v(std::max<size_t>(numValues_, 1));
  if (Status s = dev_.downloadBytes(std::as_writable_bytes(std::span(v)), J.vals, {}); !s) return s;
  std::copy(v.begin(), v.begin() + numValues_, vals.begin());
  return Status::ok();
}

Status DeviceProblem::evaluate(std::span<const double> x, std::span<double> r, SparseRows* J) {
  if (Status s = la_->upload(x64_, x); !s) return s;
  if (Status s = evaluateOn(x64_, r64_, J ? &hostJ_ : nullptr); !s) return s;
  if (Status s = la_->download(r64_, r); !s) return s;
  if (!J) return Status::ok();
  std::vector<double> vals(numValues_);
  if (Status s = downloadValues(hostJ_, vals); !s) return s;
  J->reset(numParams_);
  for (size_t i = 0; i < numResiduals_; ++i) {
    for (uint32_t e = 0; e < rowLen_[i]; ++e) J->add(colOf_[rowStart_[i] + e], vals[rowStart_[i] + e]);
    J->endRow();
  }
  return Status::ok();
}

ResidualNote DeviceProblem::explainResidual(size_t i, std::span<const double> x) {
  ResidualNote note = host_.explainResidual(i, x);
  if (note.note.empty()) note.note = "the host's float64 evaluation of it is finite (a " +
                                     std::string(f32_ ? "f32 " : "") + "rounding or overflow on the device)";
  return note;
}

Expected<size_t> DeviceProblem::firstNonFiniteResidual(uint64_t r, std::vector<double>& host) {
  host.assign(numResiduals_, 0.0);
  if (Status s = la_->download(r, host); !s) return s.error();
  return detail::firstNonFinite(host);
}

Status DeviceProblem::jacobianError(const DeviceJacobian& J, uint64_t x) {
  std::vector<double> vals(numValues_), xs(numParams_);
  if (Status s = downloadValues(J, vals); !s) return s;
  if (Status s = la_->download(x, xs); !s) return s;
  // The first bad entry in residual order.
  size_t best = numValues_;
  for (size_t p = 0; p < numValues_; ++p)
    if (!std::isfinite(vals[p]) && (best == numValues_ || rowOf_[p] < rowOf_[best])) best = p;
  if (best == numValues_) return Status::ok();  // Σ J² overflowed, every entry finite
  size_t i = rowOf_[best];
  ResidualNote note = explainResidual(i, xs);
  std::string msg = "∂(residual " + std::to_string(i) + ")/∂(parameter " + std::to_string(colOf_[best]) + ") is " +
                    kindOf(vals[best]);
  if (!note.note.empty()) msg += ": " + note.note;
  return makeError(note.loc, msg);
}

Expected<std::unique_ptr<ir::Module>> compileGraph(ir::Context& ctx, const Graph& g, const std::vector<Group>& groups,
                                                   const LowerOptions& opts, runtime::Device& dev) {
  std::string why;
  std::unique_ptr<ir::Module> m = lowerGraph(ctx, g, groups, opts, why);
  if (!m) return makeError({}, why, "E301");  // an op without an IR lowering
  if (Status st = ir::verify(*m); !st)
    return makeError({}, "internal error: the lowered IR does not verify: " + st.error().message);
  if (Status st = dev.prepare(*m); !st) return st.error();
  return m;
}

std::vector<double> constantValues(const Graph& g) {
  std::vector<double> values;
  for (const LeafDecl& d : g.decls())
    if (!d.trainable)
      for (uint32_t e = 0; e < d.count; ++e) values.push_back(g.node(d.first + e).value);
  return values;
}

Expected<std::vector<uint64_t>> uploadTables(runtime::Device& dev, ir::Context& ctx, const std::vector<Group>& groups,
                                             std::span<const uint32_t> slot, std::vector<uint64_t>& owned) {
  const ir::Type* u32 = ctx.bufferType(ctx.u32(), ir::Space::Device, ir::Ownership::Linear);
  std::vector<uint64_t> tables;
  for (const Group& grp : groups) {
    std::vector<uint32_t> table;
    table.reserve(grp.residuals.size() * (grp.slots() + 1));
    for (size_t i = 0; i < grp.residuals.size(); ++i) {
      for (size_t s = 0; s < grp.slots(); ++s) table.push_back(slot[grp.leaves[i * grp.slots() + s]]);
      table.push_back(grp.residuals[i]);
    }
    table.resize(std::max<size_t>(table.size(), 1), 0);  // no empty buffers
    auto h = dev.alloc(u32, table.size(), {});
    if (!h) return h.error();
    owned.push_back(*h);
    if (Status s = dev.uploadBytes(*h, std::as_bytes(std::span(table)), {}); !s) return s.error();
    tables.push_back(*h);
  }
  return tables;
}

Status dispatchGraph(runtime::Device& dev, const ir::Module& m, const std::vector<Group>& groups, uint64_t params,
                     uint64_t consts, std::span<const uint64_t> tables, uint64_t rOut, uint64_t derivOut,
                     const std::string& derivSuffix) {
  for (size_t k = 0; k < groups.size(); ++k) {
    std::string name = "vg" + std::to_string(k);
    uint32_t n = uint32_t(groups[k].residuals.size());
    std::array<uint32_t, 3> grid{(n + 63) / 64, 1, 1};
    // A derivative kernel stores the residuals too when it has an %r (lowerGraph).
    auto dispatch = [&](const ir::Function& f, uint64_t out, bool withR) -> Status {
      auto types = f.paramTypes();
      std::vector<interp::RtValue> args(withR ? 6 : 5);
      uint64_t handles[] = {params, consts, tables[k], out, rOut};
      for (size_t i = 0; i + 1 < args.size(); ++i) args[i].type = types[i], args[i].buffer = handles[i];
      args.back() = interp::RtValue::ofInt(types[args.size() - 1], n);
      return dev.dispatch(f, grid, args, {});
    };
    if (n == 0) continue;
    const ir::Function* deriv = derivOut ? m.lookup(name + derivSuffix) : nullptr;  // none: no trainable slot
    bool withR = deriv && deriv->paramTypes().size() == 6 && deriv->param(4)->name() == "r";
    if (!withR)
      if (Status s = dispatch(*m.lookup(name), rOut, false); !s) return s;
    if (deriv)
      if (Status s = dispatch(*deriv, derivOut, withR); !s) return s;
  }
  return Status::ok();
}

Status DeviceProblem::checkedCost(uint64_t x, uint64_t r, const DeviceJacobian* J, double& cost) {
  auto rr = la_->dot(r, r, numResiduals_);
  if (!rr) return rr.error();
  cost = 0.5 * *rr;
  if (!std::isfinite(cost)) {
    std::vector<double> rh, xs(numParams_);
    auto i = firstNonFiniteResidual(r, rh);
    if (!i) return i.error();
    if (*i < numResiduals_) {
      if (Status s = la_->download(x, xs); !s) return s;
      return detail::nonFiniteResidual(*this, xs, *i, rh[*i]);
    }
  }
  if (!J) return Status::ok();
  auto jj = la_->valuesSquared(*J);
  if (!jj) return jj.error();
  if (!std::isfinite(*jj)) return jacobianError(*J, x);
  return Status::ok();
}

}  // namespace eph::value
