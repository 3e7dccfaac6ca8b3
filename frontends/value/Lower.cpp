#include "frontends/value/Lower.h"

#include <algorithm>
#include <numbers>
#include <unordered_map>

#include "frontends/value/Layout.h"
#include "ir/Builder.h"
#include "passes/Autodiff.h"

namespace eph::value {

std::vector<uint32_t> leafSlots(const Graph& g, uint32_t& numParams, uint32_t& numConsts) {
  std::vector<uint32_t> slot(g.nodes().size(), 0);
  numParams = numConsts = 0;
  for (const LeafDecl& d : g.decls())
    for (uint32_t i = 0; i < d.count; ++i) slot[d.first + i] = d.trainable ? numParams++ : numConsts++;
  return slot;
}

std::vector<uint64_t> jacobianLayout(const std::vector<Group>& groups) {
  std::vector<uint64_t> out{0};
  for (const Group& grp : groups)
    out.push_back(out.back() + uint64_t(std::count(grp.trainable.begin(), grp.trainable.end(), 1)) * grp.residuals.size());
  return out;
}

namespace {

using ir::Builder;

// One node of the residual as IR, from its arguments' IR values.
ir::Value* lowerNode(Builder& b, const Node& n, std::span<ir::Value* const> in, const ir::Type* t) {
  auto k = [&](double v) { return b.constFloat(t, v); };
  auto op = [&](std::string_view name, std::vector<ir::Value*> xs) { return b.op(name, std::move(xs), t); };
  auto cmp = [&](std::string_view name) {
    ir::Value* c = b.op(name, {in[0], in[1]}, b.context().boolType());
    return b.op("select", {c, k(1), k(0)}, t);
  };
  switch (n.kind) {
    case OpKind::Param: case OpKind::Const: return nullptr;  // the function's parameters
    case OpKind::Literal: return k(n.value);
    case OpKind::Add: return op("add", {in[0], in[1]});
    case OpKind::Sub: return op("sub", {in[0], in[1]});
    case OpKind::Mul: return op("mul", {in[0], in[1]});
    case OpKind::Div: return op("div", {in[0], in[1]});
    case OpKind::Neg: return op("neg", {in[0]});
    case OpKind::Pow: return op("pow", {in[0], in[1]});
    case OpKind::Sqrt: return op("sqrt", {in[0]});
    case OpKind::Exp: return op("exp", {in[0]});
    case OpKind::Log: return op("log", {in[0]});
    case OpKind::Sin: return op("sin", {in[0]});
    case OpKind::Cos: return op("cos", {in[0]});
    case OpKind::Tan: return op("tan", {in[0]});
    case OpKind::Asin: return op("asin", {in[0]});
    case OpKind::Acos: return op("acos", {in[0]});
    case OpKind::Atan: return op("atan", {in[0]});
    case OpKind::Tanh: return op("tanh", {in[0]});
    case OpKind::Sigmoid: return op("div", {k(1), op("add", {k(1), op("exp", {op("neg", {in[0]})})})});
    case OpKind::Softplus: {
      // x > 0 ? xp + log1p(e^-xp) : log1p(e^xn), with xp = x or 0 and xn = 0 or x:
      // the value of Eval.cpp's max(x, 0) + log1p(e^-|x|), no overflow in
      // either branch, and a derivative of sigmoid(x) everywhere (0.5 at 0)
      // when the autodiff pass differentiates this body.
      ir::Value* pos = b.op("gt", {in[0], k(0)}, b.context().boolType());
      ir::Value* xp = b.op("select", {pos, in[0], k(0)}, t);
      ir::Value* xn = b.op("select", {pos, k(0), in[0]}, t);
      ir::Value* up = op("add", {xp, op("log1p", {op("exp", {op("neg", {xp})})})});
      return b.op("select", {pos, up, op("log1p", {op("exp", {xn})})}, t);
    }
    case OpKind::Reciprocal: return op("div", {k(1), in[0]});
    case OpKind::Square: return op("mul", {in[0], in[0]});
    case OpKind::Cube: return op("mul", {op("mul", {in[0], in[0]}), in[0]});
    case OpKind::Abs: {  // x >= 0 ? x : -x, so that differentiating it gives abs'(0) = +1
      ir::Value* nonneg = b.op("ge", {in[0], k(0)}, b.context().boolType());
      return b.op("select", {nonneg, in[0], op("neg", {in[0]})}, t);
    }
    case OpKind::Relu: {  // x > 0 ? x : 0 (NaN gives 0, as Eval.cpp)
      ir::Value* pos = b.op("gt", {in[0], k(0)}, b.context().boolType());
      return b.op("select", {pos, in[0], k(0)}, t);
    }
    case OpKind::Sign: return op("sign", {in[0]});
    case OpKind::Floor: return op("floor", {in[0]});
    case OpKind::Ceil: return op("ceil", {in[0]});
    case OpKind::Round: return op("round", {in[0]});
    case OpKind::Atan2: return op("atan2", {in[0], in[1]});
    case OpKind::Min: return op("min", {in[0], in[1]});
    case OpKind::Max: return op("max", {in[0], in[1]});
    case OpKind::Clamp: return op("max", {k(n.value), op("min", {in[0], k(n.hi)})});
    // a − b·trunc(a/b) is the float `rem` (fmod); its derivative rule gives 1
    // to a and 0 to b, as FORMAT.md says (the expanded form would give
    // −trunc(a/b) to b).
    case OpKind::Mod: return op("rem", {in[0], in[1]});
    case OpKind::Sum: case OpKind::Mean: {
      ir::Value* s = in[0];
      for (size_t i = 1; i < in.size(); ++i) s = op("add", {s, in[i]});
      return n.kind == OpKind::Sum ? s : op("div", {s, k(double(in.size()))});
    }
    case OpKind::Eq: return cmp("eq");
    case OpKind::Ne: return cmp("ne");
    case OpKind::Lt: return cmp("lt");
    case OpKind::Le: return cmp("le");
    case OpKind::Gt: return cmp("gt");
    case OpKind::Ge: return cmp("ge");
    case OpKind::Select: {
      ir::Value* c = b.op("ne", {in[0], k(0)}, b.context().boolType());
      return b.op("select", {c, in[1], in[2]}, t);
    }
    case OpKind::Custom: return customOp(n.aux).lower(b, in, t);
  }
  return nullptr;
}

// A custom op with `lowerDerivative` becomes a call to a device function
// `@vg.custom.NAME.T` holding its `lower` body, with a hand-made
// `@vg.custom.NAME.T.vjp` (its inputs and a seed -> struct<out, seed·∂out/∂in_i...>)
// beside it, which the autodiff pass reuses for the call instead of
// differentiating the body: the op's own derivative reaches the kernels
// (eigmin3's body has acos and sqrt, whose derivatives are infinite where two
// eigenvalues meet, but its derivative rule is finite there).
ir::Value* lowerCustomCall(Builder& b, ir::Module& m, const CustomOp& op, std::span<ir::Value* const> in,
                           const ir::Type* t) {
  ir::Context& ctx = m.context();
  std::string name = "vg.custom." + op.name + "." + t->str();
  if (!m.lookup(name)) {
    std::vector<const ir::Type*> params(op.arity, t);
    ir::Function* f = m.addFunction(name, ir::FunctionKind::Device, ctx.functionType(params, {t}));
    Builder fb(ctx, f->body());
    std::vector<ir::Value*> args;
    for (unsigned i = 0; i < op.arity; ++i) args.push_back(f->param(i));
    fb.ret({op.lower(fb, args, t)});
    params.push_back(t);  // the seed
    std::vector<const ir::Type*> fields(op.arity + 1, t);
    ir::Function* vjp = m.addFunction(name + ".vjp", ir::FunctionKind::Device,
                                      ctx.functionType(params, {ctx.structType(fields)}));
    Builder vb(ctx, vjp->body());
    args.clear();
    for (unsigned i = 0; i < op.arity; ++i) args.push_back(vjp->param(i));
    ir::Value* out = op.lower(vb, args, t);
    std::vector<ir::Value*> d = op.lowerDerivative(vb, args, out, t);
    std::vector<ir::Value*> result{out};
    for (ir::Value* di : d) result.push_back(vb.op("mul", {vjp->param(op.arity), di}, t));
    vb.ret({vb.op("struct.make", result, ctx.structType(fields))});
  }
  return b.op("call", std::vector<ir::Value*>(in.begin(), in.end()), t, {{"callee", ir::Attr::symbol(name)}});
}

}  // namespace

bool lowerResidualFunction(ir::Module& m, const Graph& g, const Group& grp, const std::string& name,
                           const ir::Type* t, std::string& error) {
  ir::Context& ctx = m.context();
  std::vector<const ir::Type*> params(grp.slots(), t);
  ir::Function* fn = m.addFunction(name, ir::FunctionKind::Device, ctx.functionType(params, {t}));
  for (unsigned i = 0; i < params.size(); ++i) fn->param(i)->setName("x" + std::to_string(i));
  Builder b(ctx, fn->body());
  // IR values by position in the canonical order (leaves: the parameters).
  std::vector<ir::Value*> value(grp.form.nodes.size());
  std::vector<uint32_t> slotOf;  // canonical position -> slot, for leaves
  uint32_t slot = 0;
  std::vector<ir::Value*> in;
  // Positions of each node's arguments: the canonical order numbers a node after its arguments,
  // so a map from node id to position, filled as we go, is all the lowering needs.
  std::unordered_map<NodeId, uint32_t> position;
  position.reserve(grp.form.nodes.size());
  for (uint32_t i = 0; i < grp.form.nodes.size(); ++i) {
    NodeId id = grp.form.nodes[i];
    position[id] = i;
    const Node& n = g.node(id);
    if (g.isLeaf(id)) {
      value[i] = fn->param(slot++);
      continue;
    }
    if (n.kind == OpKind::Custom && !customOp(n.aux).lower) {
      error = "the op '" + customOp(n.aux).name + "' has no IR lowering (a custom op without `lower`), so residual " +
              std::to_string(grp.residuals[0]) + " cannot be compiled";
      return false;
    }
    in.clear();
    for (NodeId a : g.args(id)) in.push_back(value[position.at(a)]);
    if (n.kind == OpKind::Custom && customOp(n.aux).lowerDerivative)
      value[i] = lowerCustomCall(b, m, customOp(n.aux), in, t);
    else
      value[i] = lowerNode(b, n, in, t);
  }
  b.ret({value.back()});
  return true;
}

namespace {

// Host code that makes a device buffer holding `values` (as `elem`): a host
// buffer filled element by element, uploaded and freed.
ir::Value* upload(Builder& b, const ir::Type* elem, const std::vector<double>& floats,
                  const std::vector<uint32_t>* ints) {
  ir::Context& ctx = b.context();
  size_t n = ints ? ints->size() : floats.size();
  size_t len = n ? n : 1;  // no empty buffers: a dummy element
  ir::Value* count = b.constInt(ctx.u32(), int64_t(len));
  ir::Value* host = b.op("alloc", {count}, ctx.bufferType(elem, ir::Space::Host, ir::Ownership::Linear));
  for (size_t i = 0; i < len; ++i) {
    ir::Value* v = ints ? b.constInt(elem, i < n ? (*ints)[i] : 0) : b.constFloat(elem, i < n ? floats[i] : 0);
    b.store(host, b.constInt(ctx.u32(), int64_t(i)), v);
  }
  ir::Value* dev = b.op("alloc", {count}, ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Linear));
  b.h2d(dev, host);
  b.free(host);
  return dev;
}

ir::Value* upload(Builder& b, const std::vector<uint32_t>& ints) { return upload(b, b.context().u32(), {}, &ints); }

// A kernel `@name(params, consts, table, outs..., n)` over a signature's
// instances: instance i (guarded by i < n) has its leaves loaded through the
// index table; the caller fills the guarded body (before its yield).
struct Instance {
  ir::Builder body;
  std::vector<ir::Value*> leaves;
  std::vector<ir::Value*> outs;
  ir::Value *table, *base, *id;  // id: the instance
  // table[base + s]: slot s's leaf index (s = slots(): the residual's index).
  ir::Value* index(size_t s) {
    const ir::Type* u32 = body.context().u32();
    return body.op("load", {table, body.op("add", {base, body.constInt(u32, int64_t(s))}, u32)}, u32);
  }
  // a + id·stride + b in u32 (the host checked that it fits).
  ir::Value* at(uint64_t a, uint64_t stride, uint64_t b) {
    const ir::Type* u32 = body.context().u32();
    ir::Value* scaled = body.op("mul", {id, body.constInt(u32, int64_t(stride))}, u32);
    return body.op("add", {scaled, body.constInt(u32, int64_t(a + b))}, u32);
  }
};

using Params = std::vector<std::pair<const ir::Type*, std::string>>;

Instance instanceKernel(ir::Module& m, const Group& grp, const std::string& name, const Params& outs,
                        const ir::Type* t, unsigned workgroupSize) {
  ir::Context& ctx = m.context();
  const ir::Type* u32 = ctx.u32();
  auto devRead = [&](const ir::Type* e) { return ctx.bufferType(e, ir::Space::Device, ir::Ownership::Read); };
  Params all = {{devRead(t), "params"}, {devRead(t), "consts"}, {devRead(u32), "table"}};
  all.insert(all.end(), outs.begin(), outs.end());
  all.push_back({u32, "n"});
  std::vector<const ir::Type*> types;
  for (auto& p : all) types.push_back(p.first);
  ir::Function* kern = m.addFunction(name, ir::FunctionKind::Kernel, ctx.functionType(types, {}));
  kern->workgroupSize = {workgroupSize, 1, 1};
  for (unsigned i = 0; i < all.size(); ++i) kern->param(i)->setName(all[i].second);
  Builder b(ctx, kern->body());
  ir::Value* i = b.op("global_id", {}, u32, {{"dim", ir::Attr::integer(0)}});
  ir::Value* inside = b.op("lt", {i, kern->param(unsigned(all.size() - 1))}, ctx.boolType());
  ir::Op* guard = b.ifOp(inside, {}, [](Builder&) {});
  b.ret();
  Instance inst{Builder(ctx, guard->region(0), guard->region(0).back()), {}, {}, kern->param(2), nullptr, i};
  for (size_t o = 0; o < outs.size(); ++o) inst.outs.push_back(kern->param(unsigned(3 + o)));
  inst.base = inst.body.op("mul", {i, inst.body.constInt(u32, int64_t(grp.slots() + 1))}, u32);
  for (size_t s = 0; s < grp.slots(); ++s)
    inst.leaves.push_back(inst.body.op("load", {grp.trainable[s] ? kern->param(0) : kern->param(1), inst.index(s)}, t));
  return inst;
}

// The derivative outputs, in @main's order.
enum class Kind { Gradient, CostGradient, Jacobian, Normal };
struct KindInfo {
  const char *suffix, *buffer;
};
KindInfo info(Kind k) {
  switch (k) {
    case Kind::Gradient: return {".g", "grad"};
    case Kind::CostGradient: return {".c", "cgrad"};
    case Kind::Jacobian: return {".j", "jac"};
    case Kind::Normal: return {".n", "jtj"};
  }
  return {"", ""};
}

// Whether the kernels of `k` store their contributions at fixed positions
// (the Jacobian, and everything in deterministic mode) rather than add them.
bool stores(Kind k, bool deterministic) { return deterministic || k == Kind::Jacobian; }

// @vgK<suffix>: per instance, the residual's .vjp with seed 1 gives r and the
// Jacobian row d; with `residuals` the kernel also stores r in its last
// buffer parameter, %r, as @vgK does (one kernel where two would read the
// leaves and compute the forward values twice); the contributions are d_j (Gradient, Jacobian), r·d_j
// (CostGradient) or d_a·d_b for a ≤ b (Normal). Stored at `offset` +
// i·(contributions per instance) + q, or atomically added into the output
// element: the leaf's parameter for a gradient, pairs[i·t² + a·t + b] (and
// b·t + a) for JᵀJ.
void derivativeKernel(ir::Module& m, const Group& grp, const std::string& name, const ir::Function& vjp, Kind kind,
                      bool deterministic, uint64_t offset, const ir::Type* t, unsigned workgroupSize, bool residuals) {
  ir::Context& ctx = m.context();
  const ir::Type* u32 = ctx.u32();
  bool store = stores(kind, deterministic);
  Params outs = {{ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write), info(kind).buffer}};
  if (kind == Kind::Normal && !store) outs.push_back({ctx.bufferType(u32, ir::Space::Device, ir::Ownership::Read), "pairs"});
  if (residuals) outs.push_back({ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write), "r"});
  Instance inst = instanceKernel(m, grp, name + info(kind).suffix, outs, t, workgroupSize);
  Builder& b = inst.body;
  std::vector<ir::Value*> args = inst.leaves;
  args.push_back(b.constFloat(t, 1));
  ir::Value* res = b.op("call", args, vjp.resultTypes()[0], {{"callee", ir::Attr::symbol(vjp.name())}});
  auto field = [&](int64_t k) { return b.op("struct.extract", {res}, t, {{"index", ir::Attr::integer(k)}}); };
  if (residuals) {
    ir::Value* at = inst.index(grp.slots());  // first: a call evaluates its arguments in no fixed order
    b.store(inst.outs.back(), at, field(0));
  }
  std::vector<ir::Value*> d;
  std::vector<size_t> slotOf;
  for (size_t s = 0; s < grp.slots(); ++s)
    if (grp.trainable[s]) slotOf.push_back(s), d.push_back(field(int64_t(d.size() + 1)));
  const uint64_t tr = d.size();
  auto add = [&](ir::Value* at, ir::Value* v) { b.op("atomic.add", {inst.outs[0], at, v}, t); };
  if (kind != Kind::Normal) {
    ir::Value* r = kind == Kind::CostGradient ? field(0) : nullptr;
    for (size_t j = 0; j < tr; ++j) {
      ir::Value* c = r ? b.op("mul", {r, d[j]}, t) : d[j];
      if (store) b.store(inst.outs[0], inst.at(offset, tr, j), c);
      else add(inst.index(slotOf[j]), c);
    }
  } else {
    uint64_t q = 0, pairs = tr * (tr + 1) / 2;
    auto pairAt = [&](uint64_t a, uint64_t bb) { return b.op("load", {inst.outs[1], inst.at(0, tr * tr, a * tr + bb)}, u32); };
    for (uint64_t a = 0; a < tr; ++a)
      for (uint64_t c = a; c < tr; ++c, ++q) {
        ir::Value* p = b.op("mul", {d[a], d[c]}, t);
        if (store) {
          b.store(inst.outs[0], inst.at(offset, pairs, q), p);
          continue;
        }
        add(pairAt(a, c), p);
        if (a != c) add(pairAt(c, a), p);
      }
  }
}

