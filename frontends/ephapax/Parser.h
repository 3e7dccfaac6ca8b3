// The Ephapax parser: recursive descent over the lexer's tokens, building the
// AST of frontends/ephapax/Ast.h. Syntax errors are E000 diagnostics; after
// one, the parser skips to the next declaration and goes on, so independent
// errors in different declarations are all reported. Nesting deeper than
// kMaxDepth (expressions, types, patterns, operator chains) is an error, never
// a stack overflow.
#pragma once

#include <string_view>

#include "frontends/ephapax/Ast.h"
#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

constexpr unsigned kMaxDepth = 200;

// The workgroup size of a Dispatch node: as written on an inline dispatch
// (`dispatch over n workgroup (x, y, z) { .. }`, Expr::workgroupSize), or
// (64, 1, 1) when none was written.
inline void dispatchWorkgroupSize(const Expr& dispatch, int64_t (&out)[3]) {
  bool written = dispatch.kind == ExprKind::Dispatch && dispatch.workgroupSize[0] != 0;
  for (int i = 0; i < 3; ++i) out[i] = written ? dispatch.workgroupSize[i] : (i == 0 ? 64 : 1);
}

// Parses a whole .eph file. Check `diags` for errors; the program holds every
// declaration that parsed.
// `file` goes into every span (Span::file): 0 for the program itself, a
// DiagSink::addSource id for a standard library module.
Program parseProgram(std::string_view src, DiagSink& diags, uint16_t file = 0);

}  // namespace eph::ephapax
