#include "frontends/tensor/onnx/Frontend.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Run.h"
#include "frontends/tensor/onnx/OnnxImpl.h"
#include "ir/interp/Interp.h"

namespace eph::tensor::onnx {

namespace fs = std::filesystem;

Expected<std::vector<HostTensor>> readDataSet(const std::string& dir, const std::string& prefix) {
  std::vector<HostTensor> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{{}, "'" + dir + "' is not a directory", "E403"};
  for (size_t k = 0;; ++k) {
    fs::path f = fs::path(dir) / (prefix + "_" + std::to_string(k) + ".pb");
    if (!fs::exists(f, ec)) break;
    auto h = readTensorFile(f.string());
    if (!h) return h.takeError();
    out.push_back(std::move(*h));
  }
  return out;
}

namespace {

struct Given {
  std::map<std::string, HostTensor, std::less<>> byName;
  std::vector<HostTensor> byPosition;  // --inputs DIR
};

// The inputs the options name: --inputs DIR and --input NAME=FILE[,NAME=FILE...].
Expected<Given> givenInputs(const frontends::OptionValues& o) {
  Given g;
  if (auto it = o.find("--inputs"); it != o.end()) {
    auto v = readDataSet(it->second, "input");
    if (!v) return v.takeError();
    if (v->empty()) return Error{{}, "--inputs: '" + it->second + "' has no input_0.pb", "E403"};
    g.byPosition = std::move(*v);
  }
  if (auto it = o.find("--input"); it != o.end()) {
    std::string list = it->second;
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      start = comma == std::string::npos ? list.size() + 1 : comma + 1;
      if (item.empty()) continue;
      size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0)
        return Error{{}, "--input wants NAME=FILE.npy|FILE.pb, got '" + item + "'", "E403"};
      auto h = readTensorFile(item.substr(eq + 1));
      if (!h) return h.takeError();
      g.byName[item.substr(0, eq)] = std::move(*h);
    }
  }
  return g;
}

std::string render(const std::string& file, const Error& e) {
  return file + ": error" + (e.code.empty() ? "" : "[" + e.code + "]") + ": " + e.message + "\n";
}

// What compile() made, for run's hooks: the program and @main's parameters.
struct Imported {
  std::shared_ptr<Model> model;
  std::vector<uint32_t> params, results;
  std::vector<std::shared_ptr<const HostTensor>> derived;  // Compiled::derived
  std::vector<HostTensor> inputs;  // in the program's input order (empty when none were given)
};
std::map<std::string, Imported>& cache() {
  static std::map<std::string, Imported> c;
  return c;
}

std::string cacheKey(std::string_view text, const std::string& file) {
  return file + "#" + std::to_string(text.size()) + "#" + std::to_string(std::hash<std::string_view>()(text));
}

// Import (with the given inputs, so symbolic shapes take theirs) and lower.
std::unique_ptr<ir::Module> compileModel(ir::Context& ctx, std::string_view text, const std::string& file,
                                         const frontends::OptionValues& o, std::string& diagnostics) {
  auto given = givenInputs(o);
  if (!given) return diagnostics += render(file, given.error()), nullptr;
  ImportOptions opts;
  opts.baseDir = std::filesystem::path(file).parent_path().string();
  if (opts.baseDir.empty()) opts.baseDir = ".";
  if (!given->byPosition.empty() || !given->byName.empty()) {
    // Position-bound inputs need the input names: import once without them
    // when the shapes are all static, else bind in order of the graph's inputs.
    if (!given->byPosition.empty()) {
      ::onnx::ModelProto m;
      if (!m.ParseFromArray(text.data(), int(text.size())))
        return diagnostics += render(file, Error{{}, "not an ONNX model: the protobuf does not parse (a truncated or malformed file)", "E400"}), nullptr;
      std::set<std::string> inits;
      for (const auto& i : m.graph().initializer()) inits.insert(i.name());
      std::vector<std::string> names;
      for (const auto& i : m.graph().input())
        if (!inits.count(i.name())) names.push_back(i.name());
      if (given->byPosition.size() > names.size())
        return diagnostics += render(file, Error{{}, "--inputs has " + std::to_string(given->byPosition.size()) +
                                                         " inputs; the model takes " + std::to_string(names.size()), "E403"}), nullptr;
      for (size_t k = 0; k < given->byPosition.size(); ++k) opts.given[names[k]] = given->byPosition[k];
    }
    for (const auto& [n, h] : given->byName) opts.given[n] = h;
  }
  // --dynamic: the inputs are for the run only; the import keeps a symbolic
  // first dimension dynamic (one module for every N).
  ImportOptions importOpts = opts;
  if (o.count("--dynamic")) importOpts.given.clear();
  auto model = importModel(text, importOpts);
  if (!model) return diagnostics += render(file, model.error()), nullptr;
  auto lowered = lower(ctx, *model->program);
  if (!lowered) return diagnostics += render(file, Error{{}, lowered.error().message, "E402"}), nullptr;
  Imported imp;
  imp.params = lowered->params;
  imp.results = lowered->results;
  imp.derived = lowered->derived;
  if (!opts.given.empty()) {
    for (const std::string& n : model->inputs) {
      auto it = opts.given.find(n);
      if (it == opts.given.end()) {
        diagnostics += render(file, Error{{}, "input '" + n + "' is not given (--inputs DIR with input_N.pb, or --input " + n + "=FILE)", "E403"});
        return nullptr;
      }
      imp.inputs.push_back(it->second);
    }
  }
  imp.model = std::make_shared<Model>(std::move(*model));
  cache()[cacheKey(text, file)] = std::move(imp);
  lowered->module->sourceName = file;
  return std::move(lowered->module);
}

