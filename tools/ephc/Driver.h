// What ephc's subcommands share: where output goes, reading the input file,
// reporting errors (with the source line and a caret when the location is
// known), loading a module (parse + verify), and the pass-pipeline flags that
// `opt` and `run` both accept. Each subcommand is one file (Opt.cpp, Run.cpp,
// Lists.cpp) with a CommandSpec and a function; main.cpp only dispatches.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "frontends/Frontend.h"
#include "ir/IR.h"
#include "ir/interp/Interp.h"
#include "passes/PassManager.h"
#include "tools/ephc/Args.h"

namespace eph::ephc {

// Where a command writes: results to `out`, diagnostics to `err`.
struct Io {
  std::ostream& out;
  std::ostream& err;
};

// Source text by file name, to show the line an error points at. Files the
// driver read are kept; others (a location from a frontend) are read on demand.
class SourceCache {
 public:
  void add(const std::string& name, std::string text);
  // The text of `file`; empty when it cannot be read.
  std::string_view text(const std::string& file);

 private:
  std::map<std::string, std::string> texts_;
};

// An error rendered by the one renderer (eph::renderDiag): "file:line:col:
// error[CODE]: message", the source line and a caret line when the source is
// known, and the hint; "ephc: message" for an error without a location.
std::string renderError(const Error& e, SourceCache& sources);

// One command invocation: its output streams and the sources it has read.
struct Session {
  Io io;
  SourceCache sources;

  // Prints `e` (rendered) to io.err and returns 1, the exit status for errors.
  int report(const Error& e);
  // "ephc: message" on io.err; returns 1.
  int fail(const std::string& message);
  // Reads a whole file ("-" is standard input) into `text`; on failure prints
  // why and returns false. A file longer than maxInputBytes is an error
  // (/dev/zero, a pipe that never ends), not a hang.
  bool readInput(const std::string& path, std::string& text);
  // 2 GiB: protobuf's limit on an ONNX model (larger ones keep their
  // weights in external data files), far above any text program.
  size_t maxInputBytes = size_t(2) << 30;
  // Reads, parses and verifies `path`; null after reporting the error. A
  // frontend's source (by extension, frontends/Frontend.h: `.eph`) is
  // compiled by that frontend, with `frontendOptions`, instead.
  std::unique_ptr<ir::Module> loadModule(ir::Context& ctx, const std::string& path);
  // The frontend options given (--mode affine, ...), for whichever frontend
  // reads the input.
  frontends::OptionValues frontendOptions;
  // --print-after / --time-passes (buildPipeline), also for the passes a
  // frontend runs.
  passes::PipelineOptions pipeline;
};

// Every frontend's options, as options of a command (`check`: those marked
// forCheck).
std::vector<OptionSpec> frontendOptionSpecs(bool check = false);
// Takes the frontend options `args` has into s.frontendOptions; false after
// reporting a value a frontend rejects ("ephc: CMD: --mode wants ...").
bool applyFrontendOptions(Session& s, const ParsedArgs& args, std::string_view cmd);

// The pass-pipeline options shared by `opt`, `run`, `lower` and `diff`.
std::vector<OptionSpec> pipelineOptions();
// Loads --load-pass-plugin libraries, then builds the pipeline and its options
// from --passes / --print-after / --time-passes (`fallback` when --passes is
// not given: "default" for run, lower and diff). False after reporting an error.
bool loadPlugins(Session& s, const ParsedArgs& args);
bool buildPipeline(Session& s, const ParsedArgs& args, passes::PassManager& pm,
                   passes::PipelineOptions& opts, std::string_view fallback = "default");
// Runs `pm` on `m`, reporting every error of a failing pass. False on failure.
bool runPipeline(Session& s, ir::Module& m, const passes::PassManager& pm,
                 const passes::PipelineOptions& opts);

// What `run` and `diff` share. Each reports its own error (prefixed with the
// command name, `cmd`) and returns null / nullopt / false after it.
// The entry function --entry names (default main): a host or device function.
const ir::Function* findEntry(Session& s, const ir::Module& m, std::string name,
                              const std::string& file, std::string_view cmd);
// --device N, or -1 when not given.
std::optional<int> deviceIndexArg(Session& s, const ParsedArgs& args, std::string_view cmd);
// One --arg per parameter of the entry.
bool checkArgCount(Session& s, const ir::Function& entry, size_t given, std::string_view cmd);
// The --arg texts parsed against the entry's parameter types; buffers are made
// in `mem`.
std::optional<std::vector<interp::RtValue>> parseEntryArgs(Session& s, const ir::Function& entry,
                                                           const std::vector<std::string>& texts,
                                                           interp::Memory& mem, std::string_view cmd);

// The subcommands: each has a spec (its flags and help) and returns the
// process exit status.
CommandSpec optSpec();
CommandSpec checkSpec();
CommandSpec runSpec();
CommandSpec passesSpec();
CommandSpec opsSpec();
CommandSpec lowerSpec();
CommandSpec devicesSpec();
CommandSpec diffSpec();
CommandSpec solveSpec();
CommandSpec onnxTestSpec();
int runOptCommand(Session& s, std::span<const std::string> args);
int runCheckCommand(Session& s, std::span<const std::string> args);
int runRunCommand(Session& s, std::span<const std::string> args);
int runPassesCommand(Session& s, std::span<const std::string> args);
int runOpsCommand(Session& s, std::span<const std::string> args);
int runLowerCommand(Session& s, std::span<const std::string> args);
int runDevicesCommand(Session& s, std::span<const std::string> args);
int runDiffCommand(Session& s, std::span<const std::string> args);
int runSolveCommand(Session& s, std::span<const std::string> args);
int runOnnxTestCommand(Session& s, std::span<const std::string> args);

// All of ephc: argv without the program name. Used by main() and by tests.
int ephcMain(std::span<const std::string> args, std::ostream& out, std::ostream& err);

}  // namespace eph::ephc
