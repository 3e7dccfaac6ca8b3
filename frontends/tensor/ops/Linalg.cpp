// Linalg ops (see Ops.h): filled by the linalg family.
#include "frontends/tensor/Lower.h"
#include "frontends/tensor/Ops.h"

namespace eph::tensor {

void addLinalgOps(std::vector<OpDef>&) {}

}  // namespace eph::tensor