// kernel @vg.reduce(%parts, %start, %list, %out, %n): out[e] = the sum of
// parts[list[k]] for k in start[e] .. start[e+1], in that order (one
// invocation per output element, so the order never depends on the schedule).
void reduceKernel(ir::Module& m, const ir::Type* t, unsigned workgroupSize) {
  ir::Context& ctx = m.context();
  const ir::Type* u32 = ctx.u32();
  auto devRead = [&](const ir::Type* e) { return ctx.bufferType(e, ir::Space::Device, ir::Ownership::Read); };
  ir::Function* kern = m.addFunction(
      "vg.reduce", ir::FunctionKind::Kernel,
      ctx.functionType(
          {devRead(t), devRead(u32), devRead(u32), ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write), u32}, {}));
  kern->workgroupSize = {workgroupSize, 1, 1};
  const char* names[] = {"parts", "start", "list", "out", "n"};
  for (unsigned i = 0; i < 5; ++i) kern->param(i)->setName(names[i]);
  Builder b(ctx, kern->body());
  ir::Value* e = b.globalId(0);
  b.ifOp(b.lt(e, kern->param(4)), {}, [&](Builder& b) {
    ir::Value* lo = b.load(kern->param(1), e);
    ir::Value* hi = b.load(kern->param(1), b.add(e, b.constInt(u32, 1)));
    auto step = [&](Builder& b, ir::Value* k, const ir::Values& acc) {
      return b.add(acc[0], b.load(kern->param(0), b.load(kern->param(2), k)));
    };
    ir::Op* loop = b.forOp(lo, hi, b.constInt(u32, 1), {b.constFloat(t, 0)}, step);
    b.store(kern->param(3), e, loop->result(0));
  });
  b.ret();
}

}  // namespace

