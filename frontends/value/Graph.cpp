#include "frontends/value/Graph.h"

#include <cmath>
#include <cstring>
#include <mutex>
#include <utility>

#include "frontends/value/Eval.h"

namespace eph::value {

namespace {
// Indexed by OpKind.
constexpr OpInfo kOps[] = {
    {"param", 0},    {"const", 0},    {"literal", 0},  {"add", 2},      {"sub", 2},      {"mul", 2},
    {"div", 2},      {"neg", 1},      {"pow", 2},      {"sqrt", 1},     {"exp", 1},      {"log", 1},
    {"sin", 1},      {"cos", 1},      {"tan", 1},      {"asin", 1},     {"acos", 1},     {"atan", 1},
    {"tanh", 1},     {"sigmoid", 1},  {"softplus", 1}, {"reciprocal", 1}, {"square", 1}, {"cube", 1},
    {"abs", 1},      {"relu", 1},     {"sign", 1},     {"floor", 1},    {"ceil", 1},     {"round", 1},
    {"atan2", 2},    {"min", 2},      {"max", 2},      {"clamp", 1},    {"mod", 2},      {"sum", -1},
    {"mean", -1},    {"eq", 2},       {"ne", 2},       {"lt", 2},       {"le", 2},       {"gt", 2},
    {"ge", 2},       {"select", 3},   {"custom", -1},
};
static_assert(sizeof(kOps) / sizeof(kOps[0]) == size_t(OpKind::Custom) + 1);

struct Registry {
  std::mutex mu;
  std::vector<std::unique_ptr<CustomOp>> ops;  // stable addresses
};
Registry& registry();
}  // namespace

const OpInfo& opInfo(OpKind k) { return kOps[size_t(k)]; }

bool callByName(std::string_view name, OpKind& kind) {
  for (size_t i = size_t(OpKind::Pow); i < size_t(OpKind::Custom); ++i)
    if (kOps[i].name == name) return kind = OpKind(i), true;
  return false;
}

// ---- custom ops ---------------------------------------------------------------

void registerBuiltinCustomOps(std::vector<std::unique_ptr<CustomOp>>& ops);  // CustomOps.cpp

namespace {
Registry& registry() {
  static Registry* r = [] {
    auto* reg = new Registry;
    registerBuiltinCustomOps(reg->ops);
    return reg;
  }();
  return *r;
}
}  // namespace

uint32_t registerCustomOp(CustomOp op) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i]->name == op.name) return *r.ops[i] = std::move(op), uint32_t(i);
  r.ops.push_back(std::make_unique<CustomOp>(std::move(op)));
  return uint32_t(r.ops.size() - 1);
}

const CustomOp& customOp(uint32_t id) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return *r.ops.at(id);
}

int64_t findCustomOp(std::string_view name) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i]->name == name) return int64_t(i);
  return -1;
}

// ---- the graph ----------------------------------------------------------------

double Value::data() const { return evalNode(*g_, id_); }

NodeId Graph::add(Node n, std::span<const NodeId> args) {
  n.argBegin = uint32_t(args_.size());
  n.argCount = uint32_t(args.size());
  args_.insert(args_.end(), args.begin(), args.end());
  nodes_.push_back(n);
  if (!names_.empty()) names_.emplace_back();
  return NodeId(nodes_.size() - 1);
}

std::vector<Value> Graph::leaves(std::string name, bool trainable, bool array, std::span<const double> vs) {
  LeafDecl d{std::move(name), trainable, array, NodeId(nodes_.size()), uint32_t(vs.size())};
  std::vector<Value> out;
  for (double v : vs) {
    Node n{trainable ? OpKind::Param : OpKind::Const};
    n.value = v;
    n.aux = uint32_t(decls_.size());
    out.emplace_back(this, add(n, {}));
  }
  decls_.push_back(std::move(d));
  return out;
}

Value Graph::literal(double v) {
  Node n{OpKind::Literal};
  n.value = v;
  return Value(this, add(n, {}));
}

