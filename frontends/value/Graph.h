// Value graphs: scalar expression graphs built by tracing C++ code (or parsed
// from the `.vg` text form, Text.h), evaluated by the float64 reference
// (Eval.h), grouped into signatures (Signature.h) and lowered to IR kernels
// (Lower.h). docs/value.md describes the API and the format.
//
//   value::Graph g;
//   value::Value a = g.param("a", 2), b = g.param("b", -3), c = g.param("c", 10);
//   g.residual(tanh(a * b + c));
//
// A Graph owns its nodes in flat arrays; a node's arguments always have
// smaller ids than the node, so increasing id order is a topological order and
// no traversal needs recursion (a chain of a million nodes works everywhere).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace eph::ir {
class Builder;
class Value;
class Type;
}  // namespace eph::ir

namespace eph::value {

// Every op of FORMAT.md, plus the leaves. Kinds with a fixed arity have it in
// opInfo(); Sum and Mean are n-ary; Custom is a registered CustomOp.
enum class OpKind : uint8_t {
  Param, Const, Literal,
  Add, Sub, Mul, Div, Neg, Pow,
  Sqrt, Exp, Log, Sin, Cos, Tan, Asin, Acos, Atan, Tanh, Sigmoid, Softplus, Reciprocal, Square, Cube, Abs,
  Relu, Sign, Floor, Ceil, Round,
  Atan2, Min, Max, Clamp, Mod, Sum, Mean,
  Eq, Ne, Lt, Le, Gt, Ge, Select,
  Custom,
};

struct OpInfo {
  std::string_view name;  // the .vg call name ("add" etc. for infix ops)
  int arity;              // -1: n-ary (at least 1)
};
const OpInfo& opInfo(OpKind k);
// The call (not an infix operator or leaf) named `name`, or false.
bool callByName(std::string_view name, OpKind& kind);

// An op defined by the user: a forward function and its partial derivatives,
// both on doubles (used by the reference evaluator), and optionally its body
// in IR for the compiled kernels. An op without `lower` cannot be compiled:
// lowering a graph that uses it is an error naming it (never a baked value).
struct CustomOp {
  std::string name;
  unsigned arity = 1;
  std::function<double(std::span<const double> in)> forward;
  // d[i] = ∂forward/∂in[i] at `in` (out is forward(in)).
  std::function<void(std::span<const double> in, double out, std::span<double> d)> derivative;
  // The op on IR values of type `t` (f32 or f64), emitted with `b`.
  std::function<ir::Value*(ir::Builder& b, std::span<ir::Value* const> in, const ir::Type* t)> lower;
  // Optionally the partial derivatives in IR, for the autodiff pass: one
  // value per input, ∂out/∂in[i], given the inputs and the op's result `out`.
  std::function<std::vector<ir::Value*>(ir::Builder& b, std::span<ir::Value* const> in, ir::Value* out,
                                        const ir::Type* t)>
      lowerDerivative;
};
// Registers `op` by name (replacing one of the same name); returns its id.
// `eigmin3` is registered before anything else (CustomOps.cpp).
uint32_t registerCustomOp(CustomOp op);
const CustomOp& customOp(uint32_t id);
// The id of the custom op `name`, or -1.
int64_t findCustomOp(std::string_view name);

using NodeId = uint32_t;

struct Node {
  OpKind kind;
  uint32_t argBegin = 0, argCount = 0;  // into Graph::args()
  double value = 0;                     // Param/Const: the leaf's value; Literal: the number; Clamp: lo
  double hi = 0;                        // Clamp: hi
  uint32_t aux = 0;                     // Param/Const: the leaf's declaration; Custom: the op id
};

// A declared leaf array (`param p[6]`) or scalar (`param a`, count 1, !array).
struct LeafDecl {
  std::string name;
  bool trainable = true;  // param (true) or const
  bool array = false;
  NodeId first = 0;       // its elements are nodes first .. first+count-1
  uint32_t count = 1;
};

class Graph;

// A handle to one node of a graph (copyable, cheap). Operators build new nodes
// in the same graph.
class Value {
 public:
  Value() = default;
  Value(Graph* g, NodeId id) : g_(g), id_(id) {}
  Graph* graph() const { return g_; }
  NodeId id() const { return id_; }
  // The reference value (Graph::eval of this node alone, float64).
  double data() const;

 private:
  Graph* g_ = nullptr;
  NodeId id_ = 0;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = default;
  Graph& operator=(const Graph&) = default;

