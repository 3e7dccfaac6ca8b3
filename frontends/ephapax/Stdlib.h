// The Ephapax standard library: Ephapax source modules compiled into ephc
// (frontends/ephapax/stdlib/*.eph). `import gpu` in a program makes the
// module's declarations available, plainly and as `gpu.name`.
#pragma once

#include "frontends/ephapax/Ast.h"
#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

// For every import of `p` that names a standard library module, parses the
// module and appends its declarations to `p` (those whose names `p` already
// declares are skipped, so a program may override one). Imports that name no
// standard module are left alone. False after reporting a parse error in a
// module (a bug in the library, reported with the module's name).
bool mergeStdlibImports(Program& p, DiagSink& diags);

}  // namespace eph::ephapax
