// What the importer (Import.cpp) and the op table (OnnxOps.cpp) share: the
// context a mapping function gets for one ONNX node.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontends/tensor/Program.h"
#include "frontends/tensor/onnx/Onnx.h"

namespace eph::tensor::onnx {

// An ONNX value: a tensor of the program, and its contents when they are
// known at import (initializers, constants, folded nodes).
struct Val {
  Tensor t;
  std::shared_ptr<const HostTensor> known;
  // Whether nodes reading it may be folded: false for an input's value given
  // at import, which only specialises shape-like arguments (ImportOptions).
  bool folds = true;
  DType dtype = DType::F32;
  Shape shape;
};

std::optional<DType> dtypeOfOnnx(int32_t code);
std::string onnxTypeName(int32_t code);
// baseDir: the model's folder, for data in external files (ImportOptions::baseDir).
Expected<HostTensor> fromProto(const ::onnx::TensorProto& t, const std::string& what, const std::string& baseDir = {});

// Thrown by NodeCtx's accessors for input k where the node has none (fewer
// inputs than its op needs, or an empty name where one is needed); the
// import catches it around the mapping and reports the node (E402).
struct MissingInput {
  size_t k;
};

// One node being mapped: its inputs (absent ones have no tensor and no
// value), its attributes, and the program to add ops to.
class NodeCtx {
 public:
  NodeCtx(Program& p, const ::onnx::NodeProto& node, int64_t opset, std::string site, std::vector<std::optional<Val>> ins)
      : p(p), node(node), opset(opset), site(std::move(site)), ins_(std::move(ins)) {}
  Program& p;
  const ::onnx::NodeProto& node;
  int64_t opset;
  std::string site;
  std::vector<Tensor> outs;  // one per ONNX output, set by the mapping

  size_t numInputs() const { return ins_.size(); }
  bool present(size_t k) const { return k < ins_.size() && ins_[k].has_value(); }
  // Input k as a tensor of the program (a known value becomes a constant).
  Tensor in(size_t k);
  DType dtype(size_t k) const { return need(k).dtype; }
  const Shape& shape(size_t k) const { return need(k).shape; }
  size_t rank(size_t k) const { return need(k).shape.size(); }
  // Input k's contents when known at import, else null.
  const HostTensor* known(size_t k) const { return present(k) ? ins_[k]->known.get() : nullptr; }
  // Input k's values as integers; false (with `why` naming it) when it is not a constant.
  bool ints(size_t k, std::vector<int64_t>& out, std::string& why, const char* what) const;
  bool floats(size_t k, std::vector<double>& out, std::string& why, const char* what) const;

  const ::onnx::AttributeProto* attr(const std::string& name) const;
  bool has(const std::string& name) const { return attr(name) != nullptr; }
  int64_t i(const std::string& name, int64_t fallback) const;
  double f(const std::string& name, double fallback) const;
  std::string s(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> ints(const std::string& name) const;
  std::vector<double> floats(const std::string& name) const;

  Tensor op(const std::string& name, std::vector<Tensor> in, Attrs a = {}) { return p.apply(name, std::move(in), std::move(a), site); }
  // A scalar constant of `dt`.
  Tensor scalar(DType dt, double v);
  Tensor constant(HostTensor h) { return p.constant(std::move(h), site); }
  Tensor cast(Tensor t, DType to) {
    return t.dtype() == to ? t : op("cast", {t}, {{"to", std::string(dtypeName(to))}});
  }

 private:
  const Val& need(size_t k) const {
    if (!present(k)) throw MissingInput{k};
    return *ins_[k];
  }
  std::vector<std::optional<Val>> ins_;
  std::map<std::pair<int, double>, Tensor> scalars_;  // one constant per dtype and value
};

// A mapping: sets ctx.outs; returns "" or why the node is not supported (E401).
using MapFn = std::string (*)(NodeCtx& ctx);

struct OpEntry {
  const char* name;
  int since, until;   // opsets
  const char* attrs;  // understood attributes, comma-separated
  MapFn map;
  const char* note = "";
};

// The whole table: OnnxOps.cpp's entries, then the op families kept in
// files of their own (each returns its entries).
const std::vector<OpEntry>& opTable();
const OpEntry* findEntry(const std::string& op, int64_t opset);
std::vector<OpEntry> normalizationEntries();  // OnnxNormalization.cpp: Batch/Instance/Layer/Lp/MeanVariance norms, LRN
std::vector<OpEntry> quantizationEntries();  // OnnxQuantization.cpp: (De)QuantizeLinear, integer and QLinear matmul/conv
std::vector<OpEntry> gridSampleEntries();    // OnnxGridSample.cpp: GridSample
std::vector<OpEntry> lossEntries();          // OnnxLoss.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss
std::vector<OpEntry> recurrentEntries();  // OnnxRecurrent.cpp: RNN, GRU, LSTM
std::vector<OpEntry> signalEntries();     // OnnxSignal.cpp: DFT, STFT, the windows
std::vector<OpEntry> trainingEntries();   // OnnxTraining.cpp: ai.onnx.preview.training

// Shared by the mapping functions.
using Ints = std::vector<int64_t>;
inline std::string dn(DType t) { return std::string(dtypeName(t)); }
// Sets the node's one output; "" (supported).
inline std::string one(NodeCtx& c, Tensor t) {
  c.outs = {t};
  return "";
}
// The attributes `names` that the node has, as tensor-op attributes of the same names.
inline Attrs passAttrs(NodeCtx& c, std::initializer_list<const char*> names) {
  Attrs a;
  for (const char* n : names)
    if (const auto* at = c.attr(n)) {
      switch (at->type()) {
        case ::onnx::AttributeProto::INT: a.set(n, at->i()); break;
        case ::onnx::AttributeProto::FLOAT: a.set(n, double(at->f())); break;
        case ::onnx::AttributeProto::STRING: a.set(n, at->s()); break;
        case ::onnx::AttributeProto::INTS: a.set(n, Ints(at->ints().begin(), at->ints().end())); break;
        case ::onnx::AttributeProto::FLOATS: a.set(n, std::vector<double>(at->floats().begin(), at->floats().end())); break;
        default: break;
      }
    }
  return a;
}
// The inputs that are present, in order.
inline std::vector<Tensor> presentInputs(NodeCtx& c) {
  std::vector<Tensor> v;
  for (size_t k = 0; k < c.numInputs(); ++k)
    if (c.present(k)) v.push_back(c.in(k));
  return v;
}
// A per-axis parameter (1-D, along `axis` of x) reshaped to broadcast with x.
inline Tensor alongAxis(NodeCtx& c, Tensor p, size_t xrank, int64_t axis) {
  if (p.rank() != 1 || xrank <= 1) return p;
  if (axis < 0) axis += int64_t(xrank);
  Ints shape(xrank, 1);
  shape[size_t(axis)] = p.shape()[0];
  return c.op("reshape", {p}, {{"shape", shape}});
}
// max(0, min(1, alpha·x + beta)) (HardSigmoid, and the recurrent ops' activation of that name).
inline Tensor hardSigmoid(NodeCtx& c, Tensor x, double alpha, double beta) {
  DType t = x.dtype();
  Tensor y = c.op("add", {c.op("mul", {x, c.scalar(t, alpha)}), c.scalar(t, beta)});
  return c.op("min", {c.op("max", {y, c.scalar(t, 0)}), c.scalar(t, 1)});
}

}  // namespace eph::tensor::onnx
