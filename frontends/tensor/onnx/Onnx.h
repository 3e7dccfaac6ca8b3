// ONNX import into the tensor frontend (docs/onnx.md): a ModelProto becomes a
// tensor Program (Program.h). Initializers are constants, graph inputs that
// are not initializers are the program's inputs, and each node is mapped to
// tensor ops through a table (OnnxOps.cpp: one entry per ONNX op with the
// opsets it supports, the attributes it understands and a mapping function).
// Shapes are static: Shape, Size, ConstantOfShape, Range and every node whose
// inputs are all constants are folded at import (small ones are run on the
// reference interpreter), so Reshape, Expand, Slice, Tile, Pad, Resize, TopK,
// OneHot, ... get their shape-like inputs as attributes.
//
// Errors, never crashes; each has a code (docs/errors.md):
//   E400  the file is not a readable ONNX model (truncated, malformed, a bad tensor)
//   E401  an op, attribute, dtype or opset the importer does not support
//   E402  the graph is invalid (an undefined input, shapes or dtypes that do not fit)
//   E403  a run input is missing, unreadable, or of the wrong dtype or shape
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/tensor/HostTensor.h"
#include "frontends/tensor/Program.h"
#include "ir/Diagnostics.h"

namespace eph::tensor::onnx {

struct Model {
  std::unique_ptr<Program> program;
  // The program's inputs and outputs by their ONNX names, in order.
  std::vector<std::string> inputs, outputs;
  int64_t opset = 0;
  int64_t irVersion = 0;
  std::string producer;
  size_t nodes = 0;
};

struct ImportOptions {
  // Inputs given at run time, by name: a symbolic dimension takes its extent
  // from them; a declared dtype or extent that differs is an error (E403). A
  // small one (16 elements or fewer) also specialises the shape-like arguments
  // it feeds (a Reshape's shape or a Resize's scales passed as a graph input,
  // as backend tests do): the program is compiled for that value, and the
  // value is not checked again when it runs.
  std::map<std::string, HostTensor, std::less<>> given;
  // The model's folder: initializers whose data is in external files (as
  // PyTorch 2 exports them) are read from there, by a relative location that
  // stays inside it. Empty: such an initializer is an error (E401).
  std::string baseDir;
};

// Imports a serialized ModelProto. Errors carry their code (Error::code).
Expected<Model> importModel(std::string_view bytes, const ImportOptions& opts = {});

// TensorProto (serialized) <-> HostTensor. `what` names the tensor in errors.
Expected<HostTensor> readTensorProto(std::string_view bytes, const std::string& what, std::string* name = nullptr);
std::string writeTensorProto(const HostTensor& t, const std::string& name);
// A numpy .npy file (little-endian, C order; bool, integers, f16, f32, f64).
Expected<HostTensor> readNpy(std::string_view bytes, const std::string& what);
// Reads a .pb (TensorProto) or .npy file.
Expected<HostTensor> readTensorFile(const std::string& path);

// The ONNX ops the importer knows (name, first and last opset), for docs/onnx.md.
struct OpSupport {
  std::string name;
  int since = 1, until = 99;
  std::string attrs;  // the attributes it understands, comma-separated
  std::string note;   // limits
};
const std::vector<OpSupport>& supportedOps();

}  // namespace eph::tensor::onnx
