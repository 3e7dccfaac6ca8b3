// libFuzzer target over the Ephapax frontend: the lexer, parser and both
// checker passes (and diagnostic rendering), then, for every input that
// checks, the lowering to the IR. Any input must come back with
// diagnostics or a checked program: no crash, no hang, no unbounded memory,
// no stack overflow (nesting beyond the parser's depth limit is an E000
// error). A program that checks must lower to IR that verifies and passes
// the linearity pass, or get a documented code-generation error (E200-E219):
// an E299 (the lowering produced invalid IR) or a module the verifier
// rejects is a bug, and the target traps on it.
//
// Built with clang when EPH_FUZZ=ON (frontends/ephapax/CMakeLists.txt); CI
// runs it with the corpus in tests/fuzz/corpus (see .ci/run).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string_view>

#include "frontends/ephapax/Checker.h"
#include "frontends/ephapax/Frontend.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

namespace {

[[noreturn]] void bug(const std::string& what) {
  std::fprintf(stderr, "ephapax_fuzz: %s\n", what.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view src(reinterpret_cast<const char*>(data), size);
  eph::ephapax::DiagSink diags;
  auto checked = eph::ephapax::check(src, diags);
  std::string text = eph::ephapax::renderAll(diags, "fuzz.eph", src);
  // Every diagnostic has a code and a message.
  for (const eph::ephapax::Diag& d : diags.all())
    if (d.code.size() != 4 || d.message.empty()) __builtin_trap();
  (void)text;
  if (!checked || !diags.empty()) return 0;

  // It checks: lower it (compile verifies the module and runs the linearity
  // pass, reporting a failure as E299).
  eph::ir::Context ctx;
  eph::ephapax::DiagSink lowerDiags;
  auto m = eph::ephapax::compile(ctx, src, "fuzz.eph", lowerDiags);
  for (const eph::ephapax::Diag& d : lowerDiags.all()) {
    if (d.code.size() != 4 || d.message.empty()) __builtin_trap();
    if (d.code == "E299" || d.code.rfind("E2", 0) != 0)
      bug("lowering a checked program failed:\n" + eph::ephapax::renderAll(lowerDiags, "fuzz.eph", src));
  }
  if (m) {
    if (eph::Status st = eph::ir::verify(*m); !st)
      bug("the lowered module does not verify: " + st.error().str() + "\n" + eph::ir::print(*m));
  } else if (lowerDiags.empty()) {
    bug("lowering failed without a diagnostic");
  }
  return 0;
}