  // Leaves. Names must be unique identifiers (checked by the .vg parser; the
  // API trusts them). A scalar is an element of a declaration of count 1.
  Value param(std::string name, double v) { return leaves(std::move(name), true, false, {&v, 1})[0]; }
  Value constant(std::string name, double v) { return leaves(std::move(name), false, false, {&v, 1})[0]; }
  std::vector<Value> params(std::string name, std::span<const double> vs) { return leaves(std::move(name), true, true, vs); }
  std::vector<Value> constants(std::string name, std::span<const double> vs) { return leaves(std::move(name), false, true, vs); }
  std::vector<Value> leaves(std::string name, bool trainable, bool array, std::span<const double> vs);
  // A number in the expression (part of the signature: see Signature.h).
  Value literal(double v);
  // An op node; `args` must be nodes of this graph. pow(x, 2) becomes square(x).
  Value op(OpKind k, std::span<const Value> args, double lo = 0, double hi = 0);
  Value custom(uint32_t customId, std::span<const Value> args);
  // Names a node for printing (`let NAME = ...`); optional.
  void name(Value v, std::string n);
  void residual(Value v) { residuals_.push_back(v.id()); }

  // A residual function traced per instance: `fn` gets the instance's leaves
  // (one Value per element of `leaves`) and returns the residual.
  template <class Fn>
  void trace(std::span<const Value> leaves, Fn&& fn) {
    residual(fn(leaves));
  }

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[id]; }
  std::span<const NodeId> args(NodeId id) const {
    return {args_.data() + nodes_[id].argBegin, nodes_[id].argCount};
  }
  const std::vector<LeafDecl>& decls() const { return decls_; }
  const std::vector<NodeId>& residuals() const { return residuals_; }
  // Let names by node ("" when unnamed).
  const std::string& nameOf(NodeId id) const;
  bool isLeaf(NodeId id) const { return nodes_[id].kind == OpKind::Param || nodes_[id].kind == OpKind::Const; }
  // "a", "p[3]": a leaf element as FORMAT.md's gradient keys name it.
  std::string leafName(NodeId id) const;
  // Sets a leaf's value (the solver and tests).
  void setLeaf(NodeId id, double v) { nodes_[id].value = v; }

  Value at(NodeId id) { return Value(this, id); }

  // Structural equality of the problems: the same declarations (names, kinds,
  // values), and residual DAGs that are isomorphic node for node (with the
  // same sharing). Node numbering and let names do not count.
  bool operator==(const Graph& o) const;

 private:
  NodeId add(Node n, std::span<const NodeId> args);
  std::vector<Node> nodes_;
  std::vector<NodeId> args_;
  std::vector<LeafDecl> decls_;
  std::vector<NodeId> residuals_;
  std::vector<std::string> names_;  // by node; empty when no node has a name
};

// ---- operators and the op set (each makes a node in the operands' graph) ----
Value operator+(Value a, Value b);
Value operator-(Value a, Value b);
Value operator*(Value a, Value b);
Value operator/(Value a, Value b);
Value operator-(Value a);
Value operator+(Value a, double b);
Value operator-(Value a, double b);
Value operator*(Value a, double b);
Value operator/(Value a, double b);
Value operator+(double a, Value b);
Value operator-(double a, Value b);
Value operator*(double a, Value b);
Value operator/(double a, Value b);
Value& operator+=(Value& a, Value b);
Value& operator-=(Value& a, Value b);
Value& operator*=(Value& a, Value b);
Value& operator/=(Value& a, Value b);

Value pow(Value x, Value y);
Value pow(Value x, double y);
Value sqrt(Value x);
Value exp(Value x);
Value log(Value x);
Value sin(Value x);
Value cos(Value x);
Value tan(Value x);
Value asin(Value x);
Value acos(Value x);
Value atan(Value x);
Value tanh(Value x);
Value sigmoid(Value x);
Value softplus(Value x);
Value reciprocal(Value x);
Value square(Value x);
Value cube(Value x);
Value abs(Value x);
Value relu(Value x);
Value sign(Value x);
Value floor(Value x);
Value ceil(Value x);
Value round(Value x);
Value atan2(Value y, Value x);
Value min(Value a, Value b);
Value max(Value a, Value b);
Value clamp(Value x, double lo, double hi);
Value mod(Value a, Value b);
Value sum(std::span<const Value> xs);
Value mean(std::span<const Value> xs);
Value eq(Value a, Value b);
Value ne(Value a, Value b);
Value lt(Value a, Value b);
Value le(Value a, Value b);
Value gt(Value a, Value b);
Value ge(Value a, Value b);
Value select(Value c, Value t, Value e);
// The smallest eigenvalue of the symmetric matrix [[c00 c01 c02] [c01 c11 c12] [c02 c12 c22]]:
// a custom op (CustomOps.cpp) with ∂λ/∂c_ii = v_i², ∂λ/∂c_ij = 2·v_i·v_j.
Value eigmin3(Value c00, Value c01, Value c02, Value c11, Value c12, Value c22);
// The id of eigmin3 among the custom ops.
uint32_t eigmin3Id();
// eigmin3's forward and its unit eigenvector v (the derivative rule's data),
// in float64.
double eigmin3Value(const double c[6], double v[3]);

}  // namespace eph::value