Value Graph::op(OpKind k, std::span<const Value> args, double lo, double hi) {
  // pow(x, 2) is square(x) (FORMAT.md): one node, one signature.
  if (k == OpKind::Pow && args.size() == 2 && nodes_[args[1].id()].kind == OpKind::Literal &&
      nodes_[args[1].id()].value == 2.0)
    return op(OpKind::Square, args.first(1));
  Node n{k};
  n.value = lo;
  n.hi = hi;
  NodeId id = add(n, {});
  nodes_[id].argCount = uint32_t(args.size());
  for (Value a : args) args_.push_back(a.id());
  return Value(this, id);
}

Value Graph::custom(uint32_t customId, std::span<const Value> args) {
  Node n{OpKind::Custom};
  n.aux = customId;
  NodeId id = add(n, {});
  nodes_[id].argCount = uint32_t(args.size());
  for (Value a : args) args_.push_back(a.id());
  return Value(this, id);
}

void Graph::name(Value v, std::string n) {
  if (names_.empty()) names_.resize(nodes_.size());
  names_[v.id()] = std::move(n);
}

const std::string& Graph::nameOf(NodeId id) const {
  static const std::string none;
  return id < names_.size() ? names_[id] : none;
}

std::string Graph::leafName(NodeId id) const {
  const LeafDecl& d = decls_[nodes_[id].aux];
  return d.array ? d.name + "[" + std::to_string(id - d.first) + "]" : d.name;
}

namespace {
bool sameBits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
}  // namespace

bool Graph::operator==(const Graph& o) const {
  if (decls_.size() != o.decls_.size() || residuals_.size() != o.residuals_.size()) return false;
  constexpr NodeId kNone = ~NodeId(0);
  std::vector<NodeId> to(nodes_.size(), kNone), from(o.nodes_.size(), kNone);
  for (size_t d = 0; d < decls_.size(); ++d) {
    const LeafDecl &a = decls_[d], &b = o.decls_[d];
    if (a.name != b.name || a.trainable != b.trainable || a.array != b.array || a.count != b.count) return false;
    for (uint32_t i = 0; i < a.count; ++i) {
      if (!sameBits(nodes_[a.first + i].value, o.nodes_[b.first + i].value)) return false;
      to[a.first + i] = b.first + i;
      from[b.first + i] = a.first + i;
    }
  }
  // Walk both DAGs together from the residuals, with an explicit stack.
  std::vector<std::pair<NodeId, NodeId>> stack;
  auto visit = [&](NodeId a, NodeId b) {
    if (to[a] != kNone || from[b] != kNone) return to[a] == b && from[b] == a;
    to[a] = b;
    from[b] = a;
    stack.emplace_back(a, b);
    return true;
  };
  for (size_t r = 0; r < residuals_.size(); ++r)
    if (!visit(residuals_[r], o.residuals_[r])) return false;
  while (!stack.empty()) {
    auto [a, b] = stack.back();
    stack.pop_back();
    const Node &x = nodes_[a], &y = o.nodes_[b];
    if (x.kind != y.kind || x.argCount != y.argCount) return false;
    if (x.kind == OpKind::Param || x.kind == OpKind::Const) return false;  // leaves are matched by declaration
    if (!sameBits(x.value, y.value) || !sameBits(x.hi, y.hi) || x.aux != y.aux) return false;
    for (uint32_t i = 0; i < x.argCount; ++i)
      if (!visit(args_[x.argBegin + i], o.args_[y.argBegin + i])) return false;
  }
  return true;
}

// ---- operators ------------------------------------------------------------------

namespace {
Value make(OpKind k, std::initializer_list<Value> args, double lo = 0, double hi = 0) {
  return args.begin()->graph()->op(k, std::span<const Value>(args.begin(), args.size()), lo, hi);
}
Value lit(Value like, double v) { return like.graph()->literal(v); }
}  // namespace

