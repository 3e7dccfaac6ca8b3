#include "frontends/ephapax/Frontend.h"

#include "frontends/ephapax/Lower.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

namespace eph::ephapax {

namespace {
// Runs a pipeline over the lowered module; its errors are compiler bugs
// (E299): a program that checks must lower to IR the passes accept.
bool runPasses(ir::Module& m, std::string_view pipeline, const std::string& what, DiagSink& diags,
               const passes::PipelineOptions& opts) {
  std::vector<Error> errors;
  auto pm = passes::PassManager::parse(pipeline);
  if (!pm) errors.push_back(pm.error());
  else if (pm->run(m, opts, errors)) return true;
  for (const Error& e : errors)
    diags.error("E299", {e.loc.line ? e.loc.line : 1, e.loc.col ? e.loc.col : 1, 1}, "internal error: " + what + e.message,
                "this is a compiler bug; please report it with the program");
  return false;
}
}  // namespace

std::unique_ptr<ir::Module> compile(ir::Context& ctx, std::string_view src, const std::string& file, DiagSink& diags,
                                    const CompileOptions& opts) {
  size_t before = diags.size();
  auto c = check(src, diags, opts.check);
  if (!c) return nullptr;
  if (opts.frontendCheck && diags.size() != before) return nullptr;
  LowerOptions lo;
  lo.affineMode = opts.check.affineMode;
  auto m = lowerProgram(*c, ctx, file, diags, lo);
  if (!m) return nullptr;
  // Generic @gpu functions and device functions are lowered once; the IR
  // `monomorphize` pass (passes/Monomorphize.cpp) instantiates them, run by
  // the pass manager like any pipeline (verifying the module after it).
  if (opts.monomorphize && !runPasses(*m, "monomorphize", "monomorphize: ", diags, opts.pipeline)) return nullptr;
  if (opts.checkIR) {
    if (Status st = ir::verify(*m); !st) {
      diags.error("E299", {st.error().loc.line, st.error().loc.col, 1},
                  "internal error: the lowered IR does not verify: " + st.error().message,
                  "this is a compiler bug; please report it with the program");
      return nullptr;
    }
    if (opts.frontendCheck && !runPasses(*m, "linearity", "the lowered IR breaks ownership: ", diags, opts.pipeline)) return nullptr;
  }
  return m;
}

frontends::Frontend frontend() {
  frontends::Frontend f;
  f.name = "ephapax";
  f.extensions = {".eph"};
  f.errorCodes = errorCodes();
  f.options = {
      {"--mode", "linear|affine",
       ".eph: linear (the default) requires every owned value to be consumed; affine lets it be "
       "dropped (a dropped GPU buffer is freed by the compiler)"},
      {"--no-frontend-check", "",
       ".eph: lower even if the ownership checker rejects the program (the IR 'linearity' pass "
       "then reports it)",
       /*forCheck=*/false},
  };
  f.checkOptions = [](const frontends::OptionValues& o) -> std::string {
    auto mode = o.find("--mode");
    if (mode != o.end() && mode->second != "linear" && mode->second != "affine")
      return "--mode wants 'linear' or 'affine', got '" + mode->second + "'";
    return {};
  };
  f.compile = [](ir::Context& ctx, std::string_view text, const std::string& file, const frontends::OptionValues& o,
                 const passes::PipelineOptions& pipeline, std::string& out) -> std::unique_ptr<ir::Module> {
    CompileOptions opts;
    opts.pipeline = pipeline;
    opts.frontendCheck = opts.checkIR = !o.count("--no-frontend-check");
    auto mode = o.find("--mode");
    opts.check.affineMode = mode != o.end() && mode->second == "affine";
    DiagSink diags;
    auto m = compile(ctx, text, file, diags, opts);
    // Without the frontend's check, ownership errors are left to the IR passes.
    if (m && !opts.frontendCheck) return m;
    out += renderAll(diags, file, text);
    return diags.empty() ? std::move(m) : nullptr;
  };
  return f;
}

}  // namespace eph::ephapax
