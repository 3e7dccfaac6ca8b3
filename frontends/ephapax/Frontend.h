// The Ephapax frontend as one call: source text in, diagnostics and/or an IR
// module out. (check() and renderAll() are in Checker.h, which does not need
// the IR.)
//
//   DiagSink diags;
//   auto checked = ephapax::check(src, diags);          // parse + both checker passes
//   auto module  = ephapax::compile(ctx, src, "f.eph", diags);  // ... and lower
//
// CompileOptions::frontendCheck = false lowers even a program the ownership
// checker rejects (type errors still stop it), so that tests can show the IR
// `linearity` pass finding the same leak / double use at the same place.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "frontends/Frontend.h"
#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/Diag.h"
#include "ir/IR.h"

namespace eph::ephapax {

struct CompileOptions {
  // Run the ownership checker first and stop on its errors.
  bool frontendCheck = true;
  // After lowering: verify the module and run the IR linearity pass; a
  // failure there is reported as an internal error (it means the lowering
  // broke ownership).
  bool checkIR = true;
  // The ownership checker's options (--mode linear|affine).
  CheckOptions check;
  // Run the IR `monomorphize` pass at the end, so the module has no generic
  // functions left (false shows the generic IR).
  bool monomorphize = true;
  // How the passes above run (--print-after, --time-passes of ephc).
  passes::PipelineOptions pipeline;
};

// Parses, checks and lowers to IR. Null after reporting errors in `diags`.
std::unique_ptr<ir::Module> compile(ir::Context& ctx, std::string_view src, const std::string& file,
                                    DiagSink& diags, const CompileOptions& opts = {});

// Ephapax as a frontend (frontends/Frontend.h): `.eph` files, with the
// options `--mode linear|affine` and `--no-frontend-check`.
frontends::Frontend frontend();

}  // namespace eph::ephapax
