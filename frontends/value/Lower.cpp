#include "frontends/value/Lower.h"

#include <numbers>
#include <unordered_map>

#include "ir/Builder.h"

namespace eph::value {

std::vector<uint32_t> leafSlots(const Graph& g, uint32_t& numParams, uint32_t& numConsts) {
  std::vector<uint32_t> slot(g.nodes().size(), 0);
  numParams = numConsts = 0;
  for (const LeafDecl& d : g.decls())
    for (uint32_t i = 0; i < d.count; ++i) slot[d.first + i] = d.trainable ? numParams++ : numConsts++;
  return slot;
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
    case OpKind::Mod: return op("sub", {in[0], op("mul", {in[1], op("trunc", {op("div", {in[0], in[1]})})})});
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
    value[i] = lowerNode(b, n, in, t);
  }
  b.create("return", {value.back()});
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
    b.create("store", {host, b.constInt(ctx.u32(), int64_t(i)), v});
  }
  ir::Value* dev = b.op("alloc", {count}, ctx.bufferType(elem, ir::Space::Device, ir::Ownership::Linear));
  b.create("h2d", {dev, host});
  b.create("free", {host});
  return dev;
}

}  // namespace

std::unique_ptr<ir::Module> lowerGraph(ir::Context& ctx, const Graph& g, const std::vector<Group>& groups,
                                       const LowerOptions& opts, std::string& error) {
  auto m = std::make_unique<ir::Module>(ctx);
  const ir::Type* t = opts.f32 ? ctx.f32() : ctx.f64();
  const ir::Type* u32 = ctx.u32();
  auto devRead = [&](const ir::Type* e) { return ctx.bufferType(e, ir::Space::Device, ir::Ownership::Read); };

  // Per signature: the residual function and the kernel over its instances.
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& grp = groups[k];
    std::string name = "vg" + std::to_string(k);
    if (!lowerResidualFunction(*m, g, grp, name + ".r", t, error)) return nullptr;
    ir::Function* kern = m->addFunction(
        name, ir::FunctionKind::Kernel,
        ctx.functionType({devRead(t), devRead(t), devRead(u32), ctx.bufferType(t, ir::Space::Device, ir::Ownership::Write), u32}, {}));
    kern->workgroupSize = {opts.workgroupSize, 1, 1};
    const char* names[] = {"params", "consts", "table", "r", "n"};
    for (unsigned i = 0; i < 5; ++i) kern->param(i)->setName(names[i]);
    Builder b(ctx, kern->body());
    ir::Value *params = kern->param(0), *consts = kern->param(1), *table = kern->param(2), *out = kern->param(3);
    ir::Value* i = b.op("global_id", {}, u32, {{"dim", ir::Attr::integer(0)}});
    ir::Value* inside = b.op("lt", {i, kern->param(4)}, ctx.boolType());
    ir::Op* guard = b.create("if", {inside}, {}, {}, 2);
    Builder body(ctx, guard->region(0));
    ir::Value* base = body.op("mul", {i, body.constInt(u32, int64_t(grp.slots() + 1))}, u32);
    std::vector<ir::Value*> leaves;
    for (size_t s = 0; s < grp.slots(); ++s) {
      ir::Value* at = body.op("add", {base, body.constInt(u32, int64_t(s))}, u32);
      ir::Value* index = body.op("load", {table, at}, u32);
      leaves.push_back(body.op("load", {grp.trainable[s] ? params : consts, index}, t));
    }
    ir::Value* r = body.op("call", leaves, t, {{"callee", ir::Attr::symbol(name + ".r")}});
    ir::Value* slotOfR = body.op("add", {base, body.constInt(u32, int64_t(grp.slots()))}, u32);
    body.create("store", {out, body.op("load", {table, slotOfR}, u32), r});
    body.create("yield");
    Builder(ctx, guard->region(1)).create("yield");
    b.create("return");
  }

  // Host: upload the leaves and the index tables, run every kernel, download r.
  const ir::Type* hostOut = ctx.bufferType(t, ir::Space::Host, ir::Ownership::Linear);
  ir::Function* main = m->addFunction("main", ir::FunctionKind::Host, ctx.functionType({}, {hostOut}));
  Builder b(ctx, main->body());
  const size_t numResiduals = g.residuals().size();
  if (numResiduals == 0) {
    b.create("return", {b.op("alloc", {b.constInt(u32, 0)}, hostOut)});
    return m;
  }
  uint32_t numParams, numConsts;
  std::vector<uint32_t> slot = leafSlots(g, numParams, numConsts);
  std::vector<double> paramValues, constValues;
  for (const LeafDecl& d : g.decls())
    for (uint32_t e = 0; e < d.count; ++e) (d.trainable ? paramValues : constValues).push_back(g.node(d.first + e).value);
  ir::Value* params = upload(b, t, paramValues, nullptr);
  ir::Value* consts = upload(b, t, constValues, nullptr);
  ir::Value* count = b.constInt(u32, int64_t(numResiduals));
  ir::Value* out = b.op("alloc", {count}, ctx.bufferType(t, ir::Space::Device, ir::Ownership::Linear));
  std::vector<ir::Value*> tables;
  for (size_t k = 0; k < groups.size(); ++k) {
    const Group& grp = groups[k];
    std::vector<uint32_t> table;
    table.reserve(grp.residuals.size() * (grp.slots() + 1));
    for (size_t inst = 0; inst < grp.residuals.size(); ++inst) {
      for (size_t s = 0; s < grp.slots(); ++s) table.push_back(slot[grp.leaves[inst * grp.slots() + s]]);
      table.push_back(grp.residuals[inst]);
    }
    ir::Value* dev = upload(b, u32, {}, &table);
    tables.push_back(dev);
    uint64_t n = grp.residuals.size();
    ir::Value* one = b.constInt(u32, 1);
    ir::Value* groupsX = b.constInt(u32, int64_t((n + opts.workgroupSize - 1) / opts.workgroupSize));
    b.create("dispatch", {groupsX, one, one, params, consts, dev, out, b.constInt(u32, int64_t(n))},
             {}, {{"kernel", ir::Attr::symbol("vg" + std::to_string(k))}});
  }
  b.create("wait");
  ir::Value* host = b.op("alloc", {count}, hostOut);
  b.create("d2h", {host, out});
  for (ir::Value* dev : tables) b.create("free", {dev});
  b.create("free", {params});
  b.create("free", {consts});
  b.create("free", {out});
  b.create("return", {host});
  return m;
}

}  // namespace eph::value
