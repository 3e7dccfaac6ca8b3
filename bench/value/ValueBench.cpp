#include "bench/value/ValueBench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "frontends/value/Lower.h"
#include "ir/Builder.h"
#include "ir/Verifier.h"

namespace vbench {

namespace value = eph::value;
namespace ir = eph::ir;
namespace interp = eph::interp;

const char* familyName(Family f) { return f == Family::Edge ? "edge" : "hinge"; }

bool parseFamily(const std::string& s, Family& f) {
  if (s == "edge") return f = Family::Edge, true;
  if (s == "hinge") return f = Family::Hinge, true;
  return false;
}

unsigned pointsPer(Family f) { return f == Family::Edge ? 2 : 4; }

Mesh makeMesh(Family f, size_t n) {
  Mesh m;
  m.family = f;
  // edge: about 3 edges per vertex; hinge: one per quad.
  if (f == Family::Edge) {
    m.W = uint32_t(std::sqrt(double(n) / 3.0)) + 2;
    m.H = uint32_t(n / (3 * size_t(m.W - 1))) + 3;
  } else {
    m.W = uint32_t(std::sqrt(double(n))) + 2;
    m.H = uint32_t(n / (m.W - 1)) + 2;
  }
  size_t V = m.vertices();
  m.xyz.resize(3 * V);
  for (size_t v = 0; v < V; ++v) {
    double x = double(v % m.W), y = double(v / m.W);
    m.xyz[3 * v] = x + 0.1 * std::sin(0.7 * double(v));
    m.xyz[3 * v + 1] = y + 0.1 * std::cos(1.3 * double(v));
    m.xyz[3 * v + 2] = 0.2 * std::sin(0.05 * x) * std::cos(0.07 * y) + 0.05 * std::sin(0.9 * double(v));
  }
  m.vert.reserve(n * pointsPer(f));
  m.rest.reserve(n);
  for (size_t v = 0; v < V && m.rest.size() < n; ++v) {
    uint32_t x = uint32_t(v % m.W), y = uint32_t(v / m.W);
    bool right = x + 1 < m.W, down = y + 1 < m.H;
    if (f == Family::Edge) {
      uint32_t to[3] = {uint32_t(v + 1), uint32_t(v + m.W), uint32_t(v + m.W + 1)};
      bool ok[3] = {right, down, right && down};
      for (int k = 0; k < 3 && m.rest.size() < n; ++k) {
        if (!ok[k]) continue;
        size_t e = m.rest.size();
        m.vert.push_back(uint32_t(v));
        m.vert.push_back(to[k]);
        m.rest.push_back(1.0 + 0.01 * double(e % 13));
      }
    } else if (right && down) {
      size_t q = m.rest.size();
      // hinge (a, b) = (v00, v11), wings c = v10, d = v01
      m.vert.insert(m.vert.end(), {uint32_t(v), uint32_t(v + m.W + 1), uint32_t(v + 1), uint32_t(v + m.W)});
      m.rest.push_back(0.01 * double(q % 5));
    }
  }
  if (m.rest.size() != n) fail("makeMesh: the grid is too small (a bug)");
  return m;
}

value::Graph buildGraph(const Mesh& m) {
  value::Graph g;
  auto p = g.params("p", m.xyz);
  auto rest = g.constants("rest", m.rest);
  unsigned k = pointsPer(m.family);
  std::vector<value::Value> leaves(3 * k + 1);
  for (size_t i = 0; i < m.residuals(); ++i) {
    for (unsigned j = 0; j < k; ++j)
      for (unsigned c = 0; c < 3; ++c) leaves[3 * j + c] = p[3 * size_t(m.vert[k * i + j]) + c];
    leaves[3 * k] = rest[i];
    g.trace(leaves, [&](std::span<const value::Value> v) {
      const value::Value* x = v.data();
      return m.family == Family::Edge ? edgeResidual(x, x + 3, v[6]) : hingeResidual(x, x + 3, x + 6, x + 9, v[12]);
    });
  }
  return g;
}

std::vector<double> referenceResiduals(const Mesh& m) {
  std::vector<double> r(m.residuals());
  unsigned k = pointsPer(m.family);
  for (size_t i = 0; i < r.size(); ++i) {
    const double* pt[4];
    for (unsigned j = 0; j < k; ++j) pt[j] = &m.xyz[3 * size_t(m.vert[k * i + j])];
    r[i] = m.family == Family::Edge ? edgeResidual(pt[0], pt[1], m.rest[i])
                                    : hingeResidual(pt[0], pt[1], pt[2], pt[3], m.rest[i]);
  }
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void fail(const std::string& msg) {
  std::fprintf(stderr, "value bench: %s\n", msg.c_str());
  std::exit(1);
}

void check(const eph::Status& s) {
  if (!s) fail(s.error().str());
}

std::string jsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string utcNow() {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return date;
}

namespace {

// `@vbench.zero(%g, %n)`: g[i] = 0 for i < n, added to the lowered module:
// a device runs the kernels of one module at a time (VulkanDevice prepares
// the module again when a dispatch names a kernel of another), so the zero
// kernel must live beside @vg0.
const ir::Function* addZeroKernel(ir::Module& m) {
  ir::Context& ctx = m.context();
  const ir::Type *u32 = ctx.u32(), *f64 = ctx.f64();
  ir::Function* k = m.addFunction(
      "vbench.zero", ir::FunctionKind::Kernel,
      ctx.functionType({ctx.bufferType(f64, ir::Space::Device, ir::Ownership::Write), u32}, {}));
  k->workgroupSize = {256, 1, 1};
  ir::Builder b(ctx, k->body());
  ir::Value* i = b.op("global_id", {}, u32, {{"dim", ir::Attr::integer(0)}});
  ir::Op* guard = b.create("if", {b.op("lt", {i, k->param(1)}, ctx.boolType())}, {}, {}, 2);
  ir::Builder(ctx, guard->region(1)).create("yield");
  b.create("return");
  ir::Builder body(ctx, guard->region(0));
  body.create("store", {k->param(0), i, body.constFloat(f64, 0)});
  body.create("yield");
  return k;
}

interp::RtValue bufArg(const ir::Function& k, unsigned param, uint64_t handle) {
  interp::RtValue v;
  v.type = k.paramTypes()[param];
  v.buffer = handle;
  return v;
}

template <class T>
std::span<const std::byte> bytesOf(const std::vector<T>& v) {
  return std::as_bytes(std::span(v));
}

}  // namespace

KernelRunner::KernelRunner(eph::runtime::Device& dev, const value::Graph& g, const Mesh& m, bool jacobian,
                           unsigned workgroupSize)
    : dev_(dev), jacobian_(jacobian), wg_(workgroupSize) {
  auto t0 = Clock::now();
  std::vector<value::Group> groups = value::groupResiduals(g);
  if (groups.size() != 1) fail("expected one signature, got " + std::to_string(groups.size()));
  // The kernels, from a one-instance copy of the problem (same signature).
  Mesh one = makeMesh(m.family, 1);
  value::Graph small = buildGraph(one);
  std::vector<value::Group> smallGroups = value::groupResiduals(small);
  if (smallGroups.size() != 1 || smallGroups[0].form.key != groups[0].form.key)
    fail("the one-instance problem does not have the full problem's signature");
  value::LowerOptions lo;
  lo.jacobian = jacobian;
  lo.workgroupSize = workgroupSize;
  std::string error;
  mod_ = value::lowerGraph(ctx_, small, smallGroups, lo, error);
  if (!mod_) fail("lowering: " + error);
  if (!jacobian) zeroKernel_ = addZeroKernel(*mod_);
  check(ir::verify(*mod_));
  dKernel_ = mod_->lookup(jacobian ? "vg0.j" : "vg0.g");
  if (!dKernel_) fail("the lowered module has no vg0.j / vg0.g kernel");
  // lowerGraph's first derivative kernel stores the residuals too (its %r).
  if (dKernel_->paramTypes().size() != 6 || dKernel_->param(4)->name() != "r")
    fail("@" + dKernel_->name() + " does not store the residuals (no %r)");
  check(dev_.prepare(*mod_));
  compileMs = msSince(t0);

  // The index table as lowerGraph's @main builds it.
  const value::Group& grp = groups[0];
  uint32_t np, nc;
  std::vector<uint32_t> slot = value::leafSlots(g, np, nc);
  numParams_ = np, numConsts_ = nc, numResiduals_ = g.residuals().size();
  slots_ = grp.slots();
  trainableSlot_ = grp.trainable;
  trainable_ = size_t(std::count(grp.trainable.begin(), grp.trainable.end(), 1));
  tableHost_.reserve(grp.residuals.size() * (slots_ + 1));
  for (size_t inst = 0; inst < grp.residuals.size(); ++inst) {
    for (size_t s = 0; s < slots_; ++s) tableHost_.push_back(slot[grp.leaves[inst * slots_ + s]]);
    tableHost_.push_back(grp.residuals[inst]);
  }
  rowOf_ = grp.residuals;
  std::vector<double> paramValues, constValues;
  for (const value::LeafDecl& d : g.decls())
    for (uint32_t e = 0; e < d.count; ++e) (d.trainable ? paramValues : constValues).push_back(g.node(d.first + e).value);
  outLen_ = jacobian ? trainable_ * numResiduals_ : numParams_;

  ir::Context& c = ctx_;
  auto alloc = [&](const ir::Type* elem, size_t n) {
    auto h = dev_.alloc(c.bufferType(elem, ir::Space::Device, ir::Ownership::Linear), std::max<size_t>(n, 1), {});
    if (!h) fail(h.error().str());
    return *h;
  };
  params_ = alloc(c.f64(), numParams_);
  consts_ = alloc(c.f64(), numConsts_);
  table_ = alloc(c.u32(), tableHost_.size());
  r_ = alloc(c.f64(), numResiduals_);
  out_ = alloc(c.f64(), outLen_);
  check(dev_.uploadBytes(params_, bytesOf(paramValues), {}));
  check(dev_.uploadBytes(consts_, bytesOf(constValues), {}));
  check(dev_.uploadBytes(table_, bytesOf(tableHost_), {}));
  check(dev_.wait({}));
}

KernelRunner::~KernelRunner() {
  for (uint64_t h : {params_, consts_, table_, r_, out_})
    if (h) (void)dev_.free(h, {});
}

void KernelRunner::dispatch() {
  const ir::Type* u32 = ctx_.u32();
  uint32_t n = uint32_t(numResiduals_);
  std::array<uint32_t, 3> groups = {uint32_t((numResiduals_ + wg_ - 1) / wg_), 1, 1};
  if (zeroKernel_) {
    interp::RtValue za[] = {bufArg(*zeroKernel_, 0, out_), interp::RtValue::ofInt(u32, int64_t(outLen_))};
    check(dev_.dispatch(*zeroKernel_, {uint32_t((outLen_ + 255) / 256), 1, 1}, za, {}));
  }
  const ir::Function& d = *dKernel_;
  interp::RtValue args[] = {bufArg(d, 0, params_), bufArg(d, 1, consts_), bufArg(d, 2, table_),
                            bufArg(d, 3, out_),    bufArg(d, 4, r_),      interp::RtValue::ofInt(u32, n)};
  check(dev_.dispatch(d, groups, args, {}));
}

void KernelRunner::uploadParams(const std::vector<double>& x) { check(dev_.uploadBytes(params_, bytesOf(x), {})); }

void KernelRunner::download(std::vector<double>& r, std::vector<double>& out) {
  r.resize(std::max<size_t>(numResiduals_, 1));
  out.resize(std::max<size_t>(outLen_, 1));
  check(dev_.downloadBytes(std::as_writable_bytes(std::span(r)), r_, {}));
  check(dev_.downloadBytes(std::as_writable_bytes(std::span(out)), out_, {}));
  r.resize(numResiduals_);
  out.resize(outLen_);
}

std::vector<uint32_t> KernelRunner::jacobianColumns() const {
  std::vector<uint32_t> cols;
  cols.reserve(numResiduals_ * trainable_);
  for (size_t inst = 0; inst < rowOf_.size(); ++inst)
    for (size_t s = 0; s < slots_; ++s)
      if (trainableSlot_[s]) cols.push_back(tableHost_[inst * (slots_ + 1) + s]);
  return cols;
}

}  // namespace vbench
