// `ephc opt FILE`: parse, verify, run a pass pipeline, print the IR.
#include <fstream>
#include <ostream>

#include "ir/Printer.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {
CommandSpec optSpec() {
  CommandSpec spec{
      .name = "opt",
      .operands = "FILE",
      .summary = "Parse and verify an .eir module or .eph program, run passes over it, print the IR.",
      .description = "FILE is an .eph program or an .eir module ('-': IR on standard input). The module is verified before the\n"
                     "pipeline and after every pass. Errors go to stderr as\n"
                     "'file:line:col: error: message' with the source line and a caret.",
      .minOperands = 1,
      .maxOperands = 1,
  };
  spec.options = pipelineOptions();
  spec.options.push_back({"--print-locs", "", "print loc(\"file\":line:col) on every op and function"});
  spec.options.push_back({"-o", "OUT", "write the IR to OUT instead of stdout"});
  for (OptionSpec& o : frontendOptionSpecs()) spec.options.push_back(o);
  return spec;
}

int runOptCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = optSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!applyFrontendOptions(s, *args, "opt")) return 1;

  if (!loadPlugins(s, *args)) return 1;
  passes::PassManager pm;
  passes::PipelineOptions opts;
  if (!buildPipeline(s, *args, pm, opts, "none")) return 1;

  ir::Context ctx;
  auto m = s.loadModule(ctx, args->operands[0]);
  if (!m) return 1;
  if (!runPipeline(s, *m, pm, opts)) return 1;

  ir::PrintOptions print{.locations = args->has("--print-locs")};
  std::string text = ir::print(*m, print);
  if (!args->has("-o")) {
    s.io.out << text;
    return 0;
  }
  std::string outPath = args->get("-o");
  std::ofstream out(outPath, std::ios::binary);
  if (!out || !(out << text) || !out.flush()) return s.fail("cannot write '" + outPath + "'");
  return 0;
}

}  // namespace eph::ephc
