// The `.onnx` frontend (frontends/Frontend.h): `ephc check|lower|run
// MODEL.onnx`. compile() imports the model (Onnx.h) and lowers it (the tensor
// frontend's Lower.h); `run` takes the model's inputs from --inputs DIR
// (input_0.pb, ... in the graph's input order, as ONNX backend tests keep them)
// and --input NAME=FILE.npy|.pb, and prints the outputs or, with
// --save-outputs DIR, writes them as output_0.pb, ... (TensorProto).
#pragma once

#include <string>
#include <vector>

#include "frontends/Frontend.h"
#include "frontends/tensor/onnx/Onnx.h"

namespace eph::tensor::onnx {

frontends::Frontend frontend();

// The input_N.pb files of a backend-test data set directory, by N; an error
// (E403) when one cannot be read.
Expected<std::vector<HostTensor>> readDataSet(const std::string& dir, const std::string& prefix);

}  // namespace eph::tensor::onnx
