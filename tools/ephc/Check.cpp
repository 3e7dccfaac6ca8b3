// `ephc check FILE`: check a program without running it. For an Ephapax
// source (.eph): parse, type-check and ownership-check it, then lower it (so
// whatever code generation would reject is reported too), printing every
// diagnostic (`file:line:col: error[CODE]: ...`). For an IR module (.eir):
// parse, verify and run the linearity pass. Exit 0 when it is fine, else 1.
#include <ostream>

#include "frontends/Frontend.h"
#include "passes/PassManager.h"
#include "tools/ephc/Driver.h"

namespace eph::ephc {

CommandSpec checkSpec() {
  return {
      .name = "check",
      .operands = "FILE",
      .summary = "Check an .eph program (types, linearity, regions) or an .eir module.",
      .description =
          "An Ephapax source (.eph) is parsed and checked: types, the linear and affine\n"
          "rules and regions; then it is lowered to IR, so that everything 'run' would\n"
          "reject is reported here too. Every diagnostic is printed to stderr as\n"
          "'file:line:col: error[CODE]: message' with the source line, a caret and a\n"
          "hint (docs/errors.md lists the codes). --mode affine lets owned values be\n"
          "dropped instead of consumed. An IR module (.eir) is parsed,\n"
          "verified and put through the linearity pass. Exits 0 when the input is\n"
          "fine, 1 otherwise.",
      .options = frontendOptionSpecs(/*check=*/true),
      .minOperands = 1,
      .maxOperands = 1,
  };
}

int runCheckCommand(Session& s, std::span<const std::string> argv) {
  CommandSpec spec = checkSpec();
  auto args = parseArgs(spec, argv);
  if (!args) return s.report(args.error());
  if (args->help) return s.io.out << helpText(spec), 0;
  if (!applyFrontendOptions(s, *args, "check")) return 1;
  const std::string& file = args->operands[0];
  if (const frontends::Frontend* f = frontends::forFile(file)) {
    std::string text;
    if (!s.readInput(file, text)) return 1;
    std::string diagnostics;
    ir::Context ctx;
    auto lowered = f->compile(ctx, text, file, s.frontendOptions, s.pipeline, diagnostics);
    s.io.err << diagnostics;
    return diagnostics.empty() && lowered ? 0 : 1;
  }
  ir::Context ctx;
  auto m = s.loadModule(ctx, file);
  if (!m) return 1;
  passes::Diagnostics d;
  passes::linearityPass().run(*m, d);
  for (const Error& e : d.errors) s.report(e);
  return d.failed() ? 1 : 0;
}

}  // namespace eph::ephc