std::unique_ptr<ir::Module> lowerGraph(ir::Context& ctx, const Graph& g, const std::vector<Group>& groups,
                                       const LowerOptions& options, std::string& error) {
  LowerOptions opts = options;
  if (opts.jacobian) opts.parameterInput = true, opts.outputs = Outputs{.gradient = false, .jacobian = true};
  std::vector<Kind> kinds;
  if (opts.outputs.gradient) kinds.push_back(Kind::Gradient);
  if (opts.outputs.costGradient) kinds.push_back(Kind::CostGradient);
  if (opts.outputs.jacobian) kinds.push_back(Kind::Jacobian);
  if (opts.outputs.normal) kinds.push_back(Kind::Normal);
  // The transposes and JᵀJ's tables only where a kernel reads them.
  DerivativeLayout layout;
  if (opts.outputs.normal || opts.deterministic) {
    if (!derivativeLayout(g, groups, opts.outputs.normal, layout, error)) return nullptr;
  } else {
    uint32_t numConsts;
    leafSlots(g, layout.numParams, numConsts);
    layout.jacobianOffset = jacobianLayout(groups);
  }
  auto m = std::make_unique<ir::Module>(ctx);
  const ir::Type* t = opts.f32 ? ctx.f32() : ctx.f64();
  const ir::Type* u32 = ctx.u32();
  const unsigned wg = opts.workgroupSize;

  // Per signature: the residual function, the kernel over its instances and,
  // when a slot is trainable, a derivative kernel per output from the
  // residual's .vjp.
  std::vector<bool> hasGradient(groups.size(), false);
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& grp = groups[k];
    std::string name = "vg" + std::to_string(k);
    if (!lowerResidualFunction(*m, g, grp, name + ".r", t, error)) return nullptr;
    {
      Instance inst = instanceKernel(*m, grp, name, {{ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write), "r"}}, t, wg);
      ir::Value* r = inst.body.op("call", inst.leaves, t, {{"callee", ir::Attr::symbol(name + ".r")}});
      inst.body.store(inst.outs[0], inst.index(grp.slots()), r);
    }
    std::vector<bool> wrt(grp.trainable.begin(), grp.trainable.end());
    if (std::find(wrt.begin(), wrt.end(), true) == wrt.end() || kinds.empty()) continue;
    auto vjp = passes::reverseDerivative(*m, *m->lookup(name + ".r"), wrt);
    if (!vjp) {
      error = "differentiating residual " + std::to_string(grp.residuals[0]) + " failed: " + vjp.error().message;
      return nullptr;
    }
    hasGradient[k] = true;
    for (Kind kind : kinds)
      derivativeKernel(*m, grp, name, **vjp, kind, opts.deterministic,
                       kind == Kind::Normal ? layout.pairOffset[k] : layout.jacobianOffset[k], t, wg, kind == kinds[0]);
  }
  bool reduces = opts.deterministic && std::any_of(kinds.begin(), kinds.end(), [](Kind k) { return k != Kind::Jacobian; });
  if (reduces) reduceKernel(*m, t, wg);

  if (!opts.hostMain) return m;
  // Host: upload the leaves and the index tables, run every kernel, download
  // the residuals and the outputs.
  const ir::Type* hostOut = ctx.bufferType(t, ir::Space::Host, ir::Ownership::Linear);
  const ir::Type* devBuf = ctx.bufferType(t, ir::Space::Device, ir::Ownership::Linear);
  ir::Function* main = m->addFunction(
      "main", ir::FunctionKind::Host,
      ctx.functionType(opts.parameterInput ? std::vector<const ir::Type*>{ctx.bufferType(t, ir::Space::Host, ir::Ownership::Read)}
                                           : std::vector<const ir::Type*>{},
                       std::vector<const ir::Type*>(1 + kinds.size(), hostOut)));
  if (opts.parameterInput) main->param(0)->setName("x");
  Builder b(ctx, main->body());
  const size_t numResiduals = g.residuals().size();
  const uint32_t numParams = layout.numParams;
  // Output elements (targets of the reduction) and contributions per kind.
  auto targets = [&](Kind k) -> uint64_t {
    return k == Kind::Normal ? layout.normal.index.size() : k == Kind::Jacobian ? layout.jacobianOffset.back() : numParams;
  };
  auto contributions = [&](Kind k) { return k == Kind::Normal ? layout.pairOffset.back() : layout.jacobianOffset.back(); };
  auto sources = [&](Kind k) -> const CsrIndex& { return k == Kind::Normal ? layout.normalSources : layout.gradientSources; };
  auto len = [&](uint64_t n) { return b.constInt(u32, int64_t(std::max<uint64_t>(n, 1))); };
  if (numResiduals == 0) {
    std::vector<ir::Value*> results = {b.op("alloc", {b.constInt(u32, 0)}, hostOut)};
    for (Kind k : kinds) {
      ir::Value* zeros = b.op("alloc", {len(targets(k))}, hostOut);
      for (uint64_t i = 0; i < std::max<uint64_t>(targets(k), 1); ++i) {
        ir::Value* at = b.constInt(u32, int64_t(i));  // first: a call evaluates its arguments in no fixed order
        b.store(zeros, at, b.constFloat(t, 0));
      }
      results.push_back(zeros);
    }
    b.ret(results);
    return m;
  }
  std::vector<double> paramValues, constValues;
  for (const LeafDecl& d : g.decls())
    for (uint32_t e = 0; e < d.count; ++e) (d.trainable ? paramValues : constValues).push_back(g.node(d.first + e).value);
  ir::Value* params;
  if (opts.parameterInput) {  // x: max(numParams, 1) values from the caller
    params = b.op("alloc", {len(numParams)}, devBuf);
    b.h2d(params, main->param(0));
  } else {
    params = upload(b, t, paramValues, nullptr);
  }
  ir::Value* consts = upload(b, t, constValues, nullptr);
  ir::Value* count = b.constInt(u32, int64_t(numResiduals));
  ir::Value* out = b.op("alloc", {count}, devBuf);
  std::vector<ir::Value*> temporaries = {params, consts, out};
  uint32_t np, nc;
  std::vector<uint32_t> slot = leafSlots(g, np, nc);
  ir::Value* one = b.constInt(u32, 1);
  auto groupsFor = [&](uint64_t n) { return b.constInt(u32, int64_t((n + wg - 1) / wg)); };
  // Per output: where @main's result is (zeroed where kernels add into it)
  // and where the kernels put their contributions (a scratch buffer when
  // @vg.reduce sums them).
  std::vector<ir::Value*> results, parts;
  for (Kind kind : kinds) {
    bool store = stores(kind, opts.deterministic), reduce = store && kind != Kind::Jacobian;
    ir::Value* dest = store && targets(kind) ? b.op("alloc", {len(targets(kind))}, devBuf)
                                             : upload(b, t, std::vector<double>(targets(kind), 0.0), nullptr);
    temporaries.push_back(dest);
    results.push_back(dest);
    parts.push_back(dest);
    if (reduce) temporaries.push_back(parts.back() = b.op("alloc", {len(contributions(kind))}, devBuf));
  }
  // Per signature: its table, then its residual kernel or its derivative kernels.
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& grp = groups[k];
    std::vector<uint32_t> table;
    table.reserve(grp.residuals.size() * (grp.slots() + 1));
    for (size_t inst = 0; inst < grp.residuals.size(); ++inst) {
      for (size_t s = 0; s < grp.slots(); ++s) table.push_back(slot[grp.leaves[inst * grp.slots() + s]]);
      table.push_back(grp.residuals[inst]);
    }
    ir::Value* dev = upload(b, table);
    temporaries.push_back(dev);
    ir::Value* instances = b.constInt(u32, int64_t(grp.residuals.size()));
    ir::Value* groupsX = groupsFor(grp.residuals.size());
    std::string name = "vg" + std::to_string(k);
    // The residuals come from the first derivative kernel where there is one.
    if (!hasGradient[k]) {
      b.dispatch(name, {groupsX, one, one}, {params, consts, dev, out, instances});
      continue;
    }
    for (size_t o = 0; o < kinds.size(); ++o) {
      std::vector<ir::Value*> args = {params, consts, dev, parts[o]};
      if (kinds[o] == Kind::Normal && !stores(kinds[o], opts.deterministic))
        temporaries.push_back(args.emplace_back(upload(b, layout.pairTable[k])));
      if (o == 0) args.push_back(out);
      args.push_back(instances);
      b.dispatch(name + info(kinds[o]).suffix, {groupsX, one, one}, args);
    }
  }
  // Deterministic sums, one invocation per output element.
  const CsrIndex* uploadedSources = nullptr;  // the two gradients share theirs
  ir::Value *start = nullptr, *list = nullptr;
  for (size_t o = 0; o < kinds.size(); ++o) {
    if (parts[o] == results[o] || !targets(kinds[o])) continue;
    if (uploadedSources != &sources(kinds[o])) {
      uploadedSources = &sources(kinds[o]);
      temporaries.push_back(start = upload(b, uploadedSources->start));
      temporaries.push_back(list = upload(b, uploadedSources->index));
    }
    uint64_t n = targets(kinds[o]);
    ir::Value* gx = groupsFor(n);  // first: a call evaluates its arguments in no fixed order
    ir::Value* nv = b.constInt(u32, int64_t(n));
    b.dispatch("vg.reduce", {gx, one, one}, {parts[o], start, list, results[o], nv});
  }
  b.wait();
  ir::Value* host = b.op("alloc", {count}, hostOut);
  b.d2h(host, out);
  for (size_t o = 0; o < kinds.size(); ++o) {
    ir::Value* h = b.op("alloc", {len(targets(kinds[o]))}, hostOut);
    b.d2h(h, results[o]);
    results[o] = h;
  }
  for (ir::Value* dev : temporaries) b.free(dev);
  results.insert(results.begin(), host);
  b.ret(results);
  return m;
}

}  // namespace eph::value
