// Test support: runs one kernel of a module on a runtime::Device with given
// buffer contents and scalar arguments, and returns every buffer parameter's
// contents afterwards (downloaded into interpreter buffers), so that tests can
// compare a target against the interpreter element by element.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/interp/Interp.h"
#include "runtime/Device.h"

namespace eph::test {

// One kernel argument: a buffer (its elements) or a scalar value.
struct KernelArg {
  bool isBuffer = false;
  interp::BufferData buffer;
  interp::RtValue scalar;

  static KernelArg ofBuffer(const ir::Type* elem, std::vector<interp::RtValue> elems);
  static KernelArg ofScalar(interp::RtValue v);
};

// Prepares the module, uploads the buffers, dispatches `kernel` over `groups`
// and downloads every buffer argument (in parameter order).
Expected<std::vector<interp::BufferData>> runKernelOn(runtime::Device& dev, const ir::Module& m,
                                                      const std::string& kernel, std::array<uint32_t, 3> groups,
                                                      const std::vector<KernelArg>& args);

// A host program's run: its interpreter (which holds the result buffers) and
// the results of @main (no arguments) on `dev`.
struct HostRun {
  std::unique_ptr<interp::Interpreter> interp;
  Expected<std::vector<interp::RtValue>> results = Error{};
};
HostRun runMainOn(runtime::Device& dev, const ir::Module& m);

// Formats a buffer's elements: "[1, 2, 3]".
std::string formatBuffer(const interp::BufferData& b);

}  // namespace eph::test
