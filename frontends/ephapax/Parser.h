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

// The workgroup size written on an inline dispatch (`dispatch over n
// workgroup (x, y, z) { .. }`) is kept in the Dispatch node's `ival`, 20 bits
// a dimension (each is at most 65535); 0 means none was written.
inline int64_t packWorkgroupSize(const int64_t (&wg)[3]) { return wg[0] | (wg[1] << 20) | (wg[2] << 40); }
// The workgroup size of a Dispatch node: as written, or (64, 1, 1).
inline void dispatchWorkgroupSize(const Expr& dispatch, int64_t (&out)[3]) {
  int64_t v = dispatch.kind == ExprKind::Dispatch ? dispatch.ival : 0;
  if (v == 0) {
    out[0] = 64, out[1] = 1, out[2] = 1;
    return;
  }
  for (int i = 0; i < 3; ++i) out[i] = (v >> (20 * i)) & 0xfffff;
}

// Parses a whole .eph file. Check `diags` for errors; the program holds every
// declaration that parsed.
Program parseProgram(std::string_view src, DiagSink& diags);

}  // namespace eph::ephapax
