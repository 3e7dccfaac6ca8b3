// The Ephapax standard library: Ephapax source modules compiled into ephc
// (frontends/ephapax/stdlib/*.eph, embedded into the library at build time by
// frontends/ephapax/CMakeLists.txt, so a static ephc carries them). `import gpu`
// in a program makes the module's declarations available, plainly and as
// `gpu.name`.
#pragma once

#include <string_view>
#include <vector>

#include "frontends/ephapax/Ast.h"
#include "frontends/ephapax/Diag.h"

namespace eph::ephapax {

// One standard library module: its name (the file name without `.eph`) and
// its source text.
struct StdlibModule {
  std::string_view name;
  std::string_view source;
};

// The modules compiled into this build, in file-name order. When the
// environment variable EPH_STDLIB_DIR names a directory, a file NAME.eph
// there replaces the built-in module NAME (read once, at the first call), so
// the library can be worked on without rebuilding ephc.
const std::vector<StdlibModule>& stdlibModules();

// The module called `name`, or null.
const StdlibModule* findStdlibModule(std::string_view name);

// For every import of `p` that names a standard library module, parses the
// module and appends its declarations to `p` (those whose names `p` already
// declares are skipped, so a program may override one). A module's own
// imports of other standard modules are merged too (each module once), and
// their names join `p.imports` so `m.x` resolves. Imports that name no
// standard module are left alone. False after reporting a parse error in a
// module (a bug in the library, reported with the module's name).
bool mergeStdlibImports(Program& p, DiagSink& diags);

// The same over an explicit set of modules (tests use small ones).
bool mergeStdlibImports(Program& p, DiagSink& diags, const std::vector<StdlibModule>& modules);

}  // namespace eph::ephapax
