#include "examples/value/DeviceGraph.h"

#include <algorithm>

#include "frontends/value/Lower.h"
#include "ir/Verifier.h"

namespace eph::value::demo {

namespace {
template <class T>
std::span<const std::byte> bytes(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}
}  // namespace

DeviceGraph::~DeviceGraph() {
  for (uint64_t h : owned_) (void)dev_.free(h, {});
}

std::vector<double> DeviceGraph::initial() const {
  std::vector<double> x;
  for (const LeafDecl& d : g_.decls())
    if (d.trainable)
      for (uint32_t e = 0; e < d.count; ++e) x.push_back(g_.node(d.first + e).value);
  return x;
}

Status DeviceGraph::init(bool jacobian) {
  jacobian_ = jacobian;
  groups_ = groupResiduals(g_);
  LowerOptions opts;
  opts.jacobian = jacobian;
  opts.hostMain = false;
  std::string why;
  m_ = lowerGraph(ctx_, g_, groups_, opts, why);
  if (!m_) return Error{{}, why};
  if (Status st = ir::verify(*m_); !st) return Error{{}, "internal error: the lowered IR does not verify: " + st.error().message};
  if (Status st = dev_.prepare(*m_); !st) return st;

  uint32_t np, nc;
  std::vector<uint32_t> slot = leafSlots(g_, np, nc);
  numParams_ = np, numConsts_ = nc, numResiduals_ = g_.residuals().size();
  derivLen_ = jacobian ? jacobianLayout(groups_).back() : numParams_;
  const ir::Type* f64 = ctx_.bufferType(ctx_.f64(), ir::Space::Device, ir::Ownership::Linear);
  const ir::Type* u32 = ctx_.bufferType(ctx_.u32(), ir::Space::Device, ir::Ownership::Linear);
  auto alloc = [&](const ir::Type* t, size_t n, uint64_t& h) -> Status {
    auto got = dev_.alloc(t, std::max<size_t>(n, 1), {});  // no empty buffers
    if (!got) return got.error();
    owned_.push_back(h = *got);
    return {};
  };
  if (Status s = alloc(f64, numParams_, params_); !s) return s;
  if (Status s = alloc(f64, numConsts_, consts_); !s) return s;
  if (Status s = alloc(f64, numResiduals_, r_dev_); !s) return s;
  if (Status s = alloc(f64, derivLen_, deriv_); !s) return s;
  std::vector<double> constValues;
  for (const LeafDecl& d : g_.decls())
    if (!d.trainable)
      for (uint32_t e = 0; e < d.count; ++e) constValues.push_back(g_.node(d.first + e).value);
  constValues.resize(std::max<size_t>(numConsts_, 1), 0.0);
  if (Status s = dev_.uploadBytes(consts_, bytes(constValues), {}); !s) return s;
  // Per signature, per instance: each slot's index in the params or consts buffer, then the residual's index.
  for (const Group& grp : groups_) {
    std::vector<uint32_t> table;
    table.reserve(grp.residuals.size() * (grp.slots() + 1));
    for (size_t i = 0; i < grp.residuals.size(); ++i) {
      for (size_t s = 0; s < grp.slots(); ++s) table.push_back(slot[grp.leaves[i * grp.slots() + s]]);
      table.push_back(grp.residuals[i]);
    }
    uint64_t h;
    if (Status s = alloc(u32, table.size(), h); !s) return s;
    if (Status s = dev_.uploadBytes(h, bytes(table), {}); !s) return s;
    tables_.push_back(h);
  }
  return {};
}

Status DeviceGraph::run(std::span<const double> x, bool derivatives, std::vector<double>& out) {
  std::vector<double> xs(x.begin(), x.end());
  xs.resize(std::max<size_t>(numParams_, 1), 0.0);
  if (Status s = dev_.uploadBytes(params_, bytes(xs), {}); !s) return s;
  if (derivatives && !jacobian_) {  // the gradient kernels add into it
    std::vector<double> zeros(std::max<size_t>(derivLen_, 1), 0.0);
    if (Status s = dev_.uploadBytes(deriv_, bytes(zeros), {}); !s) return s;
  }
  for (size_t k = 0; k < groups_.size(); ++k) {
    std::string name = "vg" + std::to_string(k);
    uint32_t n = uint32_t(groups_[k].residuals.size());
    std::array<uint32_t, 3> grid{(n + 63) / 64, 1, 1};
    auto dispatch = [&](const std::string& kernel, uint64_t out) -> Status {
      const ir::Function* f = m_->lookup(kernel);
      if (!f) return {};  // no trainable slot: no gradient kernel
      auto types = f->paramTypes();
      std::vector<interp::RtValue> args(5);
      uint64_t handles[] = {params_, consts_, tables_[k], out};
      for (int i = 0; i < 4; ++i) args[i].type = types[i], args[i].buffer = handles[i];
      args[4] = interp::RtValue::ofInt(types[4], n);
      return dev_.dispatch(*f, grid, args, {});
    };
    if (Status s = dispatch(name, r_dev_); !s) return s;
    if (derivatives)
      if (Status s = dispatch(name + (jacobian_ ? ".j" : ".g"), deriv_); !s) return s;
  }
  if (Status s = dev_.wait({}); !s) return s;
  r_.resize(std::max<size_t>(numResiduals_, 1));
  if (Status s = dev_.downloadBytes(std::as_writable_bytes(std::span(r_)), r_dev_, {}); !s) return s;
  r_.resize(numResiduals_);
  if (derivatives) {
    out.resize(std::max<size_t>(derivLen_, 1));
    if (Status s = dev_.downloadBytes(std::as_writable_bytes(std::span(out)), deriv_, {}); !s) return s;
    out.resize(derivLen_);
  }
  return {};
}

Expected<std::unique_ptr<DeviceEnergy>> DeviceEnergy::create(const Graph& g, runtime::Device& dev) {
  std::unique_ptr<DeviceEnergy> p(new DeviceEnergy(g, dev));
  if (Status s = p->init(false); !s) return s.error();
  return p;
}

Expected<double> DeviceEnergy::evaluate(std::span<const double> x, std::span<double> grad) {
  if (Status s = run(x, !grad.empty(), grad_); !s) return s.error();
  double f = 0;
  for (double r : r_) f += r;
  if (!grad.empty()) std::copy(grad_.begin(), grad_.end(), grad.begin());
  return f;
}

}  // namespace eph::value::demo
