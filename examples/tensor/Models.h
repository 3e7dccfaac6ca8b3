// Three small networks written with the tensor C++ API (docs/tensor.md):
// an MLP, a CNN and a transformer encoder block, with seeded random weights
// as constants. Each is built in any float dtype, so one program in f64 on
// the reference interpreter is the float64 reference of the same program in
// f32 on cpu and vulkan (tensor_examples.cpp).
#pragma once

#include <string>
#include <vector>

#include "frontends/tensor/Tensor.h"

namespace eph::tensor::examples {

struct Model {
  std::string name;
  // Builds the network into p: declares its input ("x") and output ("y").
  void (*build)(Program& p, DType dt);
  // The input's shape, and its values (seeded).
  Shape inputShape;
};

const std::vector<Model>& models();
HostTensor exampleInput(const Model& m, DType dt);

}  // namespace eph::tensor::examples