Value operator+(Value a, Value b) { return make(OpKind::Add, {a, b}); }
Value operator-(Value a, Value b) { return make(OpKind::Sub, {a, b}); }
Value operator*(Value a, Value b) { return make(OpKind::Mul, {a, b}); }
Value operator/(Value a, Value b) { return make(OpKind::Div, {a, b}); }
Value operator-(Value a) { return make(OpKind::Neg, {a}); }
Value operator+(Value a, double b) { return a + lit(a, b); }
Value operator-(Value a, double b) { return a - lit(a, b); }
Value operator*(Value a, double b) { return a * lit(a, b); }
Value operator/(Value a, double b) { return a / lit(a, b); }
Value operator+(double a, Value b) { return lit(b, a) + b; }
Value operator-(double a, Value b) { return lit(b, a) - b; }
Value operator*(double a, Value b) { return lit(b, a) * b; }
Value operator/(double a, Value b) { return lit(b, a) / b; }
Value& operator+=(Value& a, Value b) { return a = a + b; }
Value& operator-=(Value& a, Value b) { return a = a - b; }
Value& operator*=(Value& a, Value b) { return a = a * b; }
Value& operator/=(Value& a, Value b) { return a = a / b; }

Value pow(Value x, Value y) { return make(OpKind::Pow, {x, y}); }
Value pow(Value x, double y) { return pow(x, lit(x, y)); }
Value sqrt(Value x) { return make(OpKind::Sqrt, {x}); }
Value exp(Value x) { return make(OpKind::Exp, {x}); }
Value log(Value x) { return make(OpKind::Log, {x}); }
Value sin(Value x) { return make(OpKind::Sin, {x}); }
Value cos(Value x) { return make(OpKind::Cos, {x}); }
Value tan(Value x) { return make(OpKind::Tan, {x}); }
Value asin(Value x) { return make(OpKind::Asin, {x}); }
Value acos(Value x) { return make(OpKind::Acos, {x}); }
Value atan(Value x) { return make(OpKind::Atan, {x}); }
Value tanh(Value x) { return make(OpKind::Tanh, {x}); }
Value sigmoid(Value x) { return make(OpKind::Sigmoid, {x}); }
Value softplus(Value x) { return make(OpKind::Softplus, {x}); }
Value reciprocal(Value x) { return make(OpKind::Reciprocal, {x}); }
Value square(Value x) { return make(OpKind::Square, {x}); }
Value cube(Value x) { return make(OpKind::Cube, {x}); }
Value abs(Value x) { return make(OpKind::Abs, {x}); }
Value relu(Value x) { return make(OpKind::Relu, {x}); }
Value sign(Value x) { return make(OpKind::Sign, {x}); }
Value floor(Value x) { return make(OpKind::Floor, {x}); }
Value ceil(Value x) { return make(OpKind::Ceil, {x}); }
Value round(Value x) { return make(OpKind::Round, {x}); }
Value atan2(Value y, Value x) { return make(OpKind::Atan2, {y, x}); }
Value min(Value a, Value b) { return make(OpKind::Min, {a, b}); }
Value max(Value a, Value b) { return make(OpKind::Max, {a, b}); }
Value clamp(Value x, double lo, double hi) { return make(OpKind::Clamp, {x}, lo, hi); }
Value mod(Value a, Value b) { return make(OpKind::Mod, {a, b}); }
Value sum(std::span<const Value> xs) { return xs[0].graph()->op(OpKind::Sum, xs); }
Value mean(std::span<const Value> xs) { return xs[0].graph()->op(OpKind::Mean, xs); }
Value eq(Value a, Value b) { return make(OpKind::Eq, {a, b}); }
Value ne(Value a, Value b) { return make(OpKind::Ne, {a, b}); }
Value lt(Value a, Value b) { return make(OpKind::Lt, {a, b}); }
Value le(Value a, Value b) { return make(OpKind::Le, {a, b}); }
Value gt(Value a, Value b) { return make(OpKind::Gt, {a, b}); }
Value ge(Value a, Value b) { return make(OpKind::Ge, {a, b}); }
Value select(Value c, Value t, Value e) { return make(OpKind::Select, {c, t, e}); }
Value eigmin3(Value c00, Value c01, Value c02, Value c11, Value c12, Value c22) {
  Value args[] = {c00, c01, c02, c11, c12, c22};
  return c00.graph()->custom(eigmin3Id(), args);
}

}  // namespace eph::value
