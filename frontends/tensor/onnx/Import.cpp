// The ONNX importer (Onnx.h): TensorProto conversions, the walk over the
// graph, constant folding, and the errors E400-E403.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "frontends/tensor/Run.h"
#include "frontends/tensor/onnx/OnnxImpl.h"

namespace eph::tensor::onnx {

constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

namespace {

Error err(const char* code, std::string message) { return Error{{}, std::move(message), code}; }

int32_t onnxCode(DType t) {
  switch (t) {
    case DType::F32: return ::onnx::TensorProto::FLOAT;
    case DType::U8: return ::onnx::TensorProto::UINT8;
    case DType::I8: return ::onnx::TensorProto::INT8;
    case DType::U16: return ::onnx::TensorProto::UINT16;
    case DType::I16: return ::onnx::TensorProto::INT16;
    case DType::I32: return ::onnx::TensorProto::INT32;
    case DType::I64: return ::onnx::TensorProto::INT64;
    case DType::Bool: return ::onnx::TensorProto::BOOL;
    case DType::F16: return ::onnx::TensorProto::FLOAT16;
    case DType::F64: return ::onnx::TensorProto::DOUBLE;
    case DType::U32: return ::onnx::TensorProto::UINT32;
    case DType::U64: return ::onnx::TensorProto::UINT64;
  }
  return 0;
}

template <class T>
void put(HostTensor& h, int64_t i, T v) {
  std::memcpy(h.bytes.data() + size_t(i) * sizeof(T), &v, sizeof(T));
}

}  // namespace

std::optional<DType> dtypeOfOnnx(int32_t code) {
  switch (code) {
    case ::onnx::TensorProto::FLOAT: return DType::F32;
    case ::onnx::TensorProto::UINT8: return DType::U8;
    case ::onnx::TensorProto::INT8: return DType::I8;
    case ::onnx::TensorProto::UINT16: return DType::U16;
    case ::onnx::TensorProto::INT16: return DType::I16;
    case ::onnx::TensorProto::INT32: return DType::I32;
    case ::onnx::TensorProto::INT64: return DType::I64;
    case ::onnx::TensorProto::BOOL: return DType::Bool;
    case ::onnx::TensorProto::FLOAT16: return DType::F16;
    case ::onnx::TensorProto::DOUBLE: return DType::F64;
    case ::onnx::TensorProto::UINT32: return DType::U32;
    case ::onnx::TensorProto::UINT64: return DType::U64;
    default: return std::nullopt;
  }
}

std::string onnxTypeName(int32_t code) {
  if (::onnx::TensorProto::DataType_IsValid(code))
    return ::onnx::TensorProto::DataType_Name(::onnx::TensorProto::DataType(code));
  return "data type " + std::to_string(code);
}

// The bytes of an external tensor's data: external_data's location (a
// relative path inside baseDir), offset and length (default: to the end).
Expected<std::string> externalData(const ::onnx::TensorProto& t, const std::string& what, const std::string& baseDir) {
  if (baseDir.empty())
    return err("E401", what + ": tensor data in external files needs the model's folder (import from a file)");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : t.external_data()) {
    try {
      if (e.key() == "location") location = e.value();
      else if (e.key() == "offset") offset = std::stoll(e.value());
      else if (e.key() == "length") length = std::stoll(e.value());
    } catch (const std::exception&) {
      return err("E400", what + ": external data " + e.key() + " '" + e.value() + "' is not a number");
    }
  }
  if (location.empty()) return err("E400", what + ": external data without a location");
  std::filesystem::path rel(location);
  bool inside = rel.is_relative();
  for (const auto& part : rel) inside = inside && part != "..";
  if (!inside) return err("E400", what + ": external data location '" + location + "' is outside the model's folder");
  if (offset < 0 || length < -1) return err("E400", what + ": a negative external data offset or length");
  std::string path = (std::filesystem::path(baseDir) / rel).string();
  std::error_code ec;
  std::ifstream f(path, std::ios::binary);
  if (!std::filesystem::is_regular_file(path, ec) || !f)
    return err("E400", what + ": cannot read its external data file '" + location + "'");
  f.seekg(0, std::ios::end);
  const int64_t size = int64_t(f.tellg());
  if (length < 0) length = size - std::min(offset, size);
  if (offset > size || length > size - offset)
    return err("E400", what + ": external data at " + std::to_string(offset) + " + " + std::to_string(length) +
                           " bytes is past the end of '" + location + "' (" + std::to_string(size) + " bytes)");
  std::string data(size_t(length), '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  return data;
}

Expected<HostTensor> fromProto(const ::onnx::TensorProto& t, const std::string& what, const std::string& baseDir) {
  auto dt = dtypeOfOnnx(t.data_type());
  if (!dt) return err("E401", what + ": tensors of type " + onnxTypeName(t.data_type()) + " are not supported");
  if (t.data_location() == ::onnx::TensorProto::EXTERNAL) {
    auto data = externalData(t, what, baseDir);
    if (!data) return data.takeError();
    ::onnx::TensorProto inline_ = t;
    inline_.clear_external_data();
    inline_.set_data_location(::onnx::TensorProto::DEFAULT);
    inline_.set_raw_data(std::move(*data));
    return fromProto(inline_, what, {});
  }
  if (t.has_segment()) return err("E401", what + ": segmented tensors are not supported");
  Shape shape;
  int64_t count = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return err("E400", what + ": a negative dimension " + std::to_string(d));
    if (d > 0 && count > (int64_t(1) << 40) / d) return err("E400", what + ": too many elements");
    count *= d;
    shape.push_back(d);
  }
  // The data is checked against the dims before the tensor is allocated, so
  // that dims claiming more than the model holds are an error, not a huge
  // allocation.
  size_t want = size_t(count) * hostBytes(*dt);
  if (t.has_raw_data()) {
    if (t.raw_data().size() != want)
      return err("E400", what + ": raw data of " + std::to_string(t.raw_data().size()) + " bytes for " +
                             std::to_string(count) + " elements of " + std::string(dtypeName(*dt)) + " (" +
                             std::to_string(want) + " bytes)");
    HostTensor h(*dt, shape);
    std::memcpy(h.bytes.data(), t.raw_data().data(), want);
    if (*dt == DType::Bool)
      for (auto& b : h.bytes) b = std::byte(b != std::byte(0));
    return h;
  }
  // The typed field holding this dtype's values, and how many it has.
  const int n = *dt == DType::F32                              ? t.float_data_size()
                : *dt == DType::F64                            ? t.double_data_size()
                : *dt == DType::I64                            ? t.int64_data_size()
                : *dt == DType::U32 || *dt == DType::U64       ? t.uint64_data_size()
                                                               : t.int32_data_size();
  if (n != count)
    return err("E400", what + ": " + std::to_string(n) + " values for " + std::to_string(count) + " elements " +
                           shapeText(shape));
  HostTensor h(*dt, shape);
  for (int64_t i = 0; i < count; ++i) switch (*dt) {
      case DType::F32: put<float>(h, i, t.float_data(int(i))); break;
      case DType::F64: put<double>(h, i, t.double_data(int(i))); break;
      case DType::I64: put<int64_t>(h, i, t.int64_data(int(i))); break;
      case DType::U32:
      case DType::U64: h.setInt(i, int64_t(t.uint64_data(int(i)))); break;
      case DType::F16: put<uint16_t>(h, i, uint16_t(t.int32_data(int(i)))); break;
      default: h.setInt(i, t.int32_data(int(i))); break;
    }
  return h;
}

