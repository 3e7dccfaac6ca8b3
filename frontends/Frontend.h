// The seam every frontend plugs into: a name, the file extensions it reads,
// its command-line options, and a compile function from source text to a
// verified IR module with rendered diagnostics. `ephc check|run|lower|opt|diff`
// pick the frontend by the input's extension (an `.eir` file is IR and needs
// none). frontends/Frontends.cpp lists the frontends of the build: a new one is
// a folder under frontends/ plus one line there.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/IR.h"
#include "passes/PassManager.h"

namespace eph::interp {
class Memory;
struct RtValue;
}

namespace eph::frontends {

// A command-line option of a frontend, e.g. {"--mode", "linear|affine", ...};
// an empty valueName makes it a switch. Its help text says which inputs it is for.
struct Option {
  std::string_view flag, valueName, help;
  bool forCheck = true;  // `ephc check` takes it too
};
// The values given, by flag ("" for a switch); flags not given are absent.
using OptionValues = std::map<std::string, std::string, std::less<>>;

struct Frontend {
  std::string_view name;                     // "ephapax"
  std::vector<std::string_view> extensions;  // {".eph"}
  std::vector<Option> options;
  // An error message for option values this frontend rejects, or "".
  std::function<std::string(const OptionValues&)> checkOptions;
  // Source text (named `file` in locations) to a verified module, or null;
  // every diagnostic, rendered with its source line and caret by
  // eph::renderDiag ("file:line:col: error[CODE]: ..."), is appended to
  // `diagnostics`. The passes it runs (through a PassManager) honour
  // `pipeline` (--print-after, --time-passes).
  std::function<std::unique_ptr<ir::Module>(ir::Context&, std::string_view text, const std::string& file,
                                            const OptionValues&, const passes::PipelineOptions& pipeline,
                                            std::string& diagnostics)>
      compile;
  // Every code its diagnostics can have, with a one-line meaning (its table,
  // registered here beside the IR's eph::irErrorCodes(); docs/errors.md lists
  // them all).
  std::vector<ErrorCodeInfo> errorCodes;
  // Optional: what `ephc run` prints for this frontend's files instead of one
  // result per line (`.vg`: FORMAT.md's report). Gets the source again and the
  // entry's results, each as numbers (a buffer: its elements); false after
  // appending an error to `diagnostics`.
  std::function<bool(std::string_view text, const std::string& file, const OptionValues&,
                     const std::vector<std::vector<double>>& results, std::string& out, std::string& diagnostics)>
      formatRun;
  // Optional, for a frontend whose files carry the entry's arguments (an ONNX
  // model: its weights, and its inputs read from files its options name):
  // `ephc run` takes the arguments from `args` (made in `mem`) instead of
  // --arg, and hands the results to `runResults` (which may print or save
  // them) instead of printing them. False after appending an error to
  // `diagnostics`.
  std::function<bool(std::string_view text, const std::string& file, const OptionValues&, const ir::Function& entry,
                     interp::Memory& mem, std::vector<interp::RtValue>& args, std::string& diagnostics)>
      runArgs;
  std::function<bool(std::string_view text, const std::string& file, const OptionValues&, interp::Memory& mem,
                     const std::vector<interp::RtValue>& results, std::string& out, std::string& diagnostics)>
      runResults;
};

// The frontends of this build, in registration order.
const std::vector<Frontend>& all();
// The frontend that reads `path` (by its extension), or null for anything
// else (IR text, or an unknown extension).
const Frontend* forFile(std::string_view path);
// Every error code of the build: the IR's (eph::irErrorCodes()) and each frontend's.
std::vector<ErrorCodeInfo> allErrorCodes();

}  // namespace eph::frontends