std::string preview(const HostTensor& h) {
  std::string s = "[";
  char buf[64];
  for (int64_t i = 0; i < h.size(); ++i) {
    if (i) s += ", ";
    if (i == 16 && h.size() > 20) {
      s += "... (" + std::to_string(h.size() - 16) + " more)";
      break;
    }
    if (isFloat(h.dtype)) std::snprintf(buf, sizeof buf, "%.9g", h.get(i));
    else if (h.dtype == DType::U64) std::snprintf(buf, sizeof buf, "%llu", (unsigned long long)uint64_t(h.getInt(i)));
    else if (h.dtype == DType::Bool) std::snprintf(buf, sizeof buf, "%s", h.getInt(i) ? "true" : "false");
    else std::snprintf(buf, sizeof buf, "%lld", (long long)h.getInt(i));
    s += buf;
  }
  return s + "]";
}

}  // namespace

frontends::Frontend frontend() {
  frontends::Frontend f;
  f.name = "onnx";
  f.extensions = {".onnx"};
  f.options = {
      {"--inputs", "DIR", ".onnx: the model's inputs, DIR/input_0.pb, ... (TensorProto) in the graph's input order", false},
      {"--input", "NAME=FILE,...", ".onnx: an input by name from a .npy or .pb (TensorProto) file", false},
      {"--save-outputs", "DIR", ".onnx: write the outputs to DIR/output_0.pb, ... (TensorProto) instead of printing them", false},
      {"--dynamic", "", ".onnx: keep a symbolic first input dimension dynamic (one module for every extent N) instead of taking the given input's", false},
  };
  f.errorCodes = {
      {"E400", "an .onnx file is not a readable ONNX model (truncated or malformed protobuf, no graph, a bad tensor)"},
      {"E401", "an ONNX op, attribute, dtype, opset or dynamic shape the importer does not support"},
      {"E402", "an invalid ONNX graph: an undefined input or output, or shapes and dtypes that do not fit an op"},
      {"E403", "an ONNX model's run input is missing, unreadable, or of the wrong dtype or shape"},
  };
  f.compile = [](ir::Context& ctx, std::string_view text, const std::string& file, const frontends::OptionValues& o,
                 const passes::PipelineOptions&, std::string& diagnostics) {
    return compileModel(ctx, text, file, o, diagnostics);
  };
  f.runArgs = [](std::string_view text, const std::string& file, const frontends::OptionValues& o,
                 const ir::Function& entry, interp::Memory& mem, std::vector<interp::RtValue>& args,
                 std::string& diagnostics) {
    auto it = cache().find(cacheKey(text, file));
    if (it == cache().end()) {
      ir::Context scratch;
      if (!compileModel(scratch, text, file, o, diagnostics)) return false;
      it = cache().find(cacheKey(text, file));
    }
    const Imported& imp = it->second;
    const Program& p = *imp.model->program;
    if (imp.inputs.size() != p.inputs().size()) {
      std::string names;
      for (const auto& n : imp.model->inputs) names += (names.empty() ? "'" : ", '") + n + "'";
      diagnostics += render(file, Error{{}, "the model's inputs (" + names +
                                               ") are not given: use --inputs DIR (input_0.pb, ...) or --input NAME=FILE", "E403"});
      return false;
    }
    auto a = mainArgs(mem, entry.module()->context(), p, imp.params, imp.inputs, imp.derived);
    if (!a) return diagnostics += render(file, Error{{}, a.error().message, "E403"}), false;
    args = std::move(*a);
    return true;
  };
  f.runResults = [](std::string_view text, const std::string& file, const frontends::OptionValues& o, interp::Memory& mem,
                    const std::vector<interp::RtValue>& results, std::string& out, std::string& diagnostics) {
    auto it = cache().find(cacheKey(text, file));
    if (it == cache().end()) return diagnostics += file + ": error: internal error: the model was not compiled\n", false;
    const Imported& imp = it->second;
    const Program& p = *imp.model->program;
    auto save = o.find("--save-outputs");
    if (save != o.end()) {
      std::error_code ec;
      fs::create_directories(save->second, ec);
      if (ec) return diagnostics += "ephc: cannot create '" + save->second + "': " + ec.message() + "\n", false;
    }
    for (size_t k = 0; k < results.size() && k < imp.results.size(); ++k) {
      const Node& n = p.node(imp.results[k]);
      auto h = resultTensor(mem, results[k], n.dtype, withExtent(n.shape, dynamicExtent(p, imp.inputs)));
      if (!h) return diagnostics += file + ": error: " + h.error().message + "\n", false;
      const std::string& name = p.outputs()[k].first;
      if (save != o.end()) {
        fs::path f = fs::path(save->second) / ("output_" + std::to_string(k) + ".pb");
        std::ofstream os(f, std::ios::binary);
        os << writeTensorProto(*h, name);
        if (!os) return diagnostics += "ephc: cannot write '" + f.string() + "'\n", false;
      } else {
        out += name + ": " + std::string(dtypeName(n.dtype)) + shapeText(h->shape) + " = " + preview(*h) + "\n";
      }
    }
    return true;
  };
  return f;
}

}  // namespace eph::tensor::onnx