Expected<HostTensor> readTensorProto(std::string_view bytes, const std::string& what, std::string* name) {
  ::onnx::TensorProto t;
  if (bytes.size() > size_t(INT32_MAX) || !t.ParseFromArray(bytes.data(), int(bytes.size())))
    return err("E403", what + ": not a TensorProto (the protobuf does not parse: truncated or malformed)");
  if (name) *name = t.name();
  auto h = fromProto(t, what);
  if (!h) return err("E403", h.error().message);
  return h;
}

std::string writeTensorProto(const HostTensor& h, const std::string& name) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnxCode(h.dtype));
  for (int64_t d : h.shape) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(h.bytes.data()), h.bytes.size()));
  return t.SerializeAsString();
}

Expected<HostTensor> readNpy(std::string_view b, const std::string& what) {
  auto bad = [&](const std::string& why) { return err("E403", what + ": not a .npy file this reader takes: " + why); };
  if (b.size() < 10 || b.substr(0, 6) != "\x93NUMPY") return bad("no NUMPY magic");
  size_t hlen, start;
  if (b[6] == 1) {
    hlen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8);
    start = 10;
  } else {
    if (b.size() < 12) return bad("truncated header");
    hlen = uint8_t(b[8]) | (size_t(uint8_t(b[9])) << 8) | (size_t(uint8_t(b[10])) << 16) | (size_t(uint8_t(b[11])) << 24);
    start = 12;
  }
  if (start + hlen > b.size()) return bad("truncated header");
  std::string header(b.substr(start, hlen));
  auto field = [&](const std::string& key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos) return "";
    size_t c = header.find(':', k);
    if (c == std::string::npos) return "";
    size_t s = header.find_first_not_of(' ', c + 1);
    if (s == std::string::npos) return "";
    if (header[s] == '\'') {
      size_t e = header.find('\'', s + 1);
      return e == std::string::npos ? "" : header.substr(s + 1, e - s - 1);
    }
    if (header[s] == '(') {
      size_t e = header.find(')', s);
      return e == std::string::npos ? "" : header.substr(s, e - s + 1);
    }
    size_t e = header.find_first_of(",}", s);
    return header.substr(s, e - s);
  };
  std::string descr = field("descr"), fortran = field("fortran_order"), shapeText_ = field("shape");
  if (fortran != "False") return bad("fortran_order is not False");
  static const std::map<std::string, DType> kinds = {
      {"|b1", DType::Bool}, {"|u1", DType::U8},  {"|i1", DType::I8},  {"<u2", DType::U16}, {"<i2", DType::I16},
      {"<u4", DType::U32},  {"<i4", DType::I32}, {"<u8", DType::U64}, {"<i8", DType::I64}, {"<f2", DType::F16},
      {"<f4", DType::F32},  {"<f8", DType::F64}, {"u1", DType::U8},   {"i1", DType::I8},   {"b1", DType::Bool}};
  auto kind = kinds.find(descr);
  if (kind == kinds.end()) return bad("dtype '" + descr + "' is not supported");
  if (shapeText_.empty()) return bad("no shape");
  Shape shape;
  std::string num;
  uint64_t count = 1;  // (at most 2^40, as fromProto's)
  for (char c : shapeText_.substr(1)) {
    if (std::isdigit(static_cast<unsigned char>(c))) {
      num += c;
      if (num.size() > 12) return bad("a dimension of more than 12 digits");
    } else if (!num.empty()) {
      const int64_t d = std::stoll(num);
      if (d > 0 && count > (uint64_t(1) << 40) / uint64_t(d)) return bad("too many elements");
      count *= uint64_t(d);
      shape.push_back(d);
      num.clear();
    }
  }
  const size_t data = start + hlen, want = size_t(count) * hostBytes(kind->second);
  if (b.size() - data != want)
    return bad(std::to_string(b.size() - data) + " bytes of data for " + tensor::shapeText(shape) + " " +
               std::string(dtypeName(kind->second)) + " (" + std::to_string(want) + ")");
  HostTensor h(kind->second, shape);
  std::memcpy(h.bytes.data(), b.data() + data, want);
  return h;
}

