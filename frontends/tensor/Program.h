// A tensor program: a lazy graph of tensor ops, built by the C++ API
// (Tensor.h) or the ONNX importer (onnx/), checked op by op as it is built
// (dtypes and shapes, through each op's `infer` in the op table, Ops.h), and
// lowered to one IR module by Lower.h. Nothing runs until a compiled program
// runs on a device (Run.h).
//
// Nodes are numbered in the order they are made, which is a topological
// order. A node is an op applied to earlier nodes, with attributes; its dtype
// and static shape are known when it is made. View ops (reshape, transpose,
// slice, expand, ...) make no kernel: the node records strides and an offset
// into the storage of its root, the first node above it that is not a view.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <variant>
#include <vector>

#include "frontends/tensor/DType.h"
#include "frontends/tensor/HostTensor.h"
#include "ir/Diagnostics.h"

namespace eph::tensor {

// An attribute of an op.
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> l) : m_(l) {}
  void set(const std::string& name, AttrValue v) { m_[name] = std::move(v); }
  bool has(const std::string& name) const { return m_.count(name) != 0; }
  int64_t i(const std::string& name, int64_t fallback = 0) const;
  double f(const std::string& name, double fallback = 0) const;
  std::string s(const std::string& name, std::string fallback = "") const;
  std::vector<int64_t> ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> floats(const std::string& name) const;
  // "name=value;..." in name order: part of a kernel's cache key.
  std::string key() const;
  const std::map<std::string, AttrValue>& all() const { return m_; }

 private:
  std::map<std::string, AttrValue> m_;
};

struct Node {
  std::string op;                // "add", "matmul", ..., "input", "const"
  std::vector<uint32_t> inputs;  // earlier nodes
  Attrs attrs;
  DType dtype = DType::F32;
  Shape shape;
  // Views: element (i0, ..., ik) is element offset + Σ i_d·strides[d] of the
  // root's storage; inputs[0] is the root. Other nodes own contiguous storage.
  bool isView = false;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::string site;    // where it was made, for errors: "mlp.cpp:12", "node 'Conv_0' (Conv)"
  std::string name;    // "input": the input's name
  std::shared_ptr<const HostTensor> data;  // "const": its value
};

class Program;

// A handle to a node of a program (the C++ API's operators are in Tensor.h).
class Tensor {
 public:
  Tensor() = default;
  Tensor(Program* p, uint32_t id) : prog_(p), id_(id) {}
  Program* program() const { return prog_; }
  uint32_t id() const { return id_; }
  const Node& node() const;
  DType dtype() const { return node().dtype; }
  const Shape& shape() const { return node().shape; }
  size_t rank() const { return shape().size(); }
  explicit operator bool() const { return prog_ != nullptr; }

 private:
  Program* prog_ = nullptr;
  uint32_t id_ = 0;
};

// Where a C++ call was made: its file name (without directories) and line.
std::string siteOf(const std::source_location& loc);

class Program {
 public:
  Program();
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // A named input of a fixed dtype and shape.
  Tensor input(const std::string& name, DType dtype, Shape shape,
               std::source_location loc = std::source_location::current());
  // A constant (copied into the program).
  Tensor constant(HostTensor value, std::source_location loc = std::source_location::current());
  Tensor constant(HostTensor value, const std::string& site);
  // Marks `t` as an output named `name` (outputs are returned in this order).
  void output(const std::string& name, Tensor t);

  // Applies op `op` (a name in the op table, Ops.h) to `inputs`: checks
  // arity, dtypes and shapes, and returns the new node. On an error (the
  // first is kept: error()), returns a placeholder so that building goes on;
  // compiling or running the program then fails with that error.
  Tensor apply(const std::string& op, std::vector<Tensor> inputs, Attrs attrs, const std::string& site);
  Tensor apply(const std::string& op, std::vector<Tensor> inputs, Attrs attrs = {},
               std::source_location loc = std::source_location::current()) {
    return apply(op, std::move(inputs), std::move(attrs), siteOf(loc));
  }
  // Records an error made outside apply (e.g. by an importer); the first is kept.
  void fail(const std::string& site, const std::string& message);

  const Node& node(uint32_t id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<std::pair<std::string, uint32_t>>& outputs() const { return outputs_; }
  // Inputs in the order they were declared.
  const std::vector<uint32_t>& inputs() const { return inputs_; }
  const std::optional<Error>& error() const { return error_; }

  // The element (i0, ..., ik) of node `id`'s storage layout: its strides
  // (contiguous for a node that is not a view) and offset.
  std::vector<int64_t> strides(uint32_t id) const;
  // The node owning the storage a node reads from: itself, or a view's root.
  uint32_t root(uint32_t id) const { return nodes_[id].isView ? nodes_[id].inputs[0] : id; }
  // Whether a node is laid out contiguously in its root's storage (offset allowed).
  bool contiguous(uint32_t id) const;

 private:
  uint32_t add(Node n);

  std::vector<Node> nodes_;
  std::vector<uint32_t> inputs_;
  std::vector<std::pair<std::string, uint32_t>> outputs_;
  std::optional<Error> error_;
};

}  // namespace eph::tensor
