// The standard library modules compiled into ephc (see Stdlib.h).
#include "frontends/ephapax/Stdlib.h"

namespace eph::ephapax {

bool mergeStdlibImports(Program&, DiagSink&) { return true; }

}  // namespace eph::ephapax
