#include "frontends/tensor/Program.h"

#include <cstdio>

#include "frontends/tensor/Ops.h"

namespace eph::tensor {

int64_t Attrs::i(const std::string& name, int64_t fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* v = std::get_if<double>(&it->second)) return int64_t(*v);
  return fallback;
}

double Attrs::f(const std::string& name, double fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return double(*v);
  return fallback;
}

std::string Attrs::s(const std::string& name, std::string fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fallback;
}

std::vector<int64_t> Attrs::ints(const std::string& name, std::vector<int64_t> fallback) const {
  auto it = m_.find(name);
  if (it == m_.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  return fallback;
}

std::vector<double> Attrs::floats(const std::string& name) const {
  auto it = m_.find(name);
  if (it == m_.end()) return {};
  if (auto* v = std::get_if<std::vector<double>>(&it->second)) return *v;
  if (auto* v = std::get_if<double>(&it->second)) return {*v};
  return {};
}

std::string Attrs::key() const {
  std::string out;
  char buf[32];
  auto num = [&](double d) {
    std::snprintf(buf, sizeof buf, "%.17g", d);
    return std::string(buf);
  };
  for (const auto& [name, v] : m_) {
    out += name + "=";
    if (auto* x = std::get_if<int64_t>(&v)) out += std::to_string(*x);
    else if (auto* x = std::get_if<double>(&v)) out += num(*x);
    else if (auto* x = std::get_if<std::string>(&v)) out += "'" + *x + "'";
    else if (auto* x = std::get_if<std::vector<int64_t>>(&v)) for (int64_t e : *x) out += std::to_string(e) + ",";
    else if (auto* x = std::get_if<std::vector<double>>(&v)) for (double e : *x) out += num(e) + ",";
    out += ";";
  }
  return out;
}

const Node& Tensor::node() const { return prog_->node(id_); }

std::string siteOf(const std::source_location& loc) {
  std::string file = loc.file_name();
  if (size_t slash = file.find_last_of('/'); slash != std::string::npos) file = file.substr(slash + 1);
  return file + ":" + std::to_string(loc.line());
}

Program::Program() = default;

uint32_t Program::add(Node n) {
  nodes_.push_back(std::move(n));
  return uint32_t(nodes_.size() - 1);
}

void Program::fail(const std::string& site, const std::string& message) {
  if (!error_) error_ = Error{{}, (site.empty() ? "" : site + ": ") + message};
}

Tensor Program::input(const std::string& name, DType dtype, Shape shape, std::source_location loc) {
  Node n;
  n.op = "input";
  n.name = name;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.site = siteOf(loc);
  for (size_t d = 0; d < n.shape.size(); ++d) {
    if (n.shape[d] == kDynamic && d == 0) n.shape[d] = kDynamicExtent;
    else if (n.shape[d] == kDynamic)
      fail(n.site, "input '" + name + "': only the first dimension may be dynamic, not dimension " + std::to_string(d));
    else if (n.shape[d] < 0) fail(n.site, "input '" + name + "': a negative extent in shape " + shapeText(n.shape));
    else if (involvesDynamic(n.shape[d]))
      fail(n.site, "input '" + name + "': extent " + std::to_string(n.shape[d]) +
                       " is a multiple of the nominal extent that stands for a dynamic dimension; use tensor::kDynamic");
  }
  uint32_t id = add(std::move(n));
  inputs_.push_back(id);
  return Tensor(this, id);
}

Tensor Program::constant(HostTensor value, std::source_location loc) { return constant(std::move(value), siteOf(loc)); }

Tensor Program::constant(HostTensor value, const std::string& site) {
  Node n;
  n.op = "const";
  n.dtype = value.dtype;
  n.shape = value.shape;
  n.site = site;
  for (int64_t d : value.shape)
    if (involvesDynamic(d)) fail(site, "a constant of shape " + shapeText(value.shape) + ": only inputs may have the dynamic first dimension N");
  if (value.bytes.size() != size_t(numel(value.shape)) * hostBytes(value.dtype))
    fail(site, "a constant of shape " + shapeText(value.shape) + " and dtype " + std::string(dtypeName(value.dtype)) +
                   " needs " + std::to_string(numel(value.shape) * int64_t(hostBytes(value.dtype))) + " bytes, not " +
                   std::to_string(value.bytes.size()));
  n.data = std::make_shared<const HostTensor>(std::move(value));
  return Tensor(this, add(std::move(n)));
}

void Program::output(const std::string& name, Tensor t) {
  if (t.program() != this) return fail("", "output '" + name + "' is a tensor of another program");
  outputs_.push_back({name, t.id()});
}

Tensor Program::apply(const std::string& op, std::vector<Tensor> inputs, Attrs attrs, const std::string& site) {
  Node n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.site = site;
  bool poisoned = false;
  for (const Tensor& t : inputs) {
    if (t.program() != this) {
      fail(site, op + ": an input is " + (t ? "a tensor of another program" : "an empty tensor"));
      poisoned = true;
      continue;
    }
    n.inputs.push_back(t.id());
    poisoned |= nodes_[t.id()].op == "invalid";
  }
  const OpDef* def = findOp(op);
  std::string why;
  if (!def) why = "unknown tensor op '" + op + "'";
  else if (int(inputs.size()) < def->minInputs || (def->maxInputs >= 0 && int(inputs.size()) > def->maxInputs))
    why = op + " takes " +
          (def->minInputs == def->maxInputs ? std::to_string(def->minInputs)
           : def->maxInputs < 0            ? "at least " + std::to_string(def->minInputs)
                                           : std::to_string(def->minInputs) + " to " + std::to_string(def->maxInputs)) +
          " inputs, not " + std::to_string(inputs.size());
  if (poisoned || !why.empty()) {
    if (!why.empty()) fail(site, why);
    n.op = "invalid";
    n.inputs.clear();
    return Tensor(this, add(std::move(n)));
  }
  why = def->infer(*this, n);
  if (!why.empty()) {
    fail(site, why);
    n.op = "invalid";
    n.inputs.clear();
    n.isView = false;
    return Tensor(this, add(std::move(n)));
  }
  for (int64_t d : n.shape)
    if (d < 0) {
      fail(site, op + ": the result would have a negative extent: " + shapeText(n.shape));
      n.op = "invalid";
      n.inputs.clear();
      n.isView = false;
      break;
    }
  if (n.op != "invalid")
    if (std::string e = dynamicDimensionError(*this, *def, n); !e.empty()) {
      fail(site, e);
      n.op = "invalid";
      n.inputs.clear();
      n.isView = false;
    }
  if (n.isView) n.inputs = {root(n.inputs[0])};
  return Tensor(this, add(std::move(n)));
}

std::vector<int64_t> Program::strides(uint32_t id) const {
  const Node& n = nodes_[id];
  return n.isView ? n.strides : contiguousStrides(n.shape);
}

bool Program::contiguous(uint32_t id) const {
  const Node& n = nodes_[id];
  if (!n.isView) return true;
  std::vector<int64_t> want = contiguousStrides(n.shape);
  for (size_t d = 0; d < n.shape.size(); ++d)
    if (n.shape[d] != 1 && n.strides[d] != want[d]) return false;
  return true;
}

}  // namespace eph::tensor
