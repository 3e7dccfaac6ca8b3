// libFuzzer target over the Ephapax lexer, parser and both checker passes
// (and diagnostic rendering). Any input must come back with diagnostics or a
// checked program: no crash, no hang, no unbounded memory, no stack overflow
// (nesting beyond the parser's depth limit is an E000 error).
//
// Built with clang when EPH_FUZZ=ON (frontends/ephapax/CMakeLists.txt); CI
// runs it with the corpus in tests/fuzz/corpus (see .ci/run).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "frontends/ephapax/Checker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return 0;
  std::string_view src(reinterpret_cast<const char*>(data), size);
  eph::ephapax::DiagSink diags;
  auto checked = eph::ephapax::check(src, diags);
  std::string text = eph::ephapax::renderAll(diags, "fuzz.eph", src);
  // Every diagnostic has a code and a message.
  for (const eph::ephapax::Diag& d : diags.all())
    if (d.code.size() != 4 || d.message.empty()) __builtin_trap();
  (void)checked;
  (void)text;
  return 0;
}
