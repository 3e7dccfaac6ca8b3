// Inlines calls to non-recursive functions.
#include "passes/PassManager.h"

namespace eph::passes {

Pass inlinePass() {
  return Pass{"inline", "Inlines calls to non-recursive functions", [](ir::Module&, Diagnostics&) { return false; }};
}

}  // namespace eph::passes