Expected<HostTensor> readTensorFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return err("E403", "cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string bytes = ss.str();
  if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") return readNpy(bytes, path);
  return readTensorProto(bytes, path);
}

// ---- NodeCtx ------------------------------------------------------------------

Tensor NodeCtx::in(size_t k) {
  need(k);
  Val& v = *ins_[k];
  if (!v.t || v.t.program() != &p) v.t = p.constant(*v.known, site);
  return v.t;
}

bool NodeCtx::ints(size_t k, std::vector<int64_t>& out, std::string& why, const char* what) const {
  const HostTensor* h = known(k);
  if (!h) {
    why = std::string("input ") + std::to_string(k) + " ('" + what + "') must be a constant (shapes are static), not computed at run time";
    return false;
  }
  out = h->ints();
  return true;
}

bool NodeCtx::floats(size_t k, std::vector<double>& out, std::string& why, const char* what) const {
  const HostTensor* h = known(k);
  if (!h) {
    why = std::string("input ") + std::to_string(k) + " ('" + what + "') must be a constant, not computed at run time";
    return false;
  }
  out = h->values();
  return true;
}

const ::onnx::AttributeProto* NodeCtx::attr(const std::string& name) const {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeCtx::i(const std::string& name, int64_t fallback) const {
  const auto* a = attr(name);
  return a ? a->i() : fallback;
}
double NodeCtx::f(const std::string& name, double fallback) const {
  const auto* a = attr(name);
  return a ? a->f() : fallback;
}
std::string NodeCtx::s(const std::string& name, const std::string& fallback) const {
  const auto* a = attr(name);
  return a ? a->s() : fallback;
}
std::vector<int64_t> NodeCtx::ints(const std::string& name) const {
  const auto* a = attr(name);
  return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
}
std::vector<double> NodeCtx::floats(const std::string& name) const {
  const auto* a = attr(name);
  return a ? std::vector<double>(a->floats().begin(), a->floats().end()) : std::vector<double>{};
}

Tensor NodeCtx::scalar(DType dt, double v) {
  Tensor& t = scalars_[{int(dt), v}];
  if (!t) {
    HostTensor h(dt, {});
    h.set(0, v);
    t = p.constant(std::move(h), site);
  }
  return t;
}

// ---- the graph ----------------------------------------------------------------

namespace {

constexpr int64_t kMaxOpset = 17;
constexpr int64_t kFoldInputs = 1 << 16, kFoldOutputs = 1 << 18, kSpecialise = 16;

std::string nodeSite(const ::onnx::NodeProto& n, int index) {
  std::string name = n.name().empty() ? "node " + std::to_string(index) : "node '" + n.name() + "'";
  return name + " (" + n.op_type() + ")";
}

// The inputs of an op that are shapes, axes, counts or scales.
std::vector<int> shapeInputs(const std::string& op) {
  static const std::map<std::string, std::vector<int>> m = {
      {"Reshape", {1}}, {"Expand", {1}}, {"Tile", {1}}, {"Slice", {1, 2, 3, 4}}, {"Pad", {1, 2, 3}},
      {"Resize", {1, 2, 3}}, {"Upsample", {1}}, {"TopK", {1}}, {"OneHot", {1, 2}}, {"Range", {0, 1, 2}},
      {"ConstantOfShape", {0}}, {"CumSum", {1}}, {"Trilu", {1}}, {"Squeeze", {1}}, {"Unsqueeze", {1}},
      {"Split", {1}}, {"MaxUnpool", {2}}, {"DFT", {1}}, {"STFT", {1, 3}}, {"ReduceSum", {1}}, {"ReduceMean", {1}}, {"ReduceMax", {1}}, {"ReduceMin", {1}},
      {"ReduceProd", {1}}, {"ReduceL1", {1}}, {"ReduceL2", {1}}, {"ReduceLogSum", {1}}, {"ReduceLogSumExp", {1}},
      {"ReduceSumSquare", {1}}, {"HannWindow", {0}}, {"HammingWindow", {0}}, {"BlackmanWindow", {0}},
      {"Dropout", {1, 2}}, {"Compress", {1}}, {"ReverseSequence", {1}}, {"RNN", {4}}, {"GRU", {4}}, {"LSTM", {4}}};
  auto it = m.find(op);
  return it == m.end() ? std::vector<int>{} : it->second;
}

bool splitAttrs(const char* list, const std::string& name) {
  std::string_view l(list);
  while (!l.empty()) {
    size_t c = l.find(',');
    if (l.substr(0, c) == name) return true;
    if (c == std::string_view::npos) break;
    l.remove_prefix(c + 1);
  }
  return false;
}

}  // namespace

Expected<Model> importModel(std::string_view bytes, const ImportOptions& opts) {
  ::onnx::ModelProto m;
  if (bytes.size() > size_t(INT32_MAX) || !m.ParseFromArray(bytes.data(), int(bytes.size())))
    return err("E400", "not an ONNX model: the protobuf does not parse (a truncated or malformed file)");
  if (!m.has_graph()) return err("E400", "not an ONNX model: it has no graph");
  Model out;
  out.program = std::make_unique<Program>();
  out.irVersion = m.ir_version();
  out.producer = m.producer_name();
  Program& p = *out.program;
  int64_t opset = -1, trainingOpset = 1;
  for (const auto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
    if (o.domain() == kTrainingDomain) trainingOpset = o.version();
  }
  if (opset < 0) {
    if (m.opset_import_size() == 0) return err("E400", "the model imports no version of the default ONNX opset (ai.onnx)");
    opset = 0;  // only other domains: their nodes are E401 below
  }
  out.opset = opset;
  if (opset > kMaxOpset)
    return err("E401", "the model uses opset " + std::to_string(opset) + "; the importer supports opsets up to " +
                           std::to_string(kMaxOpset));
  const ::onnx::GraphProto& g = m.graph();
  std::map<std::string, Val, std::less<>> values;
  if (g.sparse_initializer_size()) return err("E401", "sparse initializers are not supported");
  for (const auto& init : g.initializer()) {
    auto h = fromProto(init, "initializer '" + init.name() + "'", opts.baseDir);
    if (!h) return h.takeError();
    Val v;
    v.dtype = h->dtype;
    v.shape = h->shape;
    v.known = std::make_shared<const HostTensor>(std::move(*h));
    values[init.name()] = std::move(v);
  }
  for (const auto& in : g.input()) {
    if (values.count(in.name())) continue;  // an initializer's default (IR version < 4)
    const std::string what = "input '" + in.name() + "'";
    if (!in.type().has_tensor_type()) return err("E401", what + ": only tensor inputs are supported");
    const auto& tt = in.type().tensor_type();
    auto dt = dtypeOfOnnx(tt.elem_type());
    if (!dt) return err("E401", what + ": tensors of type " + onnxTypeName(tt.elem_type()) + " are not supported");
    auto given = opts.given.find(in.name());
    Shape shape;
    if (tt.has_shape()) {
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const auto& dim = tt.shape().dim(d);
        if (dim.has_dim_value()) {
          shape.push_back(dim.dim_value());
        } else if (given != opts.given.end() && size_t(d) < given->second.shape.size()) {
          shape.push_back(given->second.shape[size_t(d)]);
        } else if (d == 0) {
          shape.push_back(kDynamic);  // the dynamic first dimension, N (docs/tensor.md)
        } else {
          return err("E401", what + ": dimension " + std::to_string(d) +
                                 (dim.has_dim_param() ? " is symbolic ('" + dim.dim_param() + "')" : " is unknown") +
                                 "; only the first dimension may be dynamic: give the input (--inputs/--input) so its "
                                 "shape is known");
        }
      }
    } else if (given != opts.given.end()) {
      shape = given->second.shape;
    } else {
      return err("E401", what + " has no shape; shapes are static: give the input (--inputs/--input)");
    }
    if (given != opts.given.end()) {
      const HostTensor& h = given->second;
      if (h.dtype != *dt)
        return err("E403", what + " wants dtype " + std::string(dtypeName(*dt)) + " (" + onnxTypeName(tt.elem_type()) +
                               "), got " + std::string(dtypeName(h.dtype)));
      if (h.shape != shape)
        return err("E403", what + " wants shape " + shapeText(shape) + ", got " + shapeText(h.shape));
    }
    Val v;
    v.t = p.input(in.name(), *dt, shape);
    v.dtype = *dt;
    v.shape = v.t.shape();
    // A small input given at import specialises the shape-like arguments it
    // feeds (Reshape's shape, Slice's starts, TopK's K, Resize's scales, ...,
    // which backend tests pass as graph inputs); nothing computed from it is folded.
    if (given != opts.given.end() && given->second.size() <= kSpecialise) {
      v.known = std::make_shared<const HostTensor>(given->second);
      v.folds = false;
    }
    values[in.name()] = v;
    out.inputs.push_back(in.name());
  }
  for (const auto& [name, h] : opts.given)
    if (std::find(out.inputs.begin(), out.inputs.end(), name) == out.inputs.end())
      return err("E403", "the model has no input '" + name + "'" +
                             (out.inputs.empty() ? "" : " (its inputs: " + [&] {
                               std::string s;
                               for (auto& n : out.inputs) s += (s.empty() ? "" : ", ") + n;
                               return s;
                             }() + ")"));
  if (p.error()) return err("E402", p.error()->message);

  // Values that end up in shape-like arguments (a Reshape's shape, a Range's
  // limit, ...): a node computing one folds even from an input's value given
  // at import (Val::folds is false there, so that data is never folded).
  std::set<std::string> shapeLike;
  for (int k = g.node_size(); k-- > 0;) {
    const ::onnx::NodeProto& node = g.node(k);
    bool out = false;
    for (const auto& o : node.output()) out |= shapeLike.count(o) != 0;
    std::vector<int> which = shapeInputs(node.op_type());
    for (int i = 0; i < node.input_size(); ++i)
      if (out || std::find(which.begin(), which.end(), i) != which.end()) shapeLike.insert(node.input(i));
  }

  for (int k = 0; k < g.node_size(); ++k) {
    const ::onnx::NodeProto& node = g.node(k);
    std::string site = nodeSite(node, k);
    bool feedsShapes = false;
    for (const auto& o : node.output()) feedsShapes |= shapeLike.count(o) != 0;
    std::string where = site.substr(0, site.size() - 1) + ", opset " + std::to_string(opset) + ")";
    // The training domain's ops (optimizer steps) are in the table under
    // their domain-qualified names, at that domain's opsets.
    const bool training = node.domain() == kTrainingDomain;
    if (!node.domain().empty() && node.domain() != "ai.onnx" && !training)
      return err("E401", where + ": ops of domain '" + node.domain() + "' are not supported");
    const std::string opName = training ? std::string(kTrainingDomain) + "." + node.op_type() : node.op_type();
    const OpEntry* e = findEntry(opName, training ? trainingOpset : opset);
    if (!e) {
      std::string range;
      for (const OpEntry& x : opTable())
        if (x.name == opName) range += (range.empty() ? "" : ", ") + std::to_string(x.since) + "-" + std::to_string(x.until);
      return err("E401", where + ": the op " + opName + " is not supported" +
                             (range.empty() ? "" : " at this opset (supported: opsets " + range + ")"));
    }
    for (const auto& a : node.attribute())
      if (!splitAttrs(e->attrs, a.name()))
        return err("E401", where + ": attribute '" + a.name() + "' is not supported");
    std::vector<Val*> ins;
    for (int i = 0; i < node.input_size(); ++i) {
      const std::string& name = node.input(i);
      if (name.empty()) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = values.find(name);
      if (it == values.end())
        return err("E402", site + ": input " + std::to_string(i) + " '" + name +
                               "' is not an earlier node's output, an initializer or a graph input");
      ins.push_back(&it->second);
    }
    auto copies = [&](bool scratch) {
      std::vector<std::optional<Val>> v;
      for (Val* x : ins) {
        if (!x) v.push_back(std::nullopt);
        else {
          Val c = *x;
          if (scratch) c.t = {};
          v.push_back(std::move(c));
        }
      }
      return v;
    };
    // Folding: every input known and small.
    bool allKnown = !ins.empty();
    int64_t knownSize = 0;
    for (Val* x : ins)
      if (x) {
        allKnown &= x->known != nullptr && (x->folds || feedsShapes);
        if (x->known) knownSize += x->known->size();
      }
    // The node's mapping on c: an error where it is not supported (E401) or
    // reads an input the node does not have (E402).
    auto map = [&](NodeCtx& c) -> std::optional<Error> {
      std::string why;
      try {
        why = e->map(c);
      } catch (const MissingInput& m) {
        return err("E402", where + ": input " + std::to_string(m.k) + " is missing (" + node.op_type() + " needs it)");
      }
      if (!why.empty()) return err("E401", where + ": " + why);
      return std::nullopt;
    };
    std::vector<std::optional<Val>> results;
    bool folded = false;
    if (allKnown && knownSize <= kFoldInputs && std::string_view(e->note).find("random") == std::string_view::npos) {
      Program q;
      NodeCtx c(q, node, opset, site, copies(true));
      if (auto failed = map(c)) return *failed;
      if (q.error()) return err("E402", q.error()->message);
      bool small = true;
      for (const Tensor& t : c.outs) small &= !t || t.node().shape.empty() || numel(t.shape()) <= kFoldOutputs;
      if (small) {
        std::vector<size_t> which;
        for (size_t o = 0; o < c.outs.size(); ++o)
          if (c.outs[o]) {
            q.output("o" + std::to_string(o), c.outs[o]);
            which.push_back(o);
          }
        auto r = which.empty() ? Expected<std::vector<HostTensor>>(std::vector<HostTensor>{}) : run(q, "interp", {});
        if (!r) return err("E402", site + ": folding the node at import failed: " + r.error().message);
        results.resize(c.outs.size());
        for (size_t j = 0; j < which.size(); ++j) {
          Val v;
          HostTensor& h = (*r)[j];
          v.dtype = h.dtype;
          v.shape = h.shape;
          v.known = std::make_shared<const HostTensor>(std::move(h));
          for (Val* x : ins) v.folds &= !x || x->folds;
          results[which[j]] = std::move(v);
        }
        folded = true;
      }
    }
    if (!folded) {
      NodeCtx c(p, node, opset, site, copies(false));
      if (auto failed = map(c)) return *failed;
      if (p.error()) return err("E402", p.error()->message);
      // Known inputs materialised as constants: keep them for later nodes.
      results.resize(c.outs.size());
      for (size_t o = 0; o < c.outs.size(); ++o)
        if (c.outs[o]) {
          Val v;
          v.t = c.outs[o];
          v.dtype = c.outs[o].dtype();
          v.shape = c.outs[o].shape();
          if (c.outs[o].node().op == "const") v.known = c.outs[o].node().data;
          results[o] = std::move(v);
        }
    }
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty()) continue;
      if (size_t(o) >= results.size() || !results[size_t(o)])
        return err("E401", where + ": output " + std::to_string(o) + " ('" + node.output(o) + "') is not supported");
      values[node.output(o)] = *results[size_t(o)];
    }
    ++out.nodes;
  }
  for (const auto& o : g.output()) {
    auto it = values.find(o.name());
    if (it == values.end())
      return err("E402", "graph output '" + o.name() + "' is not an initializer, a graph input or a node's output");
    Val& v = it->second;
    if (!v.t) v.t = p.constant(*v.known, "output '" + o.name() + "'");
    p.output(o.name(), v.t);
    out.outputs.push_back(o.name());
  }
  if (p.error()) return err("E402", p.error()->message);
  return out;
}

}  // namespace eph::tensor::onnx
