#include "frontends/value/Frontend.h"

#include "frontends/value/Eval.h"
#include "frontends/value/Lower.h"
#include "frontends/value/Signature.h"
#include "frontends/value/Text.h"
#include "ir/Verifier.h"

namespace eph::value {

std::unique_ptr<ir::Module> compileText(ir::Context& ctx, std::string_view text, const std::string& file,
                                        const LowerOptions& opts, std::string& diagnostics) {
  Graph g;
  ParseError err;
  if (!parse(text, g, err)) {
    diagnostics += err.render(file, text);
    return nullptr;
  }
  std::string why;
  auto m = lowerGraph(ctx, g, groupResiduals(g), opts, why);
  if (!m) {
    diagnostics += file + ": error[E301]: " + why + "\n";
    return nullptr;
  }
  m->sourceName = file;
  if (Status st = ir::verify(*m); !st) {
    diagnostics += file + ": error: internal error: the lowered IR does not verify: " + st.error().message +
                   " (this is a compiler bug; please report it with the file)\n";
    return nullptr;
  }
  return m;
}

frontends::Frontend frontend() {
  frontends::Frontend f;
  f.name = "value";
  f.extensions = {".vg"};
  f.options = {
      {"--precision", "f64|f32", ".vg: the float type of the kernels (default f64)"},
      {"--deterministic", "", ".vg: sum the gradient without atomics, in a fixed order (bit-identical from run to run)"},
      {"--format", "text|json", ".vg: how `run` prints residuals, sum, cost, gradient and kernels (default text)",
       /*forCheck=*/false},
  };
  f.errorCodes = {
      {"E300", "a .vg file does not parse (syntax, names, indices, calls, arity, numbers)"},
      {"E301", "a Value-graph op has no IR lowering (a custom op without `lower`)"},
  };
  f.checkOptions = [](const frontends::OptionValues& o) -> std::string {
    if (auto p = o.find("--precision"); p != o.end() && p->second != "f64" && p->second != "f32")
      return "--precision wants 'f64' or 'f32', got '" + p->second + "'";
    if (auto p = o.find("--format"); p != o.end() && p->second != "text" && p->second != "json")
      return "--format wants 'text' or 'json', got '" + p->second + "'";
    return {};
  };
  // No passes run here (the lowering builds the module directly), so the
  // pipeline options (--print-after, --time-passes) have nothing to show.
  f.compile = [](ir::Context& ctx, std::string_view text, const std::string& file, const frontends::OptionValues& o,
                 const passes::PipelineOptions&, std::string& out) -> std::unique_ptr<ir::Module> {
    auto p = o.find("--precision");
    LowerOptions opts;
    opts.f32 = p != o.end() && p->second == "f32";
    opts.deterministic = o.count("--deterministic") != 0;
    return compileText(ctx, text, file, opts, out);
  };
  f.formatRun = [](std::string_view text, const std::string& file, const frontends::OptionValues& o,
                   const std::vector<std::vector<double>>& results, std::string& out, std::string& diagnostics) {
    Graph g;
    ParseError err;
    if (!parse(text, g, err)) return diagnostics += err.render(file, text), false;
    if (results.size() != 2 || results[0].size() != g.residuals().size() ||
        results[1].size() < gradientLeaves(g).size())
      return diagnostics += file + ": error: internal error: @main did not return the residuals and gradient\n", false;
    auto fmt = o.find("--format");
    out += runReport(g, results[0], results[1], groupResiduals(g).size(), fmt != o.end() && fmt->second == "json");
    return true;
  };
  return f;
}

}  // namespace eph::value
