#include "frontends/ephapax/Frontend.h"

#include "frontends/ephapax/Lower.h"
#include "ir/Verifier.h"
#include "passes/PassManager.h"

namespace eph::ephapax {

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
  // `monomorphize` pass (passes/Monomorphize.cpp) instantiates them.
  if (opts.monomorphize) {
    const passes::Pass* mono = passes::PassRegistry::get().lookup("monomorphize");
    if (!mono) {
      diags.error("E299", {1, 1, 1}, "internal error: the IR `monomorphize` pass is not registered",
                  "this is a compiler bug; please report it with the program");
      return nullptr;
    }
    passes::Diagnostics d;
    mono->run(*m, d);
    for (const Error& e : d.errors)
      diags.error("E299", {e.loc.line, e.loc.col, 1}, "internal error: monomorphize: " + e.message,
                  "this is a compiler bug; please report it with the program");
    if (d.failed()) return nullptr;
  }
  if (opts.checkIR) {
    if (Status st = ir::verify(*m); !st) {
      diags.error("E299", {st.error().loc.line, st.error().loc.col, 1},
                  "internal error: the lowered IR does not verify: " + st.error().message,
                  "this is a compiler bug; please report it with the program");
      return nullptr;
    }
    if (opts.frontendCheck) {
      passes::Diagnostics d;
      passes::linearityPass().run(*m, d);
      for (const Error& e : d.errors)
        diags.error("E299", {e.loc.line, e.loc.col, 1}, "internal error: the lowered IR breaks ownership: " + e.message,
                    "this is a compiler bug; please report it with the program");
      if (d.failed()) return nullptr;
    }
  }
  return m;
}

}  // namespace eph::ephapax
