// Runs a lowered tensor program (Lower.h) on a device: HostTensors in, HostTensors out.
//
//   tensor::Program p;
//   auto x = p.input("x", DType::F32, {2, 3});
//   p.output("y", relu(x * 2.0f + 1.0f));
//   auto y = tensor::run(p, "vulkan", {HostTensor::of(DType::F32, {2, 3}, {...})});
#pragma once

#include <string_view>
#include <vector>

#include "frontends/tensor/HostTensor.h"
#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Program.h"

namespace eph::runtime {
class Device;
}
namespace eph::interp {
class Memory;
struct RtValue;
}

namespace eph::tensor {

// Runs `c` (lowered from `p`) on `device` with one HostTensor per input of
// `p`, in declaration order; a missing input, or one of the wrong dtype or
// shape, is an error naming the input, what it wants and what it got. With
// the dynamic first dimension, N is the first extent of the first input
// that has it; the others must agree, and results have N rows.
Expected<std::vector<HostTensor>> run(runtime::Device& device, const Program& p, const Compiled& c,
                                      const std::vector<HostTensor>& inputs);
// Lowers `p` and runs it on a device of `target` ("interp", "cpu", "vulkan"),
// with the device's sizes from the tuning table (Tuning.h) unless opts.tune is off.
Expected<std::vector<HostTensor>> run(const Program& p, std::string_view target, const std::vector<HostTensor>& inputs,
                                      const LowerOptions& opts = {});

// run() of a program lowered with LowerOptions::deviceIO, in steps, for a
// caller that runs it many times on the same inputs (eph_tensor_bench):
// each input and constant uploaded as bytes into a device buffer (@main's
// arguments); @main run on them, its results device buffers the caller
// owns; the results downloaded as HostTensors and freed. The caller frees
// the arguments with freeDeviceBuffers. uploadInputs prepares the module on
// the device, runOnDevice does not again (RunOptions::prepared): a run then
// costs its dispatches, not a re-emission of every kernel.
Expected<std::vector<interp::RtValue>> uploadInputs(runtime::Device& device, const Program& p, const Compiled& c,
                                                    const std::vector<HostTensor>& inputs);
Expected<std::vector<interp::RtValue>> runOnDevice(runtime::Device& device, const Compiled& c,
                                                   const std::vector<interp::RtValue>& args);
// `n`: the dynamic first dimension's extent (dynamicExtent), if the program has one.
Expected<std::vector<HostTensor>> downloadResults(runtime::Device& device, const Program& p, const Compiled& c,
                                                  const std::vector<interp::RtValue>& results, int64_t n = 0);
void freeDeviceBuffers(runtime::Device& device, const std::vector<interp::RtValue>& buffers);

// Checks one input against what the program declared (dtype and shape;
// `n`, the extent of a dynamic first dimension).
Status checkInput(const Node& declared, const HostTensor& given, int64_t n = 0);
// Whether an input of `p` has the dynamic first dimension (then @main takes
// N last: Compiled::dynamic), and N for inputs already checked (the first
// extent of the first input with it; 0 when none has it).
bool hasDynamicInput(const Program& p);
int64_t dynamicExtent(const Program& p, const std::vector<HostTensor>& inputs);

// What run() does, for a caller that runs @main itself (`ephc run` of an ONNX
// model): @main's arguments, made in `mem` (each input, checked, and each
// constant, in Compiled::params order, N, then Compiled::derived), and a
// result buffer as a HostTensor.
Expected<std::vector<interp::RtValue>> mainArgs(interp::Memory& mem, ir::Context& ctx, const Program& p,
                                                const std::vector<uint32_t>& params, const std::vector<HostTensor>& inputs,
                                                const std::vector<std::shared_ptr<const HostTensor>>& derived = {});
Expected<HostTensor> resultTensor(interp::Memory& mem, const interp::RtValue& result, DType dtype, const Shape& shape);

}  // namespace eph::tensor
